package pdsparse

import (
	"math"
	"math/bits"

	"xmc/numa"
	"xmc/train"
)

// candidate is a class (local id) a search may report, and its score.
type candidate struct {
	class int32
	score float64
}

// searcher is a worker's scratch for the search of a batch's rows.
type searcher struct {
	score     []float64 // per local class
	seen      []uint8   // per local class: 1 if touched
	touched   []int32
	marks     []uint64 // per 64 local classes, the touched ones (dense weights)
	best      []candidate
	untouched []int32 // global classes
	ahead     float64 // what scoreRow read ahead, summed
	train.RowReports
}

// newSearcher returns a search's scratch for k local classes.
func newSearcher(k int) *searcher {
	// touched holds every class once, and one more slot: the search
	// writes a class there before it knows whether to keep it.
	return &searcher{score: make([]float64, k), seen: make([]uint8, k), touched: make([]int32, k+1),
		marks: make([]uint64, (k+63)/64)}
}

// report appends to s.msg this rank's entries for row i, the q-th of the
// batch. It only reads the trainer, so that workers search rows at once.
func (t *roundTrainer) report(s *searcher, q int32, i int32) {
	if t.skipsRow(i) {
		return // nothing to report
	}
	idx, val := t.x.Row(int(i))
	rank := t.comm.Rank()
	put := func(class int32, kind int32, score float64) {
		s.Msg = train.AppendEntry(s.Msg, train.RoundEntry{Row: q, Class: class, Kind: reportedKind(kind, rank), Score: score})
	}
	active := t.act[i]
	t.scoreRow(s, idx, val)
	// The scores of the active classes this rank owns; mark them so that
	// they are not candidates.
	for _, a := range active {
		if c := t.local[a.class]; c >= 0 {
			put(a.class, kindScore, s.score[c])
			s.score[c] = math.Inf(-1)
		}
	}
	// The first MaxSelect untouched classes of the fill order, found
	// while the marks of the touched classes stand, and reported below
	// only if needed.
	untouched := s.untouched[:0]
	for _, l := range t.ownFill {
		if len(untouched) == t.p.MaxSelect {
			break
		}
		// Untouched, its score is 0, or −∞ if active (marked above).
		if c := t.local[l]; s.seen[c] == 0 && s.score[c] == 0 {
			untouched = append(untouched, l)
		}
	}
	s.untouched = untouched
	best := t.bestViolators(s, s.best[:0])
	s.best = best
	for _, b := range best {
		put(t.global[b.class], kindViolator, b.score)
	}
	// A row's solution takes untouched classes only when all ranks
	// together found fewer than MaxSelect violators: where this rank
	// found that many, its untouched classes would only lengthen every
	// rank's merge of the reports.
	if len(best) < t.p.MaxSelect {
		for _, l := range untouched {
			put(l, kindUntouched, 0)
		}
	}
	if b := t.curv.bound(q); b > 0 {
		put(-1, kindCurvature, b)
	}
	for _, a := range active {
		if c := t.local[a.class]; c >= 0 {
			s.score[c] = 0
		}
	}
}

// better reports whether candidate a ranks before b: a higher score, ties
// to the lower class.
func (t *roundTrainer) better(a, b candidate) bool {
	return a.score > b.score || (a.score == b.score && t.global[a.class] < t.global[b.class])
}

// bestViolators appends to best, empty, the best MaxSelect of the classes
// the row touched (s.touched) of positive score, ties to the lower class,
// kept sorted by insertion (MaxSelect is small), in the pass that clears
// their scores and marks.
func (t *roundTrainer) bestViolators(s *searcher, best []candidate) []candidate {
	// floor is 0 until best is full, then the score of its worst: most
	// classes fall below it, which one comparison tells.
	floor := 0.0
	for _, c := range s.touched {
		sc := s.score[c]
		s.score[c], s.seen[c] = 0, 0
		if sc < floor || (sc == floor && (len(best) < t.p.MaxSelect || !t.better(candidate{c, sc}, best[len(best)-1]))) {
			continue
		}
		best = insertBounded(best, candidate{c, sc}, t.p.MaxSelect, t.better)
		if len(best) == t.p.MaxSelect {
			floor = best[len(best)-1].score
		}
	}
	return best
}

// scoreRow adds to s.score the row's score for every class with a
// non-zero weight on one of its features (idx, val), marks them in s.seen
// and lists them in s.touched (share by share, each in order of first
// appearance: nothing reads into the order). It reads the weight lists
// only; the caller clears the scores and marks.
func (t *roundTrainer) scoreRow(s *searcher, idx []int32, val []float32) {
	// Without a branch on whether a class was seen before (the search's
	// costliest misprediction): every class is written at the end of
	// touched, which only grows if the class is new.
	touched, seen, score := s.touched[:cap(s.touched)], s.seen, s.score
	nt := 0
	if d := t.dense; d != nil {
		// The same sums: each class's weights added feature by feature
		// in the row's order. Touched classes are listed in class order,
		// which nothing reads into (the report and the held-out best
		// rank classes by score, then class).
		for e, j := range idx {
			d.addRow(j, float64(val[e]), score, s.marks)
		}
		for k, m := range s.marks {
			for m != 0 {
				c := int32(k<<6 | bits.TrailingZeros64(m))
				touched[nt], seen[c] = c, 1
				nt++
				m &= m - 1
			}
			s.marks[k] = 0
		}
		s.touched = touched[:nt]
		return
	}
	for p := range t.parts {
		nt = t.scoreLists(s, idx, val, p, nt)
	}
	s.touched = touched[:nt]
}

// scoreLists is scoreRow's loop over the row's features for the weights of
// share p of the classes, with nt classes touched so far; it returns the
// new count. A class's weights all lie in its share's lists, so its score
// sums the row's features in their order however the shares are taken.
func (t *roundTrainer) scoreLists(s *searcher, idx []int32, val []float32, p, nt int) int {
	touched, seen, score := s.touched[:cap(s.touched)], s.seen, s.score
	// The first weight of every feature's list read ahead: these loads
	// do not wait on each other, and the lists' starts then wait in cache.
	ahead := 0.0
	for _, j := range idx {
		if list := t.nz[int(j)*t.parts+p]; len(list) > 0 {
			ahead += list[0].w
		}
	}
	s.ahead = ahead
	for e, j := range idx {
		nt = scoreList(t.nz[int(j)*t.parts+p], float64(val[e]), score, seen, touched, nt)
	}
	return nt
}

// scoreList is scoreRow's loop over one feature's weights, of value xv in
// the row, with nt classes touched so far; it returns the new count. It is
// a function of its own, not inlined: inside scoreRow's loop over features
// the compiler kept this loop's counter and bounds on the stack.
//
//go:noinline
func scoreList(list []listedWeight, xv float64, score []float64, seen []uint8, touched []int32, nt int) int {
	for _, n := range list {
		c := n.class
		touched[nt] = c
		nt += int(1 - seen[c])
		seen[c] = 1
		score[c] += float64(n.w * xv)
	}
	return nt
}

// search has this rank's workers report, in t.batch, its entries for the
// rows: they search the batch's rows at once, in a loop of loop (the team,
// or one that then applies the rows' steps: takeThenApply), each with its
// own scratch, a row whole or, where the search is split (t.parts > 1), in
// pieces of a share of the classes each, joined by the worker that
// finishes a row's last piece. then, if not nil, is called by the worker
// that wrote row q's report with its bytes.
func (t *roundTrainer) search(loop train.Looper, rows []int32, then func(w numa.Worker, q int, report []byte)) error {
	reports := func(w numa.Worker) *train.RowReports { return &t.searchers.Get(w).RowReports }
	reported := func(w numa.Worker, q int, r *train.RowReports, start int) {
		if then != nil {
			then(w, q, r.Msg[start:])
		}
	}
	if t.parts == 1 {
		return t.batch.Run(loop, &t.x, rows, reports, func(w numa.Worker, q int, r *train.RowReports) {
			start := len(r.Msg)
			t.report(t.searchers.Get(w), int32(q), rows[q])
			reported(w, q, r, start)
		})
	}
	t.startPieces(rows)
	return t.batch.RunPieces(loop, &t.x, rows, t.parts,
		func(w numa.Worker, q, p int) { t.searchPiece(t.searchers.Get(w), q, rows[q], p) }, reports,
		func(w numa.Worker, q int, r *train.RowReports) {
			start := len(r.Msg)
			t.joinPieces(t.searchers.Get(w), int32(q), rows[q])
			reported(w, q, r, start)
		})
}
