package model

import (
	"fmt"
	"math"
	"slices"

	"xmc/data"
)

// Scored is one predicted label with its score.
type Scored struct {
	Label int32
	Score float32
}

// RanksBefore reports whether a ranks strictly before b in a prediction: higher score
// first, ties broken by lower label, and NaN scores after every number so
// that the order is total even on bad input.
func RanksBefore(a, b Scored) bool {
	switch {
	case a.Score > b.Score:
		return true
	case a.Score < b.Score:
		return false
	case a.Score == b.Score:
		return a.Label < b.Label
	}
	// At least one score is NaN.
	an, bn := a.Score != a.Score, b.Score != b.Score
	if an != bn {
		return bn
	}
	return a.Label < b.Label
}

// CompareRank is RanksBefore as a three-way comparison, for
// slices.SortFunc.
func CompareRank(a, b Scored) int {
	switch {
	case RanksBefore(a, b):
		return -1
	case RanksBefore(b, a):
		return 1
	}
	return 0
}

// SortScored sorts s in rank order: score descending, ties by label
// ascending, NaN scores last.
func SortScored(s []Scored) { slices.SortFunc(s, CompareRank) }

// TopK returns the k best entries of scores in rank order (score
// descending, ties by label ascending, NaN scores last) in a new slice; all
// of them, sorted, if there are at most k. It leaves scores unchanged.
// Callers that select row after row keep a [Top] instead.
func TopK(scores []Scored, k int) []Scored {
	var t Top
	t.Reset(k)
	for _, s := range scores {
		t.Push(s)
	}
	return slices.Clone(t.Sorted())
}

// Top selects the k best of a stream of scored labels, in rank order,
// without allocating once its buffer has grown to its size: a prediction
// keeps one per worker and pushes every label a row touches.
//
// It keeps candidates in a buffer of 2k entries (k + 16 for k below 16).
// Once the buffer has been cut to its k best, the worst of them bounds the
// rest: an entry of a lower score is dropped by one comparison, so a row of
// n labels in random order costs n comparisons and about ln(n/k) cuts, each
// linear in k. Pushing spares the callers a list of every candidate; the
// selection itself costs about what a size-k heap did (BenchmarkTopK).
type Top struct {
	k   int
	buf []Scored
	// bound is the worst of the k best pushed so far, once the buffer has
	// been cut (cut is set); floor is its score, or −∞ while there is no
	// bound or the bound's score is NaN, so that `s.Score < floor`
	// drops only entries that rank after the bound.
	bound Scored
	floor float32
	cut   bool
}

// Reset empties t for a new selection of the k best.
func (t *Top) Reset(k int) {
	t.k = max(k, 0)
	if c := t.k + max(t.k, 16); cap(t.buf) < c {
		t.buf = make([]Scored, 0, c)
	}
	t.buf = t.buf[:0]
	t.floor, t.cut = float32(math.Inf(-1)), false
}

// Push offers s to the selection.
func (t *Top) Push(s Scored) {
	if s.Score < t.floor {
		return
	}
	t.push(s)
}

// push is Push for an entry that the floor did not drop; kept apart so
// that Push inlines into the callers' loops.
func (t *Top) push(s Scored) {
	if t.cut && !RanksBefore(s, t.bound) {
		return
	}
	if len(t.buf) == cap(t.buf) {
		if t.k == 0 {
			return
		}
		selectBest(t.buf, t.k)
		t.buf = t.buf[:t.k]
		t.bound, t.cut = t.buf[t.k-1], true
		if t.floor = t.bound.Score; t.floor != t.floor {
			t.floor = float32(math.Inf(-1))
		}
		if !RanksBefore(s, t.bound) {
			return
		}
	}
	t.buf = append(t.buf, s)
}

// Sorted returns the k best entries pushed since Reset (all of them if
// fewer) in rank order. The slice is t's own, valid until the next Reset.
func (t *Top) Sorted() []Scored {
	if len(t.buf) > t.k {
		selectBest(t.buf, t.k)
		t.buf = t.buf[:t.k]
	}
	SortScored(t.buf)
	return t.buf
}

// selectBest reorders a so that a[:k] holds its k best entries in rank
// order's sense, 0 < k ≤ len(a), in no particular order among themselves
// except that a[k-1] is the worst of them (quickselect: Hoare partitions
// around a median of three, insertion sort below 13 entries). Written by
// hand because neither the standard library nor x/exp offers a partial
// selection.
func selectBest(a []Scored, k int) {
	lo, hi := 0, len(a) // a[k-1]'s final place lies in a[lo:hi]
	for hi-lo > 12 {
		mid := lo + (hi-lo)/2
		if RanksBefore(a[mid], a[lo]) {
			a[mid], a[lo] = a[lo], a[mid]
		}
		if RanksBefore(a[hi-1], a[mid]) {
			a[hi-1], a[mid] = a[mid], a[hi-1]
			if RanksBefore(a[mid], a[lo]) {
				a[mid], a[lo] = a[lo], a[mid]
			}
		}
		pivot := a[mid]
		i, j := lo, hi-1
		for i <= j {
			for RanksBefore(a[i], pivot) {
				i++
			}
			for RanksBefore(pivot, a[j]) {
				j--
			}
			if i <= j {
				a[i], a[j] = a[j], a[i]
				i++
				j--
			}
		}
		// a[lo:j+1] rank no later than the pivot, a[i:hi] no earlier, and
		// anything between them is the pivot's equal.
		switch target := k - 1; {
		case target <= j:
			hi = j + 1
		case target >= i:
			lo = i
		default:
			return
		}
	}
	for i := lo + 1; i < hi; i++ {
		for j := i; j > lo && RanksBefore(a[j], a[j-1]); j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

// DuplicateLabel reports a label that occurs twice in a prediction row. Rows are short
// (top-k predictions), so a quadratic scan beats sorting for the usual k up
// to a few dozen; longer rows are checked on a sorted copy in *scratch,
// which is reused across calls.
func DuplicateLabel(row []Scored, scratch *[]int32) (int32, bool) {
	if len(row) <= 32 {
		for i := 1; i < len(row); i++ {
			for j := range i {
				if row[i].Label == row[j].Label {
					return row[i].Label, true
				}
			}
		}
		return 0, false
	}
	labels := (*scratch)[:0]
	for _, s := range row {
		labels = append(labels, s.Label)
	}
	*scratch = labels
	slices.Sort(labels)
	for i := 1; i < len(labels); i++ {
		if labels[i] == labels[i-1] {
			return labels[i], true
		}
	}
	return 0, false
}

// CheckInput reports whether a model over D features can score the rows
// of x for their k best labels: the check of a model's Predict and
// Partial before any work.
func CheckInput(x *data.CSR, D, k int) error {
	if x.Cols > D {
		return fmt.Errorf("data has %d features but the model was trained on %d", x.Cols, D)
	}
	if k < 1 {
		return fmt.Errorf("top-k must be at least 1, got %d", k)
	}
	return nil
}
