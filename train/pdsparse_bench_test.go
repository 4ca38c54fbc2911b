package train

import (
	"context"
	"fmt"
	"testing"

	"xmc/data"
	"xmc/mpi"
	"xmc/numa/numatest"
)

// BenchmarkPDSparseEpoch measures one epoch of PD-Sparse (the second, once
// the active sets and weights have formed) on generated multi-class data
// of 10,000 rows, 20,000 features and 60 features per row, for K = 1,000,
// 4,000 and 16,000 classes, on one rank: the search visits only the
// classes whose weights the row's features touch, so the cost per epoch
// grows far slower than K (ns/op is per epoch; ratio-to-K1000 compares it
// with the smallest K).
func BenchmarkPDSparseEpoch(b *testing.B) {
	var base float64
	for _, K := range []int{1000, 4000, 16000} {
		ds, err := data.GenerateDataset(data.GenConfig{N: 10000, D: 20000, L: K, AvgLabels: 1, AvgFeatures: 60, LabelExponent: 1, Seed: 3})
		if err != nil {
			b.Fatal(err)
		}
		ds = oneLabelPerRow(ds)
		b.Run(fmt.Sprintf("K=%d", K), func(b *testing.B) {
			p := DefaultPDSparseParams()
			p.Epochs = 2
			pool := numatest.Pool(b, 1, 1)
			err := mpi.Launch(1, func(c mpi.Comm) error {
				t, err := newPDSTrainer(p, ds, c, pool)
				if err != nil {
					return err
				}
				units := make([]int, len(t.blocks))
				for u := range units {
					units[u] = u
				}
				for b.Loop() {
					b.StopTimer()
					if err := t.Start(units, 0, nil, nil); err != nil {
						return err
					}
					for r := range t.order.Batches { // the first epoch, untimed
						if _, err := t.Round(context.Background(), r); err != nil {
							return err
						}
					}
					b.StartTimer()
					for r := t.order.Batches; r < 2*t.order.Batches; r++ {
						if _, err := t.Round(context.Background(), r); err != nil {
							return err
						}
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			perEpoch := b.Elapsed().Seconds() / float64(b.N)
			if K == 1000 {
				base = perEpoch
			}
			if base > 0 {
				b.ReportMetric(perEpoch/base, "ratio-to-K1000")
			}
		})
	}
}

// oneLabelPerRow keeps the rows of ds with a label, each with its first
// label only: multi-class data.
func oneLabelPerRow(ds *data.Dataset) *data.Dataset {
	var rows []int
	for i := range ds.N() {
		if l, _ := ds.Y.Row(i); len(l) > 0 {
			rows = append(rows, i)
		}
	}
	out := ds.Subset(rows)
	y := data.CSR{Rows: out.Y.Rows, Cols: out.Y.Cols, Indptr: make([]int64, out.Y.Rows+1)}
	for i := range out.Y.Rows {
		l, _ := out.Y.Row(i)
		y.Indices = append(y.Indices, l[0])
		y.Values = append(y.Values, 1)
		y.Indptr[i+1] = int64(len(y.Indices))
	}
	out.Y = y
	return out
}
