package mips

import (
	"math"
	"slices"
)

// Inverted is exact maximum inner product search over a snapshot of sparse
// vectors: per coordinate, the vectors non-zero there and their values
// (times a common scale). A query costs the lengths of its coordinates'
// lists, not a pass over the vectors; building costs O(non-zeros).
type Inverted struct {
	start []int64   // per coordinate, where its list starts in id and val
	id    []int32   // the vectors' ids
	val   []float64 // their values
	ids   []int32   // every indexed vector's id, increasing
}

// NewInverted indexes f·v for the vectors of sets, vector k of sets[s]
// under the id ids[s][k], over coordinates [0, d). Ids must be distinct.
func NewInverted(d int, sets []*Vectors, ids [][]int32, f float64) *Inverted {
	x := &Inverted{start: make([]int64, d+1)}
	for _, v := range sets {
		for k := range v.Len() {
			for _, j := range v.idx[k] {
				x.start[j+1]++
			}
		}
	}
	for j := range d {
		x.start[j+1] += x.start[j]
	}
	x.id, x.val = make([]int32, x.start[d]), make([]float64, x.start[d])
	fill := slices.Clone(x.start[:d])
	for s, v := range sets {
		for k := range v.Len() {
			x.ids = append(x.ids, ids[s][k])
			for e, j := range v.idx[k] {
				x.id[fill[j]], x.val[fill[j]] = ids[s][k], f*v.val[k][e]
				fill[j]++
			}
		}
	}
	slices.Sort(x.ids)
	return x
}

// InvertedScratch is a searcher's memory, one per goroutine, sized by the
// largest id.
type InvertedScratch struct {
	score   []float64
	seen    []bool
	touched []int32
}

// Best returns the indexed vector of greatest inner product with x, ties
// to the lower id, and its score: a vector sharing no coordinate with x
// scores 0. It returns −1 if nothing is indexed.
func (x *Inverted) Best(xi []int32, xv []float32, s *InvertedScratch) (int32, float64) {
	s.touched = s.touched[:0]
	for e, j := range xi {
		if int(j) >= len(x.start)-1 {
			continue
		}
		xe := float64(xv[e])
		for p := x.start[j]; p < x.start[j+1]; p++ {
			c := x.id[p]
			if int(c) >= len(s.score) {
				s.score = slices.Grow(s.score, int(c)+1-len(s.score))[:c+1]
				s.seen = slices.Grow(s.seen, int(c)+1-len(s.seen))[:c+1]
			}
			if !s.seen[c] {
				s.seen[c] = true
				s.touched = append(s.touched, c)
			}
			s.score[c] += x.val[p] * xe
		}
	}
	best, score := int32(-1), math.Inf(-1)
	for _, c := range s.touched {
		if s.score[c] > score || (s.score[c] == score && c < best) {
			best, score = c, s.score[c]
		}
	}
	if score <= 0 {
		// Untouched vectors score 0: the lowest of them, if any.
		for _, c := range x.ids {
			if int(c) >= len(s.seen) || !s.seen[c] {
				if score < 0 || c < best {
					best, score = c, 0
				}
				break
			}
		}
	}
	for _, c := range s.touched {
		s.score[c], s.seen[c] = 0, false
	}
	return best, score
}
