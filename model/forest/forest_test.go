package forest

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
)

func TestMurmur3(t *testing.T) {
	// Published MurmurHash3 x86_32 vectors for 4-byte keys.
	for _, c := range []struct{ key, seed, want uint32 }{
		{0, 0, 0x2362f9de},          // "\x00\x00\x00\x00"
		{0x64636261, 0, 0x43ed676a}, // "abcd"
		{0x64636261, 0x9747b28c, 0xf0478627},
	} {
		if got := Murmur3(c.key, c.seed); got != c.want {
			t.Errorf("Murmur3(%#x, %#x) = %#x, want %#x", c.key, c.seed, got, c.want)
		}
	}
}

func TestBFloat16(t *testing.T) {
	for _, c := range []struct{ in, want float32 }{
		{0, 0}, {1, 1}, {-2.5, -2.5}, {0.1, 0.10009765625}, {1.00390625, 1}, // tie rounds to even
		{1.01171875, 1.015625}, {float32(math.Inf(1)), float32(math.Inf(1))},
	} {
		if got := ToBFloat16(c.in).Float32(); got != c.want {
			t.Errorf("bfloat16(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	if v := ToBFloat16(float32(math.NaN())).Float32(); v == v {
		t.Error("NaN did not stay NaN")
	}
}

// smallTree is a hand-built tree: a root with two children, both leaves.
// Child 0's centroid uses projected dimensions 1 and 3, child 1's 3 and 4.
func smallTree() *Tree {
	w := func(v float32) BFloat16 { return ToBFloat16(v) }
	return &Tree{
		X:           Projection{Dim: 5, BucketSeed: 1, SignSeed: 2},
		Y:           Projection{Dim: 3, BucketSeed: 3, SignSeed: 4},
		FirstChild:  []int32{1, 0, 0},
		NumChildren: []int32{2, 0, 0},
		Size:        []int32{4, 3, 1},
		SplitStart:  []int64{0, 3, 3, 3},
		EntryStart:  []int64{0, 4, 4, 4},
		LeafStart:   []int64{0, 0, 2, 3},
		SplitDim:    []int32{1, 3, 4},
		SplitCount:  []uint8{1, 2, 1},
		SplitChild:  []uint8{0, 0, 1, 1},
		SplitWeight: []BFloat16{w(0.6), w(0.8), w(0.6), w(0.8)},
		LeafLabel:   []int32{0, 2, 1},
		LeafValue:   []float32{1, 1.0 / 3, 1},
	}
}

// pack encodes and packs tr, failing the test on error.
func pack(t testing.TB, tr *Tree) *PackedTree {
	t.Helper()
	b, err := tr.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	p, err := PackTree(b)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSplitIndexBest(t *testing.T) {
	tr := pack(t, smallTree())
	ix := NewSplitIndex(5)
	ix.Load(tr, 0)
	scores := make([]float32, 2)
	for _, c := range []struct {
		buckets []int32
		signed  []float32
		want    int32
	}{
		{[]int32{1}, []float32{1}, 0},
		{[]int32{4}, []float32{1}, 1},
		{[]int32{3}, []float32{1}, 0},             // 0.8 vs 0.6
		{[]int32{3, 4}, []float32{1, 1}, 1},       // 0.8 vs 1.4
		{[]int32{1, 1, 4}, []float32{1, 1, 1}, 0}, // collisions add up: 1.2 against 0.8
		{[]int32{0, 2}, []float32{1, 1}, 0},       // no overlap: tie goes to child 0
	} {
		if got := ix.Best(c.buckets, c.signed, scores); got != c.want {
			t.Errorf("Best(%v, %v) = %d, want %d", c.buckets, c.signed, got, c.want)
		}
	}
	ix.Unload()
	for d, e := range ix.row {
		if e != 0 {
			t.Errorf("Unload left dimension %d set", d)
		}
	}
}

// TestBestDot checks BestDot against a plain sparse sum, for every number
// of children up to a few strides: the same scores bit for bit, whatever
// the zero weights, and the same child, ties to the lowest.
func TestBestDot(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const dims = 20
	for k := 1; k <= 3*dotLanes+1; k++ {
		stride := DotStride(k)
		w := make([]float32, dims*stride)
		for i := range w {
			if i%stride < k && r.IntN(3) > 0 {
				w[i] = float32(r.IntN(5)) / 4 // small values: ties are common
			}
		}
		for range 50 {
			n := r.IntN(8)
			rows, val := make([]int32, n), make([]float32, n)
			for i := range rows {
				rows[i], val[i] = int32(r.IntN(dims)), float32(r.IntN(5)-2)
			}
			want := make([]float32, k)
			for i, d := range rows {
				for c := range want {
					if x := w[int(d)*stride+c]; x != 0 {
						want[c] += val[i] * x
					}
				}
			}
			best := 0
			for c := range want {
				if want[c] > want[best] {
					best = c
				}
			}
			scores := make([]float32, k)
			if got := BestDot(w, stride, rows, val, scores); got != int32(best) {
				t.Fatalf("k=%d: BestDot chose %d (scores %v), want %d (%v)", k, got, scores, best, want)
			}
			for c := range want {
				if math.Float32bits(scores[c]) != math.Float32bits(want[c]) {
					t.Fatalf("k=%d: score %d is %v, want %v", k, c, scores[c], want[c])
				}
			}
		}
	}
}

func TestTreeRoundTripAndCorruption(t *testing.T) {
	tr := smallTree()
	b, err := tr.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var got Tree
	if err := got.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	b2, _ := got.MarshalBinary()
	if !bytes.Equal(b, b2) {
		t.Fatal("round trip changed the encoding")
	}
	if err := pack(t, &got).CheckLabels(2); err == nil {
		t.Error("CheckLabels(2) accepted label 2")
	}
	// Every truncation and many single-byte changes are errors, never
	// panics, and PackTree accepts exactly what UnmarshalBinary does.
	for n := range len(b) {
		var x Tree
		if err := x.UnmarshalBinary(b[:n]); err == nil {
			t.Fatalf("truncated to %d bytes: no error", n)
		}
		if _, err := PackTree(b[:n]); err == nil {
			t.Fatalf("truncated to %d bytes: packed", n)
		}
	}
	for i := range b {
		c := bytes.Clone(b)
		c[i] ^= 0xff
		var x Tree
		err := x.UnmarshalBinary(c) // must not panic; some flips (weights) are valid trees
		if _, perr := PackTree(c); (err == nil) != (perr == nil) {
			t.Fatalf("byte %d flipped: UnmarshalBinary says %v, PackTree %v", i, err, perr)
		}
	}
}

func FuzzTreeUnmarshal(f *testing.F) {
	for _, tr := range []*Tree{smallTree(), wideTree(12), wideTree(70)} {
		b, _ := tr.MarshalBinary()
		f.Add(b)
		f.Add(encodeV2(tr))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var dec Tree
		err := dec.UnmarshalBinary(b)
		tr, perr := PackTree(b)
		if (err == nil) != (perr == nil) {
			t.Fatalf("UnmarshalBinary says %v, PackTree %v", err, perr)
		}
		if err != nil || tr.X.Dim > 1<<16 {
			return // a large dimension is valid, but its routing table would make the fuzzer slow
		}
		// A tree that packs must route any instance without panicking.
		ix := NewSplitIndex(int(tr.X.Dim))
		scores := make([]float32, MaxBranch)
		if tr.maxLabel >= 1<<20 {
			return // valid, but its label sums would make the fuzzer slow
		}
		acc := make([]float64, tr.maxLabel+1)
		for n := range int32(tr.Nodes()) {
			if tr.numChildren[n] == 0 {
				tr.AddLeaf(n, acc, nil)
				continue
			}
			ix.Load(tr, n)
			ix.Best([]int32{0, tr.X.Dim - 1}, []float32{1, -1}, scores)
			ix.Unload()
		}
	})
}
