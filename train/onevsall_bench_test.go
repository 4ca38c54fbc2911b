package train

import (
	"fmt"
	"slices"
	"testing"

	"xmc/data"
	"xmc/numa"
	"xmc/numa/numatest"
)

// BenchmarkOneVsAllByFrequency measures where one-vs-all training time and
// model bytes go by label frequency, on generated data of Amazon-670K's
// shape (D = 135,909, L = 670,091, 5.45 labels and 76 features per row) cut
// to 20,000 rows, as `xmc bench shapes` makes it: one sub-benchmark per
// trainer and range of positives, each training up to 40 labels of the
// range spread over it (ns/op is for those labels) on one worker. It
// reports ms/label, bytes/label (the encoded block) and est-s, the time
// all labels of the range would take on one core; a range's labels count
// is in its name.
func BenchmarkOneVsAllByFrequency(b *testing.B) {
	ds, err := data.GenerateDataset(data.GenConfig{N: 20000, D: 135909, L: 670091, AvgLabels: 5.45,
		AvgFeatures: 76, LabelExponent: 1, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	pool := numatest.Pool(b, 1, 1)
	dismec, err := DefaultDismecParams().Resolve()
	if err != nil {
		b.Fatal(err)
	}
	ppd := DefaultPPDSparseParams().ForData(&ds.X, func(string) bool { return false })
	// train trains label l on worker w and returns its encoded size.
	trainers := []struct {
		name  string
		train func(w numa.Worker, l int32) int
	}{
		{"dismec", func() func(numa.Worker, int32) int {
			rep, err := numa.NewReplicas(pool, func(int) (*LinearData, error) { return NewLinearData(ds, dismec.Preprocess) })
			if err != nil {
				b.Fatal(err)
			}
			t := NewDismecTrainer(dismec, rep, pool)
			return func(w numa.Worker, l int32) int {
				s := t.scratch.Get(w)
				s.block.Reset()
				if err := t.trainLabel(rep.Get(w.Domain), s, l); err != nil {
					b.Fatal(err)
				}
				s.block.Append(l, s.w, dismec.Prune)
				enc, _ := s.block.MarshalBinary()
				return len(enc)
			}
		}()},
		{"ppdsparse", func() func(numa.Worker, int32) int {
			rep, err := numa.NewReplicas(pool, func(int) (*PPDSparseData, error) { return NewPPDSparseData(ds, ppd) })
			if err != nil {
				b.Fatal(err)
			}
			t := NewPPDSparseTrainer(ppd, rep, pool)
			return func(w numa.Worker, l int32) int {
				s := t.scratch.Get(w)
				s.block.Reset()
				s.train(l, ppd.Seed)
				slices.Sort(s.cols)
				s.block.AppendSparse(l, s.cols, s.w, ppd.Prune)
				s.clearWeights()
				enc, _ := s.block.MarshalBinary()
				return len(enc)
			}
		}()},
	}
	counts := make([]int64, ds.L())
	for _, l := range ds.Y.Indices {
		counts[l]++
	}
	ranges := []struct{ lo, hi int64 }{{1, 2}, {2, 3}, {3, 6}, {6, 21}, {21, 101}, {101, 1 << 40}}
	for _, tr := range trainers {
		for _, r := range ranges {
			var labels []int32
			for l, c := range counts {
				if c >= r.lo && c < r.hi {
					labels = append(labels, int32(l))
				}
			}
			if len(labels) == 0 {
				continue
			}
			sample := make([]int32, 0, 40)
			for q := range min(40, len(labels)) {
				sample = append(sample, labels[q*len(labels)/min(40, len(labels))])
			}
			b.Run(fmt.Sprintf("%s/pos=%d-%d/labels=%d", tr.name, r.lo, min(r.hi-1, 99999), len(labels)), func(b *testing.B) {
				bytes := 0
				for b.Loop() {
					bytes = 0
					err := pool.Run(func(w numa.Worker) error {
						for _, l := range sample {
							bytes += tr.train(w, l)
						}
						return nil
					})
					if err != nil {
						b.Fatal(err)
					}
				}
				perLabel := b.Elapsed().Seconds() / float64(b.N*len(sample))
				b.ReportMetric(perLabel*1e3, "ms/label")
				b.ReportMetric(float64(bytes)/float64(len(sample)), "bytes/label")
				b.ReportMetric(perLabel*float64(len(labels)), "est-s")
			})
		}
	}
}
