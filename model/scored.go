package model

import "slices"

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
// of them, sorted, if there are at most k. It selects with a size-k heap,
// O(n log k), and leaves scores unchanged.
func TopK(scores []Scored, k int) []Scored {
	return TopKInto(make([]Scored, 0, max(0, min(k, len(scores)))), scores, k)
}

// TopKInto is TopK writing into dst[:0], so that per-row callers reuse
// one buffer.
func TopKInto(dst, scores []Scored, k int) []Scored {
	if k <= 0 {
		return dst[:0]
	}
	if len(scores) <= k {
		top := append(dst[:0], scores...)
		SortScored(top)
		return top
	}
	// heap is a min-heap by rank: heap[0] is the worst of the best k so far.
	heap := append(dst[:0], scores[:k]...)
	for i := k/2 - 1; i >= 0; i-- {
		siftDown(heap, i)
	}
	for _, s := range scores[k:] {
		if RanksBefore(s, heap[0]) {
			heap[0] = s
			siftDown(heap, 0)
		}
	}
	SortScored(heap)
	return heap
}

// siftDown restores the heap property below i in a heap whose root is the
// lowest-ranked entry. It is written out because container/heap's interface
// calls would dominate the cost of selecting a handful of labels per row.
func siftDown(h []Scored, i int) {
	for {
		worst := i
		if l := 2*i + 1; l < len(h) && RanksBefore(h[worst], h[l]) {
			worst = l
		}
		if r := 2*i + 2; r < len(h) && RanksBefore(h[worst], h[r]) {
			worst = r
		}
		if worst == i {
			return
		}
		h[i], h[worst] = h[worst], h[i]
		i = worst
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
