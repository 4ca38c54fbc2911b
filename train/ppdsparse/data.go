package ppdsparse

import (
	"cmp"
	"math"
	"slices"

	"xmc/data"
	"xmc/train/onevsall"
)

// trainingData is the read-only training data of PPDSparse, one copy per
// NUMA domain: the one-vs-all data plus the inverted index the search for
// violating rows walks.
type trainingData struct {
	*onevsall.Data
	// XT is X by column (feature → rows): column j holds the rows with a
	// non-zero in feature j, by row or, for searches with a cutoff, by
	// decreasing |x_ij| (ties by row), so that a scan can stop at the first
	// negligible entry. The bias column is left empty: the search adds the
	// bias weight to every row itself.
	XT data.CSR
	// SqNorm is ‖x_i‖² per row, the curvature of a dual coordinate.
	SqNorm []float64
	// FeatureNorm is ‖x_i‖ per row over its features, the bias left out:
	// it bounds how far a row's score can move when w moves (see
	// labelScratch.search).
	FeatureNorm []float64
	// NonNegative says that no feature value is negative (see
	// data.CSR.NonNegative).
	NonNegative bool
}

// newTrainingData builds the training data of PPDSparse with parameters
// p from ds. Like onevsall.NewData it allocates everything, so that a replica
// built on a pinned worker lives in that worker's NUMA domain.
func newTrainingData(ds *data.Dataset, p Params) (*trainingData, error) {
	prep := p.Preprocess
	lin, err := onevsall.NewData(ds, prep)
	if err != nil {
		return nil, err
	}
	d := &trainingData{Data: lin, SqNorm: make([]float64, lin.X.Rows), FeatureNorm: make([]float64, lin.X.Rows)}
	x := &lin.X
	bias := int32(-1)
	if prep.Bias {
		bias = int32(lin.D)
	}
	for i := range x.Rows {
		idx, val := x.Row(i)
		sq := 0.0
		for k, v := range val {
			if idx[k] != bias {
				sq += float64(v) * float64(v)
			}
		}
		d.FeatureNorm[i] = math.Sqrt(sq)
		if bias >= 0 {
			sq++ // the bias feature's value is 1
		}
		d.SqNorm[i] = sq
	}
	// Only a cutoff needs the columns by magnitude; unsorted, debian-tags'
	// data builds in 12 ms rather than 71 (no search sums differently).
	d.XT = transpose(x, bias, p.Sparsify > 1 && p.SearchCutoff > 0)
	d.NonNegative = x.NonNegative()
	return d, nil
}

// transpose returns x by column, each column's entries by row or, if
// byMagnitude, by decreasing magnitude, then by row; column skip (if ≥ 0)
// is left empty.
func transpose(x *data.CSR, skip int32, byMagnitude bool) data.CSR {
	t := data.CSR{Rows: x.Cols, Cols: x.Rows, Indptr: make([]int64, x.Cols+1)}
	for _, j := range x.Indices[:x.NNZ()] {
		if j != skip {
			t.Indptr[j+1]++
		}
	}
	for j := range x.Cols {
		t.Indptr[j+1] += t.Indptr[j]
	}
	t.Indices = make([]int32, t.Indptr[x.Cols])
	t.Values = make([]float32, len(t.Indices))
	next := slices.Clone(t.Indptr[:x.Cols])
	for i := range x.Rows {
		idx, val := x.Row(i)
		for k, j := range idx {
			if j == skip {
				continue
			}
			t.Indices[next[j]], t.Values[next[j]] = int32(i), val[k]
			next[j]++
		}
	}
	if !byMagnitude {
		return t
	}
	type entry struct {
		row int32
		val float32
	}
	var col []entry
	for j := range x.Cols {
		lo, hi := t.Indptr[j], t.Indptr[j+1]
		col = col[:0]
		for k := lo; k < hi; k++ {
			col = append(col, entry{t.Indices[k], t.Values[k]})
		}
		slices.SortFunc(col, func(a, b entry) int {
			if c := cmp.Compare(math.Abs(float64(b.val)), math.Abs(float64(a.val))); c != 0 {
				return c
			}
			return cmp.Compare(a.row, b.row)
		})
		for k, e := range col {
			t.Indices[lo+int64(k)], t.Values[lo+int64(k)] = e.row, e.val
		}
	}
	return t
}
