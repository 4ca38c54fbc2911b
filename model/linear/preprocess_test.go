package linear

import (
	"encoding/json"
	"math"
	"slices"
	"testing"

	"xmc/data"
)

func TestParsePreprocess(t *testing.T) {
	tests := []struct {
		params string
		want   Preprocess
		ok     bool
	}{
		{`{"cost":1,"normalize":true,"bias":false}`, Preprocess{Normalize: true}, true},
		{`{"normalize":false,"bias":true}`, Preprocess{Bias: true}, true},
		{`{"normalize":true}`, Preprocess{}, false},
		{``, Preprocess{}, false},
		{`[1]`, Preprocess{}, false},
	}
	for _, tc := range tests {
		got, err := ParsePreprocess(json.RawMessage(tc.params))
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParsePreprocess(%s) = %+v, %v; want %+v, ok=%v", tc.params, got, err, tc.want, tc.ok)
		}
	}
}

// csrRows builds a matrix of cols columns from its rows.
func csrRows(cols int, idx [][]int32, val [][]float32) data.CSR {
	m := data.CSR{Rows: len(idx), Cols: cols, Indptr: []int64{0}}
	for i := range idx {
		m.Indices = append(m.Indices, idx[i]...)
		m.Values = append(m.Values, val[i]...)
		m.Indptr = append(m.Indptr, int64(len(m.Indices)))
	}
	return m
}

// TestPreprocessApply checks the training side of the preprocessing: the
// bias column appended after the features and left out of the norm, empty
// and all-zero rows kept, the input untouched, and every value exactly
// what prediction computes for it with Scale and data.ScaleValue.
func TestPreprocessApply(t *testing.T) {
	x := csrRows(3, [][]int32{{0, 2}, {}, {1}, {0, 1}}, [][]float32{{3, -4}, {}, {0.3}, {0, 0}})
	orig := slices.Clone(x.Values)
	for _, c := range []struct {
		prep Preprocess
		want data.CSR
	}{
		{Preprocess{}, x},
		{Preprocess{Bias: true}, csrRows(4, [][]int32{{0, 2, 3}, {3}, {1, 3}, {0, 1, 3}}, [][]float32{{3, -4, 1}, {1}, {0.3, 1}, {0, 0, 1}})},
		{Preprocess{Normalize: true}, csrRows(3, [][]int32{{0, 2}, {}, {1}, {0, 1}}, [][]float32{{0.6, -0.8}, {}, {1}, {0, 0}})},
		{Preprocess{Normalize: true, Bias: true}, csrRows(4, [][]int32{{0, 2, 3}, {3}, {1, 3}, {0, 1, 3}}, [][]float32{{0.6, -0.8, 1}, {1}, {1, 1}, {0, 0, 1}})},
	} {
		got := c.prep.Apply(&x)
		if got.Rows != c.want.Rows || got.Cols != c.want.Cols || !slices.Equal(got.Indptr, c.want.Indptr) || !slices.Equal(got.Indices, c.want.Indices) {
			t.Errorf("%+v: Apply = %+v, want %+v", c.prep, got, c.want)
			continue
		}
		for k, v := range got.Values {
			if math.Abs(float64(v-c.want.Values[k])) > 1e-7 {
				t.Errorf("%+v: values %v, want %v", c.prep, got.Values, c.want.Values)
				break
			}
		}
		if err := got.Validate(); err != nil {
			t.Errorf("%+v: %v", c.prep, err)
		}
		for i := range x.Rows {
			idx, val := x.Row(i)
			gi, gv := got.Row(i)
			s := c.prep.Scale(val)
			for q := range idx {
				if gi[q] != idx[q] || gv[q] != data.ScaleValue(val[q], s) {
					t.Errorf("%+v: row %d entry %d is %v, prediction would score %v", c.prep, i, q, gv[q], data.ScaleValue(val[q], s))
				}
			}
		}
	}
	if !slices.Equal(x.Values, orig) {
		t.Errorf("Apply modified its input: %v", x.Values)
	}
}
