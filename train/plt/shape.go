package plt

import (
	"errors"
	"math/rand/v2"

	"xmc/numa"
)

// Kinds of random streams (see stream).
const (
	streamSplit = 1
	streamNode  = 2
)

// shape is a tree's structure before its classifiers are trained: the
// nodes numbered breadth first, as pltmodel.Tree numbers them, node v's
// children ChildStart[v] to ChildStart[v+1]-1 and the labels below it
// order[lo[v]:hi[v]] (a leaf's, its own label).
type shape struct {
	childStart, label, parent []int32
	lo, hi                    []int32
	order                     []int32
}

func (s *shape) nodes() int { return len(s.label) }

// add appends a node over order[lo:hi] with the given label (-1: not a
// leaf) and parent, and returns its id.
func (s *shape) add(lo, hi, label, parent int32) int32 {
	s.lo, s.hi = append(s.lo, lo), append(s.hi, hi)
	s.label, s.parent = append(s.label, label), append(s.parent, parent)
	return int32(len(s.label) - 1)
}

// split builds tree u's shape with the team: the labels seen in training
// split in halves by balanced two-means (splitter.split) until a set
// has at most MaxLeaves labels, which become its children, one leaf each.
// A level's large sets are split one after the other, each with the whole
// team; the others a set per worker. A split's seeds come from the tree and
// its path from the root, so the shape depends on the seed alone.
func (t *trainer) split(team *numa.Team, u int) (*shape, error) {
	s := &shape{order: append([]int32(nil), t.labels.Seen...)}
	s.add(0, int32(len(s.order)), -1, -1)
	path := []uint64{1} // per node: the root 1, a split's halves 2p and 2p+1
	scratches := numa.NewPerWorker(t.pool, func(numa.Worker) *splitScratch { return newSplitScratch(t.labels.cols) })
	lead := scratches.Get(team.Lead())
	splitNode := func(sp splitter, sc *splitScratch, v int32) error {
		rng := rand.New(rand.NewPCG(t.seed, stream(streamSplit, u, path[v])))
		return sp.split(sc, s.order[s.lo[v]:s.hi[v]], rng, t.p.KMeansEps, t.p.KMeansIters)
	}
	alone, shared := splitter{v: t.labels}, splitter{v: t.labels, team: team, scratches: scratches}
	for level := []int32{0}; len(level) > 0; {
		var small []int32
		for _, v := range level {
			switch size := s.hi[v] - s.lo[v]; {
			case s.label[v] >= 0 || int(size) <= t.p.MaxLeaves:
			case size >= bigSplit:
				if err := splitNode(shared, lead, v); err != nil {
					return nil, err
				}
			default:
				small = append(small, v)
			}
		}
		errs := make([]error, len(small))
		if err := team.For(len(small), 1, func(w numa.Worker, i, _ int) { errs[i] = splitNode(alone, scratches.Get(w), small[i]) }); err != nil {
			return nil, err
		}
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
		var next []int32
		for _, v := range level {
			s.childStart = append(s.childStart, int32(s.nodes()))
			lo, hi := s.lo[v], s.hi[v]
			switch {
			case s.label[v] >= 0:
			case int(hi-lo) <= t.p.MaxLeaves:
				for i := lo; i < hi; i++ {
					next = append(next, s.add(i, i+1, s.order[i], v))
					path = append(path, 0)
				}
			default:
				mid := lo + (hi-lo+1)/2
				next = append(next, s.add(lo, mid, -1, v), s.add(mid, hi, -1, v))
				path = append(path, 2*path[v], 2*path[v]+1)
			}
		}
		level = next
	}
	s.childStart = append(s.childStart, int32(s.nodes()))
	return s, nil
}
