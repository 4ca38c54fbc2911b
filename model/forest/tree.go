package forest

import "math"

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
// Weights are held as bfloat16: routing only compares dot products, and
// the 8-bit mantissa changes no accuracy figure measurably. A trainer may
// round them further, to CodeMantissaBits bits of mantissa within
// CodeExponents binary orders of magnitude of their child's largest
// (RoundToCode, InCodeRange), so that the encoding stores each in one byte
// rather than two: the weights are most of a forest's bytes, but that
// rounding costs accuracy on some data (docs/algorithms/forest.md).
// Training routes with the stored weights, so training and prediction agree
// exactly.
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

// CodeMantissaBits is the mantissa, in bits, of the weights trainers store:
// with CodeExponents binary orders of magnitude, a sign bit and the
// mantissa, a weight's code takes one byte (see Tree.MarshalBinary).
const CodeMantissaBits = 3

// CodeExponents is the number of binary orders of magnitude, down from the
// largest magnitude of a child's weights, in which its other weights lie.
const CodeExponents = 1 << (7 - CodeMantissaBits)

// RoundToCode rounds v to CodeMantissaBits bits of mantissa, to nearest,
// ties to even: a bfloat16 of the 1-byte codes' grid (or infinite, or
// NaN, as v is).
func RoundToCode(v float32) float32 {
	b := math.Float32bits(v)
	if b&0x7fffffff >= 0x7f800000 {
		return v
	}
	const drop = 23 - CodeMantissaBits
	return math.Float32frombits((b + (1<<(drop-1) - 1) + (b>>drop)&1) >> drop << drop)
}

// InCodeRange reports whether v, rounded by RoundToCode, is a normal
// float32 within CodeExponents binary orders of magnitude of top, the
// largest magnitude of its child's weights: whether its code takes one
// byte. Trainers drop the weights outside, which are below top/2^16.
func InCodeRange(v, top float32) bool {
	ev, et := math.Float32bits(v)>>23&0xff, math.Float32bits(top)>>23&0xff
	return ev != 0 && ev+CodeExponents > et
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
