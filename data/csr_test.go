package data

import (
	"math"
	"slices"
	"testing"
)

func TestValidate(t *testing.T) {
	good := rows(3, [][]int32{{0, 2}, {}, {1}}, [][]float32{{1, 2}, {}, {3}})
	if err := good.Validate(); err != nil {
		t.Fatalf("valid matrix: %v", err)
	}
	tests := []struct {
		name    string
		corrupt func(m *CSR)
	}{
		{"short Indptr", func(m *CSR) { m.Indptr = m.Indptr[:2] }},
		{"Indptr not from 0", func(m *CSR) { m.Indptr[0] = 1 }},
		{"Indptr beyond entries", func(m *CSR) { m.Indptr[1] = 9 }},
		{"Indptr decreasing", func(m *CSR) { m.Indptr[2] = 1 }},
		{"values shorter", func(m *CSR) { m.Values = m.Values[:2] }},
		{"unsorted", func(m *CSR) { m.Indices[0], m.Indices[1] = 2, 0 }},
		{"repeated", func(m *CSR) { m.Indices[1] = 0 }},
		{"column out of range", func(m *CSR) { m.Cols = 2 }},
		{"negative column", func(m *CSR) { m.Indices[0] = -1 }},
		{"NaN", func(m *CSR) { m.Values[2] = float32(math.NaN()) }},
		{"Inf", func(m *CSR) { m.Values[0] = float32(math.Inf(-1)) }},
		{"negative rows", func(m *CSR) { m.Rows = -1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := rows(3, [][]int32{{0, 2}, {}, {1}}, [][]float32{{1, 2}, {}, {3}})
			tt.corrupt(&m)
			if err := m.Validate(); err == nil {
				t.Errorf("no error for %+v", m)
			}
		})
	}
}

func TestNormalizeRows(t *testing.T) {
	m := rows(4, [][]int32{{0, 1}, {}, {2, 3}, {1}}, [][]float32{{3, -4}, {}, {0, 0}, {1e-30}})
	NormalizeRows(&m)
	want := []float32{0.6, -0.8, 0, 0, 1}
	for k, v := range m.Values {
		if math.Abs(float64(v-want[k])) > 1e-7 {
			t.Errorf("Values = %v, want %v", m.Values, want)
			break
		}
	}

	d, err := ReadFile(bibtexTest, ReadOptions{Normalize: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range d.N() {
		_, val := d.X.Row(i)
		var s float64
		for _, v := range val {
			s += float64(v) * float64(v)
		}
		if len(val) > 0 && math.Abs(s-1) > 1e-5 {
			t.Fatalf("row %d: squared norm %v after normalization", i, s)
		}
	}
}

func TestSubset(t *testing.T) {
	d := &Dataset{
		X: rows(3, [][]int32{{0, 2}, {}, {1}}, [][]float32{{1, 2}, {}, {3}}),
		Y: rows(2, [][]int32{{1}, {0, 1}, {}}, nil),
	}
	got := d.Subset([]int{2, 0, 2})
	want := &Dataset{
		X: rows(3, [][]int32{{1}, {0, 2}, {1}}, [][]float32{{3}, {1, 2}, {3}}),
		Y: rows(2, [][]int32{{}, {1}, {}}, nil),
	}
	checkValid(t, got)
	checkEqual(t, got, want)
	got.X.Values[0] = 9
	if d.X.Values[2] != 3 {
		t.Error("Subset shares memory with its source")
	}
	if e := d.Subset(nil); e.N() != 0 || e.D() != 3 || e.L() != 2 {
		t.Errorf("empty subset is %d×%d/%d", e.N(), e.D(), e.L())
	}
}

func TestSlice(t *testing.T) {
	m := rows(4, [][]int32{{0, 2}, {}, {1, 3}, {3}}, [][]float32{{1, 2}, {}, {3, 4}, {5}})
	for _, c := range []struct{ lo, hi int }{{0, 4}, {1, 3}, {2, 2}, {3, 4}} {
		s := m.Slice(c.lo, c.hi)
		if err := s.Validate(); err != nil {
			t.Errorf("[%d, %d): %v", c.lo, c.hi, err)
		}
		if s.Rows != c.hi-c.lo || s.Cols != 4 {
			t.Errorf("[%d, %d): shape %d × %d", c.lo, c.hi, s.Rows, s.Cols)
		}
		for i := range s.Rows {
			gi, gv := s.Row(i)
			wi, wv := m.Row(c.lo + i)
			if !slices.Equal(gi, wi) || !slices.Equal(gv, wv) {
				t.Errorf("[%d, %d) row %d: %v %v, want %v %v", c.lo, c.hi, i, gi, gv, wi, wv)
			}
		}
	}
}
