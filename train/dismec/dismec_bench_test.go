package dismec

import (
	"testing"

	"xmc/data"
	"xmc/numa/numatest"
	"xmc/train/traintest"
)

// BenchmarkDismecBibtex measures training every label of the bundled
// Bibtex split on 2 workers, from the zero and from the mean-separating
// initialisation (ns/op is per model); see benchDismec for the metrics.
func BenchmarkDismecBibtex(b *testing.B) {
	tr, te := traintest.Bibtex(b)
	benchDismec(b, tr, te)
}

// BenchmarkDismecDelicious is BenchmarkDismecBibtex on the bundled
// Delicious split (983 labels, 12920 rows).
func BenchmarkDismecDelicious(b *testing.B) {
	tr, te := traintest.Delicious(b)
	benchDismec(b, tr, te)
}

// benchDismec trains a DiSMEC model on tr with 2 workers, once per
// initialisation. Besides wall time per model it reports the process's CPU
// seconds per model (which a machine shared with other jobs inflates less
// than wall time), the Newton and CG iterations per label, and P@1, P@3
// and P@5 of the last model on te.
func benchDismec(b *testing.B, tr, te *data.Dataset) {
	pool := numatest.Pool(b, 2, 1)
	for _, init := range []string{initZero, initMSI} {
		b.Run(init, func(b *testing.B) {
			p := DefaultParams()
			p.Init = init
			var st labelStats
			var units [][]byte
			cpu0 := traintest.ProcessCPU()
			for b.Loop() {
				var trainer *blockTrainer
				units, trainer = trainDismec(b, tr, p, pool)
				s := trainer.Stats()
				st.Labels, st.Newton, st.CG = st.Labels+s.Labels, st.Newton+s.Newton, st.CG+s.CG
			}
			b.ReportMetric((traintest.ProcessCPU()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
			b.ReportMetric(float64(st.Newton)/float64(st.Labels), "newton/label")
			b.ReportMetric(float64(st.CG)/float64(st.Labels), "cg/label")
			m := traintest.PrecisionAtK(b, linearModel(b, tr, p, units), te, pool)
			for _, k := range []string{"P@1", "P@3", "P@5"} {
				b.ReportMetric(m[k], k)
			}
		})
	}
}
