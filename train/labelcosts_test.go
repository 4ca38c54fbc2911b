package train

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestReadLabelCosts checks that what WriteLabelCosts writes reads back,
// and that a bad file is refused with its name, line and what was wanted.
func TestReadLabelCosts(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	want := &LabelCosts{Strata: []LabelStratum{{0, 16, 3.453}, {16, 32, 2.229}, {32, 64, 0.0125}}}
	var b bytes.Buffer
	if err := WriteLabelCosts(&b, want, "ppdsparse on train.txt"); err != nil {
		t.Fatal(err)
	}
	path := write("good.txt", b.String())
	got, err := ReadLabelCosts(path)
	if err != nil || !slices.Equal(got.Strata, want.Strata) || got.Labels() != 64 || got.Path != path {
		t.Fatalf("read back %+v, %v; want %+v", got, err, want)
	}
	for _, c := range []struct{ name, text, want string }{
		{"gap", "0 16 1\n17 32 1\n", "gap:2: the stratum starts at label 17, want 16"},
		{"overlap", "# c\n0 16 1\n8 32 1\n", "overlap:3: the stratum starts at label 8, want 16"},
		{"late", "4 16 1\n", "late:1: the stratum starts at label 4, want 0"},
		{"fields", "0 16\n", "fields:1: want FROM TO CORE-S"},
		{"empty-range", "0 0 1\n", "empty-range:1: want FROM TO CORE-S"},
		{"negative", "0 16 -1\n", "negative:1: want FROM TO CORE-S"},
		{"zero", "0 16 0\n16 20 0\n", "zero: every stratum costs 0"},
		{"nan", "0 16 NaN\n", "nan:1: want FROM TO CORE-S"},
		{"inf", "0 16 +Inf\n", "inf:1: want FROM TO CORE-S"},
		{"word", "0 sixteen 1\n", "word:1: want FROM TO CORE-S"},
		{"none", "# only a comment\n\n", "none: no stratum"},
	} {
		_, err := ReadLabelCosts(write(c.name, c.text))
		if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, c.want)) {
			t.Errorf("%s: error %v, want one with %q", c.name, err, c.want)
		}
	}
	if _, err := ReadLabelCosts(filepath.Join(dir, "absent.txt")); err == nil {
		t.Error("a file that is not there gave no error")
	}
}

// TestLabelCostsPerLabel checks the interpolation: a stratum's own cost
// at its middle label and before the first middle and after the last,
// and between middles, values between theirs that fall with the place.
func TestLabelCostsPerLabel(t *testing.T) {
	c := &LabelCosts{Strata: []LabelStratum{{0, 16, 4}, {16, 32, 2}, {32, 64, 1}}}
	for _, p := range []struct {
		rank int
		want float64
	}{{0, 4}, {8, 4}, {24, 2}, {48, 1}, {63, 1}} {
		if got := c.PerLabel(p.rank); math.Abs(got-p.want) > 1e-12 {
			t.Errorf("label %d costs %v, want %v", p.rank, got, p.want)
		}
	}
	last := math.Inf(1)
	for rank := 8; rank <= 48; rank++ {
		got := c.PerLabel(rank)
		if got > last || got < 1 || got > 4 {
			t.Errorf("label %d costs %v after %v: want a fall from 4 to 1", rank, got, last)
		}
		last = got
	}
}

// TestSelectLabelsMeasured checks parts cut by measured costs: they cover
// every label once, in order; a costly head makes the first part short;
// and costs of other data or without parts are refused.
func TestSelectLabelsMeasured(t *testing.T) {
	blocks := [][]int32{{7, 3, 9}, {1, 2}, {0}, {4, 5, 6, 8}}
	order := slices.Concat(blocks...)
	unit := func(int32) float64 { return 1 }
	even := &LabelCosts{Path: "even.txt", Strata: []LabelStratum{{0, 10, 1}}}
	head := &LabelCosts{Path: "head.txt", Strata: []LabelStratum{{0, 2, 50}, {2, 10, 1}}}
	for _, costs := range []*LabelCosts{even, head} {
		for parts := 1; parts <= 10; parts++ {
			var all []int32
			for p := range parts {
				got, sel, err := SelectLabels(blocks, unit, LabelRange{Part: p, Parts: parts, Costs: costs})
				if err != nil || sel.From != len(all) {
					t.Fatalf("%s, part %d/%d: %v from %+v, %v", costs.Path, p, parts, got, sel, err)
				}
				all = append(all, slices.Concat(got...)...)
			}
			if !slices.Equal(all, order) {
				t.Errorf("%s: %d parts hold %v, want %v", costs.Path, parts, all, order)
			}
		}
	}
	// Even, two parts split the labels in halves; with the head's two
	// labels 50 times as costly, the first part holds just them.
	for _, c := range []struct {
		costs *LabelCosts
		to    int
	}{{even, 5}, {head, 2}} {
		if _, sel, err := SelectLabels(blocks, unit, LabelRange{Part: 0, Parts: 2, Costs: c.costs}); err != nil || sel.To != c.to {
			t.Errorf("%s: part 0/2 %+v, %v; want labels 0:%d", c.costs.Path, sel, err, c.to)
		}
	}
	other := &LabelCosts{Path: "other.txt", Strata: []LabelStratum{{0, 9, 1}}}
	for _, r := range []LabelRange{{Part: 0, Parts: 2, Costs: other}, {From: 0, To: 5, Costs: even}, {Costs: even}} {
		if _, _, err := SelectLabels(blocks, unit, r); err == nil || !strings.Contains(err.Error(), r.Costs.Path) {
			t.Errorf("%+v: error %v, want one naming %s", r, err, r.Costs.Path)
		}
	}
	// --label-costs before --label-range: the range keeps the costs.
	r := LabelRange{Costs: even}
	if err := r.Set("1/4"); err != nil || r.Costs != even || r.Parts != 4 {
		t.Errorf("Set after the costs: %+v, %v", r, err)
	}
}
