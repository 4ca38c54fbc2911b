package forest

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"xmc/model/internal/wire"
)

// PackedTree is a tree as prediction holds it: its encoding (the TRE3
// layout of Tree.MarshalBinary), checked once, with an index of where each
// node's splits start. Routing reads a node's weights straight from the
// encoding, so a forest predicts without ever holding its trees decoded:
// decoded, the trees of a 50-tree Bibtex model take 1.61 times their
// encodings, and in a profile of a 2-rank Bibtex run decoding them cost
// about as much as routing the test set through them (0.23 s against
// 0.25 s), most of it first touching the new memory (about 11 µs a page on
// the development VM).
// Loaded from a model file, a PackedTree points into the file's bytes.
type PackedTree struct {
	X Projection // feature projection
	y Projection // label projection, kept for unpack

	enc     []byte // the TRE3 encoding
	mask    int    // bytes of a child mask
	weights int    // offset in enc of the bfloat16 weights

	firstChild, numChildren, size []int32
	splitDims                     []int32 // per node, its split dimensions
	splitAt                       []int   // per node, offset in enc of its first (gap, mask) pair
	entryAt                       []int   // per node, index of its first weight
	entries                       int
	maxBranch                     int

	// Leaves are read from the encoding too: their labels are varints
	// starting at leafAt[n], their values float32 at values+4*leafStart[n].
	leafStart []int64 // as in Tree
	leafAt    []int
	values    int
	maxLabel  int32 // -1 when no leaf has a label
}

// PackTree checks the encoded tree b (either layout UnmarshalBinary reads)
// and indexes it for prediction. It keeps b, which must not change; a TRE2
// encoding is converted, in new memory.
func PackTree(b []byte) (*PackedTree, error) {
	r := wire.NewReader(b)
	switch r.U32() {
	case treeMagic:
		return packV3(b)
	case treeMagicV2:
		var t Tree
		if err := t.UnmarshalBinary(b); err != nil {
			return nil, err
		}
		enc, err := t.MarshalBinary()
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errTreeCorrupt, err)
		}
		return packV3(enc)
	}
	return nil, fmt.Errorf("%w: bad magic", errTreeCorrupt)
}

// packV3 checks every count, offset and id of the TRE3 encoding b, so that
// routing and leaf lookups can trust it, and records where each node's
// splits lie.
func packV3(b []byte) (*PackedTree, error) {
	r := wire.NewReader(b[4:])
	var t Tree
	if err := t.decodeProjections(r); err != nil {
		return nil, err
	}
	p := &PackedTree{X: t.X, y: t.Y, enc: b}
	total := r.Len()
	n, nDim, nEntry, nLeaf := r.U64(), r.U64(), r.U64(), r.U64()
	m := int(r.U8())
	// Every node takes 5 bytes, a dimension 1 + m, an entry 2 and a leaf
	// entry 5 at least: counts the input cannot hold are errors before
	// anything is allocated for them.
	if r.Err() != nil || n == 0 || m == 0 || m > maxMaskBytes ||
		n > uint64(total)/5 || nDim > uint64(total)/uint64(1+m) || nEntry > uint64(total)/2 || nLeaf > uint64(total)/5 {
		return nil, fmt.Errorf("%w: bad counts", errTreeCorrupt)
	}
	nodes := int(n)
	p.mask, p.entries = m, int(nEntry)
	if err := p.readNodes(r, nodes, nDim, nLeaf); err != nil {
		return nil, err
	}
	entries, err := p.readSplits(r, b, int(t.X.Dim))
	if err != nil {
		return nil, err
	}
	if entries != int(nEntry) {
		return nil, fmt.Errorf("%w: %d split entries, counted %d", errTreeCorrupt, entries, nEntry)
	}
	p.weights = len(b) - r.Len()
	r.Take(2 * entries)
	p.maxLabel = -1
	for i := range nodes {
		p.leafAt[i] = len(b) - r.Len()
		l := int64(-1)
		for q := p.leafStart[i]; q < p.leafStart[i+1]; q++ {
			l += int64(r.Uvarint()) + 1
			if l > math.MaxInt32 {
				return nil, fmt.Errorf("%w: leaf %d label out of range", errTreeCorrupt, i)
			}
		}
		p.maxLabel = max(p.maxLabel, int32(l))
	}
	p.values = len(b) - r.Len()
	r.Take(4 * int(nLeaf))
	if err := r.End(errTreeCorrupt); err != nil {
		return nil, err
	}
	return p, nil
}

// readNodes reads the table of the nodes of a TRE3 tree of nodes nodes,
// nDim split dimensions and nLeaf leaf entries in all, checking every count
// and child id.
func (p *PackedTree) readNodes(r *wire.Reader, nodes int, nDim, nLeaf uint64) error {
	n, m := uint64(nodes), p.mask
	p.firstChild, p.numChildren, p.size = make([]int32, nodes), make([]int32, nodes), make([]int32, nodes)
	p.splitDims, p.splitAt, p.entryAt = make([]int32, nodes), make([]int, nodes), make([]int, nodes)
	p.leafStart, p.leafAt = make([]int64, nodes+1), make([]int, nodes)
	dimsSeen := uint64(0)
	for i := range nodes {
		k := int32(r.U8())
		first, size, dims, leaf := r.Uvarint(), r.Uvarint(), r.Uvarint(), r.Uvarint()
		if r.Err() != nil {
			return fmt.Errorf("%w: node %d: %v", errTreeCorrupt, i, r.Err())
		}
		switch {
		case int(k) > 8*m:
			return fmt.Errorf("%w: node %d has %d children, more than its masks hold", errTreeCorrupt, i, k)
		case k > 0 && (first <= uint64(i) || first > n-uint64(k)):
			return fmt.Errorf("%w: node %d children out of range", errTreeCorrupt, i)
		case k == 0 && dims > 0:
			return fmt.Errorf("%w: leaf %d has split dimensions", errTreeCorrupt, i)
		case size > math.MaxInt32 || dims > nDim-dimsSeen || leaf > nLeaf-uint64(p.leafStart[i]):
			return fmt.Errorf("%w: node %d counts exceed the totals", errTreeCorrupt, i)
		}
		p.numChildren[i], p.firstChild[i], p.size[i], p.splitDims[i] = k, int32(first), int32(size), int32(dims)
		p.maxBranch = max(p.maxBranch, int(k))
		dimsSeen += dims
		p.leafStart[i+1] = p.leafStart[i] + int64(leaf)
	}
	if dimsSeen != nDim || p.leafStart[nodes] != int64(nLeaf) {
		return fmt.Errorf("%w: node counts do not add up to the totals", errTreeCorrupt)
	}
	return nil
}

// readSplits reads the split dimensions of every node of the TRE3 tree b,
// which must lie below xDim, and their child masks, records where each
// node's lie, and returns the number of split entries the masks hold.
func (p *PackedTree) readSplits(r *wire.Reader, b []byte, xDim int) (int, error) {
	m, entries := p.mask, 0
	for i := range p.numChildren {
		p.splitAt[i], p.entryAt[i] = len(b)-r.Len(), entries
		k := int(p.numChildren[i])
		d := int64(-1)
		for range p.splitDims[i] {
			d += int64(r.Uvarint()) + 1
			mask := r.Take(m)
			if r.Err() != nil {
				return 0, fmt.Errorf("%w: node %d: %v", errTreeCorrupt, i, r.Err())
			}
			if d >= int64(xDim) {
				return 0, fmt.Errorf("%w: node %d split dimension %d outside [0, %d)", errTreeCorrupt, i, d, xDim)
			}
			children := 0
			for j, v := range mask {
				if v != 0 && 8*j+bits.Len8(v) > k {
					return 0, fmt.Errorf("%w: node %d entry names child %d of %d", errTreeCorrupt, i, 8*j+bits.Len8(v)-1, k)
				}
				children += bits.OnesCount8(v)
			}
			if children == 0 {
				return 0, fmt.Errorf("%w: node %d dimension %d has no entry", errTreeCorrupt, i, d)
			}
			entries += children
		}
	}
	return entries, nil
}

// unpack sets t to the decoded tree.
func (p *PackedTree) unpack(t *Tree) {
	nodes := p.Nodes()
	*t = Tree{X: p.X, Y: p.y, FirstChild: p.firstChild, NumChildren: p.numChildren, Size: p.size,
		SplitStart: make([]int64, nodes+1), EntryStart: make([]int64, nodes+1), LeafStart: p.leafStart,
		SplitChild: make([]uint8, 0, p.entries), SplitWeight: make([]BFloat16, p.entries),
		LeafLabel: make([]int32, p.leafStart[nodes]), LeafValue: make([]float32, p.leafStart[nodes])}
	for i := range nodes {
		t.SplitStart[i+1] = t.SplitStart[i] + int64(p.splitDims[i])
	}
	t.SplitDim, t.SplitCount = make([]int32, t.SplitStart[nodes]), make([]uint8, t.SplitStart[nodes])
	for i := range nodes {
		at, d := p.splitAt[i], int32(-1)
		for q := t.SplitStart[i]; q < t.SplitStart[i+1]; q++ {
			var gap uint32
			gap, at = uvarintAt(p.enc, at)
			d += int32(gap) + 1
			before := len(t.SplitChild)
			for j, v := range p.enc[at : at+p.mask] {
				for ; v != 0; v &= v - 1 {
					t.SplitChild = append(t.SplitChild, uint8(8*j+bits.TrailingZeros8(v)))
				}
			}
			at += p.mask
			t.SplitDim[q], t.SplitCount[q] = d, uint8(len(t.SplitChild)-before)
		}
		t.EntryStart[i+1] = int64(len(t.SplitChild))
	}
	for e := range t.SplitWeight {
		t.SplitWeight[e] = BFloat16(binary.LittleEndian.Uint16(p.enc[p.weights+2*e:]))
	}
	for i := range nodes {
		at, l := p.leafAt[i], int32(-1)
		for q := p.leafStart[i]; q < p.leafStart[i+1]; q++ {
			var gap uint32
			gap, at = uvarintAt(p.enc, at)
			l += int32(gap) + 1
			t.LeafLabel[q] = l
			t.LeafValue[q] = math.Float32frombits(binary.LittleEndian.Uint32(p.enc[p.values+4*int(q):]))
		}
	}
}

// uvarintAt reads the varint at b[at:] of an encoding already checked, and
// returns it with the offset after it.
func uvarintAt(b []byte, at int) (uint32, int) {
	if v := b[at]; v < 0x80 {
		return uint32(v), at + 1
	}
	v, n := binary.Uvarint(b[at:])
	return uint32(v), at + n
}

// Nodes is the number of nodes of the tree.
func (p *PackedTree) Nodes() int { return len(p.numChildren) }

// AddLeaf adds the mean label vector stored at leaf n to acc, dense over
// the labels, and appends to touched the labels whose sum was zero before.
// acc must cover the tree's labels (see CheckLabels).
func (p *PackedTree) AddLeaf(n int32, acc []float64, touched []int32) []int32 {
	enc, at, v := p.enc, p.leafAt[n], p.values+4*int(p.leafStart[n])
	l := int32(-1)
	for range p.leafStart[n+1] - p.leafStart[n] {
		var gap uint32
		gap, at = uvarintAt(enc, at)
		l += int32(gap) + 1
		if acc[l] == 0 {
			touched = append(touched, l)
		}
		acc[l] += float64(math.Float32frombits(binary.LittleEndian.Uint32(enc[v:])))
		v += 4
	}
	return touched
}

// CheckLabels reports an error if a leaf names a label outside [0, L)
// (labels are non-negative by construction).
func (p *PackedTree) CheckLabels(L int) error {
	if int(p.maxLabel) >= L {
		return fmt.Errorf("%w: leaf label %d outside [0, %d)", errTreeCorrupt, p.maxLabel, L)
	}
	return nil
}

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
	dims    []int32   // the loaded node's dimensions
	rows    []int32   // Best's scratch: the rows of an instance's non-zeros
	vals    []float32 // and their values
}

// NewSplitIndex returns an empty index for trees whose projected feature
// dimension is at most dim.
func NewSplitIndex(dim int) *SplitIndex {
	return &SplitIndex{row: make([]int32, dim)}
}

// Load points the index at internal node n of t.
func (ix *SplitIndex) Load(t *PackedTree, n int32) {
	ix.Unload()
	k := int(t.numChildren[n])
	stride := DotStride(k)
	nd := int(t.splitDims[n])
	size := nd * stride
	w := slices.Grow(ix.weights[:0], size)[:size]
	clear(w)
	dims := slices.Grow(ix.dims[:0], nd)[:nd]
	enc, m := t.enc, t.mask
	at, e := t.splitAt[n], t.weights+2*t.entryAt[n]
	d := int32(-1)
	for q := range dims {
		var gap uint32
		gap, at = uvarintAt(enc, at)
		d += int32(gap) + 1
		dims[q], ix.row[d] = d, int32(q+1)
		r := w[q*stride : q*stride+k]
		if m <= 2 { // up to 16 children, the usual case: the mask in one word
			v := uint16(enc[at])
			if m == 2 {
				v |= uint16(enc[at+1]) << 8
			}
			for ; v != 0; v &= v - 1 {
				r[bits.TrailingZeros16(v)] = BFloat16(binary.LittleEndian.Uint16(enc[e:])).Float32()
				e += 2
			}
		} else {
			for j, v := range enc[at : at+m] {
				for ; v != 0; v &= v - 1 {
					r[8*j+bits.TrailingZeros8(v)] = BFloat16(binary.LittleEndian.Uint16(enc[e:])).Float32()
					e += 2
				}
			}
		}
		at += m
	}
	ix.weights, ix.k, ix.dims = w, k, dims
}

// Unload resets the table, so that loading the next node costs only that
// node's dimensions.
func (ix *SplitIndex) Unload() {
	for _, d := range ix.dims {
		ix.row[d] = 0
	}
	ix.dims = ix.dims[:0]
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
func (p *PackedTree) Stats() TreeStats {
	s := TreeStats{Nodes: p.Nodes(), MinDepth: math.MaxInt, SplitEntries: p.entries, LeafEntries: int(p.leafStart[p.Nodes()])}
	depth := make([]int, p.Nodes())
	var depthSum, sizeSum int
	for n := range p.Nodes() {
		if k := p.numChildren[n]; k > 0 {
			for c := p.firstChild[n]; c < p.firstChild[n]+k; c++ {
				depth[c] = depth[n] + 1
			}
			continue
		}
		s.Leaves++
		s.MinDepth = min(s.MinDepth, depth[n])
		s.MaxDepth = max(s.MaxDepth, depth[n])
		depthSum += depth[n]
		sizeSum += int(p.size[n])
		s.MaxLeafSize = max(s.MaxLeafSize, int(p.size[n]))
	}
	if s.Leaves > 0 {
		s.MeanDepth = float64(depthSum) / float64(s.Leaves)
		s.MeanLeafSize = float64(sizeSum) / float64(s.Leaves)
	}
	return s
}
