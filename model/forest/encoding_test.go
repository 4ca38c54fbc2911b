package forest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"testing"
)

// legacyHeader returns the start that TRE2 and TRE3 share: the magic, the
// projections and the node, split-dimension, entry and leaf-entry counts.
func legacyHeader(magic uint32, t *Tree) []byte {
	le := binary.LittleEndian
	b := le.AppendUint32(nil, magic)
	for _, p := range []Projection{t.X, t.Y} {
		b = le.AppendUint32(b, uint32(p.Dim))
		b = le.AppendUint32(b, p.BucketSeed)
		b = le.AppendUint32(b, p.SignSeed)
	}
	for _, v := range []int{t.Nodes(), len(t.SplitDim), len(t.SplitChild), len(t.LeafLabel)} {
		b = le.AppendUint64(b, uint64(v))
	}
	return b
}

// encodeV2 writes t in the previous TRE2 layout, which model files written
// before TRE3 hold: magic, projections, counts, then every slice plain.
func encodeV2(t *Tree) []byte {
	le := binary.LittleEndian
	b := legacyHeader(treeMagicV2, t)
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
	return b
}

// encodeV3 writes t in the TRE3 layout, which model files written before
// TRE4 hold (see decodeV3): feature-major splits with child masks.
func encodeV3(t *Tree) []byte {
	le := binary.LittleEndian
	maxK := int32(1)
	for _, k := range t.NumChildren {
		maxK = max(maxK, k)
	}
	m := int(maxK+7) / 8
	b := append(legacyHeader(treeMagicV3, t), byte(m))
	for i := range t.Nodes() {
		b = append(b, byte(t.NumChildren[i]))
		for _, v := range []int64{int64(t.FirstChild[i]), int64(t.Size[i]), t.SplitStart[i+1] - t.SplitStart[i], t.LeafStart[i+1] - t.LeafStart[i]} {
			b = binary.AppendUvarint(b, uint64(v))
		}
	}
	e := 0
	for i := range t.Nodes() {
		prev := int32(-1)
		for q := t.SplitStart[i]; q < t.SplitStart[i+1]; q++ {
			b = binary.AppendUvarint(b, uint64(t.SplitDim[q]-prev-1))
			prev = t.SplitDim[q]
			mask := make([]byte, m)
			for range t.SplitCount[q] {
				mask[t.SplitChild[e]/8] |= 1 << (t.SplitChild[e] % 8)
				e++
			}
			b = append(b, mask...)
		}
	}
	for _, v := range t.SplitWeight {
		b = le.AppendUint16(b, uint16(v))
	}
	for i := range t.Nodes() {
		prev := int32(-1)
		for _, l := range t.LeafLabel[t.LeafStart[i]:t.LeafStart[i+1]] {
			b = binary.AppendUvarint(b, uint64(l-prev-1))
			prev = l
		}
	}
	for _, v := range t.LeafValue {
		b = le.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

// wideTree is a root with k children (12: two mask bytes; above 64: a mask
// longer than a word), all leaves, with dimensions far apart (multi-byte
// gaps).
func wideTree(k int) *Tree {
	t := &Tree{
		X: Projection{Dim: 100000, BucketSeed: 5, SignSeed: 6}, Y: Projection{Dim: 300, BucketSeed: 7, SignSeed: 8},
		FirstChild: make([]int32, k+1), NumChildren: make([]int32, k+1), Size: make([]int32, k+1),
		SplitStart: []int64{0, 3}, EntryStart: []int64{0, 0},
		SplitDim: []int32{0, 200, 99999}, SplitCount: []uint8{2, 1, uint8(k)},
		SplitChild: []uint8{0, 11, 5},
	}
	t.FirstChild[0], t.NumChildren[0], t.Size[0] = 1, int32(k), 1000
	for c := range uint8(k) {
		t.SplitChild = append(t.SplitChild, c)
	}
	for i := range len(t.SplitChild) {
		t.SplitWeight = append(t.SplitWeight, ToBFloat16(float32(i)-7.5))
	}
	t.EntryStart[1] = int64(len(t.SplitChild))
	for n := 1; n <= k; n++ {
		t.Size[n] = int32(n)
		t.SplitStart = append(t.SplitStart, 3)
		t.EntryStart = append(t.EntryStart, t.EntryStart[1])
		t.LeafLabel = append(t.LeafLabel, int32(n), int32(n+150))
		t.LeafValue = append(t.LeafValue, 1/float32(n), 0.5)
	}
	t.LeafStart = []int64{0, 0}
	for n := 1; n <= k; n++ {
		t.LeafStart = append(t.LeafStart, int64(2*n))
	}
	return t
}

func TestTreeEncodingRoundTrip(t *testing.T) {
	for name, tr := range map[string]*Tree{"small": smallTree(), "wide": wideTree(12), "wider than a word": wideTree(70)} {
		b, err := tr.MarshalBinary()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for layout, enc := range map[string][]byte{"TRE4": b, "TRE3": encodeV3(tr), "TRE2": encodeV2(tr)} {
			var got Tree
			if err := got.UnmarshalBinary(enc); err != nil {
				t.Fatalf("%s %s: %v", name, layout, err)
			}
			if !reflect.DeepEqual(&got, tr) {
				t.Errorf("%s %s: decoded tree differs:\n got %+v\nwant %+v", name, layout, &got, tr)
			}
			if again, _ := got.MarshalBinary(); !bytes.Equal(again, b) {
				t.Errorf("%s %s: re-encoding differs", name, layout)
			}
		}
		// Appending after other bytes, with the bound reserved, encodes
		// the same bytes in place.
		prefix := []byte("trees so far")
		buf := make([]byte, len(prefix), len(prefix)+tr.MaxEncodedSize())
		copy(buf, prefix)
		out, err := tr.AppendBinary(buf)
		switch {
		case err != nil:
			t.Fatalf("%s: AppendBinary: %v", name, err)
		case !bytes.Equal(out[:len(prefix)], prefix) || !bytes.Equal(out[len(prefix):], b):
			t.Errorf("%s: AppendBinary did not append the encoding to the prefix", name)
		case &out[0] != &buf[0]:
			t.Errorf("%s: AppendBinary copied although MaxEncodedSize (%d) bytes were spare", name, tr.MaxEncodedSize())
		}
	}
}

// TestTreeEncodingRejects checks that the encoder refuses trees whose
// invariants the layout relies on are broken, and the decoder damaged input
// it could otherwise accept.
func TestTreeEncodingRejects(t *testing.T) {
	for _, c := range []struct {
		name   string
		break_ func(*Tree)
	}{
		{"children out of order", func(t *Tree) { t.SplitChild[1], t.SplitChild[2] = t.SplitChild[2], t.SplitChild[1] }},
		{"child beyond the node's", func(t *Tree) { t.SplitChild[3] = 2 }},
		{"dimensions out of order", func(t *Tree) { t.SplitDim[0], t.SplitDim[1] = 3, 1 }},
		{"leaf labels out of order", func(t *Tree) { t.LeafLabel[0], t.LeafLabel[1] = 2, 0 }},
		{"counts short of the entries", func(t *Tree) { t.SplitCount[2] = 0 }},
		{"offsets missing", func(t *Tree) { t.LeafStart = t.LeafStart[:2] }},
		{"children beyond the nodes", func(t *Tree) { t.FirstChild[0] = 2 }},
	} {
		tr := smallTree()
		c.break_(tr)
		if _, err := tr.MarshalBinary(); err == nil {
			t.Errorf("%s: encoded", c.name)
		}
	}
	good, _ := smallTree().MarshalBinary()
	// smallTree in TRE4 (1-byte codes of 7 mantissa bits, as each
	// child's weights share an exponent; leaf counts): 54 bytes of header,
	// the node table (4 bytes a node), then node 0's children (count,
	// exponent, then gap and code per entry: 6 bytes each) and the leaves'
	// (label gap, count) pairs.
	const header, table = 4 + 6*4 + 3*8 + 2, 54
	const child0, child1, leaf2 = table + 12, table + 12 + 6, table + 12 + 12 + 4
	if len(good) != leaf2+2 {
		t.Fatalf("smallTree takes %d bytes; the offsets below assume %d", len(good), leaf2+2)
	}
	for _, c := range []struct {
		name string
		edit func(b []byte)
	}{
		{"dimension beyond the projection", func(b []byte) { b[child1+2] = 9 }},
		{"more entries than counted", func(b []byte) { b[child0] = 3 }},
		{"leaf with a child beyond the nodes", func(b []byte) { b[table+4] = 3 }},
		{"internal node with leaf labels", func(b []byte) { b[table+3] = 1 }},
		{"count above the leaf's instances", func(b []byte) { b[leaf2+1] = 2 }},
		{"count 0", func(b []byte) { b[leaf2+1] = 0 }},
		{"unknown weight format", func(b []byte) { b[header-2] = 8 }},
		{"unknown value format", func(b []byte) { b[header-1] = 2 }},
		{"a projection of dimension 0", func(b []byte) { clear(b[4:8]) }},
		{"node count 0", func(b []byte) { clear(b[28:36]) }},
		{"old magic", func(b []byte) { binary.LittleEndian.PutUint32(b, 0x54524531) }},
	} {
		b := bytes.Clone(good)
		c.edit(b)
		var x Tree
		if err := x.UnmarshalBinary(b); !errors.Is(err, errTreeCorrupt) {
			t.Errorf("%s: decoded with error %v", c.name, err)
		}
	}
}

// TestTreeFormats checks the encoder's choice of formats: 1-byte codes
// where every weight fits them (rounded by RoundToCode, within
// CodeExponents binary orders of magnitude of its child's largest), leaf
// counts where every value is a count over the leaf's instances, the wider
// formats otherwise; each decodes to the tree encoded, and the compact
// tree takes at most 0.75 of TRE3's bytes.
func TestTreeFormats(t *testing.T) {
	compact := manyNodes(20000)
	offGrid := manyNodes(20000)
	offGrid.SplitWeight[2] = ToBFloat16(0x1.02p-2) // 7 mantissa bits beside a 0.5 of child 0
	notCounts := manyNodes(20000)
	notCounts.LeafValue[7] = 0.3
	tiny := manyNodes(20000)
	tiny.SplitWeight[0] = ToBFloat16(0x1p-20) // 21 binary orders below its child's largest
	for _, c := range []struct {
		name            string
		tree            *Tree
		weights, values byte
	}{
		{"compact", compact, 7, valuesCounts},
		{"a weight off the grid", offGrid, 0, valuesCounts},
		{"a value not a count", notCounts, 7, valuesFloat32},
		{"orders of magnitude apart", tiny, 2, valuesCounts},
	} {
		b, err := c.tree.MarshalBinary()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		p, err := PackTree(b)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if p.weights != c.weights || p.values != c.values {
			t.Errorf("%s: formats %d/%d, want %d/%d", c.name, p.weights, p.values, c.weights, c.values)
		}
		var got Tree
		if err := got.UnmarshalBinary(b); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !reflect.DeepEqual(&got, c.tree) {
			t.Errorf("%s: decoded tree differs", c.name)
		}
	}
	b, _ := compact.MarshalBinary()
	if v3 := len(encodeV3(compact)); float64(len(b)) > 0.75*float64(v3) {
		t.Errorf("TRE4 takes %d bytes, TRE3 %d", len(b), v3)
	}
	// A code whose exponent field reaches its child's exponent byte would
	// not be a float32 of that child's range.
	small := smallTree()
	small.SplitWeight = []BFloat16{ToBFloat16(0.5), ToBFloat16(0.75), ToBFloat16(0.5), ToBFloat16(1)}
	good, _ := small.MarshalBinary()
	if p, err := PackTree(good); err != nil || p.weights == 0 {
		t.Fatalf("smallTree with weights on the grid: %v, format %d", err, p.weights)
	}
	bad := bytes.Clone(good)
	bad[54+12+1] = 0 // child 0's exponent byte, not above its codes' exponent fields
	if _, err := PackTree(bad); !errors.Is(err, errTreeCorrupt) {
		t.Errorf("code below its exponent: %v", err)
	}
}

// TestAppendBinaryWithPieces encodes a tree of many nodes whose splits and
// leaves fall into several pieces, the pieces encoded in reverse order:
// the bytes are AppendBinary's.
func TestAppendBinaryWithPieces(t *testing.T) {
	tree := manyNodes(20000)
	want, err := tree.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	pieces := 0
	got, err := tree.AppendBinaryWith([]byte("prefix"), func(n int, fn func(i int)) error {
		pieces = n
		for i := n - 1; i >= 0; i-- {
			fn(i)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if pieces < 2 || !bytes.Equal(got[len("prefix"):], want) {
		t.Errorf("%d pieces; the bytes differ from AppendBinary's: %v", pieces, !bytes.Equal(got[len("prefix"):], want))
	}
}

// manyNodes returns a valid tree of about n nodes: the first quarter are
// internal nodes of 4 children, splitting on 8 dimensions each, the rest
// leaves of two labels.
func manyNodes(n int) *Tree {
	tr := &Tree{X: Projection{Dim: 1 << 20, BucketSeed: 1, SignSeed: 2}, Y: Projection{Dim: 1000, BucketSeed: 3, SignSeed: 4}}
	tr.SplitStart, tr.EntryStart, tr.LeafStart = []int64{0}, []int64{0}, []int64{0}
	// Internal nodes 0..k-1, each with 4 children: node i's children are
	// 4i+1..4i+4; nodes k.. are leaves.
	k := n / 4
	total := 4*k + 1
	for i := range total {
		if i < k {
			tr.FirstChild = append(tr.FirstChild, int32(4*i+1))
			tr.NumChildren = append(tr.NumChildren, 4)
			tr.Size = append(tr.Size, 8)
			for d := range 8 {
				tr.SplitDim = append(tr.SplitDim, int32(10*d+i%7))
				tr.SplitCount = append(tr.SplitCount, 2)
				tr.SplitChild = append(tr.SplitChild, 0, uint8(1+d%3))
				tr.SplitWeight = append(tr.SplitWeight, ToBFloat16(0.5), ToBFloat16(-0.25))
			}
		} else {
			tr.FirstChild = append(tr.FirstChild, 0)
			tr.NumChildren = append(tr.NumChildren, 0)
			tr.Size = append(tr.Size, 2)
			tr.LeafLabel = append(tr.LeafLabel, int32(i%500), int32(i%500+500))
			tr.LeafValue = append(tr.LeafValue, 0.5, 1)
		}
		tr.SplitStart = append(tr.SplitStart, int64(len(tr.SplitDim)))
		tr.EntryStart = append(tr.EntryStart, int64(len(tr.SplitChild)))
		tr.LeafStart = append(tr.LeafStart, int64(len(tr.LeafLabel)))
	}
	return tr
}
