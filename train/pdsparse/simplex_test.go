package pdsparse

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestBiSimplex checks biSimplex against a direct minimisation over t of
// the sum of the two simplex projections' distances (convex in t), on
// random problems, and on cases worked by hand.
func TestBiSimplex(t *testing.T) {
	var s simplexScratch
	objective := func(b, c, x, y []float64) float64 {
		f := 0.0
		for i := range b {
			f += (x[i] - b[i]) * (x[i] - b[i])
		}
		for j := range c {
			f += (y[j] - c[j]) * (y[j] - c[j])
		}
		return f
	}
	atT := func(b, c []float64, tt float64) float64 {
		x, y := make([]float64, len(b)), make([]float64, len(c))
		sb, sc := slices.Clone(b), slices.Clone(c)
		slices.Sort(sb)
		slices.Reverse(sb)
		slices.Sort(sc)
		slices.Reverse(sc)
		project(b, sb, tt, x)
		project(c, sc, tt, y)
		return objective(b, c, x, y)
	}
	// Hand cases: b = (1), c = (1), C large: t = 1, x = y = 1. With C =
	// 0.5: x = y = 0.5. b = (−1), c = (0.5): max b + max c < 0, t = 0.
	for _, hc := range []struct {
		b, c, x, y []float64
		C          float64
	}{
		{[]float64{1}, []float64{1}, []float64{1}, []float64{1}, 10},
		{[]float64{1}, []float64{1}, []float64{0.5}, []float64{0.5}, 0.5},
		{[]float64{-1}, []float64{0.5}, []float64{0}, []float64{0}, 10},
		{[]float64{2, 0}, []float64{0}, []float64{1, 0}, []float64{1}, 10},
	} {
		x, y := make([]float64, len(hc.b)), make([]float64, len(hc.c))
		biSimplex(hc.b, hc.c, hc.C, x, y, &s)
		for i := range x {
			if math.Abs(x[i]-hc.x[i]) > 1e-12 {
				t.Errorf("b %v c %v C %v: x = %v, want %v", hc.b, hc.c, hc.C, x, hc.x)
			}
		}
		for j := range y {
			if math.Abs(y[j]-hc.y[j]) > 1e-12 {
				t.Errorf("b %v c %v C %v: y = %v, want %v", hc.b, hc.c, hc.C, y, hc.y)
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		n, m := 1+rng.IntN(8), 1+rng.IntN(4)
		b, c := make([]float64, n), make([]float64, m)
		for i := range b {
			b[i] = rng.NormFloat64()
		}
		for j := range c {
			c[j] = rng.NormFloat64()
		}
		C := []float64{0.1, 1, 10}[rng.IntN(3)]
		x, y := make([]float64, n), make([]float64, m)
		biSimplex(b, c, C, x, y, &s)
		sx, sy := 0.0, 0.0
		for _, v := range x {
			if v < 0 {
				t.Fatalf("negative x %v", x)
			}
			sx += v
		}
		for _, v := range y {
			if v < 0 {
				t.Fatalf("negative y %v", y)
			}
			sy += v
		}
		if math.Abs(sx-sy) > 1e-9 || sx > C+1e-9 {
			t.Fatalf("b %v c %v C %v: sums %v and %v", b, c, C, sx, sy)
		}
		// Golden-section search of the convex f(t) on [0, C].
		lo, hi := 0.0, C
		for range 200 {
			m1, m2 := lo+(hi-lo)*0.382, lo+(hi-lo)*0.618
			if atT(b, c, m1) < atT(b, c, m2) {
				hi = m2
			} else {
				lo = m1
			}
		}
		best := math.Min(atT(b, c, (lo+hi)/2), atT(b, c, 0))
		if got := objective(b, c, x, y); got > best+1e-9 {
			t.Fatalf("b %v c %v C %v: objective %v, direct search %v", b, c, C, got, best)
		}
	}
}
