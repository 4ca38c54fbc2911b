package forest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"unsafe"

	"xmc/model/internal/wire"
)

// The encoded tree. Trees travel between ranks and fill model files, so
// their encoding decides the gather's volume, the model's size and the
// memory a rank touches; the format packs what the in-memory layout spells
// out:
//
//	magic "TRE3", the two projections (dimension and seeds, 6 × u32; the
//	          top bit of a dimension marks an identity projection),
//	counts: nodes, split dimensions, split entries, leaf entries (4 × u64),
//	mask width m (u8): bytes of a child mask, at least the largest branching / 8
//	per node: children (u8), first child, instances, split dimensions and
//	          leaf entries (uvarints)
//	per split dimension, node after node: the gap to the node's previous
//	          dimension less one (uvarint, so dimensions strictly increase),
//	          then the mask of the children with a weight (m bytes)
//	the weights (bfloat16, u16 each), dimension-major, children ascending
//	per leaf entry, leaf after leaf: the gap to the leaf's previous label
//	          less one (uvarint, labels strictly increase)
//	the leaf values (float32)
//
// Offsets (SplitStart, EntryStart, LeafStart) are prefix sums of the
// per-node counts, and each dimension's children come from its mask, so a
// decoded tree holds every invariant SplitIndex and Leaf rely on by
// construction. Against the 8-byte offsets and 1-byte child ids of the
// previous format, TRE2 (still read), a Bibtex tree is 0.6 times the size.
const (
	treeMagic   uint32 = 0x54524533 // "TRE3": compact sparse bfloat16 splits
	treeMagicV2 uint32 = 0x54524532 // "TRE2": the previous, plain layout
)

// identityBit marks an identity projection in an encoded dimension.
const identityBit = 1 << 31

// maxMaskBytes is the widest child mask: MaxBranch children.
const maxMaskBytes = (MaxBranch + 7) / 8

// errTreeCorrupt is wrapped by every structural error of UnmarshalBinary.
var errTreeCorrupt = errors.New("corrupt tree")

// MarshalBinary encodes the tree in the TRE3 layout described above. It
// fails if the tree breaks an invariant the layout relies on: children of a
// dimension or labels of a leaf not strictly increasing, counts that do not
// match the entries.
func (t *Tree) MarshalBinary() ([]byte, error) {
	return t.AppendBinary(nil)
}

// MaxEncodedSize bounds the bytes AppendBinary appends for t: with that
// much spare capacity, appending never copies.
func (t *Tree) MaxEncodedSize() int {
	maxK := int32(1)
	for _, k := range t.NumChildren {
		maxK = max(maxK, min(k, MaxBranch))
	}
	m := int(maxK+7) / 8
	return 4 + 6*4 + 4*8 + 1 + t.Nodes()*(1+4*binary.MaxVarintLen32) +
		len(t.SplitDim)*(binary.MaxVarintLen32+m) + len(t.SplitWeight)*2 + len(t.LeafLabel)*(binary.MaxVarintLen32+4)
}

// AppendBinary appends the tree's MarshalBinary encoding to b, so that a
// trainer can encode trees into memory of its choosing.
func (t *Tree) AppendBinary(b []byte) ([]byte, error) {
	return t.AppendBinaryWith(b, func(n int, fn func(i int)) error {
		for i := range n {
			fn(i)
		}
		return nil
	})
}

// encodePiece is the split dimensions a piece of a tree's encoding holds
// at least (see AppendBinaryWith): pieces much smaller cost more to hand
// out and join than they take to encode.
const encodePiece = 1 << 14

// AppendBinaryWith is AppendBinary with the node table's splits and the
// leaves encoded in pieces of consecutive nodes, each into memory of its
// own, which loop calls fn(i) to encode for every i in [0, n) (at once, on
// a trainer's workers, or one after another); the pieces are then joined
// in order. The bytes are those of AppendBinary.
func (t *Tree) AppendBinaryWith(b []byte, loop func(n int, fn func(i int)) error) ([]byte, error) {
	n := t.Nodes()
	if len(t.SplitStart) != n+1 || len(t.EntryStart) != n+1 || len(t.LeafStart) != n+1 ||
		len(t.SplitDim) != len(t.SplitCount) || len(t.SplitChild) != len(t.SplitWeight) || len(t.LeafLabel) != len(t.LeafValue) {
		return nil, errors.New("encode tree: slice lengths do not match")
	}
	maxK := int32(1)
	for _, k := range t.NumChildren {
		if k < 0 || k > MaxBranch {
			return nil, fmt.Errorf("encode tree: a node has %d children", k)
		}
		maxK = max(maxK, k)
	}
	m := int(maxK+7) / 8
	b = slices.Grow(b, t.MaxEncodedSize())
	le := binary.LittleEndian
	b = le.AppendUint32(b, treeMagic)
	for _, p := range []Projection{t.X, t.Y} {
		dim := uint32(p.Dim)
		if p.Identity {
			dim |= identityBit
		}
		b = le.AppendUint32(b, dim)
		b = le.AppendUint32(b, p.BucketSeed)
		b = le.AppendUint32(b, p.SignSeed)
	}
	for _, v := range []int{n, len(t.SplitDim), len(t.SplitChild), len(t.LeafLabel)} {
		b = le.AppendUint64(b, uint64(v))
	}
	b = append(b, byte(m))
	for i := range n {
		if t.Size[i] < 0 {
			return nil, fmt.Errorf("encode tree: node %d has a negative size", i)
		}
		b = append(b, byte(t.NumChildren[i]))
		b = binary.AppendUvarint(b, uint64(uint32(t.FirstChild[i])))
		b = binary.AppendUvarint(b, uint64(uint32(t.Size[i])))
		b = binary.AppendUvarint(b, uint64(t.SplitStart[i+1]-t.SplitStart[i]))
		b = binary.AppendUvarint(b, uint64(t.LeafStart[i+1]-t.LeafStart[i]))
	}
	if t.EntryStart[n] != int64(len(t.SplitChild)) {
		return nil, errors.New("encode tree: split counts do not cover the entries")
	}
	// The pieces: nodes [cut[p], cut[p+1]), of about encodePiece split
	// dimensions each.
	cut := []int{0}
	for i := range n {
		if t.SplitStart[i+1]-t.SplitStart[cut[len(cut)-1]] >= encodePiece {
			cut = append(cut, i+1)
		}
	}
	if cut[len(cut)-1] != n {
		cut = append(cut, n)
	}
	pieces := len(cut) - 1
	splits, leaves, errs := make([][]byte, pieces), make([][]byte, pieces), make([]error, pieces)
	err := loop(pieces, func(p int) {
		splits[p], errs[p] = t.appendSplits(nil, m, cut[p], cut[p+1])
		if errs[p] == nil {
			leaves[p], errs[p] = t.appendLeaves(nil, cut[p], cut[p+1])
		}
	})
	if err != nil {
		return nil, err
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	for _, piece := range splits {
		b = append(b, piece...)
	}
	b = appendLittleEndian(b, t.SplitWeight)
	for _, piece := range leaves {
		b = append(b, piece...)
	}
	return appendLittleEndian(b, t.LeafValue), nil
}

// appendLeaves appends the labels of the leaves among nodes [lo, hi),
// each as its gap to the leaf's previous label.
func (t *Tree) appendLeaves(b []byte, lo, hi int) ([]byte, error) {
	for i := lo; i < hi; i++ {
		prev := int32(-1)
		for _, l := range t.LeafLabel[t.LeafStart[i]:t.LeafStart[i+1]] {
			if l <= prev {
				return nil, fmt.Errorf("encode tree: leaf %d labels not increasing", i)
			}
			b = binary.AppendUvarint(b, uint64(l-prev-1))
			prev = l
		}
	}
	return b, nil
}

// appendSplits appends the split dimensions of nodes [lo, hi), node after
// node: each one's gap to the node's previous dimension and the mask, m
// bytes wide, of the children with a weight on it.
func (t *Tree) appendSplits(b []byte, m, lo, hi int) ([]byte, error) {
	var mask [maxMaskBytes]byte
	e := t.EntryStart[lo]
	for i := lo; i < hi; i++ {
		if t.EntryStart[i] != e {
			return nil, fmt.Errorf("encode tree: node %d entries do not follow its dimensions' counts", i)
		}
		prev := int32(-1)
		for q := t.SplitStart[i]; q < t.SplitStart[i+1]; q++ {
			d := t.SplitDim[q]
			if d <= prev {
				return nil, fmt.Errorf("encode tree: node %d split dimensions not increasing", i)
			}
			b = binary.AppendUvarint(b, uint64(d-prev-1))
			prev = d
			last, k := -1, int(t.NumChildren[i])
			end := e + int64(t.SplitCount[q])
			if end > int64(len(t.SplitChild)) {
				return nil, errors.New("encode tree: split counts exceed the entries")
			}
			if m <= 8 {
				// Up to 64 children (the usual case) the mask is one
				// word: this loop was most of encoding a tree.
				var word uint64
				for ; e < end; e++ {
					c := int(t.SplitChild[e])
					if c <= last || c >= k {
						return nil, fmt.Errorf("encode tree: node %d dimension %d names children out of order or range", i, d)
					}
					word |= 1 << c
					last = c
				}
				for j := range m {
					b = append(b, byte(word>>(8*j)))
				}
				continue
			}
			clear(mask[:m])
			for ; e < end; e++ {
				c := int(t.SplitChild[e])
				if c <= last || c >= k {
					return nil, fmt.Errorf("encode tree: node %d dimension %d names children out of order or range", i, d)
				}
				mask[c>>3] |= 1 << (c & 7)
				last = c
			}
			b = append(b, mask[:m]...)
		}
	}
	if e != t.EntryStart[hi] {
		return nil, fmt.Errorf("encode tree: node %d entries do not follow its dimensions' counts", hi)
	}
	return b, nil
}

// littleEndianHost reports whether this machine stores numbers
// little-endian, as the encoding does.
var littleEndianHost = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// appendLittleEndian appends the little-endian bytes of v to b: one copy of
// v's memory on a little-endian machine (amd64, arm64), where the element
// by element loop was a third of encoding a tree; element by element
// elsewhere.
func appendLittleEndian[T BFloat16 | float32](b []byte, v []T) []byte {
	if len(v) == 0 {
		return b
	}
	size := int(unsafe.Sizeof(v[0]))
	if littleEndianHost {
		return append(b, unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), size*len(v))...)
	}
	le := binary.LittleEndian
	for _, x := range v {
		switch x := any(x).(type) {
		case BFloat16:
			b = le.AppendUint16(b, uint16(x))
		case float32:
			b = le.AppendUint32(b, math.Float32bits(x))
		}
	}
	return b
}

// UnmarshalBinary decodes a tree written by MarshalBinary (TRE3, or the
// previous TRE2) and checks that every offset and id is in range, so that a
// damaged file is an error rather than a panic at prediction time. Leaf
// labels are checked against the model's L by PackedTree.CheckLabels.
func (t *Tree) UnmarshalBinary(b []byte) error {
	r := wire.NewReader(b)
	switch r.U32() {
	case treeMagic:
		p, err := packV3(b)
		if err != nil {
			return err
		}
		p.unpack(t)
		return nil
	case treeMagicV2:
		if err := t.decodeV2(r); err != nil {
			return err
		}
		return t.validate()
	}
	return fmt.Errorf("%w: bad magic", errTreeCorrupt)
}

func (t *Tree) decodeProjections(r *wire.Reader) error {
	for _, p := range []*Projection{&t.X, &t.Y} {
		dim := r.U32()
		p.Dim, p.Identity = int32(dim&^identityBit), dim&identityBit != 0
		p.BucketSeed = r.U32()
		p.SignSeed = r.U32()
	}
	if r.Err() != nil || t.X.Dim <= 0 || t.Y.Dim <= 0 || t.X.Dim > MaxProjectedDim || t.Y.Dim > MaxProjectedDim {
		return fmt.Errorf("%w: projection dimension %d/%d", errTreeCorrupt, t.X.Dim, t.Y.Dim)
	}
	return nil
}

// decodeV2 reads the TRE2 layout after its magic: the node arrays, offsets
// and entries as plain little-endian slices. validate checks it.
func (t *Tree) decodeV2(r *wire.Reader) error {
	*t = Tree{}
	if err := t.decodeProjections(r); err != nil {
		return err
	}
	total := uint64(r.Len())
	n, nDim, nEntry, nLeaf := r.U64(), r.U64(), r.U64(), r.U64()
	if r.Err() != nil || n == 0 || n > total || nDim > total || nEntry > total || nLeaf > total {
		return fmt.Errorf("%w: bad counts", errTreeCorrupt)
	}
	t.FirstChild = r.I32s(int(n))
	t.NumChildren = r.I32s(int(n))
	t.Size = r.I32s(int(n))
	t.SplitStart = r.I64s(int(n) + 1)
	t.EntryStart = r.I64s(int(n) + 1)
	t.LeafStart = r.I64s(int(n) + 1)
	t.SplitDim = r.I32s(int(nDim))
	t.SplitCount = r.Bytes(int(nDim))
	t.SplitChild = r.Bytes(int(nEntry))
	t.SplitWeight = bf16s(r, int(nEntry))
	t.LeafLabel = r.I32s(int(nLeaf))
	t.LeafValue = r.F32s(int(nLeaf))
	return r.End(errTreeCorrupt)
}

// validate checks the structural invariants SplitIndex and Leaf rely on, for
// trees decoded from the TRE2 layout, which does not hold them by
// construction.
func (t *Tree) validate() error {
	n := int32(t.Nodes())
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
		if t.Size[i] < 0 {
			return fmt.Errorf("%w: node %d has a negative size", errTreeCorrupt, i)
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
		for q := t.LeafStart[i]; q < t.LeafStart[i+1]; q++ {
			if l := t.LeafLabel[q]; l < 0 || (q > t.LeafStart[i] && l <= t.LeafLabel[q-1]) {
				return fmt.Errorf("%w: leaf %d labels unsorted or negative", errTreeCorrupt, i)
			}
		}
	}
	return nil
}

// bf16s reads n bfloat16 values.
func bf16s(r *wire.Reader, n int) []BFloat16 {
	return wire.Slice(r, n, 2, func(b []byte) BFloat16 { return BFloat16(binary.LittleEndian.Uint16(b)) })
}
