package plt

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"

	"xmc/numa"
	"xmc/train/onevsall"
)

// labelVectors holds every label's mean row, normalised to unit length,
// over the features (not the bias column): Parabel's and napkinXC's
// representation of a label, which the splits cluster. Labels without a
// training row are left out of the trees: Seen lists the others,
// increasing.
type labelVectors struct {
	Seen []int32
	idx  [][]int32
	val  [][]float32
	cols int // the features: columns [0, cols) of the vectors
}

// newLabelVectors computes the labels' mean rows on the pool's workers.
func newLabelVectors(d *onevsall.Data, pool *numa.Pool) (*labelVectors, error) {
	v := &labelVectors{idx: make([][]int32, d.L), val: make([][]float32, d.L), cols: d.D}
	for l := range d.L {
		if len(d.Positives(int32(l))) > 0 {
			v.Seen = append(v.Seen, int32(l))
		}
	}
	type scratch struct {
		acc     []float64
		touched []int32
	}
	scratches := numa.NewPerWorker(pool, func(numa.Worker) *scratch { return &scratch{acc: make([]float64, d.D)} })
	err := pool.For(len(v.Seen), 64, func(w numa.Worker, lo, hi int) {
		s := scratches.Get(w)
		for _, l := range v.Seen[lo:hi] {
			s.touched = s.touched[:0]
			for _, r := range d.Positives(l) {
				idx, val := d.X.Row(int(r))
				for q, j := range idx {
					if int(j) >= d.D {
						continue // the bias column
					}
					if s.acc[j] == 0 {
						s.touched = append(s.touched, j)
					}
					s.acc[j] += float64(val[q])
					if s.acc[j] == 0 { // cancelled out: keep it listed once
						s.acc[j] = math.SmallestNonzeroFloat64
					}
				}
			}
			slices.Sort(s.touched)
			var ss float64
			for _, j := range s.touched {
				ss += s.acc[j] * s.acc[j]
			}
			inv := 1 / math.Sqrt(ss)
			idx, val := make([]int32, 0, len(s.touched)), make([]float32, 0, len(s.touched))
			for _, j := range s.touched {
				if f := float32(s.acc[j] * inv); f != 0 {
					idx, val = append(idx, j), append(val, f)
				}
				s.acc[j] = 0
			}
			v.idx[l], v.val[l] = idx, val
		}
	})
	return v, err
}

// bigSplit is the smallest set of labels whose k-means passes are shared
// among the workers; smaller sets are split a set per worker.
const bigSplit = 4096

// splitScratch is a worker's memory for splitting sets of labels: two dense
// centres, the columns they touch, and per label of the set its
// similarities and their difference.
type splitScratch struct {
	centre  [2][]float64
	touched [2][]int32
	sim     [2][]float64
	order   []int32
}

func newSplitScratch(cols int) *splitScratch {
	return &splitScratch{centre: [2][]float64{make([]float64, cols), make([]float64, cols)}}
}

// setCentre makes centre c the normalised sum of the vectors of labels.
func (v *labelVectors) setCentre(s *splitScratch, c int, labels []int32) {
	centre := s.centre[c]
	for _, j := range s.touched[c] {
		centre[j] = 0
	}
	s.touched[c] = s.touched[c][:0]
	for _, l := range labels {
		for q, j := range v.idx[l] {
			if centre[j] == 0 {
				s.touched[c] = append(s.touched[c], j)
			}
			centre[j] += float64(v.val[l][q])
			if centre[j] == 0 {
				centre[j] = math.SmallestNonzeroFloat64
			}
		}
	}
	var ss float64
	for _, j := range s.touched[c] {
		ss += centre[j] * centre[j]
	}
	if ss > 0 {
		inv := 1 / math.Sqrt(ss)
		for _, j := range s.touched[c] {
			centre[j] *= inv
		}
	}
}

// similarities sets, for the labels set[lo:hi], their similarity to both
// centres.
func (v *labelVectors) similarities(s *splitScratch, set []int32, lo, hi int) {
	for i := lo; i < hi; i++ {
		l := set[i]
		var a, b float64
		for q, j := range v.idx[l] {
			x := float64(v.val[l][q])
			a += x * s.centre[0][j]
			b += x * s.centre[1][j]
		}
		s.sim[0][i], s.sim[1][i] = a, b
	}
}

// split divides set (increasing labels) in two halves by balanced
// spherical two-means, as napkinXC's hierarchical k-means does: centres
// seeded with two labels drawn by rng, then at each pass the labels sorted
// by how much closer they are to the first centre than to the second, the
// first half assigned to it, and the centres recomputed, until the mean
// similarity grows by less than eps or after iters passes. It reorders set
// into the first half then the second, each increasing. parallel runs the
// similarities' loop, shared among workers or not.
func (v *labelVectors) split(s *splitScratch, set []int32, rng *rand.Rand, eps float64, iters int, parallel func(n int, body func(lo, hi int))) {
	n := len(set)
	for c := range s.sim {
		s.sim[c] = slices.Grow(s.sim[c][:0], n)[:n]
	}
	a := rng.IntN(n)
	b := rng.IntN(n - 1)
	if b >= a {
		b++
	}
	v.setCentre(s, 0, set[a:a+1])
	v.setCentre(s, 1, set[b:b+1])
	s.order = slices.Grow(s.order[:0], n)[:n]
	half := (n + 1) / 2
	old := math.Inf(-1)
	for range iters {
		parallel(n, func(lo, hi int) { v.similarities(s, set, lo, hi) })
		for i := range s.order {
			s.order[i] = int32(i)
		}
		slices.SortFunc(s.order, func(x, y int32) int {
			dx, dy := s.sim[0][x]-s.sim[1][x], s.sim[0][y]-s.sim[1][y]
			if c := cmp.Compare(dy, dx); c != 0 {
				return c
			}
			return cmp.Compare(set[x], set[y])
		})
		var total float64
		for r, i := range s.order {
			total += s.sim[btoi(r >= half)][i]
		}
		first, second := make([]int32, 0, half), make([]int32, 0, n-half)
		for r, i := range s.order {
			if r < half {
				first = append(first, set[i])
			} else {
				second = append(second, set[i])
			}
		}
		slices.Sort(first)
		slices.Sort(second)
		copy(set, first)
		copy(set[half:], second)
		mean := total / float64(n)
		if mean-old < eps {
			break
		}
		old = mean
		v.setCentre(s, 0, set[:half])
		v.setCentre(s, 1, set[half:])
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
