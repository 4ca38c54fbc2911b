package forest

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"

	"xmc/model/internal/wire"
)

// The layouts before TRE4, still read so that older model files and
// checkpoints keep working. Both decode to a Tree, checked by validate;
// PackTree re-encodes it in TRE4, which keeps every weight and value.
const (
	treeMagicV3 uint32 = 0x54524533 // "TRE3": feature-major splits with child masks, bfloat16 weights
	treeMagicV2 uint32 = 0x54524532 // "TRE2": every slice of the Tree plain
)

// maxMaskBytes is the widest child mask of TRE3: MaxBranch children.
const maxMaskBytes = (MaxBranch + 7) / 8

// decodeV3 reads the TRE3 layout after its magic: projections; node,
// split-dimension, entry and leaf-entry counts (4 × u64); the mask width
// (u8); per node its children (u8), first child, instances, split
// dimensions and leaf entries (uvarints); per split dimension, node after
// node, its gap to the node's previous one less one (uvarint) and the mask
// of the children with a weight; the weights (bfloat16), the leaf labels'
// gaps less one (uvarints) and the leaf values (float32).
func (t *Tree) decodeV3(r *wire.Reader) error {
	*t = Tree{}
	if err := t.decodeProjections(r); err != nil {
		return err
	}
	total := uint64(r.Len())
	n, nDim, nEntry, nLeaf := r.U64(), r.U64(), r.U64(), r.U64()
	m := int(r.U8())
	// A node takes 5 bytes at least, a dimension 1 + m, an entry 2 and a
	// leaf entry 5: counts the input cannot hold are errors before
	// anything is allocated for them.
	if r.Err() != nil || n == 0 || m == 0 || m > maxMaskBytes ||
		n > total/5 || nDim > total/uint64(1+m) || nEntry > total/2 || nLeaf > total/5 {
		return fmt.Errorf("%w: bad counts", errTreeCorrupt)
	}
	nodes := int(n)
	t.FirstChild, t.NumChildren, t.Size = make([]int32, nodes), make([]int32, nodes), make([]int32, nodes)
	t.SplitStart, t.LeafStart = make([]int64, nodes+1), make([]int64, nodes+1)
	for i := range nodes {
		t.NumChildren[i] = int32(r.U8())
		first, size, dims, leaf := r.Uvarint(), r.Uvarint(), r.Uvarint(), r.Uvarint()
		if r.Err() != nil || first > math.MaxInt32 || size > math.MaxInt32 ||
			dims > nDim-uint64(t.SplitStart[i]) || leaf > nLeaf-uint64(t.LeafStart[i]) {
			return fmt.Errorf("%w: node %d counts exceed the totals", errTreeCorrupt, i)
		}
		t.FirstChild[i], t.Size[i] = int32(first), int32(size)
		t.SplitStart[i+1], t.LeafStart[i+1] = t.SplitStart[i]+int64(dims), t.LeafStart[i]+int64(leaf)
	}
	if uint64(t.SplitStart[nodes]) != nDim || uint64(t.LeafStart[nodes]) != nLeaf {
		return fmt.Errorf("%w: node counts do not add up to the totals", errTreeCorrupt)
	}
	t.SplitDim, t.SplitCount = make([]int32, nDim), make([]uint8, nDim)
	t.EntryStart = make([]int64, nodes+1)
	t.SplitChild = make([]uint8, 0, nEntry)
	for i := range nodes {
		d := int64(-1)
		for q := t.SplitStart[i]; q < t.SplitStart[i+1]; q++ {
			d += int64(r.Uvarint()) + 1
			mask := r.Take(m)
			before := len(t.SplitChild)
			for j, v := range mask {
				for ; v != 0; v &= v - 1 {
					t.SplitChild = append(t.SplitChild, uint8(8*j+bits.TrailingZeros8(v)))
				}
			}
			if r.Err() != nil || d > int64(t.X.Dim) || uint64(len(t.SplitChild)) > nEntry {
				return fmt.Errorf("%w: node %d splits", errTreeCorrupt, i)
			}
			t.SplitDim[q], t.SplitCount[q] = int32(d), uint8(len(t.SplitChild)-before)
		}
		t.EntryStart[i+1] = int64(len(t.SplitChild))
	}
	if uint64(len(t.SplitChild)) != nEntry {
		return fmt.Errorf("%w: %d split entries, counted %d", errTreeCorrupt, len(t.SplitChild), nEntry)
	}
	t.SplitWeight = bf16s(r, int(nEntry))
	t.LeafLabel = make([]int32, nLeaf)
	for i := range nodes {
		l := int64(-1)
		for q := t.LeafStart[i]; q < t.LeafStart[i+1]; q++ {
			l += int64(r.Uvarint()) + 1
			if l > 1<<31-1 {
				return fmt.Errorf("%w: leaf %d label out of range", errTreeCorrupt, i)
			}
			t.LeafLabel[q] = int32(l)
		}
	}
	t.LeafValue = r.F32s(int(nLeaf))
	if err := r.End(errTreeCorrupt); err != nil {
		return err
	}
	return t.validate()
}

// decodeV2 reads the TRE2 layout after its magic: the node arrays, offsets
// and entries as plain little-endian slices.
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
	if err := r.End(errTreeCorrupt); err != nil {
		return err
	}
	return t.validate()
}

// validate checks the structural invariants that encoding and prediction
// rely on, for trees decoded from the older layouts.
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
		if k == 0 && t.SplitStart[i+1] > t.SplitStart[i] {
			return fmt.Errorf("%w: leaf %d has split dimensions", errTreeCorrupt, i)
		}
		if k > 0 && t.LeafStart[i+1] > t.LeafStart[i] {
			return fmt.Errorf("%w: internal node %d has leaf labels", errTreeCorrupt, i)
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
