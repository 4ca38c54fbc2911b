package bench

import (
	"math"
	"slices"
	"testing"
)

func TestDescribe(t *testing.T) {
	tests := []struct {
		name string
		xs   []float64
		want Stat
	}{
		{"empty", nil, Stat{}},
		{"one", []float64{2.5}, Stat{Median: 2.5, Min: 2.5, Max: 2.5, N: 1}},
		{"odd unsorted", []float64{3, 1, 2}, Stat{Median: 2, Min: 1, Max: 3, N: 3}},
		{"even: mean of the middle two", []float64{4, 1, 3, 2}, Stat{Median: 2.5, Min: 1, Max: 4, N: 4}},
		{"outlier does not move the median", []float64{10, 10.2, 9.9, 60}, Stat{Median: 10.1, Min: 9.9, Max: 60, N: 4}},
		{"ties", []float64{1, 1, 1}, Stat{Median: 1, Min: 1, Max: 1, N: 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.xs)
			got := Describe(tc.xs)
			if math.Abs(got.Median-tc.want.Median) > 1e-12 || got.Min != tc.want.Min || got.Max != tc.want.Max || got.N != tc.want.N {
				t.Errorf("Describe(%v) = %+v, want %+v", tc.xs, got, tc.want)
			}
			if !slices.Equal(in, tc.xs) {
				t.Errorf("Describe reordered its input: %v, was %v", tc.xs, in)
			}
			if m := Median(tc.xs); m != got.Median {
				t.Errorf("Median = %v, Describe's median %v", m, got.Median)
			}
		})
	}
}

func TestSpread(t *testing.T) {
	tests := []struct {
		s    Stat
		want float64
	}{
		{Stat{Median: 10, Min: 9.5, Max: 10.5, N: 3}, 0.1},
		{Stat{Median: 4, Min: 4, Max: 4, N: 1}, 0},
		{Stat{}, 0},
	}
	for _, tc := range tests {
		if got := tc.s.Spread(); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%+v.Spread() = %v, want %v", tc.s, got, tc.want)
		}
	}
}

func TestSpeedupEfficiency(t *testing.T) {
	tests := []struct {
		name            string
		base, t         float64
		baseCores, core int
		speedup, eff    float64
	}{
		{"perfect", 8, 2, 1, 4, 4, 1},
		{"sublinear", 10, 4, 1, 4, 2.5, 0.625},
		{"superlinear", 10, 2, 1, 4, 5, 1.25},
		{"baseline of 2 cores", 6, 2, 2, 8, 3, 0.75},
		{"slowdown", 1, 2, 1, 2, 0.5, 0.25},
		{"phase did not run", 0, 0, 1, 2, 0, 0},
		{"baseline did not run", 0, 1, 1, 2, 0, 0},
		{"NaN", math.NaN(), 1, 1, 2, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := Speedup(tc.base, tc.t)
			if math.Abs(s-tc.speedup) > 1e-12 {
				t.Errorf("Speedup(%v, %v) = %v, want %v", tc.base, tc.t, s, tc.speedup)
			}
			if e := Efficiency(s, tc.baseCores, tc.core); math.Abs(e-tc.eff) > 1e-12 {
				t.Errorf("Efficiency(%v, %d, %d) = %v, want %v", s, tc.baseCores, tc.core, e, tc.eff)
			}
		})
	}
	if e := Efficiency(2, 1, 0); e != 0 {
		t.Errorf("Efficiency with 0 cores = %v, want 0", e)
	}
}
