package ensemble

import (
	"bytes"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"xmc/data"
	"xmc/model"
	"xmc/numa/numatest"
)

// TestSplitSums checks that the partial rows of two members, numbered as
// Partial numbers them, split back into each member's own encoding.
func TestSplitSums(t *testing.T) {
	const L = 10
	members := [][]model.Sparse{
		{{Labels: []int32{3, 1}, Sums: []float64{0.5, 0.25}}, {}},
		{{Labels: []int32{9}, Sums: []float64{-1}}, {Labels: []int32{0, 2}, Sums: []float64{2, 3}}},
	}
	joined := make([]model.Sparse, 2)
	for m, rows := range members {
		for i, r := range rows {
			for q, l := range r.Labels {
				joined[i].Labels = append(joined[i].Labels, int32(m*L)+l)
				joined[i].Sums = append(joined[i].Sums, r.Sums[q])
			}
		}
	}
	split, err := splitSums(model.EncodeSums(joined), 2, L, 2)
	if err != nil {
		t.Fatal(err)
	}
	for m, rows := range members {
		if !bytes.Equal(split[m], model.EncodeSums(rows)) {
			t.Errorf("member %d: split encoding differs from its own", m)
		}
	}
	if _, err := splitSums(model.EncodeSums(joined), 3, L, 2); err == nil {
		t.Error("a part of 2 rows split as 3")
	}
	if _, err := splitSums(model.EncodeSums(joined), 2, L, 1); err == nil {
		t.Error("a label of member 1 accepted in an ensemble of one")
	}
}

// heldout returns n rows of one true label each (label i mod 5) and two
// members' lists of 5 labels: the first member puts the true label first,
// the second fourth.
func heldout(n int) ([][][]model.Scored, *data.CSR) {
	y := &data.CSR{Rows: n, Cols: 5, Indptr: []int64{0}}
	lists := make([][][]model.Scored, 2)
	for i := range n {
		truth := int32(i % 5)
		y.Indices = append(y.Indices, truth)
		y.Values = append(y.Values, 1)
		y.Indptr = append(y.Indptr, int64(i+1))
		for m, place := range []int{0, 3} {
			var row []model.Scored
			for r := range 5 {
				l := (truth + int32(r-place) + 5) % 5
				row = append(row, model.Scored{Label: l, Score: float32(5 - r)})
			}
			lists[m] = append(lists[m], row)
		}
	}
	return lists, y
}

// TestFit checks that Fit weighs the member that ranks the true labels
// first at least as much as the other, reaches that member's P@k, and is
// deterministic: the same on one worker and on three.
func TestFit(t *testing.T) {
	lists, y := heldout(40)
	fit := func(lists [][][]model.Scored, kinds []string, workers int) Fitted {
		t.Helper()
		f, err := Fit(lists, y, kinds, 5, numatest.Pool(t, workers, 1))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	f := fit(lists, []string{"linear", "forest"}, 1)
	if !(f.Weights[0] >= f.Weights[1]) {
		t.Errorf("weights %v: want the first member's at least the second's", f.Weights)
	}
	// P@1 100, P@3 33.3, P@5 20 for the first member alone.
	if want := (100 + 100.0/3 + 20) / 3; math.Abs(f.Objective-want) > 1e-9 {
		t.Errorf("objective %v, want %v", f.Objective, want)
	}
	if again := fit(lists, []string{"linear", "forest"}, 3); !reflect.DeepEqual(again, f) {
		t.Errorf("a fit on 3 workers gave %+v, on one %+v", again, f)
	}
	one := fit(lists[:1], []string{"linear"}, 1)
	if one.Weights[0] != 1 || one.Calibrations[0] != Identity {
		t.Errorf("one member: %+v, want weight 1 and the identity", one)
	}
}

// TestBaggedOutOfBag checks that a resample's searched weights enter the
// mean only where they beat equal weights on its out-of-bag rows: uncalibrated,
// equal weights rank member 1's first label (member 0's third) above the
// true one, and the search gains on every resample; two copies of one
// member gain nothing over equal weights.
func TestBaggedOutOfBag(t *testing.T) {
	lists, y := heldout(40)
	cals := []Calibration{Identity, Identity}
	for _, c := range []struct {
		name     string
		lists    [][][]model.Scored
		searched int
	}{
		{"members apart", lists, fitBags},
		{"twins", [][][]model.Scored{lists[0], lists[0]}, 0},
	} {
		pool := numatest.Pool(t, 2, 1)
		tab, err := newTable(c.lists, cals, []int{5, 5}, 5, truthSets(y), pool)
		if err != nil {
			t.Fatal(err)
		}
		w, searched, err := tab.bagged(everyRow(y.Rows), pool)
		if err != nil {
			t.Fatal(err)
		}
		if searched != c.searched {
			t.Errorf("%s: %d resamples kept their searched weights, want %d", c.name, searched, c.searched)
		}
		if c.searched == 0 && (math.Abs(w[0]-0.5) > 1e-12 || math.Abs(w[1]-0.5) > 1e-12) {
			t.Errorf("%s: weights %v, want equal", c.name, w)
		}
		if c.searched > 0 && !(w[0] > w[1]) {
			t.Errorf("%s: weights %v, want the first member's above the second's", c.name, w)
		}
	}
}

// TestPlatt checks that Platt scaling finds a rising sigmoid where higher
// scores are more often true, and refuses labels all false.
func TestPlatt(t *testing.T) {
	lists, y := heldout(40)
	c, ok := platt(lists[0], truthSets(y))
	if !ok || !c.Sigmoid || !(c.Scale > 0) {
		t.Fatalf("calibration %+v, %v: want a rising sigmoid", c, ok)
	}
	if top, rest := c.Apply(5), c.Apply(4); !(top > 0.5 && rest < 0.5) {
		t.Errorf("σ(5) = %v, σ(4) = %v: want the first above 1/2 and the second below", top, rest)
	}
	none := &data.CSR{Rows: 40, Cols: 5, Indptr: make([]int64, 41)}
	if _, ok := platt(lists[0], truthSets(none)); ok {
		t.Error("fitted a calibration without a true label")
	}
}

// TestFuseFloors checks that a label one member leaves out gets that
// member's floor: its last score for a list as long as the member was asked
// for (its own count), 0 for a shorter one.
func TestFuseFloors(t *testing.T) {
	lists := [][][]model.Scored{
		{{{Label: 1, Score: 0.9}, {Label: 2, Score: 0.5}}},
		{{{Label: 3, Score: 0.8}}},
	}
	for _, c := range []struct {
		name  string
		asked []int
		want  []model.Scored
	}{
		{"second short", []int{2, 2}, []model.Scored{{Label: 3, Score: float32(0.5*0.5 + 0.5*0.8)}, {Label: 1, Score: 0.45}, {Label: 2, Score: 0.25}}},
		// Labels 2 and 3 tie: the lower label first.
		{"second full", []int{2, 1}, []model.Scored{{Label: 1, Score: float32(0.5*0.9 + 0.5*0.8)}, {Label: 2, Score: float32(0.5*0.5 + 0.5*0.8)}, {Label: 3, Score: float32(0.5*0.5 + 0.5*0.8)}}},
		{"both short", []int{3, 2}, []model.Scored{{Label: 1, Score: 0.45}, {Label: 3, Score: 0.4}, {Label: 2, Score: 0.25}}},
	} {
		var f fuser
		got := f.row(lists, 0, []float64{0.5, 0.5}, []Calibration{Identity, Identity}, c.asked, 3)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: fused %v, want %v", c.name, got, c.want)
		}
	}
}

// TestFuseOnPool checks that rows fused on a pool's workers are those fused
// on the caller, for pools of 1 and 3 workers and more rows than a worker
// takes at a time.
func TestFuseOnPool(t *testing.T) {
	const rows, members, k = 3*fuseRows + 17, 2, 5
	rng := rand.New(rand.NewPCG(3, 4))
	lists := make([][][]model.Scored, members)
	for m := range lists {
		lists[m] = make([][]model.Scored, rows)
		for i := range lists[m] {
			for _, l := range rng.Perm(200)[:rng.IntN(Candidates("forest", k)+1)] {
				lists[m][i] = append(lists[m][i], model.Scored{Label: int32(l), Score: rng.Float32()})
			}
			model.SortScored(lists[m][i])
		}
	}
	e := &Model{spec: []Member{{Weight: 0.7, Calibration: Identity}, {Weight: 0.3, Calibration: Calibration{Scale: 2, Shift: -1, Sigmoid: true}}},
		kinds: []string{"forest", "plt"}, L: 200}
	want, err := e.fuse(lists, rows, k, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, workers := range []int{1, 3} {
		got, err := e.fuse(lists, rows, k, numatest.Pool(t, workers, 1))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%d workers: fused rows differ from the caller's", workers)
		}
	}
}

// TestSearchRanksAsPrediction checks that the weight search's hits of a
// row are those of the row as prediction fuses it (fuser.row), for random
// members' lists, calibrations and weights, with every k up to 5 (the
// objective's precisions up to k), on 1 and 3 workers.
func TestSearchRanksAsPrediction(t *testing.T) {
	const rows, L = 300, 40
	rng := rand.New(rand.NewPCG(5, 6))
	kinds := []string{"forest", "ppdsparse", "plt"}
	y := &data.CSR{Rows: rows, Cols: L, Indptr: []int64{0}}
	lists := make([][][]model.Scored, len(kinds))
	for range rows {
		for _, l := range rng.Perm(L)[:1+rng.IntN(4)] {
			y.Indices, y.Values = append(y.Indices, int32(l)), append(y.Values, 1)
		}
		y.Indptr = append(y.Indptr, int64(len(y.Indices)))
		for m, kind := range kinds {
			var row []model.Scored
			for _, l := range rng.Perm(L)[:rng.IntN(Candidates(kind, 5)+1)] {
				// Scores on a coarse grid, so that fused scores tie.
				row = append(row, model.Scored{Label: int32(l), Score: float32(rng.IntN(4)) / 4})
			}
			model.SortScored(row)
			lists[m] = append(lists[m], row)
		}
	}
	cals := []Calibration{Identity, {Scale: 2, Shift: -1, Sigmoid: true}, {Scale: 0.5}}
	positive := truthSets(y)
	trials := [][]float64{{1, 0, 0}, {0.2, 0.3, 0.5}, {1.0 / 3, 1.0 / 3, 1.0 / 3}, {0, 0.55, 0.45}}
	for k := 1; k <= 6; k++ {
		want := wants(kinds, k)
		tab, err := newTable(lists, cals, want, k, positive, numatest.Pool(t, 2, 1))
		if err != nil {
			t.Fatal(err)
		}
		var f fuser
		expect := make([]int64, len(trials))
		for g, w := range trials {
			for i := range rows {
				fused := f.row(lists, i, w, cals, want, k)
				for _, kk := range tab.ks {
					for _, s := range fused[:min(kk, len(fused))] {
						if isTrue(positive[i], s.Label) {
							expect[g] += hitScale / int64(kk)
						}
					}
				}
			}
		}
		for _, workers := range []int{1, 3} {
			got, err := tab.hits(everyRow(rows), trials, numatest.Pool(t, workers, 1))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, expect) {
				t.Errorf("k = %d, %d workers: hits %v, prediction's %v", k, workers, got, expect)
			}
		}
	}
}

// TestResample checks that a bootstrap resample draws as many rows as it
// resamples, names each row once with its count, leaves out (out of bag)
// exactly the rows it did not draw, and is the same for the same stream.
func TestResample(t *testing.T) {
	all := everyRow(50)
	in, out := resample(all, rand.New(rand.NewPCG(fitStream, 1)))
	var n int64
	for q, c := range in.counts {
		if c < 1 || (q > 0 && in.rows[q] <= in.rows[q-1]) {
			t.Fatalf("row %d counted %d times, after row %d", in.rows[q], c, in.rows[max(q-1, 0)])
		}
		n += int64(c)
	}
	if n != 50 || in.total != 50 {
		t.Errorf("drew %d rows (total %d), want 50", n, in.total)
	}
	seen := make(map[int32]bool)
	for _, r := range append(slices.Clone(in.rows), out.rows...) {
		if seen[r] {
			t.Errorf("row %d both drawn and out of bag", r)
		}
		seen[r] = true
	}
	if len(seen) != 50 || out.total != int64(len(out.rows)) || len(out.rows) == 0 {
		t.Errorf("%d rows drawn or out of bag, %d out of bag (total %d), want all 50 and some out", len(seen), len(out.rows), out.total)
	}
	if again, _ := resample(all, rand.New(rand.NewPCG(fitStream, 1))); !reflect.DeepEqual(again, in) {
		t.Error("the same stream drew another resample")
	}
}
