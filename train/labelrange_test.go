package train

import (
	"math"
	"slices"
	"testing"
)

func TestParseLabelRange(t *testing.T) {
	for _, c := range []struct {
		in   string
		want LabelRange
		err  bool
	}{
		{"0:10", LabelRange{From: 0, To: 10}, false},
		{"5:", LabelRange{From: 5, To: math.MaxInt}, false},
		{"2/4", LabelRange{Part: 2, Parts: 4}, false},
		{"0/1", LabelRange{Part: 0, Parts: 1}, false},
		{"4/4", LabelRange{}, true},
		{"-1/4", LabelRange{}, true},
		{"1/0", LabelRange{}, true},
		{"10:10", LabelRange{}, true},
		{"10:5", LabelRange{}, true},
		{"-2:5", LabelRange{}, true},
		{"x:5", LabelRange{}, true},
		{"7", LabelRange{}, true},
	} {
		got, err := ParseLabelRange(c.in)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("ParseLabelRange(%q) = %+v, %v; want %+v, error %v", c.in, got, err, c.want, c.err)
		}
		if err == nil {
			if back, _ := ParseLabelRange(got.String()); back != got {
				t.Errorf("%q: String %q reads back as %+v", c.in, got.String(), back)
			}
		}
	}
}

// TestSelectLabels checks that ranges keep the labels in order, cutting
// blocks, and that parts cover every label once, none empty, their costs
// about equal.
func TestSelectLabels(t *testing.T) {
	blocks := [][]int32{{7, 3, 9}, {1, 2}, {0}, {4, 5, 6, 8}}
	order := slices.Concat(blocks...)
	unit := func(int32) float64 { return 1 }
	for _, c := range []struct {
		r         LabelRange
		want      [][]int32
		firstUnit int
	}{
		{LabelRange{From: 0, To: 3}, [][]int32{{7, 3, 9}}, 0},
		{LabelRange{From: 2, To: 7}, [][]int32{{9}, {1, 2}, {0}, {4}}, 0},
		{LabelRange{From: 5, To: math.MaxInt}, [][]int32{{0}, {4, 5, 6, 8}}, 2},
		{LabelRange{From: 7, To: 8}, [][]int32{{5}}, 3},
	} {
		got, sel, err := SelectLabels(blocks, unit, c.r)
		if err != nil || !slices.EqualFunc(got, c.want, slices.Equal) || sel.FirstUnit != c.firstUnit || sel.Labels != 10 || sel.Units != 4 {
			t.Errorf("%v: %v, %+v, %v; want %v from block %d", c.r, got, sel, err, c.want, c.firstUnit)
		}
	}
	if _, _, err := SelectLabels(blocks, unit, LabelRange{From: 10, To: 12}); err == nil {
		t.Error("a range past the labels selected some")
	}
	// The head label costs more than a part: every part still gets one.
	heavy := func(l int32) float64 { return map[bool]float64{true: 100, false: 1}[l == 7] }
	for _, cost := range []func(int32) float64{unit, heavy} {
		for parts := 1; parts <= 10; parts++ {
			var all []int32
			for p := range parts {
				got, sel, err := SelectLabels(blocks, cost, LabelRange{Part: p, Parts: parts})
				if err != nil || len(got) == 0 {
					t.Fatalf("part %d/%d: %v, %v", p, parts, got, err)
				}
				if sel.From != len(all) {
					t.Errorf("part %d/%d starts at %d, want %d", p, parts, sel.From, len(all))
				}
				all = append(all, slices.Concat(got...)...)
			}
			if !slices.Equal(all, order) {
				t.Errorf("%d parts hold %v, want %v", parts, all, order)
			}
		}
	}
	empty := 0
	for p := range 11 {
		if _, _, err := SelectLabels(blocks, unit, LabelRange{Part: p, Parts: 11}); err != nil {
			empty++
		}
	}
	if empty != 1 {
		t.Errorf("11 parts of 10 labels: %d empty parts, want 1", empty)
	}
}
