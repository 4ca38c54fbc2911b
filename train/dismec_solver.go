package train

import (
	"math"

	"xmc/data"
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
// An sqHinge is one worker's scratch: every slice is allocated once and
// reused for every label the worker trains.
type sqHinge struct {
	x    *data.CSR
	cost float64
	bias int // the unregularised column, or -1

	y      []float64 // ±1 per row
	wx     []float64 // x_i·w per row
	xs     []float64 // x_i·s per row, for the line search
	active []int32   // rows with y_i x_i·w < 1, increasing
	// Per active row: x_i·v of the last hessVec(v), and x_i·s accumulated
	// from them as CG builds s, so that the line search computes x_i·s
	// only for the inactive rows.
	activeXV, activeXS []float64

	g, m, s, r, d, hd []float64 // gradient, preconditioner, CG vectors
}

// newSqHinge allocates a solver for the rows of x.
func newSqHinge(x *data.CSR, cost float64, bias int) *sqHinge {
	n, c := x.Rows, x.Cols
	return &sqHinge{x: x, cost: cost, bias: bias,
		y: make([]float64, n), wx: make([]float64, n), xs: make([]float64, n),
		active: make([]int32, 0, n), activeXV: make([]float64, 0, n), activeXS: make([]float64, 0, n),
		g: make([]float64, c), m: make([]float64, c), s: make([]float64, c),
		r: make([]float64, c), d: make([]float64, c), hd: make([]float64, c),
	}
}

// setLabel sets y to +1 on the rows pos and −1 elsewhere.
func (h *sqHinge) setLabel(pos []int32) {
	y := h.y
	for i := range y {
		y[i] = -1
	}
	for _, i := range pos {
		y[i] = 1
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
	next := 0 // first row not done
	for k, i := range h.active {
		dotRows(h.x, next, int(i), h.s, h.xs)
		h.xs[i] = h.activeXS[k]
		next = int(i) + 1
	}
	dotRows(h.x, next, h.x.Rows, h.s, h.xs)
}

// margins sets h.wx to X·w.
func (h *sqHinge) margins(w []float64) {
	dotRows(h.x, 0, h.x.Rows, w, h.wx)
}

// loss returns C Σ_i max(0, 1 − y_i (wx_i + a·xs_i))², the loss at w + a·s
// given the margins of w and of s.
func (h *sqHinge) loss(a float64) float64 {
	var t float64
	y, xs := h.y, h.xs[:len(h.y)]
	wx := h.wx[:len(y)]
	if a == 0 {
		for i, yi := range y {
			if z := 1 - yi*wx[i]; z > 0 {
				t += z * z
			}
		}
	} else {
		for i, yi := range y {
			if z := 1 - yi*(wx[i]+a*xs[i]); z > 0 {
				t += z * z
			}
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
	active := h.active[:0]
	wx := h.wx[:len(h.y)]
	for i, yi := range h.y {
		z := yi * wx[i]
		if z >= 1 {
			continue
		}
		a := c2 * yi * (z - 1)
		active = append(active, int32(i))
		lo, hi := x.Indptr[i], x.Indptr[i+1]
		idx, val := x.Indices[lo:hi], x.Values[lo:hi]
		val = val[:len(idx)]
		for k, j := range idx {
			v := float64(val[k])
			g[j] += a * v
			m[j] += c2 * v * v
		}
	}
	h.active = active
	h.activeXV = h.activeXV[:len(h.active)]
	h.activeXS = h.activeXS[:len(h.active)]
	return math.Sqrt(dot(h.g, h.g))
}

// hessVec sets out to H·v for the Hessian at the current active set:
// v (bias entry left out) + 2C Σ_{i active} x_i (x_i·v). It keeps the
// products x_i·v in h.activeXV.
func (h *sqHinge) hessVec(v, out []float64) {
	copy(out, v)
	if h.bias >= 0 {
		out[h.bias] = 0
	}
	hessRows(h.x, h.active, 2*h.cost, v, out, h.activeXV)
}

// pcg approximately solves H s = −g by conjugate gradients preconditioned
// with the diagonal h.m, stopping when the decrease of the quadratic model
// Q(s) = gᵀs + ½ sᵀHs per iteration becomes small relative to Q (LIBLINEAR's
// rule). It leaves the direction in h.s and returns the iterations done.
func (h *sqHinge) pcg() int {
	g, m, s, r, d, hd := h.g, h.m, h.s, h.r, h.d, h.hd
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

// dot returns aᵀb.
func dot(a, b []float64) float64 {
	b = b[:len(a)]
	var t float64
	for i, v := range a {
		t += v * b[i]
	}
	return t
}

// The two kernels below hold the loops over rows that dominate training.
// The dot product of a row is written out in each rather than called per
// row: rows of XMC data are short (tens of non-zeros), and a call per row
// costs as much as a dozen multiply-adds. The loops are deliberately
// plain: unrolling them with several partial sums, which pays off on long
// rows, measured slower on Bibtex and Delicious, whose short rows of
// varying length make the extra loop exits mispredict.

// dotRows sets out[i] = x_i·v for the rows i in [from, to) of x.
func dotRows(x *data.CSR, from, to int, v, out []float64) {
	for i := from; i < to; i++ {
		lo, hi := x.Indptr[i], x.Indptr[i+1]
		idx, val := x.Indices[lo:hi], x.Values[lo:hi]
		val = val[:len(idx)]
		var t float64
		for k, j := range idx {
			t += float64(val[k]) * v[j]
		}
		out[i] = t
	}
}

// hessRows adds c·x_i (x_i·v) to out for every row i in rows, and stores
// x_i·v in xv[k] for the k-th row.
func hessRows(x *data.CSR, rows []int32, c float64, v, out, xv []float64) {
	xv = xv[:len(rows)]
	for r, i := range rows {
		lo, hi := x.Indptr[i], x.Indptr[i+1]
		idx, val := x.Indices[lo:hi], x.Values[lo:hi]
		val = val[:len(idx)]
		var t float64
		for k, j := range idx {
			t += float64(val[k]) * v[j]
		}
		xv[r] = t
		t *= c
		for k, j := range idx {
			out[j] += t * float64(val[k])
		}
	}
}
