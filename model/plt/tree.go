// Package plt is the model of the probabilistic label tree trainer
// (train/plt): trees over the labels whose every node but the root holds a
// sparse linear classifier of "some label below this node is relevant,
// given that some label below its parent is" (Jasinska et al. 2016, as in
// napkinXC and Parabel). A label's probability is the product of the
// probabilities of the margins along its path (the loss the nodes were
// trained with turns a margin into a probability); prediction finds each
// tree's k most probable labels by a best-first search, and a model of
// several trees averages them. A tree is one unit of the model file.
package plt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"xmc/model/internal/wire"
)

// treeMagic opens every encoded tree.
const treeMagic = 0x31544c50 // "PLT1"

// errCorrupt is wrapped by every error of a malformed tree.
var errCorrupt = errors.New("corrupt label tree")

// Tree is one probabilistic label tree. Its nodes are numbered breadth
// first from the root, 0, so that node v's children are the consecutive
// nodes ChildStart[v] to ChildStart[v+1]-1, numbered after v. A node
// without children is a leaf and stands for one label; the root has no
// classifier (its probability is 1).
type Tree struct {
	// Cols is the number of weight columns: the data's features and the
	// bias column.
	Cols int
	// ChildStart has one entry per node and a last one, the node count.
	ChildStart []int32
	// Label is a leaf's label, -1 for a node with children.
	Label []int32
	// Node v's classifier is the sparse weights WIdx, WVal[WStart[v]:WStart[v+1]],
	// columns increasing; the root's is empty.
	WStart []int64
	WIdx   []int32
	WVal   []float32
	// raw holds a decoded tree's columns and values as encoded (aliasing
	// the encoding, little-endian), in place of WIdx and WVal, until
	// byCol, the weights by parent and column that prediction reads, is
	// built from them (Model.AddTree): a loaded tree holds its weights once.
	raw   struct{ idx, val []byte }
	byCol byColumn
}

// weight returns weight e's column and value, from WIdx and WVal or, in a
// tree being decoded, from its encoding.
func (t *Tree) weight(e int64) (int32, float32) {
	if t.raw.idx != nil {
		return int32(binary.LittleEndian.Uint32(t.raw.idx[4*e:])), math.Float32frombits(binary.LittleEndian.Uint32(t.raw.val[4*e:]))
	}
	return t.WIdx[e], t.WVal[e]
}

// NNZ returns the number of weights.
func (t *Tree) NNZ() int64 { return t.WStart[t.Nodes()] }

// Nodes returns the number of nodes.
func (t *Tree) Nodes() int { return len(t.Label) }

// Children returns the first child of node v and the end of its children.
func (t *Tree) Children(v int32) (lo, hi int32) { return t.ChildStart[v], t.ChildStart[v+1] }

// MarshalBinary encodes the tree: the magic, the node count, the columns
// and the weight count, then ChildStart, Label, WStart, WIdx and WVal,
// little-endian. A tree loaded for prediction, which no longer holds
// WIdx and WVal, is not encoded again.
func (t *Tree) MarshalBinary() ([]byte, error) {
	n, nnz := t.Nodes(), len(t.WIdx)
	if int64(nnz) != t.NNZ() || len(t.WVal) != nnz {
		return nil, fmt.Errorf("plt: encode a tree of %d weights holding %d columns and %d values", t.NNZ(), nnz, len(t.WVal))
	}
	b := make([]byte, 0, 24+8*n+4+8*(n+1)+8*nnz)
	b = binary.LittleEndian.AppendUint32(b, treeMagic)
	b = binary.LittleEndian.AppendUint32(b, uint32(n))
	b = binary.LittleEndian.AppendUint64(b, uint64(t.Cols))
	b = binary.LittleEndian.AppendUint64(b, uint64(nnz))
	for _, c := range t.ChildStart {
		b = binary.LittleEndian.AppendUint32(b, uint32(c))
	}
	for _, l := range t.Label {
		b = binary.LittleEndian.AppendUint32(b, uint32(l))
	}
	for _, s := range t.WStart {
		b = binary.LittleEndian.AppendUint64(b, uint64(s))
	}
	for _, j := range t.WIdx {
		b = binary.LittleEndian.AppendUint32(b, uint32(j))
	}
	for _, v := range t.WVal {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b, nil
}

// decode decodes b into t and checks it; L < 0 skips the check of the
// labels' range.
func (t *Tree) decode(b []byte, L int) error {
	r := wire.NewReader(b)
	if r.U32() != treeMagic {
		return fmt.Errorf("%w: bad magic", errCorrupt)
	}
	n := int(r.U32())
	cols, nnz := r.U64(), r.U64()
	if r.Err() != nil || n < 1 || cols > math.MaxInt32 || nnz > uint64(r.Len()) {
		return fmt.Errorf("%w: header of %d nodes, %d columns, %d weights", errCorrupt, n, cols, nnz)
	}
	*t = Tree{Cols: int(cols), ChildStart: r.I32s(n + 1), Label: r.I32s(n), WStart: r.I64s(n + 1)}
	t.raw.idx, t.raw.val = r.Take(4*int(nnz)), r.Take(4*int(nnz))
	if err := r.End(errCorrupt); err != nil {
		return err
	}
	return t.check(L, int64(nnz))
}

// check reports whether the tree of nnz weights is well formed: children
// numbered after their parent and consecutive, every node but the root
// some node's child, a label (in [0, L) when L ≥ 0, each once) on every
// leaf and on no other node, weights' columns increasing and in range, and
// finite weights.
func (t *Tree) check(L int, nnz int64) error {
	n := t.Nodes()
	cs := t.ChildStart
	if n < 2 || cs[0] != 1 {
		return fmt.Errorf("%w: %d nodes, the root's children starting at %d", errCorrupt, n, cs[0])
	}
	if int(cs[n]) != n {
		return fmt.Errorf("%w: children end at %d, want %d nodes", errCorrupt, cs[n], n)
	}
	var seen map[int32]bool
	if L >= 0 {
		seen = make(map[int32]bool, n)
	}
	for v := range n {
		if cs[v+1] < cs[v] || (cs[v+1] > cs[v] && int(cs[v]) <= v) {
			return fmt.Errorf("%w: node %d's children [%d, %d)", errCorrupt, v, cs[v], cs[v+1])
		}
		leaf, l := cs[v+1] == cs[v], t.Label[v]
		switch {
		case leaf && l < 0, !leaf && l != -1, L >= 0 && l >= int32(L):
			return fmt.Errorf("%w: node %d (%d children) has label %d", errCorrupt, v, cs[v+1]-cs[v], l)
		case seen != nil && l >= 0 && seen[l]:
			return fmt.Errorf("%w: label %d on two leaves", errCorrupt, l)
		case seen != nil && l >= 0:
			seen[l] = true
		}
	}
	ws := t.WStart
	if ws[0] != 0 || ws[1] != 0 || ws[n] != nnz {
		return fmt.Errorf("%w: weight offsets %d, %d ... %d for %d weights (the root has none)", errCorrupt, ws[0], ws[1], ws[n], nnz)
	}
	for v := range n {
		if ws[v+1] < ws[v] {
			return fmt.Errorf("%w: node %d's weights [%d, %d)", errCorrupt, v, ws[v], ws[v+1])
		}
		prev := int32(-1)
		for e := ws[v]; e < ws[v+1]; e++ {
			j, x := t.weight(e)
			if j <= prev || int(j) >= t.Cols {
				return fmt.Errorf("%w: node %d: weight column %d out of order or range (%d columns)", errCorrupt, v, j, t.Cols)
			}
			if f := float64(x); math.IsNaN(f) || math.IsInf(f, 0) {
				return fmt.Errorf("%w: node %d: weight %v of column %d", errCorrupt, v, x, j)
			}
			prev = j
		}
	}
	return nil
}
