package dismec

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"xmc/data"
	"xmc/model/linear"
	"xmc/numa"
	"xmc/numa/numatest"
	"xmc/train/onevsall"
	"xmc/train/traintest"
)

// trainDismec trains every unit of a DiSMEC model on the pool's workers,
// which take units from a shared queue as the runner's do, then help the
// others, and returns the encoded units and the trainer. blocks, if not
// nil, replace the trainer's units.
func trainDismec(t testing.TB, ds *data.Dataset, p Params, pool *numa.Pool, blocks ...[]int32) ([][]byte, *blockTrainer) {
	t.Helper()
	rep, err := numa.NewReplicas(pool, func(int) (*onevsall.Data, error) { return onevsall.NewData(ds, p.Preprocess) })
	if err != nil {
		t.Fatal(err)
	}
	tr := newBlockTrainer(p, rep, pool)
	if blocks != nil {
		tr.blocks = blocks
	}
	return traintest.WorkAll(t, pool, tr.Units(), tr.Work, tr.labels.Help), tr
}

// TestDismecHelped checks that workers without a unit help train the
// labels of the others' and that the units are the same bytes.
func TestDismecHelped(t *testing.T) {
	tr, _ := traintest.Bibtex(t)
	traintest.SameWhenHelped(t, func(pool *numa.Pool, blocks [][]int32) ([][]byte, int64) {
		units, trainer := trainDismec(t, tr, DefaultParams(), pool, blocks...)
		return units, trainer.labels.Helped()
	})
}

// linearModel decodes encoded units into a model.
func linearModel(t testing.TB, ds *data.Dataset, p Params, units [][]byte) *linear.Model {
	t.Helper()
	m, err := linear.Decode(ds.D(), ds.L(), p.Preprocess, units)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestDismecBibtexAccuracy trains all 159 labels of Bibtex from the zero
// and the MSI initialisation and scores the whole test set. DiSMEC++ (2
// threads on the development machine) reaches P@1/3/5 = 63.82/38.71/27.97
// from zero and 64.06/38.70/28.01 with MSI.
func TestDismecBibtexAccuracy(t *testing.T) {
	tr, te := traintest.Bibtex(t)
	pool := numatest.Pool(t, 2, 1)
	stats := map[string]labelStats{}
	for _, init := range []string{initZero, initMSI} {
		p := DefaultParams()
		p.Init = init
		start := time.Now()
		units, trainer := trainDismec(t, tr, p, pool)
		elapsed := time.Since(start)
		m := linearModel(t, tr, p, units)
		got := traintest.PrecisionAtK(t, m, te, pool)
		st := trainer.Stats()
		stats[init] = st
		t.Logf("%s: %.2fs P@1 %.2f P@3 %.2f P@5 %.2f, %d weights; %d labels, %d Newton, %d CG iterations, %d unconverged",
			init, elapsed.Seconds(), got["P@1"], got["P@3"], got["P@5"], m.NNZ(), st.Labels, st.Newton, st.CG, st.Unconverged)
		if got["P@1"] < 63.5 {
			t.Errorf("%s init: P@1 = %.2f, want at least 63.5", init, got["P@1"])
		}
		if got["P@5"] < 27.5 {
			t.Errorf("%s init: P@5 = %.2f, want at least 27.5", init, got["P@5"])
		}
		if st.Labels != int64(tr.L()) || st.Unconverged != 0 {
			t.Errorf("%s init: %d labels trained, %d unconverged; want %d and 0", init, st.Labels, st.Unconverged, tr.L())
		}
	}
	// MSI starts closer to the optimum: it must save CG iterations, the
	// bulk of the work.
	if z, m := stats[initZero], stats[initMSI]; float64(m.CG) > 0.8*float64(z.CG) {
		t.Errorf("MSI needed %d CG iterations, zero init %d: expected at least 20%% fewer", m.CG, z.CG)
	}
}

// TestDismecDeterministic checks that the trained bytes depend on the data
// and parameters only: 1 worker, 2 workers and 2 simulated NUMA domains
// (two data replicas) give identical units.
func TestDismecDeterministic(t *testing.T) {
	tr, _ := traintest.Bibtex(t)
	ds := traintest.Head(tr, 2000)
	p := DefaultParams()
	p.LabelsPerUnit = 8
	ref, _ := trainDismec(t, ds, p, numatest.Pool(t, 1, 1))
	for _, c := range []struct{ threads, domains int }{{2, 1}, {2, 2}} {
		got, _ := trainDismec(t, ds, p, numatest.Pool(t, c.threads, c.domains))
		for u := range ref {
			if !bytes.Equal(ref[u], got[u]) {
				t.Errorf("%d threads, %d domains: unit %d differs", c.threads, c.domains, u)
			}
		}
	}
}

func TestDismecParamsValidate(t *testing.T) {
	tests := []struct {
		edit func(*Params)
		want string // substring of the error, "" for none
	}{
		{func(p *Params) {}, ""},
		{func(p *Params) { p.Cost = 0 }, "--cost"},
		{func(p *Params) { p.Cost = math.NaN() }, "--cost"},
		{func(p *Params) { p.Init = "random" }, "--init"},
		{func(p *Params) { p.Prune = -1 }, "--prune"},
		{func(p *Params) { p.Eps = 0 }, "--eps"},
		{func(p *Params) { p.Eps = 1 }, "--eps"},
		{func(p *Params) { p.MaxNewtonIters = -3 }, "--max-newton-iters"},
		{func(p *Params) { p.LabelsPerUnit = -1 }, "--labels-per-unit"},
		{func(p *Params) { p.LabelsPerUnit = 0 }, "--labels-per-unit"},
		{func(p *Params) { p.MaxNewtonIters = 0 }, "--max-newton-iters"},
	}
	for i, tc := range tests {
		p := DefaultParams()
		tc.edit(&p)
		err := p.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("case %d: unexpected error %v", i, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("case %d: error %v, want one naming %s", i, err, tc.want)
		}
	}
}

// TestSortedRowsKernels checks the row kernels against plain sparse
// products on rows of every kind they tell apart: binary rows (all entries
// equal once normalised), real-valued rows, a row with no features and rows
// of one entry, with and without a bias column, and with a bias column the
// rows do not all end with (which must be kept in the rows).
func TestSortedRowsKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const cols = 12
	rows := make([][]float32, 60)
	for i := range rows {
		rows[i] = make([]float32, cols)
		n := rng.IntN(cols + 1)
		for _, j := range rng.Perm(cols)[:n] {
			switch i % 3 {
			case 0:
				rows[i][j] = float32(rng.NormFloat64())
			default:
				rows[i][j] = 1
			}
		}
	}
	rows[1] = make([]float32, cols) // empty
	rows[2] = make([]float32, cols)
	rows[2][5] = 1
	labels := make([][]int32, len(rows))
	for _, prep := range []linear.Preprocess{{}, {Normalize: true}, {Bias: true}, {Normalize: true, Bias: true}} {
		d, err := onevsall.NewData(traintest.Tiny(rows, labels, 1), prep)
		if err != nil {
			t.Fatal(err)
		}
		check := func(name string, x *sortedRows, wantBias int) {
			t.Helper()
			if x.bias != wantBias {
				t.Errorf("%+v %s: bias column %d, want %d", prep, name, x.bias, wantBias)
			}
			for k, i := range x.perm {
				if x.rank[i] != int32(k) {
					t.Fatalf("%+v %s: rank is not the inverse of perm", prep, name)
				}
				if k > 0 && x.ptr[k]-x.ptr[k-1] > x.ptr[k+1]-x.ptr[k] {
					t.Errorf("%+v %s: rows not by increasing length", prep, name)
				}
			}
			v := make([]float64, d.X.Cols)
			for j := range v {
				v[j] = rng.NormFloat64()
			}
			// Plain products in data order.
			xv := make([]float64, d.X.Rows)
			for i := range xv {
				idx, val := d.X.Row(i)
				for k, j := range idx {
					xv[i] += float64(val[k]) * v[j]
				}
			}
			got := make([]float64, d.X.Rows)
			dotRows(x, x.all, v, got)
			for k, i := range x.perm {
				if math.Abs(got[k]-xv[i]) > 1e-12 {
					t.Errorf("%+v %s: x_%d·v = %v, want %v", prep, name, i, got[k], xv[i])
				}
			}
			// Every other row, in the solver's order.
			var sub []int32
			for k := 0; k < x.rows(); k += 2 {
				sub = append(sub, int32(k))
			}
			const c = 1.5
			wantHv, wantG, wantM := make([]float64, d.X.Cols), make([]float64, d.X.Cols), make([]float64, d.X.Cols)
			coef := make([]float64, len(sub))
			for r, k := range sub {
				coef[r] = rng.NormFloat64()
				idx, val := d.X.Row(int(x.perm[k]))
				for n, j := range idx {
					wantHv[j] += c * xv[x.perm[k]] * float64(val[n])
					wantG[j] += coef[r] * float64(val[n])
					wantM[j] += c * float64(val[n]) * float64(val[n])
				}
			}
			hv, subXV := make([]float64, d.X.Cols), make([]float64, len(sub))
			hessRows(x, sub, c, v, hv, subXV)
			g, m := make([]float64, d.X.Cols), make([]float64, d.X.Cols)
			gradRows(x, sub, coef, c, g, m)
			for r, k := range sub {
				if math.Abs(subXV[r]-xv[x.perm[k]]) > 1e-12 {
					t.Errorf("%+v %s: hessRows x_%d·v = %v, want %v", prep, name, x.perm[k], subXV[r], xv[x.perm[k]])
				}
			}
			for j := range hv {
				if math.Abs(hv[j]-wantHv[j]) > 1e-12 || math.Abs(g[j]-wantG[j]) > 1e-12 || math.Abs(m[j]-wantM[j]) > 1e-12 {
					t.Errorf("%+v %s: column %d: H·v %v g %v m %v, want %v %v %v", prep, name, j, hv[j], g[j], m[j], wantHv[j], wantG[j], wantM[j])
				}
			}
		}
		check("", newSortedRows(&d.X, biasColumn(d)), biasColumn(d))
		if prep.Bias {
			// A row that does not end with the bias: the bias column stays in the rows.
			x := newSortedRows(&d.X, 0)
			check("bias 0", x, -1)
		}
	}
}

// newSolverFor returns a solver for label l of d, with its labels set.
func newSolverFor(d *onevsall.Data, l int32, cost float64) *sqHinge {
	h := newSqHinge(newSortedRows(&d.X, biasColumn(d)), cost, biasColumn(d))
	h.setLabel(d.Positives(l))
	return h
}

// objective evaluates f(w) from scratch, independently of the solver's
// cached margins.
func objective(d *onevsall.Data, l int32, cost float64, w []float64) float64 {
	pos := d.Positives(l)
	var f float64
	for j, v := range w {
		if !(d.Prep.Bias && j == d.D) {
			f += 0.5 * v * v
		}
	}
	for i := range d.X.Rows {
		idx, val := d.X.Row(i)
		var m float64
		for k, j := range idx {
			m += float64(val[k]) * w[j]
		}
		y := -1.0
		if _, ok := slices.BinarySearch(pos, int32(i)); ok {
			y = 1
		}
		if z := 1 - y*m; z > 0 {
			f += cost * z * z
		}
	}
	return f
}

// TestSqHingeDerivatives checks the gradient against central finite
// differences of the objective, and Hessian-vector products against finite
// differences of the gradient, on random sparse data with a bias.
func TestSqHingeDerivatives(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	rows := make([][]float32, 40)
	labels := make([][]int32, len(rows))
	for i := range rows {
		rows[i] = make([]float32, 6)
		for j := range rows[i] {
			if rng.IntN(2) == 0 {
				rows[i][j] = float32(rng.NormFloat64())
			}
		}
		if rng.IntN(3) == 0 {
			labels[i] = []int32{0}
		}
	}
	d, err := onevsall.NewData(traintest.Tiny(rows, labels, 1), linear.Preprocess{Bias: true})
	if err != nil {
		t.Fatal(err)
	}
	const cost = 1.5
	h := newSolverFor(d, 0, cost)
	w := make([]float64, d.X.Cols)
	for j := range w {
		w[j] = rng.NormFloat64() * 0.5
	}
	h.margins(w)
	h.gradient(w)
	const step = 1e-6
	for j := range w {
		wp, wm := slices.Clone(w), slices.Clone(w)
		wp[j] += step
		wm[j] -= step
		fd := (objective(d, 0, cost, wp) - objective(d, 0, cost, wm)) / (2 * step)
		if math.Abs(fd-h.g[j]) > 1e-5*max(1, math.Abs(fd)) {
			t.Errorf("gradient[%d] = %v, finite difference %v", j, h.g[j], fd)
		}
	}
	// H·v against (∇f(w + εv) − ∇f(w − εv)) / 2ε; ε small enough that no
	// row crosses the hinge.
	v := make([]float64, len(w))
	for j := range v {
		v[j] = rng.NormFloat64()
	}
	hv := make([]float64, len(w))
	h.hessVec(v, hv)
	gAt := func(e float64) []float64 {
		wv := slices.Clone(w)
		for j := range wv {
			wv[j] += e * v[j]
		}
		h.margins(wv)
		h.gradient(wv)
		return slices.Clone(h.g)
	}
	gp, gm := gAt(step), gAt(-step)
	for j := range hv {
		fd := (gp[j] - gm[j]) / (2 * step)
		if math.Abs(fd-hv[j]) > 1e-5*max(1, math.Abs(fd)) {
			t.Errorf("(Hv)[%d] = %v, finite difference %v", j, hv[j], fd)
		}
	}
}

// TestSqHingeHandSolved minimises problems whose optimum is known in closed
// form.
func TestSqHingeHandSolved(t *testing.T) {
	tests := []struct {
		name   string
		rows   [][]float32
		labels [][]int32
		bias   bool
		cost   float64
		want   []float64
	}{
		// x = ±1, y = ±1, no bias: f = ½w² + 2C(1 − w)², so w = 4C/(1+4C).
		{"symmetric", [][]float32{{1}, {-1}}, [][]int32{{0}, {}}, false, 1, []float64{0.8}},
		{"symmetric C=0.25", [][]float32{{1}, {-1}}, [][]int32{{0}, {}}, false, 0.25, []float64{0.5}},
		// x = 2 positive, x = 0 negative, unregularised bias b: the optimum
		// has b = −w and w = 4C/(1+4C); both margins are 0.8.
		{"bias", [][]float32{{2}, {0}}, [][]int32{{0}, {}}, true, 1, []float64{0.8, -0.8}},
		// Separable: margins 10w on three rows; the regulariser keeps them
		// just under 1: w − 60C(1 − 10w) = 0, w = 60C/(1+600C).
		{"separable", [][]float32{{10}, {-10}, {10}}, [][]int32{{0}, {}, {0}}, false, 1, []float64{60.0 / 601}},
	}
	for _, tc := range tests {
		d, err := onevsall.NewData(traintest.Tiny(tc.rows, tc.labels, 1), linear.Preprocess{Bias: tc.bias})
		if err != nil {
			t.Fatal(err)
		}
		for _, init := range []string{initZero, initBias, initMSI} {
			p := DefaultParams()
			p.Cost, p.Init, p.Eps, p.Prune = tc.cost, init, 1e-6, 0
			tr := &blockTrainer{Params: p}
			s := tr.newScratch(d, newSortedRows(&d.X, biasColumn(d)))
			if err := tr.trainLabel(d, s, 0); err != nil {
				t.Fatal(err)
			}
			for j, want := range tc.want {
				if math.Abs(s.w[j]-want) > 1e-4 {
					t.Errorf("%s, %s init: w = %v, want %v", tc.name, init, s.w, tc.want)
					break
				}
			}
		}
	}
}

// TestMSIEquations checks that the mean-separating initialisation maps the
// mean of the positives to 1 and the mean of the negatives to −2, for
// every label of a slice of Bibtex, and falls back when it cannot.
func TestMSIEquations(t *testing.T) {
	tr, _ := traintest.Bibtex(t)
	d, err := onevsall.NewData(traintest.Head(tr, 500), linear.Preprocess{Normalize: true, Bias: true})
	if err != nil {
		t.Fatal(err)
	}
	n := d.X.Rows
	posSum := make([]float64, d.X.Cols)
	w := make([]float64, d.X.Cols)
	tested := 0
	for l := range int32(d.L) {
		pos := d.Positives(l)
		clear(posSum)
		for _, i := range pos {
			idx, val := d.X.Row(int(i))
			for k, j := range idx {
				posSum[j] += float64(val[k])
			}
		}
		ok := msiWeights(d, len(pos), posSum, w)
		if len(pos) == 0 {
			if ok {
				t.Errorf("label %d has no positives but MSI did not fall back", l)
			}
			continue
		}
		if !ok {
			t.Errorf("label %d: MSI fell back with %d positives", l, len(pos))
			continue
		}
		var wp, wn float64 // <w, p̄> and <w, n̄>
		for j, m := range d.Mean {
			p := posSum[j] / float64(len(pos))
			neg := (float64(n)*m - posSum[j]) / float64(n-len(pos))
			wp += w[j] * p
			wn += w[j] * neg
		}
		if math.Abs(wp-msiPositive) > 1e-6 || math.Abs(wn-msiNegative) > 1e-6 {
			t.Errorf("label %d: <w,p̄> = %v, <w,n̄> = %v, want %v and %v", l, wp, wn, msiPositive, msiNegative)
		}
		tested++
	}
	if tested < 100 {
		t.Errorf("only %d labels tested", tested)
	}
	// Every row positive: no negatives, the system is singular.
	all := make([]float64, d.X.Cols)
	for j, m := range d.Mean {
		all[j] = m * float64(n)
	}
	if msiWeights(d, n, all, w) {
		t.Error("MSI did not fall back with no negatives")
	}
}

// TestBiasInit checks that the bias initialisation minimises the loss over
// the bias alone.
func TestBiasInit(t *testing.T) {
	for _, c := range []struct{ P, n int }{{0, 10}, {3, 10}, {10, 10}, {1, 1000}} {
		loss := func(b float64) float64 {
			return float64(c.P)*math.Pow(max(0, 1-b), 2) + float64(c.n-c.P)*math.Pow(max(0, 1+b), 2)
		}
		b := biasInit(c.P, c.n)
		if loss(b) > loss(b+1e-4) || loss(b) > loss(b-1e-4) {
			t.Errorf("P=%d n=%d: bias %v is not the minimiser", c.P, c.n, b)
		}
	}
}

// TestWorkingSet trains the rare labels of generated data of 20,000 rows
// on a working set of rows and on every row, from the same start: the
// working set's weights meet the gradient tolerance over every row, and
// their objective is the full solve's within the tolerance's reach.
func TestWorkingSet(t *testing.T) {
	ds, err := data.GenerateDataset(data.GenConfig{N: 20000, D: 3000, L: 4000, AvgLabels: 2, AvgFeatures: 20, LabelExponent: 1, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	p := DefaultParams()
	d, err := onevsall.NewData(ds, p.Preprocess)
	if err != nil {
		t.Fatal(err)
	}
	x := newSortedRows(&d.X, biasColumn(d))
	counts := d.LabelCounts()
	tried := 0
	for l := range int32(d.L) {
		if counts[l] == 0 || counts[l] > 4 || tried == 12 {
			continue
		}
		tried++
		pos := d.Positives(l)
		start := make([]float64, d.X.Cols)
		posSum := make([]float64, d.X.Cols)
		for _, i := range pos {
			idx, val := d.X.Row(int(i))
			for k, j := range idx {
				posSum[j] += float64(val[k])
			}
		}
		if !msiWeights(d, len(pos), posSum, start) {
			t.Fatalf("label %d: no MSI start", l)
		}
		const tol = 1e-3
		ws, full := slices.Clone(start), slices.Clone(start)
		h := newSqHinge(x, p.Cost, biasColumn(d))
		h.setLabel(pos)
		h.margins(ws)
		res := h.solve(ws, len(pos), tol, 1000)
		if res.rounds == 0 || !res.converged {
			t.Fatalf("label %d (%d positives): %+v, want a converged working-set solve", l, len(pos), res)
		}
		h.margins(full)
		if r := h.minimize(full, tol, 1000); !r.converged {
			t.Fatalf("label %d: full solve %+v", l, r)
		}
		// The gradient over every row at the working set's weights.
		h.margins(ws)
		if g := h.gradient(ws); g > tol {
			t.Errorf("label %d: ‖∇f‖ over every row %.3g at the working set's weights, above the tolerance %g", l, g, tol)
		}
		fw, ff := objective(d, l, p.Cost, ws), objective(d, l, p.Cost, full)
		if math.Abs(fw-ff) > tol*tol*float64(d.X.Cols) {
			t.Errorf("label %d: objective %.9g on the working set, %.9g on every row", l, fw, ff)
		}
	}
	if tried < 12 {
		t.Fatalf("%d rare labels tried, want 12", tried)
	}
}
