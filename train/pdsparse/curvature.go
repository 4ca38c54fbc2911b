package pdsparse

import (
	"math"
	"slices"

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
	// pairs holds, class by class, the batch positions of the rows whose
	// active sets hold an owned class; the classes of two rows or more
	// are shared[g] to shared[g+1] of it. sums[p] is pair p's sum.
	pairs  []int32
	shared []int32
	sums   []float64
	// rowClasses is per batch position: the row's owned classes (local
	// ids; none for a row that takes no step).
	rowClasses [][]int32
	// count and next are per local class: its rows in the round, and
	// where its next pair goes; classes lists the classes with a row.
	count, next []int32
	classes     []int32
	// bound is per batch position: the row's largest sum over the owned
	// classes it shares with another row of the round (0: none).
	bound []float64
}

// boundCurvatures sets t.curv.bound for the round's rows: for each row, the
// largest of ⟨|x_i|, Σ_{j∈S_k} |x_j|⟩ over the owned classes k that it
// shares with another row. The workers of loop list the rows' owned
// classes (each row's active set and labels are cache misses: on the lead
// alone they were most of a round's serial time), the lead groups them by
// class, and the workers sum the shared classes' rows.
func (t *roundTrainer) boundCurvatures(loop train.Looper, rows []int32) error {
	cv := &t.curv
	if len(cv.count) < len(t.global) {
		cv.count, cv.next = make([]int32, len(t.global)), make([]int32, len(t.global))
	}
	cv.bound = slices.Grow(cv.bound[:0], len(rows))[:len(rows)]
	clear(cv.bound)
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
	// Count each owned class's rows, then place them class by class, in
	// batch order.
	cv.classes = cv.classes[:0]
	n := 0
	for _, own := range cv.rowClasses[:len(rows)] {
		for _, c := range own {
			if cv.count[c] == 0 {
				cv.classes = append(cv.classes, c)
			}
			cv.count[c]++
		}
		n += len(own)
	}
	cv.pairs = slices.Grow(cv.pairs[:0], n)[:n]
	cv.shared = append(cv.shared[:0], 0)
	start := int32(0)
	for _, c := range cv.classes {
		cv.next[c] = start
		start += cv.count[c]
	}
	for q, own := range cv.rowClasses[:len(rows)] {
		for _, c := range own {
			cv.pairs[cv.next[c]] = int32(q)
			cv.next[c]++
		}
	}
	// Keep the classes of two rows or more, in place.
	kept, lo := int32(0), int32(0)
	for _, c := range cv.classes {
		hi := lo + cv.count[c]
		if hi-lo >= 2 {
			kept += int32(copy(cv.pairs[kept:], cv.pairs[lo:hi]))
			cv.shared = append(cv.shared, kept)
		}
		cv.count[c] = 0
		lo = hi
	}
	cv.pairs = cv.pairs[:kept]
	if kept == 0 {
		return nil
	}
	cv.sums = slices.Grow(cv.sums[:0], int(kept))[:kept] // each written by sumShared
	err = loop.For(len(cv.shared)-1, 1, func(w numa.Worker, lo, hi int) {
		st := t.steppers.Get(w)
		for g := lo; g < hi; g++ {
			t.sumShared(st, rows, cv.pairs[cv.shared[g]:cv.shared[g+1]], cv.sums[cv.shared[g]:cv.shared[g+1]])
		}
	})
	if err != nil {
		return err
	}
	for p, q := range cv.pairs {
		cv.bound[q] = math.Max(cv.bound[q], cv.sums[p])
	}
	return nil
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
