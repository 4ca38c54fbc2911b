package model

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
)

// Tree is one trained CRAFTML tree stored in flat slices, so that a forest
// of millions of nodes is a few large allocations and encodes without
// pointer chasing.
//
// Node 0 is the root. An internal node n has k = NumChildren[n] children
// (at most MaxBranch) with consecutive ids starting at FirstChild[n]. Its
// classifier, the k child centroids over the projected feature space, is
// stored feature-major and sparse: the projected dimensions some centroid
// uses, SplitDim[SplitStart[n]:SplitStart[n+1]] in increasing order, each
// with SplitCount entries; the entries, EntryStart[n]:EntryStart[n+1], give
// the child (increasing within a dimension) and its weight. Routing then
// costs one table lookup per non-zero of the instance plus one multiply-add
// per centroid that uses the dimension.
//
// Weights are stored as bfloat16: routing only compares dot products, the
// 8-bit mantissa changes no accuracy figure measurably, and it halves the
// largest part of a forest. Training routes with the stored weights, so
// training and prediction agree exactly.
//
// A leaf (NumChildren 0) stores its mean label vector in
// LeafLabel/LeafValue[LeafStart[n]:LeafStart[n+1]], labels sorted.
type Tree struct {
	X, Y Projection // feature and label projections of this tree

	FirstChild  []int32
	NumChildren []int32
	Size        []int32 // training instances that reached the node
	SplitStart  []int64 // len(nodes)+1, into SplitDim and SplitCount
	EntryStart  []int64 // len(nodes)+1, into SplitChild and SplitWeight
	LeafStart   []int64 // len(nodes)+1

	SplitDim    []int32
	SplitCount  []uint8
	SplitChild  []uint8
	SplitWeight []BFloat16

	LeafLabel []int32
	LeafValue []float32
}

// MaxBranch is the largest number of children of a node, so that a child
// index fits a byte.
const MaxBranch = 255

// MaxProjectedDim bounds the projected dimensions of a tree: prediction
// keeps a table of this many entries per worker, so a damaged model must not
// be able to ask for more.
const MaxProjectedDim = 1 << 24

// BFloat16 is the upper half of an IEEE-754 float32 (sign, 8-bit exponent,
// 7-bit mantissa): float32's range with 3 significant digits.
type BFloat16 uint16

// ToBFloat16 rounds v to the nearest bfloat16, ties to even.
func ToBFloat16(v float32) BFloat16 {
	b := math.Float32bits(v)
	if b&0x7fffffff > 0x7f800000 { // NaN stays NaN
		return BFloat16(b>>16 | 0x40)
	}
	return BFloat16((b + 0x7fff + (b>>16)&1) >> 16)
}

// Float32 returns the value of h.
func (h BFloat16) Float32() float32 { return math.Float32frombits(uint32(h) << 16) }

// Reset empties the tree, keeping the capacity of its slices for reuse.
func (t *Tree) Reset() {
	*t = Tree{
		FirstChild: t.FirstChild[:0], NumChildren: t.NumChildren[:0], Size: t.Size[:0],
		SplitStart: t.SplitStart[:0], EntryStart: t.EntryStart[:0], LeafStart: t.LeafStart[:0],
		SplitDim: t.SplitDim[:0], SplitCount: t.SplitCount[:0],
		SplitChild: t.SplitChild[:0], SplitWeight: t.SplitWeight[:0],
		LeafLabel: t.LeafLabel[:0], LeafValue: t.LeafValue[:0],
	}
}

// Nodes is the number of nodes of the tree.
func (t *Tree) Nodes() int { return len(t.NumChildren) }

// SplitIndex finds the classifier weights of one internal node for a
// projected dimension in constant time: a dense table over the projected
// feature space, loaded for one node at a time. The node's weights are
// expanded to one dense row per dimension it uses, with a weight for every
// child (zero where the child has no entry), which is what BestDot scores.
// Loading costs the node's dimensions times its children, and pays off when
// many instances are routed through the node, as in batch prediction. A
// SplitIndex belongs to one goroutine.
type SplitIndex struct {
	// row holds, per projected dimension, 1 + the number of its row in
	// weights; 0 when the node does not use the dimension.
	row     []int32
	weights []float32 // the rows, DotStride(k) weights each
	k       int
	rows    []int32   // Best's scratch: the rows of an instance's non-zeros
	vals    []float32 // and their values
	tree    *Tree
	node    int32
}

// NewSplitIndex returns an empty index for trees whose projected feature
// dimension is at most dim.
func NewSplitIndex(dim int) *SplitIndex {
	return &SplitIndex{row: make([]int32, dim), node: -1}
}

// Load points the index at internal node n of t.
func (ix *SplitIndex) Load(t *Tree, n int32) {
	ix.Unload()
	k := int(t.NumChildren[n])
	stride := DotStride(k)
	lo := t.SplitStart[n]
	dims := t.SplitDim[lo:t.SplitStart[n+1]]
	size := len(dims) * stride
	w := slices.Grow(ix.weights[:0], size)[:size]
	clear(w)
	child, weight := t.SplitChild[t.EntryStart[n]:t.EntryStart[n+1]], t.SplitWeight[t.EntryStart[n]:t.EntryStart[n+1]]
	e := 0
	for q, d := range dims {
		ix.row[d] = int32(q + 1)
		r := w[q*stride : q*stride+k]
		for end := e + int(t.SplitCount[lo+int64(q)]); e < end; e++ {
			r[child[e]] = weight[e].Float32()
		}
	}
	ix.weights, ix.k = w, k
	ix.tree, ix.node = t, n
}

// Unload resets the table, so that loading the next node costs only that
// node's dimensions.
func (ix *SplitIndex) Unload() {
	if ix.tree == nil {
		return
	}
	t := ix.tree
	for _, d := range t.SplitDim[t.SplitStart[ix.node]:t.SplitStart[ix.node+1]] {
		ix.row[d] = 0
	}
	ix.tree, ix.node = nil, -1
}

// Best returns the child of the loaded node whose centroid has the largest
// dot product with the projected instance given as (bucket, signed value)
// pairs (collisions need not be merged: the product is linear in them). As
// centroids have unit norm this is the child of highest cosine; ties go to
// the lowest child. scores is scratch of at least the node's children.
//
// The non-zeros of dimensions the node does not use are left out, and the
// others scored by BestDot, as training scores them: training routes
// instances exactly as prediction will.
func (ix *SplitIndex) Best(buckets []int32, signed []float32, scores []float32) int32 {
	rows, vals := ix.rows[:0], ix.vals[:0]
	signed = signed[:len(buckets)]
	for i, b := range buckets {
		if r := ix.row[b]; r != 0 {
			rows = append(rows, r-1)
			vals = append(vals, signed[i])
		}
	}
	ix.rows, ix.vals = rows, vals
	return BestDot(ix.weights, DotStride(ix.k), rows, vals, scores[:ix.k])
}

// dotLanes is the number of children BestDot scores in one pass over an
// instance's non-zeros, each in a register: as many as fit the registers of
// amd64 without spilling.
const dotLanes = 5

// DotStride returns the row length of a BestDot weight matrix for k
// children: k rounded up to a multiple of dotLanes.
func DotStride(k int) int { return (k + dotLanes - 1) / dotLanes * dotLanes }

// BestDot returns the child c < len(scores) of the largest dot product
// Σ_i val[i]·w[rows[i]*stride+c], ties to the lowest, leaving the products
// in scores. The rows of w are stride ≥ DotStride(len(scores)) long, the
// weights of the children beyond len(scores) being zero or ignored.
//
// Each product is summed in float32 in order of i, so an instance gets the
// same scores whether w holds a row for every dimension (zero for those the
// node does not use: they add nothing) or only for the dimensions used and
// the instance's other non-zeros are left out. Training routes with the
// former and prediction (SplitIndex) with the latter. (A score that
// overflows to NaN, which finite data of any real scale cannot produce,
// would compare as the largest.)
func BestDot(w []float32, stride int, rows []int32, val []float32, scores []float32) int32 {
	k := len(scores)
	for c := 0; c < k; c += dotLanes {
		a0, a1, a2, a3, a4 := dot5(w, stride, c, rows, val)
		if c+dotLanes <= k {
			p := scores[c : c+dotLanes]
			p[0], p[1], p[2], p[3], p[4] = a0, a1, a2, a3, a4
		} else {
			p := [dotLanes]float32{a0, a1, a2, a3, a4}
			copy(scores[c:], p[:])
		}
	}
	// The scores are compared as integers, which compiles without a branch
	// to mispredict.
	best, top := 0, orderKey(scores[0])
	for c := 1; c < k; c++ {
		if v := orderKey(scores[c]); v > top {
			best, top = c, v
		}
	}
	return int32(best)
}

// orderKey maps a float32 to an int32 of the same order: for any f, g that
// are neither NaN nor -0, f < g exactly when orderKey(f) < orderKey(g). The
// scores of BestDot are sums of products started at +0, so never -0.
func orderKey(f float32) int32 {
	b := int32(math.Float32bits(f))
	return b ^ (b >> 31 & 0x7fffffff)
}

// dot5 returns the dot products of (rows, val) with columns c to c+4 of w:
// the inner loop of both training and prediction, kept in registers.
func dot5(w []float32, stride, c int, rows []int32, val []float32) (a0, a1, a2, a3, a4 float32) {
	val = val[:len(rows)]
	for i, r := range rows {
		o := int(r)*stride + c
		v, x := val[i], w[o:o+5]
		a0 += v * x[0]
		a1 += v * x[1]
		a2 += v * x[2]
		a3 += v * x[3]
		a4 += v * x[4]
	}
	return a0, a1, a2, a3, a4
}

// Project writes the projected (bucket, signed value) pairs of an instance
// into buckets and signed, which must have len(idx) room, and returns them.
func (t *Tree) Project(idx []int32, val []float32, buckets []int32, signed []float32) ([]int32, []float32) {
	buckets, signed = buckets[:len(idx)], signed[:len(idx)]
	for i, j := range idx {
		b, s := t.X.Map(j)
		buckets[i], signed[i] = b, s*val[i]
	}
	return buckets, signed
}

// Leaf returns the mean label vector stored at leaf n.
func (t *Tree) Leaf(n int32) (labels []int32, values []float32) {
	lo, hi := t.LeafStart[n], t.LeafStart[n+1]
	return t.LeafLabel[lo:hi], t.LeafValue[lo:hi]
}

// treeMagic starts every encoded tree, so that a section swapped or decoded
// as the wrong kind fails loudly.
const treeMagic uint32 = 0x54524532 // "TRE2": sparse bfloat16 splits

// MarshalBinary encodes the tree in a little-endian layout: magic, the two
// projections, the node count and the slice lengths, then each slice.
func (t *Tree) MarshalBinary() ([]byte, error) {
	n := t.Nodes()
	size := 4 + 6*4 + 4*8 + n*4*3 + (n+1)*8*3 + len(t.SplitDim)*5 + len(t.SplitChild)*3 + len(t.LeafLabel)*8
	b := make([]byte, 0, size)
	le := binary.LittleEndian
	b = le.AppendUint32(b, treeMagic)
	for _, p := range []Projection{t.X, t.Y} {
		b = le.AppendUint32(b, uint32(p.Dim))
		b = le.AppendUint32(b, p.BucketSeed)
		b = le.AppendUint32(b, p.SignSeed)
	}
	for _, v := range []int{n, len(t.SplitDim), len(t.SplitChild), len(t.LeafLabel)} {
		b = le.AppendUint64(b, uint64(v))
	}
	for _, s := range [][]int32{t.FirstChild, t.NumChildren, t.Size} {
		for _, v := range s {
			b = le.AppendUint32(b, uint32(v))
		}
	}
	for _, s := range [][]int64{t.SplitStart, t.EntryStart, t.LeafStart} {
		for _, v := range s {
			b = le.AppendUint64(b, uint64(v))
		}
	}
	for _, v := range t.SplitDim {
		b = le.AppendUint32(b, uint32(v))
	}
	b = append(b, t.SplitCount...)
	b = append(b, t.SplitChild...)
	for _, v := range t.SplitWeight {
		b = le.AppendUint16(b, uint16(v))
	}
	for _, v := range t.LeafLabel {
		b = le.AppendUint32(b, uint32(v))
	}
	for _, v := range t.LeafValue {
		b = le.AppendUint32(b, math.Float32bits(v))
	}
	return b, nil
}

// errTreeCorrupt is wrapped by every structural error of UnmarshalBinary.
var errTreeCorrupt = errors.New("corrupt tree")

// UnmarshalBinary decodes a tree written by MarshalBinary and checks that
// every offset and id is in range, so that a damaged file is an error rather
// than a panic at prediction time. Leaf labels are checked against the
// model's L by CheckLabels.
func (t *Tree) UnmarshalBinary(b []byte) error {
	r := reader{b: b}
	if r.u32() != treeMagic {
		return fmt.Errorf("%w: bad magic", errTreeCorrupt)
	}
	for _, p := range []*Projection{&t.X, &t.Y} {
		p.Dim = int32(r.u32())
		p.BucketSeed = r.u32()
		p.SignSeed = r.u32()
	}
	n, nDim, nEntry, nLeaf := r.u64(), r.u64(), r.u64(), r.u64()
	if r.err != nil || n == 0 || n > uint64(len(b)) || nDim > uint64(len(b)) || nEntry > uint64(len(b)) || nLeaf > uint64(len(b)) {
		return fmt.Errorf("%w: bad counts", errTreeCorrupt)
	}
	t.FirstChild = r.i32s(int(n))
	t.NumChildren = r.i32s(int(n))
	t.Size = r.i32s(int(n))
	t.SplitStart = r.i64s(int(n) + 1)
	t.EntryStart = r.i64s(int(n) + 1)
	t.LeafStart = r.i64s(int(n) + 1)
	t.SplitDim = r.i32s(int(nDim))
	t.SplitCount = r.bytes(int(nDim))
	t.SplitChild = r.bytes(int(nEntry))
	t.SplitWeight = r.bf16s(int(nEntry))
	t.LeafLabel = r.i32s(int(nLeaf))
	t.LeafValue = r.f32s(int(nLeaf))
	if r.err != nil {
		return fmt.Errorf("%w: %v", errTreeCorrupt, r.err)
	}
	if len(r.b) != 0 {
		return fmt.Errorf("%w: %d trailing bytes", errTreeCorrupt, len(r.b))
	}
	return t.validate()
}

// validate checks the structural invariants SplitIndex and Leaf rely on.
func (t *Tree) validate() error {
	n := int32(t.Nodes())
	if t.X.Dim <= 0 || t.Y.Dim <= 0 || t.X.Dim > MaxProjectedDim || t.Y.Dim > MaxProjectedDim {
		return fmt.Errorf("%w: projection dimension %d/%d", errTreeCorrupt, t.X.Dim, t.Y.Dim)
	}
	if t.SplitStart[0] != 0 || t.EntryStart[0] != 0 || t.LeafStart[0] != 0 ||
		t.SplitStart[n] != int64(len(t.SplitDim)) || t.EntryStart[n] != int64(len(t.SplitChild)) ||
		t.LeafStart[n] != int64(len(t.LeafLabel)) {
		return fmt.Errorf("%w: offsets do not cover the entries", errTreeCorrupt)
	}
	// Offsets must be monotone everywhere before any range is used.
	for i := range n {
		if t.SplitStart[i] > t.SplitStart[i+1] || t.EntryStart[i] > t.EntryStart[i+1] || t.LeafStart[i] > t.LeafStart[i+1] {
			return fmt.Errorf("%w: node %d offsets decrease", errTreeCorrupt, i)
		}
	}
	for i := range n {
		k := t.NumChildren[i]
		if k < 0 || k > MaxBranch || (k > 0 && (t.FirstChild[i] <= i || t.FirstChild[i] > n-k)) {
			return fmt.Errorf("%w: node %d children out of range", errTreeCorrupt, i)
		}
		e := t.EntryStart[i]
		for q := t.SplitStart[i]; q < t.SplitStart[i+1]; q++ {
			if d := t.SplitDim[q]; d < 0 || d >= t.X.Dim || (q > t.SplitStart[i] && d <= t.SplitDim[q-1]) {
				return fmt.Errorf("%w: node %d split dimensions unsorted or out of range", errTreeCorrupt, i)
			}
			c := int64(t.SplitCount[q])
			if c == 0 || e+c > t.EntryStart[i+1] {
				return fmt.Errorf("%w: node %d entry counts do not match its entries", errTreeCorrupt, i)
			}
			for p := e; p < e+c; p++ {
				if ch := int32(t.SplitChild[p]); ch >= k || (p > e && ch <= int32(t.SplitChild[p-1])) {
					return fmt.Errorf("%w: node %d entry names child %d of %d", errTreeCorrupt, i, ch, k)
				}
			}
			e += c
		}
		if e != t.EntryStart[i+1] {
			return fmt.Errorf("%w: node %d entry counts do not match its entries", errTreeCorrupt, i)
		}
	}
	return nil
}

// CheckLabels reports an error if a leaf names a label outside [0, L).
func (t *Tree) CheckLabels(L int) error {
	for _, l := range t.LeafLabel {
		if l < 0 || int(l) >= L {
			return fmt.Errorf("%w: leaf label %d outside [0, %d)", errTreeCorrupt, l, L)
		}
	}
	return nil
}

// reader decodes little-endian values from b, remembering the first error
// so that decoders read straight through and check once.
type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.err = fmt.Errorf("truncated: need %d bytes, have %d", n, len(r.b))
		return nil
	}
	p := r.b[:n]
	r.b = r.b[n:]
	return p
}

func (r *reader) u32() uint32 {
	p := r.take(4)
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(p)
}

func (r *reader) u64() uint64 {
	p := r.take(8)
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(p)
}

func (r *reader) i32s(n int) []int32 {
	p := r.take(4 * n)
	if p == nil {
		return make([]int32, 0)
	}
	s := make([]int32, n)
	for i := range s {
		s[i] = int32(binary.LittleEndian.Uint32(p[4*i:]))
	}
	return s
}

func (r *reader) bytes(n int) []byte {
	p := r.take(n)
	return append(make([]byte, 0, len(p)), p...)
}

func (r *reader) bf16s(n int) []BFloat16 {
	p := r.take(2 * n)
	if p == nil {
		return make([]BFloat16, 0)
	}
	s := make([]BFloat16, n)
	for i := range s {
		s[i] = BFloat16(binary.LittleEndian.Uint16(p[2*i:]))
	}
	return s
}

func (r *reader) f32s(n int) []float32 {
	p := r.take(4 * n)
	if p == nil {
		return make([]float32, 0)
	}
	s := make([]float32, n)
	for i := range s {
		s[i] = math.Float32frombits(binary.LittleEndian.Uint32(p[4*i:]))
	}
	return s
}

func (r *reader) i64s(n int) []int64 {
	p := r.take(8 * n)
	if p == nil {
		return make([]int64, 0)
	}
	s := make([]int64, n)
	for i := range s {
		s[i] = int64(binary.LittleEndian.Uint64(p[8*i:]))
	}
	return s
}

// TreeStats summarise a tree's shape for xmc inspect.
type TreeStats struct {
	Nodes, Leaves             int
	MinDepth, MaxDepth        int
	MeanDepth                 float64
	MeanLeafSize              float64
	MaxLeafSize               int
	SplitEntries, LeafEntries int
}

// Stats computes the shape of the tree: node and leaf counts, leaf depths,
// training instances per leaf and stored entries.
func (t *Tree) Stats() TreeStats {
	s := TreeStats{Nodes: t.Nodes(), MinDepth: math.MaxInt, SplitEntries: len(t.SplitChild), LeafEntries: len(t.LeafLabel)}
	depth := make([]int, t.Nodes())
	var depthSum, sizeSum int
	for n := range t.Nodes() {
		if k := t.NumChildren[n]; k > 0 {
			for c := t.FirstChild[n]; c < t.FirstChild[n]+k; c++ {
				depth[c] = depth[n] + 1
			}
			continue
		}
		s.Leaves++
		s.MinDepth = min(s.MinDepth, depth[n])
		s.MaxDepth = max(s.MaxDepth, depth[n])
		depthSum += depth[n]
		sizeSum += int(t.Size[n])
		s.MaxLeafSize = max(s.MaxLeafSize, int(t.Size[n]))
	}
	if s.Leaves > 0 {
		s.MeanDepth = float64(depthSum) / float64(s.Leaves)
		s.MeanLeafSize = float64(sizeSum) / float64(s.Leaves)
	}
	return s
}
