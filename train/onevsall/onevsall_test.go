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
