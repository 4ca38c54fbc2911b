package dismec

import (
	"cmp"
	"math"
	"slices"

	"xmc/data"
)

// sortedRows is a copy of the rows of a CSR matrix ordered by increasing
// number of entries (rows of equal length in their original order), laid
// out for the solver's kernels. Rows of XMC data are short and of very
// uneven length: in data order the loop over a row's entries ends at a
// different count every row, and the processor mispredicts nearly every
// exit; among rows of equal length it predicts them. It is read-only once
// built and shared by the workers of a NUMA domain.
//
// Two more properties of the data save loads. The bias column, the
// constant 1 that ends every row, is left out of the rows and handled as a
// scalar: its weight is added to every dot product, and the kernels sum
// its share of gradients and Hessian-vector products in a register rather
// than in memory row after row. And the entries of a row of binary
// features are all equal after normalisation: for such a row x_i·v is
// s·Σ_j v_j and adding c·x_i to a vector adds the one number c·s to each
// of its entries, which saves loading and converting a value per entry.
type sortedRows struct {
	cols int
	// bias is the column of the constant 1 that ends every row, left out
	// of ind and val, or -1 if the rows are stored whole.
	bias int
	perm []int32 // the data row of each row
	all  []int32 // 0, 1, …: every row, for the kernels that take a list
	rank []int32 // the row of each data row: the inverse of perm
	ptr  []int64 // row i's entries are ind[ptr[i]:ptr[i+1]], val[ptr[i]:ptr[i+1]]
	ind  []int32
	val  []float32
	// scale[i] is the value shared by all stored entries of row i (0 for
	// an empty row), or NaN where they differ: the kernels then take the
	// general path, the only one that reads val (nil if no row needs it).
	scale []float64
}

// newSortedRows copies the rows of x in order of increasing length. If
// bias ≥ 0 and every row of x ends with a 1 in column bias, that entry is
// left out (see sortedRows.bias).
func newSortedRows(x *data.CSR, bias int) *sortedRows {
	n := x.Rows
	for i := 0; i < n && bias >= 0; i++ {
		idx, val := x.Row(i)
		if len(idx) == 0 || int(idx[len(idx)-1]) != bias || val[len(val)-1] != 1 {
			bias = -1
		}
	}
	cut := int64(0)
	if bias >= 0 {
		cut = 1
	}
	nnz := x.NNZ() - cut*int64(n)
	r := &sortedRows{cols: x.Cols, bias: bias, perm: make([]int32, n), rank: make([]int32, n),
		ptr: make([]int64, n+1), ind: make([]int32, 0, nnz), val: make([]float32, 0, nnz),
		scale: make([]float64, n)}
	r.all = make([]int32, n)
	for i := range r.perm {
		r.perm[i] = int32(i)
		r.all[i] = int32(i)
	}
	rowLen := func(i int32) int64 { return x.Indptr[i+1] - x.Indptr[i] }
	slices.SortStableFunc(r.perm, func(a, b int32) int { return cmp.Compare(rowLen(a), rowLen(b)) })
	for k, i := range r.perm {
		r.rank[i] = int32(k)
		lo, hi := x.Indptr[i], x.Indptr[i+1]-cut
		val := x.Values[lo:hi]
		r.ind = append(r.ind, x.Indices[lo:hi]...)
		r.val = append(r.val, val...)
		r.ptr[k+1] = int64(len(r.ind))
		r.scale[k] = commonValue(val)
	}
	if !slices.ContainsFunc(r.scale, math.IsNaN) {
		r.val = nil // every row takes the fast path
	}
	return r
}

// commonValue returns the value shared by all of val (0 if val is empty),
// or NaN if they differ.
func commonValue(val []float32) float64 {
	if len(val) == 0 {
		return 0
	}
	for _, v := range val[1:] {
		if v != val[0] {
			return math.NaN()
		}
	}
	return float64(val[0])
}

// rows returns the number of rows.
func (x *sortedRows) rows() int { return len(x.ptr) - 1 }

// subset returns the rows of x listed in rows, in that order, as rows of
// their own (row k is x's row rows[k]), in into's memory if it is not nil.
// Its perm and rank are empty: a solver of a subset takes its labels from
// the whole's.
func (x *sortedRows) subset(rows []int32, into *sortedRows) *sortedRows {
	if into == nil {
		into = &sortedRows{}
	}
	into.cols, into.bias = x.cols, x.bias
	into.ptr, into.ind, into.scale, into.all = append(into.ptr[:0], 0), into.ind[:0], into.scale[:0], into.all[:0]
	into.val = into.val[:0]
	for k, i := range rows {
		lo, hi := x.ptr[i], x.ptr[i+1]
		into.ind = append(into.ind, x.ind[lo:hi]...)
		if x.val != nil {
			into.val = append(into.val, x.val[lo:hi]...)
		}
		into.ptr = append(into.ptr, int64(len(into.ind)))
		into.scale = append(into.scale, x.scale[i])
		into.all = append(into.all, int32(k))
	}
	if x.val == nil {
		into.val = nil // as x's: no row reads it
	}
	return into
}

// biasOf returns the entry of v in the bias column, 0 if there is none.
func (x *sortedRows) biasOf(v []float64) float64 {
	if x.bias < 0 {
		return 0
	}
	return v[x.bias]
}

// addBias adds a to the entry of v in the bias column, if there is one.
func (x *sortedRows) addBias(v []float64, a float64) {
	if x.bias >= 0 {
		v[x.bias] += a
	}
}

// The kernels below hold the loops over rows that dominate training. In
// those that keep many values live across the loop over rows, the loops
// over a row's entries are small functions kept out of line
// (go:noinline): inlined, they measured a quarter slower, the register
// allocator spilling the loop counter to the stack at every entry. The
// sums run in four partial sums, which breaks the chain of dependent
// additions; in rows of equal length (see sortedRows) the extra loop exits
// predict well.

// dotRows sets out[i] = x_i·v for every row i in rows.
func dotRows(x *sortedRows, rows []int32, v, out []float64) {
	ptr, ind, val, scale := x.ptr, x.ind, x.val, x.scale
	vb := x.biasOf(v)
	for _, i := range rows {
		lo, hi := ptr[i], ptr[i+1]
		idx := ind[lo:hi]
		if s := scale[i]; s == s {
			out[i] = sumAt(v, idx)*s + vb
		} else {
			vals := val[lo:hi]
			vals = vals[:len(idx)]
			t := vb
			for k, j := range idx {
				t += float64(vals[k]) * v[j]
			}
			out[i] = t
		}
	}
}

// hessRows adds c·x_i (x_i·v) to out for every row i in rows, and stores
// x_i·v in xv[k] for the k-th row.
func hessRows(x *sortedRows, rows []int32, c float64, v, out, xv []float64) {
	ptr, ind, val, scale := x.ptr, x.ind, x.val, x.scale
	xv = xv[:len(rows)]
	vb := x.biasOf(v)
	var ob float64 // the bias column's share of out
	for r, i := range rows {
		lo, hi := ptr[i], ptr[i+1]
		var t float64
		if s := scale[i]; s == s {
			t = hessRow(v, out, ind[lo:hi], s, vb, c)
		} else {
			t = hessRowVal(v, out, ind[lo:hi], val[lo:hi], vb, c)
		}
		xv[r] = t
		ob += c * t
	}
	x.addBias(out, ob)
}

// gradRows adds coef[k]·x_i to g and c·x_i∘x_i to m for the k-th row i
// of rows.
func gradRows(x *sortedRows, rows []int32, coef []float64, c float64, g, m []float64) {
	ptr, ind, val, scale := x.ptr, x.ind, x.val, x.scale
	coef = coef[:len(rows)]
	var gb float64 // the bias column's share of g
	for r, i := range rows {
		a := coef[r]
		lo, hi := ptr[i], ptr[i+1]
		idx := ind[lo:hi]
		gb += a
		if s := scale[i]; s == s {
			addAt2(g, m, idx, a*s, c*s*s)
			continue
		}
		vals := val[lo:hi]
		vals = vals[:len(idx)]
		for k, j := range idx {
			v := float64(vals[k])
			g[j] += a * v
			m[j] += c * v * v
		}
	}
	x.addBias(g, gb)
	x.addBias(m, c*float64(len(rows)))
}

// sumAt returns the sum of v over idx, in four partial sums that break the
// chain of dependent additions. It is small enough to be inlined into the
// row loops that call it.
func sumAt(v []float64, idx []int32) float64 {
	var t0, t1, t2, t3 float64
	for len(idx) >= 4 {
		t0 += v[idx[0]]
		t1 += v[idx[1]]
		t2 += v[idx[2]]
		t3 += v[idx[3]]
		idx = idx[4:]
	}
	for _, j := range idx {
		t0 += v[j]
	}
	return (t0 + t1) + (t2 + t3)
}

// hessRow adds c·s·t to out[j] for every j in idx and returns t, the dot
// product of v with the row of entries s at idx and 1 in the bias column,
// whose entry of v is vb.
//
//go:noinline
func hessRow(v, out []float64, idx []int32, s, vb, c float64) float64 {
	t := sumAt(v, idx)*s + vb
	a := c * t * s
	b := idx
	for len(b) >= 4 {
		out[b[0]] += a
		out[b[1]] += a
		out[b[2]] += a
		out[b[3]] += a
		b = b[4:]
	}
	for _, j := range b {
		out[j] += a
	}
	return t
}

// hessRowVal is hessRow for a row of entries val (at least as long as
// idx) at idx.
//
//go:noinline
func hessRowVal(v, out []float64, idx []int32, val []float32, vb, c float64) float64 {
	val = val[:len(idx)]
	t := vb
	for k, j := range idx {
		t += float64(val[k]) * v[j]
	}
	a := c * t
	for k, j := range idx {
		out[j] += a * float64(val[k])
	}
	return t
}

// addAt2 adds a to g[j] and b to m[j] for every j in idx.
//
//go:noinline
func addAt2(g, m []float64, idx []int32, a, b float64) {
	for _, j := range idx {
		g[j] += a
		m[j] += b
	}
}
