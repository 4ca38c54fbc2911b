package ppdsparse

import (
	"slices"
	"testing"

	"xmc/numa"
	"xmc/numa/numatest"
	"xmc/train/traintest"
)

// BenchmarkByFrequency measures PPDSparse's time and bytes per label by
// the label's positives, on Amazon-670K's shape cut to 20,000 rows, on one
// worker (see traintest.ByFrequency).
func BenchmarkByFrequency(b *testing.B) {
	ds := traintest.AmazonShape(b, 20000)
	pool := numatest.Pool(b, 1, 1)
	p := DefaultParams().forData(&ds.X, func(string) bool { return false })
	rep, err := numa.NewReplicas(pool, func(int) (*trainingData, error) { return newTrainingData(ds, p) })
	if err != nil {
		b.Fatal(err)
	}
	t := newBlockTrainer(p, rep, pool)
	traintest.ByFrequency(b, ds, pool, func(w numa.Worker, l int32) int {
		s := t.scratch.Get(w)
		s.block.Reset()
		s.train(l, p.Seed)
		slices.Sort(s.cols)
		s.block.AppendSparse(l, s.cols, s.w, p.Prune)
		s.clearWeights()
		enc, _ := s.block.MarshalBinary()
		return len(enc)
	})
}
