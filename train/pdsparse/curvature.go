package pdsparse

import (
	"math"
	"slices"
	"sync/atomic"

	"xmc/numa"
	"xmc/train"
)

// A round's rows take their steps from the weights of the round's start,
// all at once. Where two of them move the same class, the class's weights
// move by the sum of their steps, and each step was sized as if it moved
// alone: with many such rows a round overshoots, and large rounds were
// unstable (docs/algorithms/pdsparse.md). A row's subproblem therefore takes
// as its curvature, in place of ‖x_i‖², a bound on what its step can add to
// the objective with the others':
//
//	A_i = max over the row's classes k of ⟨|x_i|, Σ_{j∈S_k} |x_j|⟩,
//
// S_k being the round's rows with class k in their active sets (i among
// them), and A_i = ‖x_i‖² where no other row of the round has one of its
// classes. With these curvatures the rows' steps taken together lower the
// dual objective at least by the sum of what each row's subproblem
// promised: for class k, ‖Σ_i a_i x_i‖² ≤ Σ_i a_i² Σ_{j∈S_k} |⟨x_i, x_j⟩|
// (2|a_i a_j| ≤ a_i² + a_j²), the separable bounds of mini-batch
// coordinate descent (Richtárik and Takáč 2016; for SVMs' dual, Takáč,
// Bijral, Richtárik and Srebro 2013), here counting only the rows that share
// a class. The guarantee covers the classes of the active sets at the
// round's start: those a row's search adds in the round (at most
// MaxSelect a row, their variables starting at 0) are not counted.
//
// The bound is each class owner's to compute: it depends on the rows'
// active sets and features alone, so every rank computes, for its own
// classes, the largest of each row's sums and reports it with the row's
// entries (kindCurvature); the row's solver takes the largest reported.
// The weights so do not depend on the ranks or the threads.

// curvatures is a round's scratch for the rows' curvature bounds.
type curvatures struct {
	// rowClasses is per batch position: the row's owned classes (local
	// ids; none for a row that takes no step).
	rowClasses [][]int32
	// groups is per range of local classes (classGroup), one a worker;
	// first[r] is the number of shared classes of the ranges before r.
	groups []classGroup
	first  []int
	// count and next are per local class: its rows in the round, and
	// where its next pair goes (each range writes its own classes').
	count, next []int32
	// largest is per batch position: the bits of the row's largest sum,
	// which the workers raise at once (non-negative floats order as their
	// bits do; see bound).
	largest []atomic.Uint64
}

// bound returns the curvature bound of the round's row q: its largest sum
// over the owned classes it shares with another row of the round (0: none).
func (cv *curvatures) bound(q int32) float64 { return math.Float64frombits(cv.largest[q].Load()) }

// classGroup is a range of local classes' scratch: classes lists those with
// a row in the round; pairs holds, class by class, the batch positions of
// their rows, the classes of two rows or more being shared[k] to
// shared[k+1] of it; sums[p] is pair p's sum.
type classGroup struct {
	classes, pairs, shared []int32
	sums                   []float64
}

// boundCurvatures sets the round's rows' curvature bounds (curvatures.bound): for each row, the
// largest of ⟨|x_i|, Σ_{j∈S_k} |x_j|⟩ over the owned classes k that it
// shares with another row. In three loops of loop's workers: they list the
// rows' owned classes (each row's active set and labels are cache misses);
// each groups by class a range of the local classes, reading every row's
// list for its own (on the lead alone, the grouping was a third of a
// round's serial time on wordnet-hyper); and they sum the shared classes'
// rows, a class at a time. The sums and their largest do not depend on the
// workers.
func (t *roundTrainer) boundCurvatures(loop train.Looper, rows []int32) error {
	cv := &t.curv
	if len(cv.count) < len(t.global) {
		cv.count, cv.next = make([]int32, len(t.global)), make([]int32, len(t.global))
	}
	if len(cv.largest) < len(rows) {
		cv.largest = make([]atomic.Uint64, len(rows))
	}
	for q := range rows {
		cv.largest[q].Store(0)
	}
	if len(cv.rowClasses) < len(rows) {
		cv.rowClasses = append(cv.rowClasses, make([][]int32, len(rows)-len(cv.rowClasses))...)
	}
	err := loop.For(len(rows), rowClassesChunk, func(_ numa.Worker, lo, hi int) {
		for q := lo; q < hi; q++ {
			own := cv.rowClasses[q][:0]
			if i := rows[q]; !t.skipsRow(i) {
				for _, a := range t.act[i] {
					if c := t.local[a.class]; c >= 0 {
						own = append(own, c)
					}
				}
			}
			cv.rowClasses[q] = own
		}
	})
	if err != nil {
		return err
	}
	ranges := min(len(t.global), len(t.pool.Workers()))
	if len(cv.groups) < ranges {
		cv.groups = append(cv.groups, make([]classGroup, ranges-len(cv.groups))...)
	}
	err = loop.For(ranges, 1, func(_ numa.Worker, lo, hi int) {
		for r := lo; r < hi; r++ {
			c0, c1 := int32(r*len(t.global)/ranges), int32((r+1)*len(t.global)/ranges)
			t.groupRange(&cv.groups[r], len(rows), c0, c1)
		}
	})
	if err != nil {
		return err
	}
	cv.first = append(cv.first[:0], 0)
	for _, g := range cv.groups[:ranges] {
		cv.first = append(cv.first, cv.first[len(cv.first)-1]+len(g.shared)-1)
	}
	err = loop.For(cv.first[ranges], 1, func(w numa.Worker, lo, hi int) {
		st := t.steppers.Get(w)
		for k := lo; k < hi; k++ {
			r, _ := slices.BinarySearch(cv.first[1:ranges+1], k+1) // the range of shared class k
			g, a := &cv.groups[r], k-cv.first[r]
			members, sums := g.pairs[g.shared[a]:g.shared[a+1]], g.sums[g.shared[a]:g.shared[a+1]]
			t.sumShared(st, rows, members, sums)
			for p, q := range members {
				raise(&cv.largest[q], sums[p])
			}
		}
	})
	return err
}

// groupRange groups the round's pairs of the local classes [c0, c1) by
// class in g, each class's rows in batch order, and keeps the classes that
// two rows or more share, with room for their sums.
func (t *roundTrainer) groupRange(g *classGroup, rows int, c0, c1 int32) {
	cv := &t.curv
	g.classes = g.classes[:0]
	n := int32(0)
	for _, own := range cv.rowClasses[:rows] {
		for _, c := range own {
			if c < c0 || c >= c1 {
				continue
			}
			if cv.count[c] == 0 {
				g.classes = append(g.classes, c)
			}
			cv.count[c]++
			n++
		}
	}
	g.pairs = slices.Grow(g.pairs[:0], int(n))[:n]
	start := int32(0)
	for _, c := range g.classes {
		cv.next[c] = start
		start += cv.count[c]
	}
	for q, own := range cv.rowClasses[:rows] {
		for _, c := range own {
			if c >= c0 && c < c1 {
				g.pairs[cv.next[c]] = int32(q)
				cv.next[c]++
			}
		}
	}
	// Keep the classes of two rows or more, in place.
	g.shared = append(g.shared[:0], 0)
	kept, lo := int32(0), int32(0)
	for _, c := range g.classes {
		hi := lo + cv.count[c]
		if hi-lo >= 2 {
			kept += int32(copy(g.pairs[kept:], g.pairs[lo:hi]))
			g.shared = append(g.shared, kept)
		}
		cv.count[c] = 0
		lo = hi
	}
	g.pairs = g.pairs[:kept]
	g.sums = slices.Grow(g.sums[:0], int(kept))[:kept] // each written by sumShared
}

// raise sets *bits, a non-negative float's bits, to those of v where v is
// larger, whatever other goroutines raise it to at once.
func raise(bits *atomic.Uint64, v float64) {
	b := math.Float64bits(v)
	for old := bits.Load(); b > old; old = bits.Load() {
		if bits.CompareAndSwap(old, b) {
			return
		}
	}
}

// sumShared writes to sums[k], for the k-th of a class's rows (batch
// positions members), ⟨|x_i|, Σ_j |x_j|⟩ over the class's rows j, with
// st's scratch: the rows' absolute values summed in batch order, so that
// every rank that owns the class finds the same bits.
func (t *roundTrainer) sumShared(st *stepper, rows []int32, members []int32, sums []float64) {
	if len(st.absSum) < t.x.Cols {
		st.absSum = make([]float64, t.x.Cols)
	}
	acc := st.absSum
	for _, q := range members {
		idx, val := t.x.Row(int(rows[q]))
		for e, j := range idx {
			acc[j] += math.Abs(float64(val[e]))
		}
	}
	for k, q := range members {
		idx, val := t.x.Row(int(rows[q]))
		s := 0.0
		for e, j := range idx {
			s += math.Abs(float64(val[e])) * acc[j]
		}
		sums[k] = s
	}
	for _, q := range members {
		idx, _ := t.x.Row(int(rows[q]))
		for _, j := range idx {
			acc[j] = 0
		}
	}
}

// rowClassesChunk is the rows a worker takes at a time to list their
// owned classes.
const rowClassesChunk = 16

// skipsRow reports whether row i takes no step: a row without features or
// labels has no loss to lower, and its search reports nothing.
func (t *roundTrainer) skipsRow(i int32) bool {
	labels, _ := t.y.Row(int(i))
	return t.sq[i] == 0 || len(labels) == 0
}
