package ensemble

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"xmc/data"
	"xmc/model"
	"xmc/numa/numatest"
)

// amazonHeldout returns held-out predictions of Amazon-670K's shape: the
// default --heldout 0.05 of its 490,449 training rows, 1 to 10 true labels
// a row among 670,091 (5.5 on average, Amazon-670K 5.45), and the default
// members' lists (a forest's and a
// one-vs-all model's 30 labels, a label tree's 5). Each member ranks a
// row's true labels and 60 other labels of that row (shared by the
// members, as real members' mistakes overlap) by a noisy score where a
// true label is one standard deviation higher.
func amazonHeldout() ([][][]model.Scored, *data.CSR, []string) {
	const rows, L, distractors = 24522, 670091, 60
	kinds := []string{"forest", "ppdsparse", "plt"}
	rng := rand.New(rand.NewPCG(670, 91))
	y := &data.CSR{Rows: rows, Cols: L, Indptr: []int64{0}}
	lists := make([][][]model.Scored, len(kinds))
	var pool []int32
	for range rows {
		pool = pool[:0]
		for range 1 + rng.IntN(10) {
			l := int32(rng.IntN(L))
			pool = append(pool, l)
			y.Indices, y.Values = append(y.Indices, l), append(y.Values, 1)
		}
		y.Indptr = append(y.Indptr, int64(len(y.Indices)))
		truths := len(pool)
		for range distractors {
			pool = append(pool, int32(rng.IntN(L)))
		}
		for m, kind := range kinds {
			var top model.Top
			top.Reset(Candidates(kind, 5))
			for q, l := range pool {
				s := rng.NormFloat64()
				if q < truths {
					s++
				}
				if kind != "ppdsparse" {
					s = 1 / (1 + math.Exp(-s)) // a forest's and a tree's scores lie in [0, 1]
				}
				top.Push(model.Scored{Label: l, Score: float32(s)})
			}
			lists[m] = append(lists[m], slices.Clone(top.Sorted()))
		}
	}
	return lists, y, kinds
}

// BenchmarkFitAmazon fits the default members' weights on held-out rows of
// Amazon-670K's shape, on 1 worker and on one a core. Besides the time, it
// reports the seconds a fit spends outside the pool's loops (serial-s/op),
// in them (loop-s/op: wall time from each loop's start to its last
// worker's end) and the workers' share of that time they computed
// (loop-efficiency).
func BenchmarkFitAmazon(b *testing.B) {
	lists, y, kinds := amazonHeldout()
	for _, workers := range slices.Compact([]int{1, runtime.NumCPU()}) {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			pool := numatest.Pool(b, workers, 1)
			before, start := pool.Profile(), time.Now()
			for b.Loop() {
				if _, err := Fit(lists, y, kinds, 5, pool); err != nil {
					b.Fatal(err)
				}
			}
			wall, prof := time.Since(start).Seconds(), pool.Profile().Sub(before)
			b.ReportMetric((wall-prof.LoopS)/float64(b.N), "serial-s/op")
			b.ReportMetric(prof.LoopS/float64(b.N), "loop-s/op")
			b.ReportMetric(prof.BusyS/(float64(workers)*prof.LoopS), "loop-efficiency")
		})
	}
}
