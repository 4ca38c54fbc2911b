package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// sameScored compares bit for bit, so that NaN equals NaN.
func sameScored(a, b []Scored) bool {
	return slices.EqualFunc(a, b, func(x, y Scored) bool {
		return x.Label == y.Label && math.Float32bits(x.Score) == math.Float32bits(y.Score)
	})
}

func TestTopK(t *testing.T) {
	nan := float32(math.NaN())
	tests := []struct {
		name   string
		scores []Scored
		k      int
		want   []Scored
	}{
		{"empty", nil, 3, []Scored{}},
		{"k zero", []Scored{{Label: 1, Score: 1}}, 0, []Scored{}},
		{"k negative", []Scored{{Label: 1, Score: 1}}, -2, []Scored{}},
		{"fewer than k, sorted", []Scored{{Label: 4, Score: 0.1}, {Label: 2, Score: 0.9}}, 5, []Scored{{Label: 2, Score: 0.9}, {Label: 4, Score: 0.1}}},
		{"ties by label", []Scored{{Label: 7, Score: 1}, {Label: 3, Score: 1}, {Label: 5, Score: 2}, {Label: 1, Score: 1}}, 3, []Scored{{Label: 5, Score: 2}, {Label: 1, Score: 1}, {Label: 3, Score: 1}}},
		{"all tied", []Scored{{Label: 9, Score: 0}, {Label: 8, Score: 0}, {Label: 7, Score: 0}, {Label: 6, Score: 0}}, 2, []Scored{{Label: 6, Score: 0}, {Label: 7, Score: 0}}},
		{"NaN last", []Scored{{Label: 0, Score: nan}, {Label: 1, Score: -5}, {Label: 2, Score: float32(math.Inf(-1))}}, 2, []Scored{{Label: 1, Score: -5}, {Label: 2, Score: float32(math.Inf(-1))}}},
		{"negative scores", []Scored{{Label: 0, Score: -3}, {Label: 1, Score: -1}, {Label: 2, Score: -2}}, 1, []Scored{{Label: 1, Score: -1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.scores)
			got := TopK(in, tt.k)
			if !sameScored(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
			if !sameScored(in, tt.scores) {
				t.Errorf("input modified: %v", in)
			}
		})
	}

	// Against a full sort on random rows with many ties.
	rng := rand.New(rand.NewPCG(7, 8))
	for range 200 {
		n := rng.IntN(60)
		s := make([]Scored, n)
		for i, l := range rng.Perm(n) {
			s[i] = Scored{int32(l), float32(rng.IntN(5))}
		}
		k := rng.IntN(n + 3)
		full := slices.Clone(s)
		SortScored(full)
		if got, want := TopK(s, k), full[:min(k, n)]; !slices.Equal(got, want) {
			t.Fatalf("n=%d k=%d: got %v, want %v", n, k, got, want)
		}
	}
}

// TestTop checks one Top, reused row after row, against a full sort on
// random rows long enough to be cut several times, with many ties, NaN
// scores, k from 0 to past the row's length.
func TestTop(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var top Top
	for it := range 5000 {
		n := rng.IntN(400)
		s := make([]Scored, n)
		for i, l := range rng.Perm(n) {
			s[i] = Scored{Label: int32(l), Score: float32(rng.IntN(1 + it%7))}
			if it%5 == 0 && rng.IntN(10) == 0 {
				s[i].Score = float32(math.NaN())
			}
		}
		k := rng.IntN(n + 3)
		full := slices.Clone(s)
		SortScored(full)
		top.Reset(k)
		for _, x := range s {
			top.Push(x)
		}
		if got, want := top.Sorted(), full[:min(k, n)]; !sameScored(got, want) {
			t.Fatalf("row %d, n=%d k=%d: got %v, want %v", it, n, k, got, want)
		}
	}
}

// BenchmarkTopK selects the k best of rows of n random scores, as a
// member of an ensemble (k = 30, its candidates at --top-k 5) and a model
// alone (k = 5) do per row; n = 10,000 is about the labels a wordnet-hyper
// test row touches in a linear model. It cycles through 64 rows so that
// the branch predictor does not learn one row's comparisons.
func BenchmarkTopK(b *testing.B) {
	for _, c := range []struct{ n, k int }{{300, 30}, {2000, 5}, {2000, 30}, {10000, 5}, {10000, 30}} {
		rng := rand.New(rand.NewPCG(1, 2))
		rows := make([][]Scored, 64)
		for r := range rows {
			rows[r] = make([]Scored, c.n)
			for i := range rows[r] {
				rows[r][i] = Scored{Label: int32(i), Score: rng.Float32()}
			}
		}
		var top Top
		b.Run(fmt.Sprintf("n=%d/k=%d", c.n, c.k), func(b *testing.B) {
			r := 0
			for b.Loop() {
				top.Reset(c.k)
				for _, x := range rows[r%len(rows)] {
					top.Push(x)
				}
				top.Sorted()
				r++
			}
		})
	}
}
