package onevsall

import (
	"math"
	"slices"
	"testing"

	"xmc/data"
	"xmc/model/linear"
	"xmc/train/traintest"
)

func TestNewData(t *testing.T) {
	ds := traintest.Tiny([][]float32{{3, 4, 0}, {0, 0, 2}, {1, 0, 0}}, [][]int32{{1}, {0, 1}, {}}, 2)
	before := slices.Clone(ds.X.Values)
	d, err := NewData(ds, linear.Preprocess{Normalize: true, Bias: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ds.X.Values, before) {
		t.Error("onevsall.NewData modified the dataset")
	}
	wantIdx := []int32{0, 1, 3, 2, 3, 0, 3}
	wantVal := []float32{0.6, 0.8, 1, 1, 1, 1, 1}
	if d.X.Cols != 4 || !slices.Equal(d.X.Indices, wantIdx) || !slices.Equal(d.X.Values, wantVal) {
		t.Errorf("X = %d cols %v %v, want 4 cols %v %v", d.X.Cols, d.X.Indices, d.X.Values, wantIdx, wantVal)
	}
	if !slices.Equal(d.Positives(0), []int32{1}) || !slices.Equal(d.Positives(1), []int32{0, 1}) {
		t.Errorf("positives %v %v, want [1] [0 1]", d.Positives(0), d.Positives(1))
	}
	wantMean := []float64{1.6 / 3, 0.8 / 3, 1.0 / 3, 1}
	for j, m := range d.Mean {
		if math.Abs(m-wantMean[j]) > 1e-7 {
			t.Errorf("mean[%d] = %v, want %v", j, m, wantMean[j])
		}
	}
	if _, err := NewData(&data.Dataset{X: data.CSR{Indptr: []int64{0}}, Y: data.CSR{Indptr: []int64{0}}}, linear.Preprocess{}); err == nil {
		t.Error("no error for an empty dataset")
	}
}

// TestBlocks checks the units of the one-vs-all trainers: every label with
// a positive once, most frequent first, at most perUnit labels a unit, and
// no unit of several labels costing more than 1/costShare of the whole, on
// Delicious's label counts and on a few labels.
func TestBlocks(t *testing.T) {
	tr, _ := traintest.Delicious(t)
	delicious := data.LabelCounts(&tr.Y)
	for _, c := range []struct {
		name   string
		counts []int64
		per    int
		cost   func(int64) float64
	}{
		{"delicious, PPDSparse's cost", delicious, 8, LabelCost},
		{"delicious, equal costs", delicious, 16, EqualCost},
		{"three labels", []int64{5, 0, 9, 1}, 16, LabelCost},
	} {
		blocks := Blocks(c.counts, c.per, c.cost)
		total := 0.0
		for _, n := range c.counts {
			if n > 0 {
				total += c.cost(n)
			}
		}
		seen, last := map[int32]bool{}, int64(math.MaxInt64)
		for u, b := range blocks {
			sum := 0.0
			for _, l := range b {
				if seen[l] || c.counts[l] == 0 || c.counts[l] > last {
					t.Fatalf("%s: unit %d: label %d twice, without a positive, or out of frequency order", c.name, u, l)
				}
				seen[l], last = true, c.counts[l]
				sum += c.cost(c.counts[l])
			}
			if len(b) > c.per || len(b) > 1 && sum-c.cost(c.counts[b[len(b)-1]]) >= total/costShare {
				t.Errorf("%s: unit %d of %d labels costs %.1f of %.1f", c.name, u, len(b), sum, total)
			}
		}
		positive := 0
		for _, n := range c.counts {
			if n > 0 {
				positive++
			}
		}
		if len(seen) != positive {
			t.Errorf("%s: %d labels in units, want %d", c.name, len(seen), positive)
		}
	}
}
