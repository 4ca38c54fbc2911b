package plt

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"xmc/data"
	"xmc/model"
	"xmc/model/linear"
	"xmc/numa/numatest"
)

// smallTree returns a tree over 3 features (and the bias, column 3) and
// labels 0-3: the root's children are node 1 (labels 2 and 0 below it)
// and leaf 2 (label 3), node 1's children are leaves 3 (label 2) and 4
// (label 0); label 1 is in no tree, as a label without training rows.
func smallTree(shift float32) *Tree {
	return &Tree{Cols: 4,
		ChildStart: []int32{1, 3, 5, 5, 5, 5},
		Label:      []int32{-1, -1, 3, 2, 0},
		WStart:     []int64{0, 0, 2, 4, 6, 7},
		WIdx:       []int32{0, 3, 1, 3, 0, 2, 3},
		WVal:       []float32{2, 0.5 + shift, 1.5, -1, -1, 3, 0.25}}
}

// TestTreeEncoding round-trips a tree and refuses malformed ones, each with
// a message naming what is wrong.
func TestTreeEncoding(t *testing.T) {
	good := smallTree(0)
	b, err := good.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var back Tree
	if err := back.decode(b, 4); err != nil {
		t.Fatal(err)
	}
	if back.Cols != good.Cols || !slices.Equal(back.ChildStart, good.ChildStart) || !slices.Equal(back.Label, good.Label) ||
		!slices.Equal(back.WStart, good.WStart) {
		t.Fatalf("decoded %+v, want %+v", back, *good)
	}
	for e := range good.NNZ() {
		if j, x := back.weight(e); j != good.WIdx[e] || x != good.WVal[e] {
			t.Fatalf("weight %d decoded as (%d, %v), want (%d, %v)", e, j, x, good.WIdx[e], good.WVal[e])
		}
	}
	// Indexed, the tree holds its weights by column alone and is not
	// encoded again.
	back.index()
	if _, err := back.MarshalBinary(); err == nil {
		t.Error("an indexed tree was encoded")
	}
	cases := []struct {
		name    string
		corrupt func(t *Tree)
		L       int
	}{
		{"node its own child", func(t *Tree) { t.ChildStart = []int32{1, 3, 3, 3, 5, 5} }, 4},
		{"internal node with a label", func(t *Tree) { t.Label[1] = 1 }, 4},
		{"leaf without a label", func(t *Tree) { t.Label[2] = -1 }, 4},
		{"label out of range", func(t *Tree) { t.Label[2] = 4 }, 4},
		{"label twice", func(t *Tree) { t.Label[2] = 0 }, 4},
		{"root with weights", func(t *Tree) { t.WStart = []int64{0, 1, 2, 4, 6, 7} }, 4},
		{"column out of order", func(t *Tree) { t.WIdx[1] = 0 }, 4},
		{"column out of range", func(t *Tree) { t.WIdx[1] = 4 }, 4},
		{"weight not finite", func(t *Tree) { t.WVal[2] = float32(math.NaN()) }, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bad := smallTree(0)
			c.corrupt(bad)
			b, err := bad.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			var got Tree
			if err := got.decode(b, c.L); !errors.Is(err, errCorrupt) {
				t.Fatalf("decode: %v, want a corrupt tree", err)
			}
		})
	}
	var got Tree
	if err := got.decode(append(b, 0), 4); !errors.Is(err, errCorrupt) {
		t.Fatalf("trailing byte: %v, want a corrupt tree", err)
	}
	if err := got.decode(b[:len(b)-1], 4); !errors.Is(err, errCorrupt) {
		t.Fatalf("truncated: %v, want a corrupt tree", err)
	}
}

// bruteForce returns every label's probability in tree t for the dense
// row x: the product of the probabilities prob of the margins on its path.
func bruteForce(t *Tree, x []float64, prob func(margin float64) float64) map[int32]float64 {
	p := map[int32]float64{}
	var walk func(v int32, q float64)
	walk = func(v int32, q float64) {
		lo, hi := t.Children(v)
		if lo == hi {
			p[t.Label[v]] = q
		}
		for c := lo; c < hi; c++ {
			var m float64
			for e := t.WStart[c]; e < t.WStart[c+1]; e++ {
				m += float64(t.WVal[e]) * x[t.WIdx[e]]
			}
			walk(c, q*prob(m))
		}
	}
	walk(0, 1)
	return p
}

// TestPredictExact checks the best-first search against every label's
// probability computed along its path, for k = 1 to every label, on a
// model of two trees, and that two parts of it, each with one tree, merge
// into the same scores, bit for bit, for each loss.
func TestPredictExact(t *testing.T) {
	cases := []struct {
		loss Loss
		prob func(margin float64) float64
	}{
		{Logistic, func(m float64) float64 { return 1 / (1 + math.Exp(-m)) }},
		{SquaredHinge, func(m float64) float64 {
			if m >= 1 {
				return 1
			}
			return math.Exp(-(1 - m) * (1 - m))
		}},
	}
	for _, c := range cases {
		t.Run(string(c.loss), func(t *testing.T) { testPredictExact(t, c.loss, c.prob) })
	}
}

func testPredictExact(t *testing.T, loss Loss, prob func(float64) float64) {
	x := &data.CSR{Rows: 3, Cols: 3, Indptr: []int64{0, 2, 3, 6}, Indices: []int32{0, 2, 1, 0, 1, 2},
		Values: []float32{1, 2, 3, 0.5, -1, 4}}
	prep := linear.Preprocess{Normalize: true, Bias: true}
	trees := []*Tree{smallTree(0), smallTree(-2)}
	// Each model's trees decoded, as a model file's are (AddTree indexes them).
	decoded := func(trees ...*Tree) *Model {
		m := &Model{D: 3, L: 4, Prep: prep, Loss: loss, TotalTrees: 2}
		for _, tr := range trees {
			b, err := tr.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			if err := m.AddTree(b); err != nil {
				t.Fatal(err)
			}
		}
		return m
	}
	whole := decoded(trees...)
	pool := numatest.Pool(t, 2, 1)
	for k := 1; k <= 4; k++ {
		got, err := whole.Predict(x, k, pool)
		if err != nil {
			t.Fatal(err)
		}
		for i := range x.Rows {
			dense := make([]float64, 4)
			idx, val := x.Row(i)
			for q, j := range idx {
				dense[j] = float64(data.ScaleValue(val[q], prep.Scale(val)))
			}
			dense[3] = 1
			sum := map[int32]float64{}
			for _, tr := range trees {
				p := bruteForce(tr, dense, prob)
				var all []model.Scored
				for l, v := range p {
					all = append(all, model.Scored{Label: l, Score: float32(v)})
				}
				slices.SortFunc(all, func(a, b model.Scored) int { return cmpScored(a, b) })
				for _, s := range all[:min(k, len(all))] {
					sum[s.Label] += math.Round(p[s.Label]/probabilityStep) * probabilityStep
				}
			}
			var want []model.Scored
			for l, v := range sum {
				want = append(want, model.Scored{Label: l, Score: float32(v / 2)})
			}
			slices.SortFunc(want, cmpScored)
			want = want[:min(k, len(want))]
			if len(got[i]) != len(want) {
				t.Fatalf("k=%d row %d: %v, want %v", k, i, got[i], want)
			}
			for q := range want {
				if got[i][q].Label != want[q].Label || math.Abs(float64(got[i][q].Score-want[q].Score)) > 1e-6 {
					t.Fatalf("k=%d row %d: %v, want %v", k, i, got[i], want)
				}
			}
		}
		var parts [][]byte
		for _, tr := range trees {
			part := decoded(tr)
			sums, err := part.Partial(x, k, pool)
			if err != nil {
				t.Fatal(err)
			}
			parts = append(parts, model.EncodeSums(sums))
		}
		merged, err := whole.Merge(parts, x.Rows, k)
		if err != nil {
			t.Fatal(err)
		}
		for i := range merged {
			if !slices.Equal(merged[i], got[i]) {
				t.Fatalf("k=%d row %d: merged %v, whole %v", k, i, merged[i], got[i])
			}
		}
	}
}

// cmpScored orders scores best first, ties by label.
func cmpScored(a, b model.Scored) int {
	switch {
	case a.Score > b.Score:
		return -1
	case a.Score < b.Score:
		return 1
	}
	return int(a.Label - b.Label)
}

// TestMarginsByColumn checks a node's children's margins from the index by
// column against each child's own weights, bit for bit, on a tree whose
// large nodes find a row's columns in their bitmaps and whose small ones by
// binary search.
func TestMarginsByColumn(t *testing.T) {
	const cols = 10000
	rng := rand.New(rand.NewPCG(5, 6))
	weights := func(n int) ([]int32, []float32) {
		idx := rng.Perm(cols)[:n]
		slices.Sort(idx)
		var js []int32
		var xs []float32
		for _, j := range idx {
			js = append(js, int32(j))
			xs = append(xs, float32(rng.NormFloat64()))
		}
		return js, xs
	}
	// The root's children 1 and 2 have many columns; node 1's five leaves
	// and node 2's two, few.
	tr := &Tree{Cols: cols, ChildStart: []int32{1, 3, 8, 10, 10, 10, 10, 10, 10, 10, 10},
		Label: []int32{-1, -1, -1, 0, 1, 2, 3, 4, 5, 6}, WStart: []int64{0, 0}}
	for v := 1; v < tr.Nodes(); v++ {
		n := 20
		if v <= 2 {
			n = 700
		}
		js, xs := weights(n)
		tr.WIdx, tr.WVal = append(tr.WIdx, js...), append(tr.WVal, xs...)
		tr.WStart = append(tr.WStart, int64(len(tr.WIdx)))
	}
	own := &Tree{Cols: tr.Cols, ChildStart: tr.ChildStart, Label: tr.Label, WStart: tr.WStart,
		WIdx: slices.Clone(tr.WIdx), WVal: slices.Clone(tr.WVal)}
	tr.index()
	if b := tr.byCol; b.wordStart[0] < 0 || b.wordStart[1] >= 0 || b.wordStart[2] >= 0 {
		t.Fatalf("bitmaps at nodes 0, 1, 2: %v, want the root's alone", b.wordStart[:3])
	}
	s := &scratch{}
	for row := range 50 {
		dense := make([]float64, cols)
		s.idx, s.val = s.idx[:0], s.val[:0]
		for _, j := range slices.Sorted(slices.Values(rng.Perm(cols)[:rng.IntN(3000)])) {
			dense[j] = rng.NormFloat64()
			s.idx, s.val = append(s.idx, int32(j)), append(s.val, dense[j])
		}
		for p := int32(0); p < 3; p++ {
			lo, hi := tr.Children(p)
			got := tr.margins(p, lo, hi, s)
			for c := lo; c < hi; c++ {
				var want float64
				for e := own.WStart[c]; e < own.WStart[c+1]; e++ {
					want += float64(own.WVal[e]) * dense[own.WIdx[e]]
				}
				if got[c-lo] != want {
					t.Fatalf("row %d, node %d: child %d's margin %v, want %v", row, p, c, got[c-lo], want)
				}
			}
		}
	}
}

// TestParseLoss checks the loss a header records: logistic when it records
// none (the files written before the squared hinge), an error for a loss
// that does not exist.
func TestParseLoss(t *testing.T) {
	cases := []struct {
		params string
		want   Loss
		err    bool
	}{
		{`{"normalize":true,"bias":true}`, Logistic, false},
		{`{"loss":"log"}`, Logistic, false},
		{`{"loss":"sqhinge"}`, SquaredHinge, false},
		{`{"loss":"hinge"}`, "", true},
		{`{"loss":1}`, "", true},
	}
	for _, c := range cases {
		got, err := ParseLoss([]byte(c.params))
		if (err != nil) != c.err || got != c.want {
			t.Errorf("ParseLoss(%s) = %q, %v; want %q, error %v", c.params, got, err, c.want, c.err)
		}
	}
}
