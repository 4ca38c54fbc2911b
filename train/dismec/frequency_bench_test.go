package dismec

import (
	"testing"

	"xmc/numa"
	"xmc/numa/numatest"
	"xmc/train/onevsall"
	"xmc/train/traintest"
)

// BenchmarkByFrequency measures DiSMEC's time and bytes per label by the
// label's positives, on Amazon-670K's shape cut to 20,000 rows, on one
// worker (see traintest.ByFrequency).
func BenchmarkByFrequency(b *testing.B) {
	ds := traintest.AmazonShape(b, 20000)
	pool := numatest.Pool(b, 1, 1)
	p := DefaultParams()
	rep, err := numa.NewReplicas(pool, func(int) (*onevsall.Data, error) { return onevsall.NewData(ds, p.Preprocess) })
	if err != nil {
		b.Fatal(err)
	}
	t := newBlockTrainer(p, rep, pool)
	traintest.ByFrequency(b, ds, pool, func(w numa.Worker, l int32) int {
		s := t.scratch.Get(w)
		s.block.Reset()
		if err := t.trainLabel(rep.Get(w.Domain), s, l); err != nil {
			b.Fatal(err)
		}
		s.block.Append(l, s.w, p.Prune)
		enc, _ := s.block.MarshalBinary()
		return len(enc)
	})
}
