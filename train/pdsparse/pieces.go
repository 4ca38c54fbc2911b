package pdsparse

import (
	"cmp"
	"math"
	"slices"

	"xmc/train"
)

// A row's search split into pieces: where a round's rows are too few for a
// rank's workers (B rows keep at most about B/4 busy: a row's search is
// the unit of a loop, and rows differ in cost), each row is searched in
// parts pieces, one per share of the rank's classes, by any worker, and
// the worker that finishes a row's last piece joins what they found into
// the row's report. The report is the one a whole row's search makes, so
// the model does not depend on the pieces.

// maxSearchParts bounds the shares of the classes a row's search is split
// into: each share has a list per feature (24 bytes of slice header each).
const maxSearchParts = 16

// searchParts returns how many shares of its classes a rank splits each
// row's search into: enough that a round's batch of rows gives each of its
// workers about four pieces, each share of at least 64 classes, at most
// maxSearchParts; 1 for dense weights, whose search reads a feature's
// weights in one pass. Each piece reads its row's features and their
// lists' first entries again, so rows are split no finer than the workers'
// balance needs (docs/algorithms/pdsparse.md). want, if not 0, is the
// answer (tests).
func searchParts(workers, batch, classes int, dense bool, want int) int {
	if want > 0 {
		return want
	}
	if dense {
		return 1
	}
	parts := (4*workers + batch - 1) / max(batch, 1)
	return max(1, min(parts, maxSearchParts, classes/64))
}

// pieceFind is what the search of one share of the classes found for a row:
// the scores of the row's active classes of the share (at their places in
// the row's active set), its best MaxSelect violators, in the order of
// better, and its first MaxSelect untouched classes (global ids), in the
// order of fill. Workers write the finds of neighbouring pieces at once:
// the padding keeps each of them off the others' cache lines.
type pieceFind struct {
	active    []float64
	best      []candidate
	untouched []int32
	_         [64 - 3*24%64]byte
}

// splitSearch splits the owned classes into parts shares of consecutive
// local ids (1 for dense weights) and makes the weights' lists, by feature
// and share.
func (t *roundTrainer) splitSearch(parts int) {
	k := len(t.global)
	if t.dense != nil {
		parts = 1
	}
	parts = max(1, min(parts, k, math.MaxUint8+1))
	t.parts = parts
	t.partOf = make([]uint8, k)
	for p := range parts {
		for c := p * k / parts; c < (p+1)*k/parts; c++ {
			t.partOf[c] = uint8(p)
		}
	}
	t.partFill = make([][]int32, parts)
	for _, l := range t.ownFill {
		p := t.partOf[t.local[l]]
		t.partFill[p] = append(t.partFill[p], l)
	}
	if t.dense == nil {
		t.nz = make([][]listedWeight, t.x.Cols*parts)
	}
}

// startPieces makes room for a round's pieces: a find per (row, share).
func (t *roundTrainer) startPieces(rows []int32) {
	if n := len(rows) * t.parts; len(t.finds) < n {
		t.finds = append(t.finds, make([]pieceFind, n-len(t.finds))...)
	}
}

// searchPiece searches share p of the classes for row i, the q-th of the
// batch, and keeps what it found in t.finds[q·parts + p]. It only reads
// the trainer otherwise, so that workers search pieces at once.
func (t *roundTrainer) searchPiece(s *searcher, q int, i int32, p int) {
	f := &t.finds[q*t.parts+p]
	f.active, f.best, f.untouched = f.active[:0], f.best[:0], f.untouched[:0]
	if t.skipsRow(i) {
		return // nothing to report
	}
	idx, val := t.x.Row(int(i))
	s.touched = s.touched[:cap(s.touched)][:t.scoreLists(s, idx, val, p, 0)]
	active := t.act[i]
	f.active = slices.Grow(f.active, len(active))[:len(active)]
	for k, a := range active {
		if c := t.local[a.class]; c >= 0 && int(t.partOf[c]) == p {
			f.active[k] = s.score[c]
			s.score[c] = math.Inf(-1)
		}
	}
	for _, l := range t.partFill[p] {
		if len(f.untouched) == t.p.MaxSelect {
			break
		}
		// Untouched, its score is 0, or −∞ if active (marked above).
		if c := t.local[l]; s.seen[c] == 0 && s.score[c] == 0 {
			f.untouched = append(f.untouched, l)
		}
	}
	f.best = t.bestViolators(s, f.best)
	for _, a := range active {
		if c := t.local[a.class]; c >= 0 && int(t.partOf[c]) == p {
			s.score[c] = 0
		}
	}
}

// joinPieces appends to s.Msg this rank's entries for row i, the q-th of
// the batch, from its pieces' finds: what report appends for the row
// searched whole.
func (t *roundTrainer) joinPieces(s *searcher, q int32, i int32) {
	if t.skipsRow(i) {
		return
	}
	rank := t.comm.Rank()
	put := func(class int32, kind int32, score float64) {
		s.Msg = train.AppendEntry(s.Msg, train.RoundEntry{Row: q, Class: class, Kind: reportedKind(kind, rank), Score: score})
	}
	finds := t.finds[int(q)*t.parts : (int(q)+1)*t.parts]
	for k, a := range t.act[i] {
		if c := t.local[a.class]; c >= 0 {
			put(a.class, kindScore, finds[t.partOf[c]].active[k])
		}
	}
	best := s.best[:0]
	for _, f := range finds {
		for _, b := range f.best {
			if len(best) < t.p.MaxSelect || t.better(b, best[len(best)-1]) {
				best = insertBounded(best, b, t.p.MaxSelect, t.better)
			}
		}
	}
	s.best = best
	for _, b := range best {
		put(t.global[b.class], kindViolator, b.score)
	}
	if len(best) < t.p.MaxSelect {
		untouched := s.untouched[:0]
		for _, f := range finds {
			untouched = append(untouched, f.untouched...)
		}
		slices.SortFunc(untouched, func(a, b int32) int { return cmp.Compare(t.fillPos[a], t.fillPos[b]) })
		s.untouched = untouched
		for _, l := range untouched[:min(len(untouched), t.p.MaxSelect)] {
			put(l, kindUntouched, 0)
		}
	}
	if b := t.curv.bound(q); b > 0 {
		put(-1, kindCurvature, b)
	}
}
