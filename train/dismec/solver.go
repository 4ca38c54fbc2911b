package dismec

import (
	"math"
	"slices"
)

// Newton solver settings shared by every label, as in LIBLINEAR's NEWTON
// class and DiSMEC++: preconditioner mix, CG tolerance on the quadratic
// model, and the backtracking line search.
const (
	alphaPCG        = 0.01 // M = (1-α)·I + α·diag(H)
	cgEps           = 0.5  // CG stops when the quadratic model's relative decrease is below this
	lineSearchEta   = 0.01 // Armijo constant
	lineSearchMax   = 20   // backtracking steps before the search fails
	lineSearchShrnk = 0.5
)

// sqHinge minimises, for one label, the L2-regularised squared-hinge loss
//
//	f(w) = ½ Σ_{j≠bias} w_j² + C Σ_i max(0, 1 − y_i x_i·w)²
//
// by Newton's method with a preconditioned conjugate gradient for the
// Newton direction and a backtracking line search (LIBLINEAR's primal
// L2-loss SVC solver, as used by DiSMEC). The bias weight, if any, is not
// regularised. Gradients and Hessian-vector products visit only the active
// rows (margin below 1), which after a few iterations are a small part of
// the data. It is written here because no Go library offers a sparse
// truncated-Newton solver.
//
// The solver works on the rows in the order of a sortedRows, in which row
// i is the data row x.perm[i]: every per-row slice below is in that order.
//
// An sqHinge is one worker's scratch: every slice is allocated once and
// reused for every label the worker trains.
type sqHinge struct {
	x    *sortedRows
	cost float64
	bias int // the unregularised column, or -1

	y []float64 // ±1 per row
	// set is the working set of solve, increasing, rest the other rows,
	// and inSet marks the set's rows; sample is marginQuantile's. sub
	// solves the set, on setRows, a copy of its rows.
	set, rest []int32
	inSet     []bool
	sample    []float64
	sub       *sqHinge
	setRows   *sortedRows
	// compact says that the conjugate gradient runs on the columns of the
	// active rows alone (feats, increasing; the bias column among them),
	// over the vectors cg: so does the working set's solver. Elsewhere the
	// Hessian is the identity's, and the direction −g. featSet marks feats;
	// vFull and outFull are hessVec's full-width vectors in compact mode.
	compact        bool
	feats          []int32
	featSet        []bool
	cg             [6][]float64
	vFull, outFull []float64
	wx             []float64 // x_i·w per row
	xs             []float64 // x_i·s per row, for the line search
	active         []int32   // rows with y_i x_i·w < 1, increasing
	// inactive holds the other rows, increasing.
	inactive []int32
	// Per active row: x_i·v of the last hessVec(v), and x_i·s accumulated
	// from them as CG builds s, so that the line search computes x_i·s
	// only for the inactive rows.
	activeXV, activeXS []float64

	g, m, s, r, d, hd []float64 // gradient, preconditioner, CG vectors
}

// newSqHinge allocates a solver for the rows of x.
func newSqHinge(x *sortedRows, cost float64, bias int) *sqHinge {
	n, c := x.rows(), x.cols
	h := &sqHinge{x: x, cost: cost, bias: bias, set: make([]int32, 0, n), rest: make([]int32, 0, n), inSet: make([]bool, n),
		y: make([]float64, n), wx: make([]float64, n), xs: make([]float64, n),
		active: make([]int32, 0, n), inactive: make([]int32, 0, n), activeXV: make([]float64, 0, n), activeXS: make([]float64, 0, n),
		g: make([]float64, c), m: make([]float64, c), s: make([]float64, c),
		r: make([]float64, c), d: make([]float64, c), hd: make([]float64, c),
	}
	h.feats, h.featSet = make([]int32, 0, c), make([]bool, c)
	h.vFull, h.outFull = make([]float64, c), make([]float64, c)
	for k := range h.cg {
		h.cg[k] = make([]float64, c)
	}
	return h
}

// setLabel sets y to +1 on the data rows pos and −1 elsewhere.
func (h *sqHinge) setLabel(pos []int32) {
	y := h.y
	for i := range y {
		y[i] = -1
	}
	for _, i := range pos {
		y[h.x.rank[i]] = 1
	}
}

// regDot returns Σ_{j≠bias} a_j·b_j, the dot product over the
// regularised weights.
func (h *sqHinge) regDot(a, b []float64) float64 {
	var t float64
	for j := range a {
		t += a[j] * b[j]
	}
	if h.bias >= 0 {
		t -= a[h.bias] * b[h.bias]
	}
	return t
}

// directionMargins sets h.xs to X·s: from the products CG accumulated
// for the active rows, by a pass over the others.
func (h *sqHinge) directionMargins() {
	dotRows(h.x, h.inactive, h.s, h.xs)
	xs := h.activeXS[:len(h.active)]
	for k, i := range h.active {
		h.xs[i] = xs[k]
	}
}

// margins sets h.wx to X·w.
func (h *sqHinge) margins(w []float64) {
	dotRows(h.x, h.x.all, w, h.wx)
}

// loss returns C Σ_i max(0, 1 − y_i (wx_i + a·xs_i))², the loss at w + a·s
// given the margins of w and of s.
func (h *sqHinge) loss(a float64) float64 {
	var t float64
	y, xs := h.y, h.xs[:len(h.y)]
	wx := h.wx[:len(y)]
	// max rather than a branch, which rows in no particular order would
	// mispredict.
	if a == 0 {
		for i, yi := range y {
			z := max(1-yi*wx[i], 0)
			t += z * z
		}
	} else {
		for i, yi := range y {
			z := max(1-yi*(wx[i]+a*xs[i]), 0)
			t += z * z
		}
	}
	return h.cost * t
}

// gradient sets h.g to ∇f(w), h.m to the diagonal of the Hessian, and
// records the active rows, from the margins in h.wx. It returns ‖∇f(w)‖.
func (h *sqHinge) gradient(w []float64) float64 {
	x, c2 := h.x, 2*h.cost
	g, m := h.g, h.m[:len(h.g)]
	copy(g, w)
	for j := range m {
		m[j] = 1
	}
	if h.bias >= 0 {
		g[h.bias], m[h.bias] = 0, 0
	}
	// Split the rows into active and inactive, noting for the active ones
	// the loss derivative 2C·y_i(y_i x_i·w − 1) (in activeXV, which the
	// first hessVec overwrites). Without a branch, which rows in no
	// particular order would mispredict: row i is written as the k-th
	// active row and as the (i−k)-th inactive one, k the active rows
	// before it, and the next row overwrites whichever it is not.
	n := len(h.y)
	active, inactive, coef, wx := h.active[:n], h.inactive[:n], h.activeXV[:n], h.wx[:n]
	k := 0
	for i, yi := range h.y {
		z := yi * wx[i]
		active[k], coef[k], inactive[i-k] = int32(i), c2*yi*(z-1), int32(i)
		if z < 1 {
			k++
		}
	}
	active, coef = active[:k], coef[:k]
	gradRows(x, active, coef, c2, g, m)
	h.active, h.inactive = active, inactive[:n-k]
	h.activeXV = h.activeXV[:len(h.active)]
	h.activeXS = h.activeXS[:len(h.active)]
	return math.Sqrt(dot(h.g, h.g))
}

// hessVec sets out to H·v for the Hessian at the current active set:
// v (bias entry left out) + 2C Σ_{i active} x_i (x_i·v). It keeps the
// products x_i·v in h.activeXV.
func (h *sqHinge) hessVec(v, out []float64) {
	if h.compact {
		h.compactHessVec(v, out)
		return
	}
	copy(out, v)
	if h.bias >= 0 {
		out[h.bias] = 0
	}
	hessRows(h.x, h.active, 2*h.cost, v, out, h.activeXV)
}

// compactHessVec is hessVec for v and out over h.feats.
func (h *sqHinge) compactHessVec(v, out []float64) {
	vf, of := h.vFull, h.outFull
	for k, j := range h.feats {
		vf[j], of[j] = v[k], v[k]
	}
	if h.bias >= 0 {
		of[h.bias] = 0
	}
	hessRows(h.x, h.active, 2*h.cost, vf, of, h.activeXV)
	for k, j := range h.feats {
		out[k] = of[j]
	}
}

// compactVectors sets h.feats to the columns of the active rows and the
// bias column, and returns the gradient and the Hessian's diagonal over
// them, and the conjugate gradient's other vectors, of their length.
func (h *sqHinge) compactVectors() (g, m, s, r, d, hd []float64) {
	for _, i := range h.active {
		for _, j := range h.x.ind[h.x.ptr[i]:h.x.ptr[i+1]] {
			h.featSet[j] = true
		}
	}
	if h.bias >= 0 {
		h.featSet[h.bias] = true
	}
	h.feats = h.feats[:0]
	for j, in := range h.featSet {
		if in {
			h.feats = append(h.feats, int32(j))
			h.featSet[j] = false
		}
	}
	n := len(h.feats)
	g, m = h.cg[0][:n], h.cg[1][:n]
	for k, j := range h.feats {
		g[k], m[k] = h.g[j], h.m[j]
	}
	return g, m, h.cg[2][:n], h.cg[3][:n], h.cg[4][:n], h.cg[5][:n]
}

// expandDirection sets h.s to the direction whose entries over h.feats
// are s, and −g elsewhere, where the Hessian is the identity's.
func (h *sqHinge) expandDirection(s []float64) {
	for j, gj := range h.g {
		h.s[j] = -gj
	}
	for k, j := range h.feats {
		h.s[j] = s[k]
	}
}

// pcg approximately solves H s = −g by conjugate gradients preconditioned
// with the diagonal h.m, stopping when the decrease of the quadratic model
// Q(s) = gᵀs + ½ sᵀHs per iteration becomes small relative to Q (LIBLINEAR's
// rule). It leaves the direction in h.s and returns the iterations done.
func (h *sqHinge) pcg() int {
	g, m, s, r, d, hd := h.g, h.m, h.s, h.r, h.d, h.hd
	if h.compact {
		g, m, s, r, d, hd = h.compactVectors()
	}
	for j := range m {
		m[j] = (1 - alphaPCG) + alphaPCG*m[j]
	}
	var zr float64
	for j := range s {
		s[j] = 0
		r[j] = -g[j]
		d[j] = r[j] / m[j]
		zr += d[j] * r[j]
	}
	clear(h.activeXS)
	tol := min(cgEps, math.Sqrt(math.Sqrt(zr)))
	maxIter := max(len(s), 5)
	var q float64
	iter := 0
	for iter < maxIter {
		iter++
		h.hessVec(d, hd)
		dhd := dot(d, hd)
		if dhd <= 1e-16 {
			break
		}
		alpha := zr / dhd
		xs := h.activeXS[:len(h.activeXV)]
		for k, xv := range h.activeXV {
			xs[k] += alpha * xv
		}
		var sr, sg float64
		for j := range s {
			s[j] += alpha * d[j]
			r[j] -= alpha * hd[j]
			sr += s[j] * r[j]
			sg += s[j] * g[j]
		}
		// Q(s) = −½ sᵀ(r − g) since r = −g − Hs.
		newQ := -0.5 * (sr - sg)
		diff := newQ - q
		if newQ > 0 || diff > 0 || float64(iter)*diff >= tol*newQ {
			break
		}
		q = newQ
		var zrNew float64
		for j := range r {
			zrNew += r[j] / m[j] * r[j]
		}
		beta := zrNew / zr
		for j := range d {
			d[j] = beta*d[j] + r[j]/m[j]
		}
		zr = zrNew
	}
	if h.compact {
		h.expandDirection(s)
	}
	return iter
}

// lineSearch finds a step a along h.s from w with f(w + a·s) − f ≤
// η·a·∇fᵀs, starting at 1 and halving, and applies it to w and the margins.
// It returns the step (0 if none was found in lineSearchMax tries, w then
// unchanged) and the new objective value.
func (h *sqHinge) lineSearch(w []float64, f float64) (float64, float64) {
	s := h.s
	h.directionMargins()
	wTw, wTs, sTs := h.regDot(w, w), h.regDot(w, s), h.regDot(s, s)
	gTs := dot(h.g, s)
	a := 1.0
	for range lineSearchMax {
		fa := 0.5*(wTw+2*a*wTs+a*a*sTs) + h.loss(a)
		if fa-f <= lineSearchEta*a*gTs {
			s = s[:len(w)]
			for j := range w {
				w[j] += a * s[j]
			}
			wx, xs := h.wx, h.xs[:len(h.wx)]
			for i := range wx {
				wx[i] += a * xs[i]
			}
			return a, fa
		}
		a *= lineSearchShrnk
	}
	return 0, f
}

// solveResult reports how one minimisation went.
type solveResult struct {
	newton, cg int  // Newton and CG iterations
	converged  bool // ‖∇f(w)‖ ≤ tol at the end
	// rounds are the working sets solve trained on (0: every row from the
	// start).
	rounds int
}

// minimize runs Newton iterations from w (its margins already in h.wx)
// until ‖∇f(w)‖ ≤ tol, the objective stops decreasing, the line search
// fails or maxIter iterations are done, leaving the last point in w.
func (h *sqHinge) minimize(w []float64, tol float64, maxIter int) solveResult {
	var res solveResult
	f := 0.5*h.regDot(w, w) + h.loss(0)
	gnorm := h.gradient(w)
	for res.newton < maxIter && gnorm > tol {
		res.newton++
		res.cg += h.pcg()
		step, fNew := h.lineSearch(w, f)
		if step == 0 {
			break
		}
		fOld := f
		f = fNew
		gnorm = h.gradient(w)
		if math.Abs(fOld-f) <= 1e-12*math.Abs(f) {
			break
		}
	}
	res.converged = gnorm <= tol
	return res
}

// The working set of solve: a label is first trained on its positive rows
// and the n/workingShare rows (at least minWorking) of smallest margin at
// the start; while rows outside it violate their margin, the next
// n/workingShare rows of smallest margin, and every row of margin below 1,
// join it, at most workingRounds times and while it holds at most
// n/maxWorkingShare rows (its copy takes memory), before every row does.
// Labels of more than n/rarePositives positives train on every row: the
// rows active at their optimum are many and far from the start's smallest
// margins, and a working set cost them more Newton steps than it saved.
// The rows active at a rare label's optimum lie among the start's smallest
// margins (docs/algorithms/dismec.md gives the measurements).
const (
	workingShare    = 16
	minWorking      = 1024
	workingRounds   = 3
	maxWorkingShare = 4
	rarePositives   = 1024
)

// solve minimises f from w (its margins in h.wx for every row) for a
// label of the given positives like minimize, on a working set of the
// rows that may be active at the optimum: the rows outside it contribute
// nothing to f or its gradient as long as their margins stay at least 1,
// which a pass over them checks after each round. A rare label's Newton
// steps then pass over a few percent of the rows instead of all of them;
// the result is a minimiser of f over every row, to the same tolerance.
func (h *sqHinge) solve(w []float64, positives int, tol float64, maxIter int) solveResult {
	n := len(h.y)
	if k := max(minWorking, n/workingShare); 2*k >= n || positives*rarePositives > n {
		return h.minimize(w, tol, maxIter)
	}
	clear(h.inSet)
	h.selectRows(h.marginQuantile(1 / float64(workingShare)))
	var res solveResult
	for round := 1; ; round++ {
		res.add(h.solveSet(w, tol, maxIter-res.newton))
		// The other rows' margins at w, afresh.
		dotRows(h.x, h.rest, w, h.wx)
		res.rounds++
		violated := false
		for _, i := range h.rest {
			if h.y[i]*h.wx[i] < 1 {
				violated = true
				break
			}
		}
		if !violated {
			return res
		}
		if round < workingRounds && res.newton < maxIter {
			h.selectRows(max(1, h.marginQuantile(float64(round+1)/workingShare)))
		}
		if round == workingRounds || res.newton >= maxIter || len(h.set) > n/maxWorkingShare {
			// Every row's margin is w's: the set's from its solver, the
			// others' afresh.
			res.add(h.minimize(w, tol, maxIter-res.newton))
			return res
		}
	}
}

// solveSet minimises f over the rows of the working set from w, on a copy
// of those rows laid out one after the other (the set's rows lie scattered
// among the others, and read in place each entry costs several times more:
// docs/algorithms/dismec.md), and brings their margins back to h.wx.
func (h *sqHinge) solveSet(w []float64, tol float64, maxIter int) solveResult {
	sub := h.setSolver()
	r := sub.minimize(w, tol, maxIter)
	for k, i := range h.set {
		h.wx[i] = sub.wx[k]
	}
	return r
}

// setSolver returns the solver of the working set: its rows copied (see
// sortedRows.subset), their labels and margins taken from h, and the
// column vectors shared with h, which never runs beside it.
func (h *sqHinge) setSolver() *sqHinge {
	h.setRows = h.x.subset(h.set, h.setRows)
	if h.sub == nil {
		h.sub = &sqHinge{cost: h.cost, bias: h.bias, compact: true, feats: h.feats, featSet: h.featSet, cg: h.cg,
			vFull: h.vFull, outFull: h.outFull, g: h.g, m: h.m, s: h.s, r: h.r, d: h.d, hd: h.hd}
	}
	sub, n := h.sub, len(h.set)
	sub.x = h.setRows
	sub.y, sub.wx, sub.xs = slices.Grow(sub.y[:0], n)[:n], slices.Grow(sub.wx[:0], n)[:n], slices.Grow(sub.xs[:0], n)[:n]
	sub.active, sub.inactive = slices.Grow(sub.active[:0], n)[:n], slices.Grow(sub.inactive[:0], n)[:n]
	sub.activeXV, sub.activeXS = slices.Grow(sub.activeXV[:0], n), slices.Grow(sub.activeXS[:0], n)
	for k, i := range h.set {
		sub.y[k], sub.wx[k] = h.y[i], h.wx[i]
	}
	return sub
}

// add adds the iterations of r to res and takes its convergence.
func (res *solveResult) add(r solveResult) {
	res.newton += r.newton
	res.cg += r.cg
	res.converged = r.converged
}

// marginQuantile returns about the q-quantile of the rows' margins y_i
// x_i·w, from a sample of at most 4096 rows evenly spaced.
func (h *sqHinge) marginQuantile(q float64) float64 {
	n := len(h.y)
	step := max(1, n/4096)
	sample := h.sample[:0]
	for i := 0; i < n; i += step {
		sample = append(sample, h.y[i]*h.wx[i])
	}
	slices.Sort(sample)
	h.sample = sample
	return sample[min(len(sample)-1, int(q*float64(len(sample))))]
}

// selectRows adds to the working set the positive rows and the rows of
// margin below theta, and sets h.set to the working set and h.rest to the
// other rows.
func (h *sqHinge) selectRows(theta float64) {
	set, rest := h.set[:0], h.rest[:0]
	for i, yi := range h.y {
		if !h.inSet[i] && (yi > 0 || yi*h.wx[i] < theta) {
			h.inSet[i] = true
		}
		if h.inSet[i] {
			set = append(set, int32(i))
		} else {
			rest = append(rest, int32(i))
		}
	}
	h.set, h.rest = set, rest
}

// dot returns aᵀb.
func dot(a, b []float64) float64 {
	b = b[:len(a)]
	var t float64
	for i, v := range a {
		t += v * b[i]
	}
	return t
}
