package forest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"xmc/model/internal/wire"
)

// The encoded tree. Trees travel between ranks and fill model files, so
// their encoding decides the gather's volume, the model's size and the
// memory a rank touches; the format packs what the in-memory layout spells
// out:
//
//	magic "TRE4", the two projections (dimension and seeds, 6 × u32; the
//	          top bit of a dimension marks an identity projection),
//	counts: nodes, split entries, leaf entries (3 × u64),
//	weight format (u8): 0 for bfloat16 weights, else the m of 1-byte codes
//	          of m mantissa bits (below),
//	value format (u8): 0 for float32 leaf values, 1 for counts (below),
//	per node: children (u8), first child, instances, leaf entries (uvarints)
//	then node after node, for an internal node, child after child: its
//	          entries (uvarint), the exponent of its codes (u8, 1-byte
//	          codes only, when it has entries), then per entry the gap to the
//	          child's previous dimension less one (uvarint) and the weight
//	          (bfloat16 or code); for a leaf, per entry the gap to its previous
//	          label less one (uvarint) and the value (float32, or the count
//	          as a uvarint)
//
// A child's classifier is stored child-major: the gaps between one child's
// dimensions cost a byte each where the masks of shared dimensions cost
// more. A 1-byte code is a sign bit, 7−m exponent bits e and m mantissa bits
// f, standing for ±2^(E−127−(2^(7−m)−1)+e)·(1+f/2^m) with E the child's
// exponent byte, the largest exponent of its weights (as float32 stores it):
// the encoder takes it whenever every weight of the tree fits (trainers
// round centroids to it: RoundToCode), else keeps bfloat16. Leaf values are
// stored as counts c, standing for float32(c)·(1/float32(instances)), when
// every value of the tree is exactly that, as a leaf's mean label vector
// is. Both choices lose nothing: decoding gives back the tree's values.
//
// Offsets (SplitStart, EntryStart, LeafStart) are prefix sums of per-node
// counts, so a decoded tree holds every invariant SplitIndex and leaves rely
// on by construction.
const treeMagic uint32 = 0x54524534 // "TRE4": child-major splits, 1-byte weight codes, leaf counts

// identityBit marks an identity projection in an encoded dimension.
const identityBit = 1 << 31

// Value formats of leaves.
const (
	valuesFloat32 = 0
	valuesCounts  = 1
)

// errTreeCorrupt is wrapped by every structural error of UnmarshalBinary.
var errTreeCorrupt = errors.New("corrupt tree")

// MarshalBinary encodes the tree in the TRE4 layout described above. It
// fails if the tree breaks an invariant the layout relies on: children of a
// dimension or labels of a leaf not strictly increasing, counts that do not
// match the entries, a leaf with split entries or an internal node with
// leaf entries.
func (t *Tree) MarshalBinary() ([]byte, error) {
	return t.AppendBinary(nil)
}

// MaxEncodedSize bounds the bytes AppendBinary appends for t: with that
// much spare capacity, appending never copies.
func (t *Tree) MaxEncodedSize() int {
	children := 0
	for _, k := range t.NumChildren {
		children += int(max(k, 0))
	}
	return 4 + 6*4 + 3*8 + 2 + t.Nodes()*(1+3*binary.MaxVarintLen32) + children*(binary.MaxVarintLen32+1) +
		len(t.SplitWeight)*(binary.MaxVarintLen32+2) + len(t.LeafLabel)*(2*binary.MaxVarintLen32)
}

// AppendBinary appends the tree's MarshalBinary encoding to b, so that a
// trainer can encode trees into memory of its choosing.
func (t *Tree) AppendBinary(b []byte) ([]byte, error) {
	return t.AppendBinaryWith(b, nil)
}

// encodePiece is the entries a piece of a tree's encoding holds at least
// (see AppendBinaryWith): pieces much smaller cost more to hand out and
// join than they take to encode.
const encodePiece = 1 << 15

// AppendBinaryWith is AppendBinary with the nodes' entries checked and
// encoded in pieces of consecutive nodes, each into memory of its own,
// which loop calls fn(i) to do for every i in [0, n) (at once, on a
// trainer's workers, or one after another); the pieces are then joined in
// order, by loop as well. The bytes are those of AppendBinary. A nil loop encodes the pieces
// one after another straight into b, without memory of their own.
func (t *Tree) AppendBinaryWith(b []byte, loop func(n int, fn func(i int)) error) ([]byte, error) {
	inline := loop == nil
	if inline {
		loop = func(n int, fn func(i int)) error {
			for i := range n {
				fn(i)
			}
			return nil
		}
	}
	n := t.Nodes()
	if len(t.FirstChild) != n || len(t.Size) != n || len(t.SplitStart) != n+1 || len(t.EntryStart) != n+1 || len(t.LeafStart) != n+1 ||
		len(t.SplitDim) != len(t.SplitCount) || len(t.SplitChild) != len(t.SplitWeight) || len(t.LeafLabel) != len(t.LeafValue) ||
		t.SplitStart[n] != int64(len(t.SplitDim)) || t.EntryStart[n] != int64(len(t.SplitChild)) || t.LeafStart[n] != int64(len(t.LeafLabel)) {
		return nil, errors.New("encode tree: slice lengths do not match")
	}
	for i, k := range t.NumChildren {
		switch {
		case k < 0 || k > MaxBranch:
			return nil, fmt.Errorf("encode tree: node %d has %d children", i, k)
		case k > 0 && (t.FirstChild[i] <= int32(i) || int(t.FirstChild[i]) > n-int(k)):
			return nil, fmt.Errorf("encode tree: node %d children out of range", i)
		case t.Size[i] < 0:
			return nil, fmt.Errorf("encode tree: node %d has a negative size", i)
		case t.SplitStart[i] > t.SplitStart[i+1] || t.EntryStart[i] > t.EntryStart[i+1] || t.LeafStart[i] > t.LeafStart[i+1]:
			return nil, fmt.Errorf("encode tree: node %d offsets decrease", i)
		case k == 0 && t.SplitStart[i+1] > t.SplitStart[i]:
			return nil, fmt.Errorf("encode tree: leaf %d has split dimensions", i)
		case k > 0 && t.LeafStart[i+1] > t.LeafStart[i]:
			return nil, fmt.Errorf("encode tree: internal node %d has leaf labels", i)
		}
	}
	// The pieces: nodes [cut[p], cut[p+1]), of about encodePiece entries.
	cut := []int{0}
	for i := range n {
		at := cut[len(cut)-1]
		if t.EntryStart[i+1]-t.EntryStart[at]+t.LeafStart[i+1]-t.LeafStart[at] >= encodePiece {
			cut = append(cut, i+1)
		}
	}
	if cut[len(cut)-1] != n {
		cut = append(cut, n)
	}
	pieces := len(cut) - 1
	// First the checks, and the formats every piece allows; then the
	// pieces in the formats the tree allows.
	formats, errs := make([]pieceFormat, pieces), make([]error, pieces)
	err := loop(pieces, func(p int) { formats[p], errs[p] = t.checkPiece(cut[p], cut[p+1]) })
	if err != nil {
		return nil, err
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	f := pieceFormat{codes: true, counts: true}
	for _, pf := range formats {
		f.codes, f.counts = f.codes && pf.codes, f.counts && pf.counts
		f.span, f.mantissas = max(f.span, pf.span), f.mantissas|pf.mantissas
	}
	weights, values := byte(0), byte(valuesFloat32)
	if eb := uint8(bits.Len8(f.span)); f.codes && eb <= 6 && mantissaBits(f.mantissas)+eb <= 7 {
		weights = byte(7 - eb)
	}
	if f.counts {
		values = valuesCounts
	}
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
	for _, v := range []int{n, len(t.SplitChild), len(t.LeafLabel)} {
		b = le.AppendUint64(b, uint64(v))
	}
	b = append(b, weights, values)
	for i := range n {
		b = append(b, byte(t.NumChildren[i]))
		b = binary.AppendUvarint(b, uint64(uint32(t.FirstChild[i])))
		b = binary.AppendUvarint(b, uint64(t.Size[i]))
		b = binary.AppendUvarint(b, uint64(t.LeafStart[i+1]-t.LeafStart[i]))
	}
	if inline {
		for p := range pieces {
			b = t.appendPiece(b, weights, values, cut[p], cut[p+1])
		}
		return b, nil
	}
	enc := make([][]byte, pieces)
	err = loop(pieces, func(p int) {
		lo, hi := cut[p], cut[p+1]
		size := (hi-lo)*binary.MaxVarintLen32 + int(t.EntryStart[hi]-t.EntryStart[lo])*(binary.MaxVarintLen32+2) +
			int(t.LeafStart[hi]-t.LeafStart[lo])*2*binary.MaxVarintLen32
		for _, k := range t.NumChildren[lo:hi] {
			size += int(k) * (binary.MaxVarintLen32 + 1)
		}
		enc[p] = t.appendPiece(make([]byte, 0, size), weights, values, lo, hi)
	})
	if err != nil {
		return nil, err
	}
	// The pieces are joined by loop too: joined by the caller, the copy
	// and the first touches of b's fresh memory were most of the time a
	// forest grown together spent outside parallel loops
	// (docs/scaling/16-core.md).
	at := make([]int, pieces+1)
	for p, piece := range enc {
		at[p+1] = at[p] + len(piece)
	}
	start := len(b)
	b = slices.Grow(b, at[pieces])[:start+at[pieces]]
	if err := loop(pieces, func(p int) { copy(b[start+at[p]:], enc[p]) }); err != nil {
		return nil, err
	}
	return b, nil
}

// pieceFormat is what the nodes of a piece allow: 1-byte weight codes
// (codes), needing span exponent bits' range and the mantissa bits set in
// mantissas (the bfloat16 mantissas or-ed: their lowest set bit says how
// many bits the codes need), and leaf values as counts (counts).
type pieceFormat struct {
	codes, counts   bool
	span, mantissas uint8
}

// mantissaBits returns the bits of mantissa that codes need to hold
// bfloat16 mantissas whose or is mantissas.
func mantissaBits(mantissas uint8) uint8 {
	return uint8(7 - min(bits.TrailingZeros8(mantissas), 7))
}

// checkPiece checks the splits and leaves of nodes [lo, hi) and returns the
// formats they allow.
func (t *Tree) checkPiece(lo, hi int) (pieceFormat, error) {
	f := pieceFormat{codes: true, counts: true}
	var top, low [MaxBranch]uint8 // per child, the largest and smallest exponent
	for i := lo; i < hi; i++ {
		k := int(t.NumChildren[i])
		e := t.EntryStart[i]
		clear(top[:k])
		for c := range k {
			low[c] = 0xff
		}
		prev := int32(-1)
		for q := t.SplitStart[i]; q < t.SplitStart[i+1]; q++ {
			d := t.SplitDim[q]
			if d <= prev || d >= t.X.Dim {
				return f, fmt.Errorf("encode tree: node %d split dimensions not increasing or beyond the projection", i)
			}
			prev = d
			end := e + int64(t.SplitCount[q])
			if t.SplitCount[q] == 0 || end > t.EntryStart[i+1] {
				return f, fmt.Errorf("encode tree: node %d split counts do not match its entries", i)
			}
			last := -1
			for ; e < end; e++ {
				c := int(t.SplitChild[e])
				if c <= last || c >= k {
					return f, fmt.Errorf("encode tree: node %d dimension %d names children out of order or range", i, d)
				}
				last = c
				w := uint16(t.SplitWeight[e])
				ex := uint8(w >> 7)
				if ex == 0 || ex == 0xff {
					f.codes = false // zero, subnormal, infinite or NaN
				}
				top[c], low[c] = max(top[c], ex), min(low[c], ex)
				f.mantissas |= uint8(w & 0x7f)
			}
		}
		if e != t.EntryStart[i+1] {
			return f, fmt.Errorf("encode tree: node %d split counts do not match its entries", i)
		}
		for c := range k {
			if low[c] <= top[c] { // the child has entries
				f.span = max(f.span, top[c]-low[c])
			}
		}
		inv, size := 1/float32(t.Size[i]), t.Size[i]
		prevLabel := int32(-1)
		for q := t.LeafStart[i]; q < t.LeafStart[i+1]; q++ {
			if l := t.LeafLabel[q]; l <= prevLabel {
				return f, fmt.Errorf("encode tree: leaf %d labels not increasing", i)
			}
			prevLabel = t.LeafLabel[q]
			v := t.LeafValue[q]
			c := int32(math.Round(float64(v) * float64(size)))
			if c < 1 || c > size || float32(c)*inv != v {
				f.counts = false
			}
		}
	}
	return f, nil
}

// appendPiece appends the stream of nodes [lo, hi), checked by
// checkPiece, in the given weight and value formats.
func (t *Tree) appendPiece(b []byte, weights, values byte, lo, hi int) []byte {
	var count, at [MaxBranch + 1]int64
	var top [MaxBranch]uint8
	var dims []int32
	var ws []BFloat16
	le := binary.LittleEndian
	for i := lo; i < hi; i++ {
		k := int(t.NumChildren[i])
		if k > 0 {
			// Counting sort of the node's entries by child, dimensions
			// ascending within each.
			e0, e1 := t.EntryStart[i], t.EntryStart[i+1]
			clear(count[:k+1])
			for e := e0; e < e1; e++ {
				count[t.SplitChild[e]+1]++
			}
			if weights > 0 { // the codes' exponents
				clear(top[:k])
				for e := e0; e < e1; e++ {
					c := t.SplitChild[e]
					top[c] = max(top[c], uint8(uint16(t.SplitWeight[e])>>7))
				}
			}
			for c := range k {
				count[c+1] += count[c]
			}
			copy(at[:k], count[:k])
			dims, ws = slices.Grow(dims[:0], int(e1-e0))[:e1-e0], slices.Grow(ws[:0], int(e1-e0))[:e1-e0]
			e := e0
			for q := t.SplitStart[i]; q < t.SplitStart[i+1]; q++ {
				for end := e + int64(t.SplitCount[q]); e < end; e++ {
					c := t.SplitChild[e]
					dims[at[c]], ws[at[c]] = t.SplitDim[q], t.SplitWeight[e]
					at[c]++
				}
			}
			for c := range k {
				b = appendUvarint(b, uint64(count[c+1]-count[c]))
				if weights > 0 && count[c+1] > count[c] {
					b = append(b, top[c])
				}
				prev := int32(-1)
				for j := count[c]; j < count[c+1]; j++ {
					b = appendUvarint(b, uint64(dims[j]-prev-1))
					prev = dims[j]
					if weights == 0 {
						b = le.AppendUint16(b, uint16(ws[j]))
					} else {
						b = append(b, weightCode(ws[j], top[c], weights))
					}
				}
			}
		}
		prev := int32(-1)
		for q := t.LeafStart[i]; q < t.LeafStart[i+1]; q++ {
			b = appendUvarint(b, uint64(t.LeafLabel[q]-prev-1))
			prev = t.LeafLabel[q]
			if values == valuesCounts {
				b = appendUvarint(b, uint64(math.Round(float64(t.LeafValue[q])*float64(t.Size[i]))))
			} else {
				b = le.AppendUint32(b, math.Float32bits(t.LeafValue[q]))
			}
		}
	}
	return b
}

// appendUvarint is binary.AppendUvarint with the one-byte case inline:
// most gaps, counts and leaf counts of a tree take one byte.
func appendUvarint(b []byte, v uint64) []byte {
	if v < 0x80 {
		return append(b, byte(v))
	}
	return binary.AppendUvarint(b, v)
}

// weightCode returns the 1-byte code of m mantissa bits of w, a weight of
// a child whose largest exponent is top (see the layout): its exponent is
// stored up from the lowest the child's codes reach, so that decoding
// (codeBits) is one addition.
func weightCode(w BFloat16, top uint8, m byte) byte {
	sign, ex, f := byte(w>>15), uint8(w>>7), byte(w&0x7f)
	return sign<<7 | (ex-top+1<<(7-m)-1)<<m | f>>(7-m)
}

// codeBase returns the part of the float32 bits of every code of m
// mantissa bits of a child whose largest exponent is top: the lowest
// exponent its codes reach.
func codeBase(top uint8, m byte) int32 { return (int32(top) - 1<<(7-m) + 1) << 23 }

// codeBits returns the float32 bits of code c of m mantissa bits, of a
// child of base codeBase.
func codeBits(c byte, base int32, m byte) uint32 {
	return uint32(c>>7)<<31 | uint32(base+int32(c&0x7f)<<(23-m))
}

// UnmarshalBinary decodes a tree written by MarshalBinary (TRE4, or the
// older TRE3 and TRE2) and checks that every offset and id is in range, so
// that a damaged file is an error rather than a panic at prediction time.
// Leaf labels are checked against the model's L by PackedTree.CheckLabels.
func (t *Tree) UnmarshalBinary(b []byte) error {
	r := wire.NewReader(b)
	switch r.U32() {
	case treeMagic:
		p, err := PackTree(b)
		if err != nil {
			return err
		}
		p.unpack(t)
		return nil
	case treeMagicV3:
		return t.decodeV3(r)
	case treeMagicV2:
		return t.decodeV2(r)
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
