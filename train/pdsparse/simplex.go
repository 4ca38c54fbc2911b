package pdsparse

import (
	"cmp"
	"slices"
	"sort"
)

// simplexScratch is the reusable memory of biSimplex.
type simplexScratch struct {
	points, b, c []float64
}

// biSimplex solves the subproblem of a sample in PD-Sparse's dual
// block-coordinate step:
//
//	min ‖x − b‖² + ‖y − c‖²  s.t.  x ≥ 0, y ≥ 0, Σx = Σy = t, 0 ≤ t ≤ C,
//
// over the sample's active negatives (x, one per entry of b) and positives
// (y, one per entry of c), writing the solution into x and y. Written from
// the optimality conditions, as no library projects onto this set: for a
// given t, x and y are the projections of b and c onto the simplex of sum
// t, x_i = max(b_i + μ_b, 0), and the objective's derivative in t is
// 2(μ_b + μ_c), increasing in t; so t* is where μ_b = −μ_c, the root of
// h(m) = Σ max(b_i + m, 0) − Σ max(c_j − m, 0), clipped to [0, C].
// O((n + m) log(n + m)).
func biSimplex(b, c []float64, C float64, x, y []float64, s *simplexScratch) {
	clear(x)
	clear(y)
	// t > 0 pays only if moving mass from 0 lowers the objective:
	// f'(0+) = −2(max b + max c).
	if len(b) == 0 || len(c) == 0 || C <= 0 || slices.Max(b)+slices.Max(c) <= 0 {
		return
	}
	desc := func(p, q float64) int { return cmp.Compare(q, p) }
	s.b = append(s.b[:0], b...)
	slices.SortFunc(s.b, desc)
	s.c = append(s.c[:0], c...)
	slices.SortFunc(s.c, desc)
	// The breakpoints of h: m = −b_i and m = c_j.
	s.points = s.points[:0]
	for _, v := range b {
		s.points = append(s.points, -v)
	}
	s.points = append(s.points, c...)
	slices.Sort(s.points)
	h := func(m float64) float64 {
		v := 0.0
		for _, bi := range s.b {
			if bi+m <= 0 {
				break
			}
			v += bi + m
		}
		for _, cj := range s.c {
			if cj-m <= 0 {
				break
			}
			v -= cj - m
		}
		return v
	}
	// h is increasing: the root lies left of the first breakpoint where
	// h ≥ 0, on a piece where h is linear; solve it with the active sets
	// of a point inside the piece.
	pts := s.points
	k := sort.Search(len(pts), func(i int) bool { return h(pts[i]) >= 0 })
	var probe float64
	switch {
	case k == 0:
		probe = pts[0] - 1
	case k == len(pts):
		probe = pts[k-1] + 1
	default:
		probe = (pts[k-1] + pts[k]) / 2
	}
	var n int
	var sb, sc float64
	for _, bi := range s.b {
		if bi+probe > 0 {
			n++
			sb += bi
		}
	}
	for _, cj := range s.c {
		if cj-probe > 0 {
			n++
			sc += cj
		}
	}
	if n == 0 {
		return
	}
	m := (sc - sb) / float64(n)
	t := 0.0
	for _, bi := range b {
		t += max(bi+m, 0)
	}
	t = min(t, C)
	project(b, s.b, t, x)
	project(c, s.c, t, y)
}

// project writes into x the projection of v onto the simplex {x ≥ 0,
// Σx = t}, given v's values sorted in decreasing order.
func project(v, sorted []float64, t float64, x []float64) {
	if t <= 0 {
		clear(x)
		return
	}
	sum, mu := 0.0, 0.0
	for k, vk := range sorted {
		sum += vk
		cand := (t - sum) / float64(k+1)
		if vk+cand <= 0 {
			break
		}
		mu = cand
	}
	for i, vi := range v {
		x[i] = max(vi+mu, 0)
	}
}
