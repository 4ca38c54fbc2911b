package pdsparse

import (
	"fmt"
	"math"

	"xmc/model/linear"
	"xmc/numa"
	"xmc/runner"
	"xmc/train"
)

// Finish encodes every owned unit as a linear.Block of w = prox_λ(v), the
// units on the team's workers.
func (t *roundTrainer) Finish(team *numa.Team) ([]runner.Result, error) {
	// The rounds are over: what the search and the steps read beside the
	// places goes, so that its memory can serve the gathering.
	t.nz, t.at, t.dense = nil, placeTable{}, nil
	cw, err := t.classWeights(team)
	if err != nil {
		return nil, err
	}
	// first[q] is the local id of owned unit q's first class: local ids
	// number the owned units' classes in order (own).
	first := make([]int, len(t.owned))
	for q := 1; q < len(t.owned); q++ {
		first[q] = first[q-1] + len(t.blocks[t.owned[q-1]])
	}
	return train.EncodeUnits(team, t.owned, func(_ numa.Worker, q int) ([]byte, error) {
		var b linear.Block
		for k, l := range t.blocks[t.owned[q]] {
			feats, weights := cw.of(first[q] + k)
			b.AppendPairs(l, feats, weights, t.p.Prune)
		}
		return b.MarshalBinary()
	})
}

// classWeights holds every local class's non-zero weights with their
// features, in increasing feature order, one class after another in flat
// arrays: class c's lie in [start[c], end[c]).
type classWeights struct {
	start, end []int
	feature    []int32
	weight     []float64
}

// of returns local class c's features and weights.
func (cw *classWeights) of(c int) ([]int32, []float64) {
	return cw.feature[cw.start[c]:cw.end[c]], cw.weight[cw.start[c]:cw.end[c]]
}

// classWeight is a non-zero weight on its way from the places, which hold
// the weights by feature, to classWeights, which holds them by class.
type classWeight struct {
	feature, class int32
	weight         float64
}

// classWeights gathers the weights (the best epoch's with --heldout) by
// class on the team's workers, in two loops, so that no worker goes through
// every weight: the features fall in chunks, and each chunk's worker puts
// its non-zero weights, in feature order, in one bucket per range of
// classes; then each range's worker counts its classes' weights and lays
// them out, taking the chunks' buckets in feature order. It fails on a
// weight that is not finite, the first in feature order.
func (t *roundTrainer) classWeights(team *numa.Team) (*classWeights, error) {
	n, d := len(t.global), len(t.places)
	chunks := max(1, min(shardsPerWorker*team.Workers(), d))
	ranges := max(1, min(team.Workers(), n))
	rangeOf := make([]int32, n)
	for r := range ranges {
		for c := r * n / ranges; c < (r+1)*n/ranges; c++ {
			rangeOf[c] = int32(r)
		}
	}
	buckets := make([][]classWeight, chunks*ranges) // chunk k's for range r at k·ranges + r
	errs := make([]error, chunks)
	err := team.For(chunks, 1, func(_ numa.Worker, lo, hi int) {
		for k := lo; k < hi; k++ {
			errs[k] = t.bucketWeights(k*d/chunks, (k+1)*d/chunks, rangeOf, buckets[k*ranges:(k+1)*ranges])
		}
	})
	if err != nil {
		return nil, err
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	// Range r's weights start after those of the ranges before it.
	base := make([]int, ranges+1)
	for r := range ranges {
		base[r+1] = base[r]
		for k := range chunks {
			base[r+1] += len(buckets[k*ranges+r])
		}
	}
	cw := &classWeights{start: make([]int, n+1), end: make([]int, n),
		feature: make([]int32, base[ranges]), weight: make([]float64, base[ranges])}
	cw.start[n] = base[ranges]
	err = team.For(ranges, 1, func(_ numa.Worker, lo, hi int) {
		for r := lo; r < hi; r++ {
			c0, c1 := r*n/ranges, (r+1)*n/ranges
			for k := range chunks {
				for _, p := range buckets[k*ranges+r] {
					cw.end[p.class]++ // counts, until laid out below
				}
			}
			at := base[r]
			for c := c0; c < c1; c++ {
				cw.start[c], at = at, at+cw.end[c]
				cw.end[c] = cw.start[c]
			}
			for k := range chunks {
				for _, p := range buckets[k*ranges+r] {
					cw.feature[cw.end[p.class]], cw.weight[cw.end[p.class]] = p.feature, p.weight
					cw.end[p.class]++
				}
			}
		}
	})
	return cw, err
}

// bucketWeights appends the non-zero weights of features [j0, j1), in
// feature order, to the bucket of their class's range (rangeOf), or fails
// on the first that is not finite.
func (t *roundTrainer) bucketWeights(j0, j1 int, rangeOf []int32, buckets [][]classWeight) error {
	for j := j0; j < j1; j++ {
		for e := range t.places[j] {
			p := &t.places[j][e]
			w := t.weight(p)
			if t.bestWt != nil {
				w = t.bestWeight(j, e)
			}
			if math.IsNaN(w) || math.IsInf(w, 0) {
				return fmt.Errorf("class %d: training diverged: non-finite weight", t.global[p.class])
			}
			if w != 0 {
				r := rangeOf[p.class]
				buckets[r] = append(buckets[r], classWeight{feature: int32(j), class: p.class, weight: w})
			}
		}
	}
	return nil
}
