package pdsparse

import (
	"fmt"
	"testing"

	"xmc/data"
	"xmc/mpi"
	"xmc/numa/numatest"
)

// BenchmarkPDSparseEpoch measures an epoch of PD-Sparse, once the active
// sets and weights have formed (after a first, untimed epoch), on generated
// multi-class data of 50,000 rows, 20,000 features and 60 features per row,
// for K = 10,000 and 100,000 classes, on one rank: the search visits only
// the classes whose weights the row's features touch, so the cost per epoch
// grows far slower than K (ns/op is per epoch; ratio-to-K10000 compares it
// with the smaller K; the bound is 3 for 10 times the classes).
func BenchmarkPDSparseEpoch(b *testing.B) {
	var base float64
	for _, K := range []int{10000, 100000} {
		ds, err := data.GenerateDataset(data.GenConfig{N: 50000, D: 20000, L: K, AvgLabels: 1, AvgFeatures: 60, LabelExponent: 1, Seed: 3})
		if err != nil {
			b.Fatal(err)
		}
		ds = oneLabelPerRow(ds)
		b.Run(fmt.Sprintf("K=%d", K), func(b *testing.B) {
			p := DefaultParams()
			p.Epochs = 1 << 20 // epochs are counted here
			pool := numatest.Pool(b, 1, 1)
			err := mpi.Launch(1, mpi.MaxMessage, func(c mpi.Comm) error {
				t, err := newRoundTrainer(p.forData(ds, noneSet), ds, c, pool)
				if err != nil {
					return err
				}
				units := make([]int, len(t.blocks))
				for u := range units {
					units[u] = u
				}
				if err := t.Start(units, 0, nil, nil); err != nil {
					return err
				}
				epoch := func(e int) error { return runRounds(t, e*t.order.Batches, (e+1)*t.order.Batches) }
				b.StopTimer()
				if err := epoch(0); err != nil { // the first epoch, untimed
					return err
				}
				b.StartTimer()
				for e := 1; b.Loop(); e++ {
					if err := epoch(e); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			perEpoch := b.Elapsed().Seconds() / float64(b.N)
			if K == 10000 {
				base = perEpoch
			}
			if base > 0 {
				b.ReportMetric(perEpoch/base, "ratio-to-K10000")
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
