package forest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"xmc/model/internal/wire"
)

// PackedTree is a tree as prediction holds it: its encoding (the TRE4
// layout of Tree.MarshalBinary), checked once, with an index of where each
// node's entries start. Routing reads a node's weights straight from the
// encoding, so a forest predicts without ever holding its trees decoded,
// which would take more memory than the encodings and, in a profile of a
// 2-rank Bibtex run with the TRE3 encoding, about as much time as routing
// the test set through them, most of it first touching the new memory.
// Loaded from a model file, a PackedTree points into the file's bytes.
type PackedTree struct {
	X Projection // feature projection
	y Projection // label projection, kept for unpack

	enc     []byte // the TRE4 encoding
	weights byte   // the weight format: 0 for bfloat16, else the codes' mantissa bits
	values  byte   // the leaf value format (valuesFloat32 or valuesCounts)

	firstChild, numChildren, size []int32
	at                            []int   // per node, the offset in enc of its entries
	leafStart                     []int64 // as in Tree
	entries                       int     // split entries
	maxBranch                     int
	maxLabel                      int32 // -1 when no leaf has a label
}

// PackTree checks the encoded tree b (any layout UnmarshalBinary reads)
// and indexes it for prediction. It keeps b, which must not change; an
// older layout is converted to TRE4, in new memory, keeping every value.
func PackTree(b []byte) (*PackedTree, error) {
	r := wire.NewReader(b)
	switch r.U32() {
	case treeMagic:
		return packV4(b)
	case treeMagicV3, treeMagicV2:
		var t Tree
		if err := t.UnmarshalBinary(b); err != nil {
			return nil, err
		}
		enc, err := t.MarshalBinary()
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errTreeCorrupt, err)
		}
		return packV4(enc)
	}
	return nil, fmt.Errorf("%w: bad magic", errTreeCorrupt)
}

// packV4 checks every count, offset, id and code of the TRE4 encoding b,
// so that routing and leaf lookups can trust it, and records where each
// node's entries lie.
func packV4(b []byte) (*PackedTree, error) {
	r := wire.NewReader(b[4:])
	var t Tree
	if err := t.decodeProjections(r); err != nil {
		return nil, err
	}
	p := &PackedTree{X: t.X, y: t.Y, enc: b}
	total := uint64(r.Len())
	n, nEntry, nLeaf := r.U64(), r.U64(), r.U64()
	p.weights, p.values = r.U8(), r.U8()
	// A node takes 4 bytes at least, a split or leaf entry 2: counts the
	// input cannot hold are errors before anything is allocated for them.
	if r.Err() != nil || n == 0 || n > total/4 || nEntry > total/2 || nLeaf > total/2 {
		return nil, fmt.Errorf("%w: bad counts", errTreeCorrupt)
	}
	if p.weights > 7 || p.values > valuesCounts {
		return nil, fmt.Errorf("%w: unknown weight or value format %d/%d", errTreeCorrupt, p.weights, p.values)
	}
	if err := p.readNodes(r, int(n), nLeaf); err != nil {
		return nil, err
	}
	if err := p.readEntries(r, b, nEntry); err != nil {
		return nil, err
	}
	if err := r.End(errTreeCorrupt); err != nil {
		return nil, err
	}
	return p, nil
}

// readNodes reads the node table of a TRE4 tree of the given nodes and leaf
// entries, checking every count and child id.
func (p *PackedTree) readNodes(r *wire.Reader, nodes int, nLeaf uint64) error {
	n := uint64(nodes)
	p.firstChild, p.numChildren, p.size = make([]int32, nodes), make([]int32, nodes), make([]int32, nodes)
	p.at, p.leafStart = make([]int, nodes), make([]int64, nodes+1)
	for i := range nodes {
		k := int32(r.U8())
		first, size, leaf := r.Uvarint(), r.Uvarint(), r.Uvarint()
		if r.Err() != nil {
			return fmt.Errorf("%w: node %d: %v", errTreeCorrupt, i, r.Err())
		}
		switch {
		case k > 0 && (first <= uint64(i) || first > n-uint64(k)):
			return fmt.Errorf("%w: node %d children out of range", errTreeCorrupt, i)
		case k > 0 && leaf > 0:
			return fmt.Errorf("%w: internal node %d has leaf labels", errTreeCorrupt, i)
		case first > math.MaxUint32 || size > math.MaxInt32 || leaf > nLeaf-uint64(p.leafStart[i]):
			return fmt.Errorf("%w: node %d counts exceed the totals", errTreeCorrupt, i)
		}
		p.numChildren[i], p.firstChild[i], p.size[i] = k, int32(uint32(first)), int32(size)
		p.maxBranch = max(p.maxBranch, int(k))
		p.leafStart[i+1] = p.leafStart[i] + int64(leaf)
	}
	if p.leafStart[nodes] != int64(nLeaf) {
		return fmt.Errorf("%w: node counts do not add up to the totals", errTreeCorrupt)
	}
	return nil
}

// readEntries reads the entries of every node of the TRE4 tree b: split
// dimensions increasing within each child and below the projection's,
// codes of exponents a float32 holds, leaf labels increasing and counts
// between 1 and the leaf's instances. It records where each node's start.
func (p *PackedTree) readEntries(r *wire.Reader, b []byte, nEntry uint64) error {
	entries := uint64(0)
	p.maxLabel = -1
	for i := range p.numChildren {
		p.at[i] = len(b) - r.Len()
		for range p.numChildren[i] {
			count := r.Uvarint()
			if count > nEntry-entries {
				return fmt.Errorf("%w: node %d has more split entries than counted", errTreeCorrupt, i)
			}
			entries += count
			top := uint8(0)
			if p.weights > 0 && count > 0 {
				top = r.U8()
			}
			if err := p.checkChild(r, b, int(count), top); err != nil {
				return fmt.Errorf("%w: node %d: %v", errTreeCorrupt, i, err)
			}
		}
		l := int64(-1)
		for range p.leafStart[i+1] - p.leafStart[i] {
			l += int64(r.Uvarint()) + 1
			if p.values == valuesCounts {
				if c := r.Uvarint(); c < 1 || c > uint64(p.size[i]) {
					return fmt.Errorf("%w: leaf %d count %d of %d instances", errTreeCorrupt, i, c, p.size[i])
				}
			} else {
				r.Take(4)
			}
			if r.Err() != nil || l > math.MaxInt32 {
				return fmt.Errorf("%w: leaf %d label out of range", errTreeCorrupt, i)
			}
		}
		p.maxLabel = max(p.maxLabel, int32(l))
	}
	if entries != nEntry {
		return fmt.Errorf("%w: %d split entries, counted %d", errTreeCorrupt, entries, nEntry)
	}
	p.entries = int(entries)
	return nil
}

// checkChild reads, from r over the encoding b, the count entries of a
// child whose exponent byte is top: dimensions increasing below the
// projection's, codes of float32 exponents. It reads the bytes directly
// rather than through r's methods: it is most of checking a tree.
func (p *PackedTree) checkChild(r *wire.Reader, b []byte, count int, top uint8) error {
	at := len(b) - r.Len()
	start, xDim, d := at, int64(p.X.Dim), int64(-1)
	size, lowest := 2, 0 // bytes of a weight; the lowest exponent field of a code
	if p.weights > 0 {
		size, lowest = 1, 1<<(7-p.weights)-int(top)
		if top == 0xff {
			return fmt.Errorf("exponent %d", top)
		}
	}
	for range count {
		if at >= len(b) {
			return errors.New("truncated")
		}
		gap := uint64(b[at])
		if gap < 0x80 {
			at++
		} else {
			g, n := binary.Uvarint(b[at:])
			if n <= 0 || g > math.MaxUint32 {
				return errors.New("truncated or oversized varint")
			}
			gap, at = g, at+n
		}
		if d += int64(gap) + 1; d >= xDim {
			return fmt.Errorf("split dimension %d outside [0, %d)", d, xDim)
		}
		if at+size > len(b) {
			return errors.New("truncated")
		}
		if size == 1 && int(b[at]&0x7f>>p.weights) < lowest {
			return fmt.Errorf("weight code %#x of exponent %d out of range", b[at], top)
		}
		at += size
	}
	r.Take(at - start)
	return nil
}

// weight reads the weight at enc[at:] of a child whose codes' exponent is
// top, and returns it with the offset after it.
func (p *PackedTree) weight(at int, top uint8) (BFloat16, int) {
	if p.weights == 0 {
		return BFloat16(binary.LittleEndian.Uint16(p.enc[at:])), at + 2
	}
	return BFloat16(codeBits(p.enc[at], codeBase(top, p.weights), p.weights) >> 16), at + 1
}

// splitEntry is an entry of a node's classifier, as unpack sorts them.
type splitEntry struct {
	dim    int32
	child  uint8
	weight BFloat16
}

// unpack sets t to the decoded tree: its classifiers feature-major again.
func (p *PackedTree) unpack(t *Tree) {
	nodes := p.Nodes()
	*t = Tree{X: p.X, Y: p.y, FirstChild: p.firstChild, NumChildren: p.numChildren, Size: p.size,
		SplitStart: make([]int64, nodes+1), EntryStart: make([]int64, nodes+1), LeafStart: p.leafStart,
		SplitChild: make([]uint8, 0, p.entries), SplitWeight: make([]BFloat16, 0, p.entries),
		LeafLabel: make([]int32, p.leafStart[nodes]), LeafValue: make([]float32, p.leafStart[nodes])}
	var ents []splitEntry
	for i := range nodes {
		at := p.at[i]
		ents = ents[:0]
		for c := range uint8(p.numChildren[i]) {
			var count uint32
			count, at = uvarintAt(p.enc, at)
			top := uint8(0)
			if p.weights > 0 && count > 0 {
				top, at = p.enc[at], at+1
			}
			d := int32(-1)
			for range count {
				var gap uint32
				gap, at = uvarintAt(p.enc, at)
				d += int32(gap) + 1
				e := splitEntry{dim: d, child: c}
				e.weight, at = p.weight(at, top)
				ents = append(ents, e)
			}
		}
		slices.SortFunc(ents, func(a, b splitEntry) int {
			if a.dim != b.dim {
				return int(a.dim - b.dim)
			}
			return int(a.child) - int(b.child)
		})
		for j, e := range ents {
			if j == 0 || e.dim != ents[j-1].dim {
				t.SplitDim = append(t.SplitDim, e.dim)
				t.SplitCount = append(t.SplitCount, 0)
			}
			t.SplitCount[len(t.SplitCount)-1]++
			t.SplitChild = append(t.SplitChild, e.child)
			t.SplitWeight = append(t.SplitWeight, e.weight)
		}
		t.SplitStart[i+1], t.EntryStart[i+1] = int64(len(t.SplitDim)), int64(len(t.SplitChild))
		l := int32(-1)
		for q := p.leafStart[i]; q < p.leafStart[i+1]; q++ {
			var gap uint32
			gap, at = uvarintAt(p.enc, at)
			l += int32(gap) + 1
			t.LeafLabel[q] = l
			t.LeafValue[q], at = p.leafValue(i, at)
		}
	}
	if t.SplitDim == nil {
		t.SplitDim, t.SplitCount = []int32{}, []uint8{}
	}
}

// leafValue reads the value at enc[at:] of a label of leaf n, and returns
// it with the offset after it.
func (p *PackedTree) leafValue(n int, at int) (float32, int) {
	if p.values == valuesCounts {
		c, next := uvarintAt(p.enc, at)
		return float32(c) * (1 / float32(p.size[n])), next
	}
	return math.Float32frombits(binary.LittleEndian.Uint32(p.enc[at:])), at + 4
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
	at, l := p.at[n], int32(-1)
	entries := int(p.leafStart[n+1] - p.leafStart[n])
	// Without a branch on whether a label's sum was zero, which the
	// processor mispredicts: every label is written at the end of
	// touched, which only grows if the sum was zero (a leaf's values are
	// positive, so a sum is zero until its label's first leaf).
	nt := len(touched)
	touched = slices.Grow(touched, entries)[:nt+entries]
	for range entries {
		var gap uint32
		gap, at = uvarintAt(p.enc, at)
		l += int32(gap) + 1
		touched[nt] = l
		first := 0
		if acc[l] == 0 {
			first = 1
		}
		nt += first
		var v float32
		v, at = p.leafValue(int(n), at)
		acc[l] += float64(v)
	}
	return touched[:nt]
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

// Load points the index at internal node n of t. The rows of the node's
// dimensions come in the order the encoding lists them, child after child:
// BestDot's sums do not depend on it.
func (ix *SplitIndex) Load(t *PackedTree, n int32) {
	ix.Unload()
	k := int(t.numChildren[n])
	stride := DotStride(k)
	w, dims := ix.weights[:0], ix.dims[:0]
	enc, at := t.enc, t.at[n]
	for c := range k {
		var count uint32
		count, at = uvarintAt(enc, at)
		if count == 0 {
			continue
		}
		base := int32(0)
		if t.weights > 0 {
			base, at = codeBase(enc[at], t.weights), at+1
		}
		d := int32(-1)
		for range count {
			var gap uint32
			gap, at = uvarintAt(enc, at)
			d += int32(gap) + 1
			row := ix.row[d]
			if row == 0 {
				dims = append(dims, d)
				row = int32(len(dims))
				ix.row[d] = row
				w = slices.Grow(w, stride)[:len(w)+stride]
				clear(w[len(w)-stride:])
			}
			var v float32
			if t.weights > 0 {
				v, at = math.Float32frombits(codeBits(enc[at], base, t.weights)), at+1
			} else {
				v, at = BFloat16(binary.LittleEndian.Uint16(enc[at:])).Float32(), at+2
			}
			w[int(row-1)*stride+c] = v
		}
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
