package linear

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"xmc/data"
	"xmc/model"
	"xmc/numa/numatest"
)

// randomBlocks returns L labels over D features (plus a bias column if
// bias) with random sparse weights, dealt into blocks of perBlock labels in
// a shuffled order; some labels have no weight at all.
func randomBlocks(rng *rand.Rand, D, L, perBlock int, bias bool) []*Block {
	order := rng.Perm(L)
	var blocks []*Block
	w := make([]float64, D+1)
	for lo := 0; lo < L; lo += perBlock {
		b := new(Block)
		b.Reset()
		for _, l := range order[lo:min(lo+perBlock, L)] {
			clear(w)
			if l%7 != 3 { // every 7th label keeps no weight
				for j := range D {
					if rng.IntN(3) == 0 {
						w[j] = rng.NormFloat64()
					}
				}
				if bias {
					w[D] = rng.NormFloat64()
				}
			}
			b.Append(int32(l), w[:D+boolInt(bias)], 0.05)
		}
		blocks = append(blocks, b)
	}
	return blocks
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// randomRows returns n sparse rows over D features with positive values.
func randomRows(rng *rand.Rand, n, D int) *data.CSR {
	x := &data.CSR{Rows: n, Cols: D, Indptr: []int64{0}}
	for range n {
		for j := range D {
			if rng.IntN(4) == 0 {
				x.Indices = append(x.Indices, int32(j))
				x.Values = append(x.Values, float32(rng.IntN(5)+1))
			}
		}
		x.Indptr = append(x.Indptr, int64(len(x.Indices)))
	}
	return x
}

// bruteForce scores every label of blocks densely on every row of x,
// preprocessed with data.NormalizeRows, and returns each row's top k.
func bruteForce(x *data.CSR, D int, prep Preprocess, blocks []*Block, k int) [][]model.Scored {
	xc := data.CSR{Rows: x.Rows, Cols: x.Cols, Indptr: x.Indptr, Indices: x.Indices, Values: slices.Clone(x.Values)}
	if prep.Normalize {
		data.NormalizeRows(&xc)
	}
	out := make([][]model.Scored, x.Rows)
	for i := range x.Rows {
		idx, val := xc.Row(i)
		var row []model.Scored
		for _, b := range blocks {
			for r, l := range b.Labels {
				feat, w := b.Row(r)
				dense := make([]float64, D+1)
				for q, j := range feat {
					dense[j] = float64(w[q])
				}
				var s float64
				for q, j := range idx {
					s += float64(val[q]) * dense[j]
				}
				if prep.Bias {
					s += dense[D]
				}
				row = append(row, model.Scored{Label: l, Score: float32(s)})
			}
		}
		out[i] = model.TopK(row, k)
	}
	return out
}

// TestLinearPredict compares Predict with dense scoring of every label,
// and checks that merging the PartialTopK of label shards gives the same
// result bit for bit.
func TestLinearPredict(t *testing.T) {
	pool := numatest.Pool(t, 2, 1)
	const D, L, n = 30, 50, 300
	for _, prep := range []Preprocess{{}, {Normalize: true}, {Bias: true}, {Normalize: true, Bias: true}} {
		for _, k := range []int{1, 5, 60} {
			rng := rand.New(rand.NewPCG(uint64(k), 7))
			blocks := randomBlocks(rng, D, L, 8, prep.Bias)
			x := randomRows(rng, n, D-2) // test data may have fewer columns
			m, err := New(D, L, prep, blocks)
			if err != nil {
				t.Fatal(err)
			}
			got, err := m.Predict(x, k, pool)
			if err != nil {
				t.Fatal(err)
			}
			want := bruteForce(x, D, prep, blocks, k)
			for i := range want {
				if !slices.Equal(got[i], want[i]) {
					t.Fatalf("%+v k=%d row %d: Predict %v, dense scoring %v", prep, k, i, got[i], want[i])
				}
			}
			// Shards: blocks dealt cyclically to 3 "ranks".
			var parts [][]byte
			for r := range 3 {
				var own []*Block
				for bi := r; bi < len(blocks); bi += 3 {
					own = append(own, blocks[bi])
				}
				shard, err := New(D, L, prep, own)
				if err != nil {
					t.Fatal(err)
				}
				partial, err := shard.PartialTopK(x, k, pool)
				if err != nil {
					t.Fatal(err)
				}
				parts = append(parts, model.EncodeSums(partial))
			}
			merged, err := MergeTopK(parts, n, L, k)
			if err != nil {
				t.Fatal(err)
			}
			for i := range want {
				if !slices.Equal(merged[i], got[i]) {
					t.Fatalf("%+v k=%d row %d: merged shards %v, whole model %v", prep, k, i, merged[i], got[i])
				}
			}
		}
	}
}

// TestLinearPredictUntouched checks labels that no feature of a row
// touches: they score their bias, or 0, and must still be ranked.
func TestLinearPredictUntouched(t *testing.T) {
	pool := numatest.Pool(t, 1, 1)
	b := new(Block)
	b.Reset()
	// D = 2, bias column 2. Label 0: feature 0 only, weight −1. Label 1:
	// no weights (score 0). Label 2: bias 0.5 only. Label 3: feature 1 and
	// bias −3.
	b.Append(0, []float64{-1, 0, 0}, 0)
	b.Append(1, []float64{0, 0, 0}, 0)
	b.Append(2, []float64{0, 0, 0.5}, 0)
	b.Append(3, []float64{0, 2, -3}, 0)
	m, err := New(2, 4, Preprocess{Bias: true}, []*Block{b})
	if err != nil {
		t.Fatal(err)
	}
	x := &data.CSR{Rows: 2, Cols: 2, Indptr: []int64{0, 1, 1}, Indices: []int32{0}, Values: []float32{1}}
	got, err := m.Predict(x, 3, pool)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]model.Scored{
		{{Label: 2, Score: 0.5}, {Label: 1, Score: 0}, {Label: 0, Score: -1}},
		{{Label: 2, Score: 0.5}, {Label: 0, Score: 0}, {Label: 1, Score: 0}},
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("row %d: %v, want %v", i, got[i], want[i])
		}
	}
	if m.NNZ() != 4 {
		t.Errorf("NNZ = %d, want 4", m.NNZ())
	}
	if _, err := m.Predict(&data.CSR{Rows: 0, Cols: 3, Indptr: []int64{0}}, 3, pool); err == nil {
		t.Error("no error for data wider than the model")
	}
}

func TestLinearBlockRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, b := range randomBlocks(rng, 20, 10, 4, true) {
		enc, err := b.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var got Block
		if err := got.UnmarshalBinary(enc); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Labels, b.Labels) || !slices.Equal(got.Start, b.Start) ||
			!slices.Equal(got.Feature, b.Feature) || !slices.Equal(got.Weight, b.Weight) {
			t.Errorf("round trip changed the block: %+v vs %+v", got, *b)
		}
		// Every truncation is an error, never a panic.
		for n := range len(enc) {
			if err := new(Block).UnmarshalBinary(enc[:n]); err == nil {
				t.Errorf("truncated to %d of %d bytes: no error", n, len(enc))
			}
		}
	}
}

func TestLinearBlockCorrupt(t *testing.T) {
	b := new(Block)
	b.Reset()
	b.Append(4, []float64{0, 1, 0, 2}, 0)
	b.Append(7, []float64{3, 0, 0, 0}, 0)
	good, err := b.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	// Layout: magic 4, counts 16, labels 2×4, starts 3×8, features 3×4, weights 3×4.
	const labels, starts, features, weights = 20, 28, 52, 64
	tests := []struct {
		name string
		edit func(b []byte)
	}{
		{"magic", func(b []byte) { b[0] ^= 1 }},
		{"negative label", func(b []byte) { b[labels+3] = 0x80 }},
		{"offsets", func(b []byte) { b[starts+8] = 9 }},
		{"unsorted features", func(b []byte) { b[features] = 3 }},
		{"nan weight", func(b []byte) { copy(b[weights:], []byte{0, 0, 0xc0, 0x7f}) }},
		{"label count", func(b []byte) { b[4] = 3 }},
	}
	for _, tc := range tests {
		bad := slices.Clone(good)
		tc.edit(bad)
		if err := new(Block).UnmarshalBinary(bad); !errors.Is(err, errLinearCorrupt) {
			t.Errorf("%s: error %v, want a corrupt-block error", tc.name, err)
		}
	}
	if err := b.Check(8, 4); err != nil {
		t.Errorf("Check on a valid block: %v", err)
	}
	if err := b.Check(7, 4); err == nil {
		t.Error("Check accepted label 7 with L = 7")
	}
	if err := b.Check(8, 3); err == nil {
		t.Error("Check accepted column 3 with 3 columns")
	}
	if _, err := New(4, 8, Preprocess{}, []*Block{b, b}); err == nil {
		t.Error("New accepted a label in two blocks")
	}
}

// TestLinearFile writes a model whole and as two shards with a manifest,
// and loads it back whole and in part.
func TestLinearFile(t *testing.T) {
	dir := t.TempDir()
	pool := numatest.Pool(t, 1, 1)
	const D, L = 12, 20
	rng := rand.New(rand.NewPCG(5, 6))
	blocks := randomBlocks(rng, D, L, 6, true)
	units := make([][]byte, len(blocks))
	for u, b := range blocks {
		var err error
		if units[u], err = b.MarshalBinary(); err != nil {
			t.Fatal(err)
		}
	}
	params := json.RawMessage(`{"cost":1,"normalize":true,"bias":true}`)
	h := model.Header{Algorithm: "dismec", D: D, L: L, Params: params}
	whole := filepath.Join(dir, "m.xmc")
	if err := writeUnits(Kind{}, whole, h, units); err != nil {
		t.Fatal(err)
	}
	// Two shards, units dealt cyclically, and their manifest.
	manifest := filepath.Join(dir, "sharded.xmc")
	m := &model.Manifest{Header: h}
	m.Header.Counts = map[string]int64{"labels": L}
	for r := range 2 {
		sh := h
		sh.Shard = &model.ShardInfo{Rank: r, Ranks: 2, Axis: "labels", Lo: int64(r), Hi: int64(len(units)), Stride: 2}
		path := fmt.Sprintf("%s.rank-%04d-of-0002", manifest, r)
		w, err := model.Create(path, sh)
		if err != nil {
			t.Fatal(err)
		}
		for u := r; u < len(units); u += 2 {
			if err := w.AddSection(Kind{}.Section(u), units[u]); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
		m.Shards = append(m.Shards, model.ShardRef{Path: filepath.Base(path), Rank: r, Bytes: w.Bytes(), CRC32C: w.CRC32C()})
	}
	if err := model.WriteManifest(manifest, m); err != nil {
		t.Fatal(err)
	}

	x := randomRows(rng, 50, D)
	want := bruteForce(x, D, Preprocess{Normalize: true, Bias: true}, blocks, 4)
	for _, path := range []string{whole, manifest} {
		lin, hdr, err := Load(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Counts["labels"] != L || lin.Prep != (Preprocess{Normalize: true, Bias: true}) || len(lin.Labels()) != L {
			t.Errorf("%s: header counts %v, prep %+v, %d labels", path, hdr.Counts, lin.Prep, len(lin.Labels()))
		}
		got, err := lin.Predict(x, 4, pool)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if !slices.Equal(got[i], want[i]) {
				t.Fatalf("%s row %d: %v, want %v", path, i, got[i], want[i])
			}
		}
		part, _, err := Load(path, func(u int) bool { return u == 1 })
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(part.Labels(), slices.Sorted(slices.Values(blocks[1].Labels))) {
			t.Errorf("%s: unit 1 alone holds labels %v, want %v", path, part.Labels(), blocks[1].Labels)
		}
	}
	if c, _ := Counts(units); c["units"] != int64(len(units)) || c["labels"] != L {
		t.Errorf("Counts = %v", c)
	}

	// Errors: not a linear model; params without the preprocessing; a
	// unit missing while the header counts every label.
	if _, _, err := Load(whole+".missing", nil); err == nil {
		t.Error("no error for a missing file")
	}
	forest := filepath.Join(dir, "forest.xmc")
	if err := model.WriteFile(forest, model.Header{Algorithm: "forest", D: D, L: L}, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load(forest, nil); err == nil || !strings.Contains(err.Error(), "not a linear") {
		t.Errorf("loading a forest: %v", err)
	}
	if err := writeUnits(Kind{}, filepath.Join(dir, "x.xmc"), model.Header{Algorithm: "dismec", D: D, L: L}, units); err == nil {
		t.Error("a linear model without params in its header was written")
	}
	partial := filepath.Join(dir, "partial.xmc")
	h.Counts = map[string]int64{"labels": L}
	if err := model.WriteFile(partial, h, []model.Section{{Name: Kind{}.Section(0), Data: units[0]}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load(partial, nil); err == nil || !strings.Contains(err.Error(), "header counts") {
		t.Errorf("loading a model missing units: %v", err)
	}
	if _, err := os.Stat(whole); err != nil {
		t.Fatal(err)
	}
}

// TestLinearAppendPrune checks that Append, AppendSparse and AppendPairs
// keep exactly the weights of magnitude at least prune, each label's
// between its start and the next's.
func TestLinearAppendPrune(t *testing.T) {
	dense := []float64{0.5, -0.01, 0.009, 0, -2, math.SmallestNonzeroFloat64}
	cols := []int32{0, 1, 2, 4, 5}
	pairs := []float64{0.5, -0.01, 0.009, -2, math.SmallestNonzeroFloat64}
	tests := []struct {
		name   string
		append func(b *Block, l int32)
	}{
		{"Append", func(b *Block, l int32) { b.Append(l, dense, 0.01) }},
		{"AppendSparse", func(b *Block, l int32) { b.AppendSparse(l, cols, dense, 0.01) }},
		{"AppendPairs", func(b *Block, l int32) { b.AppendPairs(l, cols, pairs, 0.01) }},
	}
	for _, tt := range tests {
		var b Block
		tt.append(&b, 3)
		tt.append(&b, 7)
		for r := range 2 {
			feat, w := b.Row(r)
			if !slices.Equal(feat, []int32{0, 1, 4}) || !slices.Equal(w, []float32{0.5, -0.01, -2}) {
				t.Errorf("%s: label %d kept %v %v", tt.name, b.Labels[r], feat, w)
			}
		}
		if !slices.Equal(b.Labels, []int32{3, 7}) || !slices.Equal(b.Start, []int64{0, 3, 6}) {
			t.Errorf("%s: labels %v, starts %v", tt.name, b.Labels, b.Start)
		}
	}
}

// writeUnits writes and commits a model of kind k made of units.
func writeUnits(k model.Kind, path string, h model.Header, units [][]byte) error {
	w, err := model.CreateUnits(k, path, h, units)
	if err != nil {
		return err
	}
	return w.Commit()
}
