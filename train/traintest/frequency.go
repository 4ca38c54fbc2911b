package traintest

import (
	"fmt"
	"testing"

	"xmc/data"
	"xmc/numa"
)

// AmazonShape generates data of Amazon-670K's shape (D = 135,909,
// L = 670,091, 5.45 labels and 76 features per row) cut to n rows, as
// `xmc-bench shapes` makes it.
func AmazonShape(b testing.TB, n int) *data.Dataset {
	b.Helper()
	ds, err := data.GenerateDataset(data.GenConfig{N: n, D: 135909, L: 670091, AvgLabels: 5.45,
		AvgFeatures: 76, LabelExponent: 1, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	return ds
}

// ByFrequency measures where one-vs-all training time and model bytes go
// by label frequency: one sub-benchmark per range of positives, each
// training up to 40 labels of the range of ds spread over it (ns/op is for
// those labels) with train, which trains label l on worker w and returns
// its encoded size, on the pool's workers. It reports ms/label,
// bytes/label and est-s, the time all labels of the range would take on
// one core; a range's labels count is in its name.
func ByFrequency(b *testing.B, ds *data.Dataset, pool *numa.Pool, train func(w numa.Worker, l int32) int) {
	counts := data.LabelCounts(&ds.Y)
	ranges := []struct{ lo, hi int64 }{{1, 2}, {2, 3}, {3, 6}, {6, 21}, {21, 101}, {101, 1 << 40}}
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
		b.Run(fmt.Sprintf("pos=%d-%d/labels=%d", r.lo, min(r.hi-1, 99999), len(labels)), func(b *testing.B) {
			bytes := 0
			for b.Loop() {
				bytes = 0
				err := pool.Run(func(w numa.Worker) error {
					for _, l := range sample {
						bytes += train(w, l)
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
