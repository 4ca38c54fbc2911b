// Package data reads and writes multi-label datasets (the Extreme
// Classification Repository text format, the C++ DXML split format,
// LIBSVM multi-label, and the NumPy files of Python's XMC tools: SciPy CSR
// matrices in .npz files, dense arrays in .npy files) into compressed
// sparse row matrices, and generates synthetic ones for scaling studies.
package data

import (
	"fmt"
	"math"
	"slices"
)

// CSR is a sparse matrix in compressed sparse row form: the entries of row i
// are Indices[Indptr[i]:Indptr[i+1]] with Values at the same positions.
// Column indices within a row are strictly increasing. Row pointers are int64
// so that matrices with more than 2^31 non-zeros fit; column ids are int32 and
// values float32 to halve memory traffic in the trainers' hot loops.
type CSR struct {
	Rows, Cols int
	Indptr     []int64
	Indices    []int32
	Values     []float32
}

// Row returns the column indices and values of row i. The slices alias the
// matrix and must not be modified.
func (m *CSR) Row(i int) ([]int32, []float32) {
	lo, hi := m.Indptr[i], m.Indptr[i+1]
	return m.Indices[lo:hi], m.Values[lo:hi]
}

// NNZ is the number of stored entries.
func (m *CSR) NNZ() int64 { return m.Indptr[m.Rows] }

// Binary reports whether every stored value of m is the same, as in a bag
// of words that records presence: the kind of features whose defaults
// differ from those of real-valued (TF-IDF) features. A matrix with no
// entries is binary.
func (m *CSR) Binary() bool {
	vals := m.Values[:m.NNZ()]
	for _, v := range vals {
		if v != vals[0] {
			return false
		}
	}
	return true
}

// NonNegative reports whether no stored value of m is negative, as in
// counts and TF-IDF weights: then the positive part of a weight vector
// bounds every row's score from above.
func (m *CSR) NonNegative() bool {
	for _, v := range m.Values[:m.NNZ()] {
		if v < 0 {
			return false
		}
	}
	return true
}

// Slice returns rows lo to hi-1 of m as a matrix of its own shape that
// shares m's entries (only its row pointers are new): a batch of rows to
// process without copying them.
func (m *CSR) Slice(lo, hi int) CSR {
	start, end := m.Indptr[lo], m.Indptr[hi]
	ptr := make([]int64, hi-lo+1)
	for i := range ptr {
		ptr[i] = m.Indptr[lo+i] - start
	}
	return CSR{Rows: hi - lo, Cols: m.Cols, Indptr: ptr, Indices: m.Indices[start:end:end], Values: m.Values[start:end:end]}
}

// Clone returns a copy of m that shares no memory with it, allocated by the
// calling goroutine: called on a pinned worker, the copy is first touched,
// and so placed, in that worker's NUMA domain.
func (m *CSR) Clone() CSR {
	return CSR{Rows: m.Rows, Cols: m.Cols, Indptr: slices.Clone(m.Indptr),
		Indices: slices.Clone(m.Indices), Values: slices.Clone(m.Values)}
}

// Dataset is a multi-label dataset: X holds the features (N × D) and Y the
// labels (N × L, every stored value 1).
type Dataset struct {
	X, Y CSR
}

// N is the number of instances.
func (d *Dataset) N() int { return d.X.Rows }

// D is the number of features.
func (d *Dataset) D() int { return d.X.Cols }

// L is the number of labels.
func (d *Dataset) L() int { return d.Y.Cols }

// Validate checks the CSR invariants that the readers guarantee and the
// trainers rely on: Indptr has Rows+1 non-decreasing entries from 0 to
// len(Indices) == len(Values), column indices lie in [0, Cols) and strictly
// increase within each row, and values are finite. Use it on matrices built
// by hand or loaded from elsewhere.
func (m *CSR) Validate() error {
	if m.Rows < 0 || m.Cols < 0 {
		return fmt.Errorf("csr: negative shape %d×%d", m.Rows, m.Cols)
	}
	if len(m.Indptr) != m.Rows+1 {
		return fmt.Errorf("csr: len(Indptr)=%d, want Rows+1=%d", len(m.Indptr), m.Rows+1)
	}
	if len(m.Indices) != len(m.Values) {
		return fmt.Errorf("csr: len(Indices)=%d != len(Values)=%d", len(m.Indices), len(m.Values))
	}
	if m.Indptr[0] != 0 || m.Indptr[m.Rows] != int64(len(m.Indices)) {
		return fmt.Errorf("csr: Indptr runs from %d to %d, want 0 to %d", m.Indptr[0], m.Indptr[m.Rows], len(m.Indices))
	}
	for i := range m.Rows {
		lo, hi := m.Indptr[i], m.Indptr[i+1]
		if hi < lo || hi > int64(len(m.Indices)) {
			return fmt.Errorf("csr: row %d: Indptr goes from %d to %d (of %d entries)", i, lo, hi, len(m.Indices))
		}
		prev := int32(-1)
		for k := lo; k < hi; k++ {
			j := m.Indices[k]
			if j <= prev || int(j) >= m.Cols {
				return fmt.Errorf("csr: row %d: column %d after %d (want increasing, in [0, %d))", i, j, prev, m.Cols)
			}
			if v := float64(m.Values[k]); math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("csr: row %d column %d: value %v not finite", i, j, v)
			}
			prev = j
		}
	}
	return nil
}

// selectRows returns a new matrix holding the given rows of m, in that order.
func (m *CSR) selectRows(rows []int) CSR {
	var nnz int64
	for _, r := range rows {
		nnz += m.Indptr[r+1] - m.Indptr[r]
	}
	out := CSR{
		Rows:    len(rows),
		Cols:    m.Cols,
		Indptr:  make([]int64, 1, len(rows)+1),
		Indices: make([]int32, 0, nnz),
		Values:  make([]float32, 0, nnz),
	}
	for _, r := range rows {
		idx, val := m.Row(r)
		out.Indices = append(out.Indices, idx...)
		out.Values = append(out.Values, val...)
		out.Indptr = append(out.Indptr, int64(len(out.Indices)))
	}
	return out
}

// Subset returns a new dataset made of copies of the given rows, in the
// given order, for example a train/test split. Rows must lie in [0, N) and
// may repeat; D and L are kept.
func (d *Dataset) Subset(rows []int) *Dataset {
	return &Dataset{X: d.X.selectRows(rows), Y: d.Y.selectRows(rows)}
}

// NormalizeRows scales every row of m to unit L2 norm in place, the usual
// preprocessing for tf-idf features before linear models and cosine-based
// trees: each value becomes ScaleValue(v, UnitScale(row)). Rows whose
// entries are all zero are left untouched.
func NormalizeRows(m *CSR) {
	for i := range m.Rows {
		val := m.Values[m.Indptr[i]:m.Indptr[i+1]]
		s := UnitScale(val)
		for k, v := range val {
			val[k] = ScaleValue(v, s)
		}
	}
}

// UnitScale returns the factor that scales a row with values val to unit
// L2 norm, 1/‖val‖ with the norm accumulated in float64, or 1 for a row
// whose entries are all zero. Training and prediction both scale rows
// through it and ScaleValue, so that a model sees a test row exactly as it
// saw its training rows.
func UnitScale(val []float32) float64 {
	var s float64
	for _, v := range val {
		s += float64(v) * float64(v)
	}
	if s == 0 {
		return 1
	}
	return 1 / math.Sqrt(s)
}

// ScaleValue returns v scaled by s, rounded to float32 as a matrix stores it.
// A scale of 1 returns v unchanged.
func ScaleValue(v float32, s float64) float32 { return float32(float64(v) * s) }
