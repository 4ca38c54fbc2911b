package ppdsparse

import (
	"testing"

	"xmc/data"
	"xmc/numa/numatest"
	"xmc/train/traintest"
)

// BenchmarkPPDSparseBibtex measures training every label of the bundled
// Bibtex split with the defaults on 2 workers (ns/op is per model). Besides
// wall time it reports the process's CPU seconds per model, the dual
// updates and index entries scanned per label, the mean active set, and
// P@1, P@3 and P@5 on the test split. The authors' PPDSparse took 4.5–5.1 s
// on the same 2 cores (a coordinator rank plus a worker rank of 2 threads).
func BenchmarkPPDSparseBibtex(b *testing.B) {
	tr, te := traintest.Bibtex(b)
	benchPPDSparse(b, tr, te)
}

// BenchmarkPPDSparseDelicious is BenchmarkPPDSparseBibtex on Delicious
// (983 labels, 12920 rows); the authors' program took 19.7–21.8 s.
func BenchmarkPPDSparseDelicious(b *testing.B) {
	tr, te := traintest.Delicious(b)
	benchPPDSparse(b, tr, te)
}

func benchPPDSparse(b *testing.B, tr, te *data.Dataset) {
	pool := numatest.Pool(b, 2, 1)
	p := DefaultParams()
	var st labelStats
	var units [][]byte
	cpu0 := traintest.ProcessCPU()
	for b.Loop() {
		var trainer *blockTrainer
		units, trainer = trainPPDSparse(b, tr, p, pool)
		st = trainer.Stats()
	}
	b.ReportMetric((traintest.ProcessCPU()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
	labels := float64(st.Labels)
	b.ReportMetric(float64(st.Updates)/labels, "updates/label")
	b.ReportMetric(float64(st.Scanned)/labels, "scanned/label")
	b.ReportMetric(float64(st.ActiveRows)/labels, "active/label")
	m := evalPPDSparse(b, tr, te, p, units, pool)
	for _, k := range []string{"P@1", "P@3", "P@5"} {
		b.ReportMetric(m[k], k)
	}
}
