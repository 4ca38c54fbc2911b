package forest

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"xmc/data"
	"xmc/numa"
)

func TestBlockingFor(t *testing.T) {
	for _, c := range []struct {
		rows, trees, workers int
		want                 blocking
	}{
		{1000, 50, 16, blocking{part: 1000, parts: 1}},      // a tree per unit, every row
		{153025, 16, 16, blocking{part: maxPart, parts: 1}}, // parts bounded by the scratch
		{153025, 2, 16, blocking{part: maxPart, parts: 8}},  // more parts than trees
		{20, 1, 3, blocking{part: 7, parts: 3}},
		{0, 3, 2, blocking{part: 1, parts: 1}},
	} {
		if got := blockingFor(c.rows, c.trees, c.workers); got != c.want {
			t.Errorf("blockingFor(%d, %d, %d) = %+v, want %+v", c.rows, c.trees, c.workers, got, c.want)
		}
	}
}

// TestPredictSameOnAnyWorkers predicts more rows than a block holds with
// fewer and more trees than workers: the scores do not depend on the
// number of workers, as each row's leaves are summed tree after tree.
func TestPredictSameOnAnyWorkers(t *testing.T) {
	const D = 2000
	r := rand.New(rand.NewPCG(3, 4))
	x := &data.CSR{Rows: 2*maxPart + 1000, Cols: D, Indptr: []int64{0}}
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
		var first any
		for _, workers := range []int{1, 2, 3} {
			pool, err := numa.NewPool(topo, workers, numa.Options{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := f.Predict(x, 5, pool)
			pool.Close()
			if err != nil {
				t.Fatal(err)
			}
			if first == nil {
				first = got
				continue
			}
			if !reflect.DeepEqual(got, first) {
				t.Errorf("%d trees: %d workers predict other scores than 1", trees, workers)
			}
		}
	}
}
