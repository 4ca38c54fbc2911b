package forest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"testing"
)

// encodeV2 writes t in the previous TRE2 layout, which model files written
// before TRE3 hold: magic, projections, counts, then every slice plain.
func encodeV2(t *Tree) []byte {
	le := binary.LittleEndian
	b := le.AppendUint32(nil, treeMagicV2)
	for _, p := range []Projection{t.X, t.Y} {
		b = le.AppendUint32(b, uint32(p.Dim))
		b = le.AppendUint32(b, p.BucketSeed)
		b = le.AppendUint32(b, p.SignSeed)
	}
	for _, v := range []int{t.Nodes(), len(t.SplitDim), len(t.SplitChild), len(t.LeafLabel)} {
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
		for layout, enc := range map[string][]byte{"TRE3": b, "TRE2": encodeV2(tr)} {
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
		if v2 := len(encodeV2(tr)); len(b) >= v2 {
			t.Errorf("%s: TRE3 takes %d bytes, TRE2 %d", name, len(b), v2)
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
	} {
		tr := smallTree()
		c.break_(tr)
		if _, err := tr.MarshalBinary(); err == nil {
			t.Errorf("%s: encoded", c.name)
		}
	}
	good, _ := smallTree().MarshalBinary()
	header := 4 + 6*4 + 4*8 + 1 // magic, projections, counts, mask width
	// smallTree's split dimensions take the 6 bytes before its 4 weights,
	// 3 leaf labels and 3 leaf values: (gap, mask) for dimensions 1, 3, 4.
	dims := len(good) - 3*4 - 3 - 4*2 - 3*2
	for _, c := range []struct {
		name string
		edit func(b []byte)
	}{
		{"mask naming child 2 of 2", func(b []byte) { b[dims+1] = 0b100 }},
		{"empty mask", func(b []byte) { b[dims+1] = 0 }},
		{"dimension beyond the projection", func(b []byte) { b[dims] = 9 }},
		{"more entries than counted", func(b []byte) { b[dims+5] = 0b11 }},
		{"leaf with a child beyond the nodes", func(b []byte) { b[header] = 3 }},
		{"mask width 0", func(b []byte) { b[header-1] = 0 }},
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
