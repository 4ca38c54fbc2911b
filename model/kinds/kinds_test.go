package kinds

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"xmc/model"
	"xmc/model/forest"
	"xmc/model/linear"
	"xmc/model/plt"
)

// TestOf checks how a header names its kind: the first algorithms by
// name alone, every later one by its recorded kind.
func TestOf(t *testing.T) {
	for _, c := range []struct {
		h       model.Header
		want    string
		wantErr error
	}{
		{model.Header{Algorithm: "forest"}, "forest", nil},
		{model.Header{Algorithm: "dismec"}, "linear", nil},
		{model.Header{Algorithm: "ppdsparse"}, "linear", nil},
		{model.Header{Algorithm: "lsq", Kind: "linear"}, "linear", nil},
		{model.Header{Algorithm: "lsq"}, "", model.ErrCorrupt},
		{model.Header{Algorithm: "future", Kind: "hypergraph"}, "", model.ErrVersion},
	} {
		k, err := Of(c.h)
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
		kind      model.Kind
		algorithm string
		recorded  string
	}{
		{forest.Kind{}, "forest", ""},
		{linear.Kind{}, "dismec", ""},
		{linear.Kind{}, "ppdsparse", ""},
		{linear.Kind{}, "lsq", "linear"},
		{forest.Kind{}, "extra-trees", "forest"},
		{plt.Kind{}, "plt", "plt"},
	} {
		h := model.NewHeader(c.kind, c.algorithm, 10, 3, 7, params)
		if h.Kind != c.recorded {
			t.Errorf("%s: header records kind %q, want %q", c.algorithm, h.Kind, c.recorded)
		}
		js, _ := json.Marshal(h)
		if c.recorded == "" && strings.Contains(string(js), `"kind"`) {
			t.Errorf("%s: header JSON %s names a kind", c.algorithm, js)
		}
		if k, err := Of(h); err != nil || k.Name() != c.kind.Name() {
			t.Errorf("%s: Of(NewHeader) = %v, %v", c.algorithm, k, err)
		}
	}
}

// TestLoad loads a forest (whose header names no kind, as the first
// algorithms' never did) and a linear model of a later algorithm (lsq,
// whose header names its kind), both written by xmc train (the README in
// testdata says how), through Load, which must find each one's kind in its
// header; a kind's own loader refuses a model of the other kind.
func TestLoad(t *testing.T) {
	for _, c := range []struct {
		file, kind, algorithm, summary string
	}{
		{"forest.model", "forest", "forest", "2 trees"},
		{"lsq.model", "linear", "lsq", "147 labels"},
		{"plt.model", "plt", "plt", "1 trees"},
	} {
		path := filepath.Join("testdata", c.file)
		m, h, err := Load(path, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if h.Algorithm != c.algorithm || !strings.HasPrefix(m.Summary(), c.summary) {
			t.Errorf("%s: loaded %s holding %q, want %s holding %q", c.file, h.Algorithm, m.Summary(), c.algorithm, c.summary)
		}
		var out bytes.Buffer
		if err := m.Describe(&out); err != nil {
			t.Error(err)
		}
		for _, other := range All() {
			if other.Name() == c.kind {
				continue
			}
			if _, _, err := other.Load(path, nil); err == nil || !strings.Contains(err.Error(), "not a "+other.Name()) {
				t.Errorf("%s loaded as %s: %v", c.file, other.Name(), err)
			}
		}
	}
}
