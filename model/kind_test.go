package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
)

// TestKindOf checks how a header names its kind: the first algorithms by
// name alone, every later one by its recorded kind.
func TestKindOf(t *testing.T) {
	for _, c := range []struct {
		h       Header
		want    string
		wantErr error
	}{
		{Header{Algorithm: AlgorithmForest}, "forest", nil},
		{Header{Algorithm: AlgorithmDiSMEC}, "linear", nil},
		{Header{Algorithm: AlgorithmPPDSparse}, "linear", nil},
		{Header{Algorithm: "lsq", Kind: "linear"}, "linear", nil},
		{Header{Algorithm: "lsq"}, "", ErrCorrupt},
		{Header{Algorithm: "future", Kind: "hypergraph"}, "", ErrVersion},
	} {
		k, err := KindOf(c.h)
		switch {
		case c.wantErr != nil && !errors.Is(err, c.wantErr):
			t.Errorf("%+v: error %v, want %v", c.h, err, c.wantErr)
		case c.wantErr == nil && (err != nil || k.Name() != c.want):
			t.Errorf("%+v: kind %v, %v; want %s", c.h, k, err, c.want)
		}
	}
}

// TestNewHeaderKeepsOldBytes checks that the headers of the first
// algorithms record no kind, so their files stay byte for byte what they
// were, and that every other algorithm's header records its kind.
func TestNewHeaderKeepsOldBytes(t *testing.T) {
	params := json.RawMessage(`{"trees":2}`)
	for _, c := range []struct {
		kind      Kind
		algorithm string
		recorded  string
	}{
		{ForestKind{}, AlgorithmForest, ""},
		{LinearKind{}, AlgorithmDiSMEC, ""},
		{LinearKind{}, AlgorithmPPDSparse, ""},
		{LinearKind{}, "lsq", "linear"},
		{ForestKind{}, "extra-trees", "forest"},
	} {
		h := NewHeader(c.kind, c.algorithm, 10, 3, 7, params)
		if h.Kind != c.recorded {
			t.Errorf("%s: header records kind %q, want %q", c.algorithm, h.Kind, c.recorded)
		}
		js, _ := json.Marshal(h)
		if c.recorded == "" && strings.Contains(string(js), `"kind"`) {
			t.Errorf("%s: header JSON %s names a kind", c.algorithm, js)
		}
		if k, err := KindOf(h); err != nil || k.Name() != c.kind.Name() {
			t.Errorf("%s: KindOf(NewHeader) = %v, %v", c.algorithm, k, err)
		}
	}
}

// TestLoadByKind writes a forest and a linear model of a new algorithm and
// loads them through Load, which must find each one's kind in its header;
// a kind's own loader refuses a model of the other kind.
func TestLoadByKind(t *testing.T) {
	dir := t.TempDir()
	tree, err := smallTree().MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	blocks := randomBlocks(rand.New(rand.NewPCG(1, 2)), 5, 3, 2, true)
	var units [][]byte
	for _, b := range blocks {
		enc, err := b.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		units = append(units, enc)
	}
	prep, _ := json.Marshal(Preprocess{Normalize: true, Bias: true})
	for _, c := range []struct {
		kind    Kind
		h       Header
		units   [][]byte
		summary string
	}{
		{ForestKind{}, NewHeader(ForestKind{}, AlgorithmForest, 5, 3, 1, nil), [][]byte{tree, nil, tree}, "2 trees"},
		{LinearKind{}, NewHeader(LinearKind{}, "lsq", 5, 3, 1, prep), units, "3 labels"},
	} {
		path := filepath.Join(dir, c.kind.Name()+".model")
		if err := writeUnits(c.kind, path, c.h, c.units); err != nil {
			t.Fatal(err)
		}
		m, h, err := Load(path, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.kind.Name(), err)
		}
		if h.Algorithm != c.h.Algorithm || !strings.HasPrefix(m.Summary(), c.summary) {
			t.Errorf("%s: loaded %s holding %q", c.kind.Name(), h.Algorithm, m.Summary())
		}
		var out bytes.Buffer
		if err := m.Describe(&out); err != nil {
			t.Error(err)
		}
		for _, other := range Kinds() {
			if other.Name() == c.kind.Name() {
				continue
			}
			if _, _, err := other.Load(path, nil); err == nil || !strings.Contains(err.Error(), "not a "+other.Name()) {
				t.Errorf("%s file loaded as %s: %v", c.kind.Name(), other.Name(), err)
			}
		}
	}
}

// writeUnits writes and commits a model of kind k made of units.
func writeUnits(k Kind, path string, h Header, units [][]byte) error {
	w, err := CreateUnits(k, path, h, units)
	if err != nil {
		return err
	}
	return w.Commit()
}
