package forest

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"xmc/data"
	"xmc/model"
	"xmc/numa"
)

func TestBlockingFor(t *testing.T) {
	for _, c := range []struct {
		rows           int
		nonzeros       int64
		trees, workers int
		want           blocking
	}{
		{1000, 68000, 50, 16, blocking{part: 1000, parts: 1}},           // a tree per unit, every row
		{153025, 75 * 153025, 16, 16, blocking{part: 55924, parts: 1}},  // bounded by the non-zeros
		{153025, 75 * 153025, 2, 16, blocking{part: 19129, parts: 8}},   // more parts than trees
		{1 << 20, 1 << 20, 1, 1, blocking{part: maxPartRows, parts: 1}}, // bounded by the rows
		{1 << 20, 1 << 20, 1000, 1, blocking{part: 16777, parts: 1}},    // bounded by the leaves
		{100, 1 << 30, 1, 1, blocking{part: 100, parts: 1}},             // rows longer than the bound
		{1 << 20, 1 << 30, 1, 1, blocking{part: minPartRows, parts: 1}}, // at least minPartRows
		{20, 100, 1, 3, blocking{part: 7, parts: 3}},
		{0, 0, 3, 2, blocking{part: 1, parts: 1}},
	} {
		if got := blockingFor(c.rows, c.nonzeros, c.trees, c.workers); got != c.want {
			t.Errorf("blockingFor(%d, %d, %d, %d) = %+v, want %+v", c.rows, c.nonzeros, c.trees, c.workers, got, c.want)
		}
	}
}

// TestPredictSameOnAnyWorkers predicts with fewer and more trees than
// workers, and in blocks of several parts: the leaf sums do not depend on
// the number of workers or on the blocking, as each row's leaves are summed
// tree after tree.
func TestPredictSameOnAnyWorkers(t *testing.T) {
	const D = 2000
	r := rand.New(rand.NewPCG(3, 4))
	x := &data.CSR{Rows: 5000, Cols: D, Indptr: []int64{0}}
	for range x.Rows {
		for range 1 + r.IntN(6) {
			x.Indices = append(x.Indices, int32(r.IntN(D)))
			x.Values = append(x.Values, r.Float32())
		}
		x.Indptr = append(x.Indptr, int64(len(x.Indices)))
	}
	topo, err := numa.Detect()
	if err != nil {
		t.Fatal(err)
	}
	for _, trees := range []int{1, 3} {
		f := &Model{D: D, L: 1000, TotalTrees: trees}
		for i := range trees {
			tr := manyNodes(2000)
			tr.X.Dim, tr.X.BucketSeed = 100, uint32(i+1) // its split dimensions are below 80
			b, err := tr.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			if err := f.AddTree(b); err != nil {
				t.Fatal(err)
			}
		}
		var want []model.Sparse
		for _, workers := range []int{1, 2, 3} {
			pool, err := numa.NewPool(topo, workers, numa.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range []blocking{f.blocking(x, pool), {part: 700, parts: 1}, {part: 600, parts: 3}} {
				got := make([]model.Sparse, x.Rows)
				err := f.forRows(x, pool, b, func(s *forestScratch, i int) {
					for _, l := range s.touched {
						got[i].Labels = append(got[i].Labels, l)
						got[i].Sums = append(got[i].Sums, s.acc[l])
						s.acc[l] = 0
					}
				})
				if err != nil {
					t.Fatal(err)
				}
				if want == nil {
					want = got
				} else if !reflect.DeepEqual(got, want) {
					t.Errorf("%d trees, %d workers, blocking %+v: other leaf sums than 1 worker's", trees, workers, b)
				}
			}
			pool.Close()
		}
	}
}
