package linear

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"xmc/model/internal/wire"
)

// Block holds the sparse weight vectors of a block of labels, the
// result of one training unit of a one-vs-all trainer, stored by label
// (CSR with one row per label): label Labels[r] has the weights
// Weight[Start[r]:Start[r+1]] on the columns Feature[Start[r]:Start[r+1]],
// in increasing column order. Absent columns have weight 0.
type Block struct {
	Labels  []int32
	Start   []int64 // len(Labels)+1, Start[0] = 0
	Feature []int32
	Weight  []float32
}

// Reset empties the block, keeping its capacity, and makes it ready for
// Append.
func (b *Block) Reset() {
	b.Labels, b.Feature, b.Weight = b.Labels[:0], b.Feature[:0], b.Weight[:0]
	b.Start = append(b.Start[:0], 0)
}

// Append adds label l with the weights of the dense vector w whose
// magnitude is at least prune (all non-zero weights if prune is 0), so that
// the stored model is sparse.
func (b *Block) Append(l int32, w []float64, prune float64) {
	for j, v := range w {
		b.keep(int32(j), v, prune)
	}
	b.endLabel(l)
}

// AppendSparse is Append for a dense w whose non-zero entries all lie in
// cols, given in increasing order: it reads only those entries, so that a
// label whose weights touch few columns costs O(len(cols)), not O(D).
func (b *Block) AppendSparse(l int32, cols []int32, w []float64, prune float64) {
	for _, j := range cols {
		b.keep(j, w[j], prune)
	}
	b.endLabel(l)
}

// AppendPairs is Append for the weight w[i] of each column cols[i], the
// columns in increasing order: a trainer that holds a label's weights as
// such pairs needs no dense vector of every column to append them.
func (b *Block) AppendPairs(l int32, cols []int32, w []float64, prune float64) {
	for i, j := range cols {
		b.keep(j, w[i], prune)
	}
	b.endLabel(l)
}

// AppendRow adds label l with the weights w of the columns cols, in
// increasing order, as they are: another block's row (Row), weights
// already pruned and stored.
func (b *Block) AppendRow(l int32, cols []int32, w []float32) {
	b.Feature = append(b.Feature, cols...)
	b.Weight = append(b.Weight, w...)
	b.endLabel(l)
}

// keep stores weight v of column j of the label being appended, unless it
// is 0 or of magnitude below prune.
func (b *Block) keep(j int32, v, prune float64) {
	if v != 0 && math.Abs(v) >= prune {
		b.Feature = append(b.Feature, j)
		b.Weight = append(b.Weight, float32(v))
	}
}

// endLabel ends the label being appended, l, after its weights.
func (b *Block) endLabel(l int32) {
	if len(b.Start) == 0 {
		b.Start = append(b.Start, 0)
	}
	b.Labels = append(b.Labels, l)
	b.Start = append(b.Start, int64(len(b.Feature)))
}

// Row returns the columns and weights of the block's r-th label.
func (b *Block) Row(r int) ([]int32, []float32) {
	lo, hi := b.Start[r], b.Start[r+1]
	return b.Feature[lo:hi], b.Weight[lo:hi]
}

// NNZ is the number of stored weights.
func (b *Block) NNZ() int { return len(b.Feature) }

// linearMagic starts every encoded Block.
const linearMagic uint32 = 0x4C494E57 // "LINW"

// MarshalBinary encodes the block little-endian: magic, label count, weight
// count, then Labels, Start, Feature and Weight.
func (b *Block) MarshalBinary() ([]byte, error) {
	n, nnz := len(b.Labels), len(b.Feature)
	if len(b.Start) != n+1 || len(b.Weight) != nnz || b.Start[n] != int64(nnz) {
		return nil, fmt.Errorf("linear block: %d labels, %d starts, %d features, %d weights do not fit", n, len(b.Start), nnz, len(b.Weight))
	}
	le := binary.LittleEndian
	out := make([]byte, 0, 4+16+4*n+8*(n+1)+8*nnz)
	out = le.AppendUint32(out, linearMagic)
	out = le.AppendUint64(out, uint64(n))
	out = le.AppendUint64(out, uint64(nnz))
	for _, l := range b.Labels {
		out = le.AppendUint32(out, uint32(l))
	}
	for _, s := range b.Start {
		out = le.AppendUint64(out, uint64(s))
	}
	for _, j := range b.Feature {
		out = le.AppendUint32(out, uint32(j))
	}
	for _, v := range b.Weight {
		out = le.AppendUint32(out, math.Float32bits(v))
	}
	return out, nil
}

// errLinearCorrupt is wrapped by every structural error of UnmarshalBinary.
var errLinearCorrupt = errors.New("corrupt linear block")

// UnmarshalBinary decodes a block written by MarshalBinary and checks its
// structure: offsets from 0 to the weight count, non-decreasing; columns
// non-negative and strictly increasing within a label; finite weights;
// non-negative labels. Bounds on labels and columns depend on the model and
// are checked by [Block.Check].
func (b *Block) UnmarshalBinary(data []byte) error {
	r := wire.NewReader(data)
	if r.U32() != linearMagic {
		return fmt.Errorf("%w: bad magic", errLinearCorrupt)
	}
	n, nnz := r.U64(), r.U64()
	if r.Err() != nil || n > uint64(len(data)) || nnz > uint64(len(data)) {
		return fmt.Errorf("%w: bad counts", errLinearCorrupt)
	}
	b.Labels = r.I32s(int(n))
	b.Start = r.I64s(int(n) + 1)
	b.Feature = r.I32s(int(nnz))
	b.Weight = r.F32s(int(nnz))
	if err := r.End(errLinearCorrupt); err != nil {
		return err
	}
	if b.Start[0] != 0 || b.Start[n] != int64(nnz) {
		return fmt.Errorf("%w: offsets do not cover the weights", errLinearCorrupt)
	}
	for i, l := range b.Labels {
		if l < 0 {
			return fmt.Errorf("%w: label %d", errLinearCorrupt, l)
		}
		lo, hi := b.Start[i], b.Start[i+1]
		if hi < lo {
			return fmt.Errorf("%w: offsets of label %d decrease", errLinearCorrupt, l)
		}
		for q := lo; q < hi; q++ {
			if j := b.Feature[q]; j < 0 || (q > lo && j <= b.Feature[q-1]) {
				return fmt.Errorf("%w: columns of label %d unsorted or negative", errLinearCorrupt, l)
			}
			if v := float64(b.Weight[q]); math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("%w: label %d has a non-finite weight", errLinearCorrupt, l)
			}
		}
	}
	return nil
}

// Check reports an error if a label lies outside [0, L) or a column
// outside [0, cols).
func (b *Block) Check(L, cols int) error {
	for i, l := range b.Labels {
		if int(l) >= L {
			return fmt.Errorf("%w: label %d outside [0, %d)", errLinearCorrupt, l, L)
		}
		if hi := b.Start[i+1]; hi > b.Start[i] && int(b.Feature[hi-1]) >= cols {
			return fmt.Errorf("%w: label %d has column %d outside [0, %d)", errLinearCorrupt, l, b.Feature[hi-1], cols)
		}
	}
	return nil
}
