package plt

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"xmc/data"
	"xmc/model"
	pltmodel "xmc/model/plt"
	"xmc/mpi"
	"xmc/numa"
	"xmc/numa/numatest"
	"xmc/train"
	"xmc/train/traintest"
)

// trainTrees prepares p on ds with pool and trains every tree.
func trainTrees(t testing.TB, ds *data.Dataset, p Params, pool *numa.Pool) [][]byte {
	t.Helper()
	var units [][]byte
	err := mpi.Launch(1, mpi.MaxMessage, func(c mpi.Comm) error {
		w, err := (&Trainer{p: p}).Prepare(train.Env{Pool: pool, Comm: c, Log: slog.New(slog.DiscardHandler), Seed: 7}, ds)
		if err != nil {
			return err
		}
		for u := range w.Units {
			b, err := w.Team(u)
			if err != nil {
				return err
			}
			units = append(units, b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return units
}

// TestPLTBibtexAccuracy trains a tree on Bibtex with napkinXC's defaults
// and with Parabel's loss and C. napkinXC v0.7.2 (`nxc train --seed 1`,
// with `--loss squaredHinge -C 1` for the second) reached P@1/3/5
// 63.22/39.02/28.56 and 62.98/38.32/27.98 on the same split; this
// trainer's, with --seed 7, are logged.
func TestPLTBibtexAccuracy(t *testing.T) {
	tr, te := traintest.Bibtex(t)
	pool := numatest.Pool(t, 2, 1)
	parabel := DefaultParams()
	parabel.Loss, parabel.Cost = pltmodel.SquaredHinge, 1
	cases := []struct {
		name       string
		p          Params
		p1, p3, p5 float64 // at least
	}{
		{"napkinXC's defaults", DefaultParams(), 62.5, 38.5, 28},
		{"Parabel's loss and C", parabel, 62.3, 37.8, 27.4},
	}
	for _, c := range cases {
		units := trainTrees(t, tr, c.p, pool)
		m, err := pltmodel.Kind{}.Decode(newHeader(t, tr, c.p), units, len(units))
		if err != nil {
			t.Fatal(err)
		}
		got := traintest.PrecisionAtK(t, m, te, pool)
		t.Logf("%s: P@1/3/5 %.2f/%.2f/%.2f", c.name, got["P@1"], got["P@3"], got["P@5"])
		if got["P@1"] < c.p1 || got["P@3"] < c.p3 || got["P@5"] < c.p5 {
			t.Errorf("%s: P@1/3/5 %.2f/%.2f/%.2f, want at least %v/%v/%v", c.name, got["P@1"], got["P@3"], got["P@5"], c.p1, c.p3, c.p5)
		}
	}
}

// TestPLTSameOnAnyWorkers checks that a model of two trees is the same
// bytes whether one worker, three, or two in two NUMA domains train it,
// with each loss.
func TestPLTSameOnAnyWorkers(t *testing.T) {
	tr, _ := traintest.Bibtex(t)
	tr = traintest.Head(tr, 2000)
	for _, loss := range []pltmodel.Loss{pltmodel.Logistic, pltmodel.SquaredHinge} {
		p := DefaultParams()
		p.Trees, p.MaxLeaves, p.Loss = 2, 20, loss // deeper trees: splits of several levels
		want := trainTrees(t, tr, p, numatest.Pool(t, 1, 1))
		if bytes.Equal(want[0], want[1]) {
			t.Fatalf("%s: the two trees are the same", loss)
		}
		for _, layout := range []struct{ threads, domains int }{{3, 1}, {2, 2}} {
			got := trainTrees(t, tr, p, numatest.Pool(t, layout.threads, layout.domains))
			for u := range want {
				if !bytes.Equal(got[u], want[u]) {
					t.Errorf("%s, %d threads, %d domains: tree %d differs from one worker's", loss, layout.threads, layout.domains, u)
				}
			}
		}
	}
}

// TestSolversOptimal solves small random problems to a tight tolerance
// with each loss's solver and checks the primal optimality condition,
// w = C Σ_i y_i σ(−y_i w·x_i) x_i (logistic) and
// w = 2C Σ_i y_i max(0, 1 − y_i w·x_i) x_i (squared hinge).
func TestSolversOptimal(t *testing.T) {
	cases := []struct {
		loss  pltmodel.Loss
		solve func(*trainer, *nodeScratch, *rand.Rand) (int, bool)
		// coef is the coefficient of y_i x_i in C⁻¹ w at the optimum, of
		// the row's margin y_i w·x_i.
		coef func(margin float64) float64
	}{
		{pltmodel.Logistic, (*trainer).logistic, func(m float64) float64 { return 1 / (1 + math.Exp(m)) }},
		{pltmodel.SquaredHinge, (*trainer).squaredHinge, func(m float64) float64 { return 2 * max(0, 1-m) }},
	}
	for _, lc := range cases {
		rng := rand.New(rand.NewPCG(1, 2))
		for _, c := range []float64{0.1, 1, 10} {
			const rows, cols = 40, 6
			s := &nodeScratch{ptr: []int64{0}, cols: make([]int32, cols)}
			for i := range rows {
				var sq float64
				for j := range cols {
					if rng.Float64() < 0.6 || j == cols-1 {
						x := rng.NormFloat64()
						s.idx, s.val = append(s.idx, int32(j)), append(s.val, float32(x))
						x = float64(float32(x))
						sq += x * x
					}
				}
				s.ptr, s.sq, s.rows = append(s.ptr, int64(len(s.idx))), append(s.sq, sq), append(s.rows, int32(i))
				y := -1.0
				if rng.Float64() < 0.3 {
					y = 1
				}
				s.y = append(s.y, y)
			}
			tr := &trainer{p: DefaultParams()}
			tr.p.Cost, tr.p.Eps, tr.p.MaxIter = c, 1e-9, 100000
			if _, ok := lc.solve(tr, s, rand.New(rand.NewPCG(3, 4))); !ok {
				t.Fatalf("%s, C=%v: not converged", lc.loss, c)
			}
			grad := append([]float64(nil), s.w...)
			for i := range rows {
				a := c * s.y[i] * lc.coef(s.y[i]*s.dotRow(i))
				for q := s.ptr[i]; q < s.ptr[i+1]; q++ {
					grad[s.idx[q]] -= a * float64(s.val[q])
				}
			}
			for j, g := range grad {
				if math.Abs(g) > 1e-6*max(1, c) {
					t.Errorf("%s, C=%v: gradient %g in column %d", lc.loss, c, g, j)
				}
			}
		}
	}
}

// TestSplitBalanced splits labels of two clear groups (vectors on
// features 0-1 and on 2-3) and checks that the halves are the groups.
func TestSplitBalanced(t *testing.T) {
	v := &labelVectors{cols: 4}
	for l := range 9 {
		j := int32(0)
		if l%2 == 1 {
			j = 2
		}
		v.idx = append(v.idx, []int32{j, j + 1})
		v.val = append(v.val, []float32{0.8, 0.6})
	}
	set := []int32{0, 1, 2, 3, 4, 5, 6, 7, 8}
	s := newSplitScratch(4)
	if err := (splitter{v: v}).split(s, set, rand.New(rand.NewPCG(5, 6)), 1e-4, 10); err != nil {
		t.Fatal(err)
	}
	first, second := set[:5], set[5:]
	even := func(ls []int32) bool {
		for _, l := range ls {
			if l%2 != ls[0]%2 {
				return false
			}
		}
		return true
	}
	// Five even labels and four odd: the first half is one group.
	if !even(first) && !even(second) {
		t.Errorf("halves %v and %v mix the groups", first, second)
	}
}

// TestParamsValidate checks every parameter's range.
func TestParamsValidate(t *testing.T) {
	cases := []struct {
		flag  string
		spoil func(p *Params)
	}{
		{"--trees", func(p *Params) { p.Trees = 0 }},
		{"--max-leaves", func(p *Params) { p.MaxLeaves = 1 }},
		{"--kmeans-eps", func(p *Params) { p.KMeansEps = math.NaN() }},
		{"--kmeans-iters", func(p *Params) { p.KMeansIters = 0 }},
		{"--loss", func(p *Params) { p.Loss = "hinge" }},
		{"--cost", func(p *Params) { p.Cost = 0 }},
		{"--eps", func(p *Params) { p.Eps = math.Inf(1) }},
		{"--max-iter", func(p *Params) { p.MaxIter = 0 }},
		{"--prune", func(p *Params) { p.Prune = -1 }},
	}
	if err := DefaultParams().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		p := DefaultParams()
		c.spoil(&p)
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), c.flag) {
			t.Errorf("%s: %v, want an error naming it", c.flag, err)
		}
	}
}

// newHeader returns the header of a model of p trained on ds.
func newHeader(t testing.TB, ds *data.Dataset, p Params) model.Header {
	t.Helper()
	params, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return model.NewHeader(pltmodel.Kind{}, "plt", ds.D(), ds.L(), 7, params)
}

// TestSplitShared splits a set of bigSplit labels with a team of one
// worker and of three, and checks that the halves are the same and as
// even as the set allows.
func TestSplitShared(t *testing.T) {
	const labels, cols = bigSplit + 3, 6000
	rng := rand.New(rand.NewPCG(8, 9))
	v := &labelVectors{cols: cols}
	for range labels {
		var idx []int32
		var val []float32
		for j := rng.IntN(40); j < cols; j += 1 + rng.IntN(400) {
			idx, val = append(idx, int32(j)), append(val, float32(rng.Float64()))
		}
		v.idx, v.val = append(v.idx, idx), append(v.val, val)
	}
	var want []int32
	for _, workers := range []int{1, 3} {
		pool := numatest.Pool(t, workers, 1)
		set := make([]int32, labels)
		for l := range set {
			set[l] = int32(l)
		}
		err := pool.Together(func(team *numa.Team) error {
			scratches := numa.NewPerWorker(pool, func(numa.Worker) *splitScratch { return newSplitScratch(cols) })
			sp := splitter{v: v, team: team, scratches: scratches}
			return sp.split(scratches.Get(team.Lead()), set, rand.New(rand.NewPCG(1, 2)), 1e-4, 20)
		})
		if err != nil {
			t.Fatal(err)
		}
		half := (labels + 1) / 2
		if !slices.IsSorted(set[:half]) || !slices.IsSorted(set[half:]) {
			t.Fatalf("%d workers: halves not increasing", workers)
		}
		if want == nil {
			want = set
		} else if !slices.Equal(set, want) {
			t.Errorf("%d workers: halves differ from one worker's", workers)
		}
	}
}

// TestSelectFirst checks the selection against a sort, on keys with many
// ties broken by index.
func TestSelectFirst(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for _, n := range []int{1, 2, 3, 10, 101, 1000} {
		keys := make([]int, n)
		for i := range keys {
			keys[i] = rng.IntN(1 + n/4)
		}
		before := func(x, y int32) bool { return keys[x] < keys[y] || (keys[x] == keys[y] && x < y) }
		for _, k := range []int{0, 1, n / 2, n - 1, n} {
			order := make([]int32, n)
			for i := range order {
				order[i] = int32(i)
			}
			rng.Shuffle(n, func(a, b int) { order[a], order[b] = order[b], order[a] })
			selectFirst(order, k, before)
			sorted := slices.Clone(order)
			slices.SortFunc(sorted, func(x, y int32) int {
				if before(x, y) {
					return -1
				}
				return 1
			})
			got := slices.Clone(order[:k])
			slices.Sort(got)
			want := slices.Clone(sorted[:k])
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("n=%d k=%d: first %v, want %v", n, k, got, want)
			}
		}
	}
}
