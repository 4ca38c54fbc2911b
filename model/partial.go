package model

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"xmc/model/internal/wire"
)

// Sparse is one row of a model part's partial label scores (see
// Model.Partial), labels in no particular order: a forest's sums of leaf
// values, not yet divided by the number of trees, or a linear shard's top
// scores.
type Sparse struct {
	Labels []int32
	Sums   []float64
}

// EncodeSums serialises partial sums for transfer: per row the count, then
// labels and sums.
func EncodeSums(rows []Sparse) []byte {
	n := 8
	for _, r := range rows {
		n += 4 + 12*len(r.Labels)
	}
	b := make([]byte, 0, n)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(rows)))
	for _, r := range rows {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(r.Labels)))
		for q, l := range r.Labels {
			b = binary.LittleEndian.AppendUint32(b, uint32(l))
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(r.Sums[q]))
		}
	}
	return b
}

// MergeSums adds the encoded partial sums of several ranks row by row,
// divides them by div (a forest's number of trees; 1 for parts whose
// labels are disjoint) and returns each row's k best labels: for a forest,
// the same scores, bit for bit, as Predict on the whole forest.
func MergeSums(parts [][]byte, rows, L, k, div int) ([][]Scored, error) {
	acc := make([]float64, L)
	var touched []int32
	var top Top
	out := make([][]Scored, rows)
	readers := make([]*wire.Reader, len(parts))
	for p := range parts {
		readers[p] = wire.NewReader(parts[p])
		if n := readers[p].U64(); n != uint64(rows) {
			return nil, fmt.Errorf("merge: part %d has %d rows, want %d", p, n, rows)
		}
	}
	for i := range rows {
		touched = touched[:0]
		for p := range readers {
			r := readers[p]
			n := int(r.U32())
			for range n {
				l, v := r.U32(), math.Float64frombits(r.U64())
				if r.Err() != nil || l >= uint32(L) {
					return nil, fmt.Errorf("merge: part %d row %d is malformed", p, i)
				}
				if acc[l] == 0 {
					touched = append(touched, int32(l))
				}
				acc[l] += v
			}
		}
		out[i] = TopOfSums(&top, acc, touched, div, k)
	}
	return out, nil
}

// TopOfSums returns, in a new slice, the k best of the labels touched by
// their sums in acc divided by div (a forest's number of trees), selected
// with top, and zeroes those sums: the one computation of a forest's
// scores, whether a rank holds the whole forest or rank 0 merges parts.
func TopOfSums(top *Top, acc []float64, touched []int32, div, k int) []Scored {
	top.Reset(k)
	for _, l := range touched {
		top.Push(Scored{Label: l, Score: float32(acc[l] / float64(div))})
		acc[l] = 0
	}
	return slices.Clone(top.Sorted())
}

// SparseOfSums returns the sums in acc of the labels touched as a sparse
// row, in new memory, and zeroes them: a part's partial result of a row
// (a forest's leaf sums, a label tree's probabilities).
func SparseOfSums(acc []float64, touched []int32) Sparse {
	row := Sparse{Labels: slices.Clone(touched), Sums: make([]float64, len(touched))}
	for q, l := range touched {
		row.Sums[q] = acc[l]
		acc[l] = 0
	}
	return row
}
