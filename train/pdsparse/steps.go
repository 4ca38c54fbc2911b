package pdsparse

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"xmc/numa"
	"xmc/train"
)

// solveRows solves, where ranks share the classes, the round's rows that
// this rank is the home of, whose entries every rank reported are in
// t.entries, and returns their solutions for the other ranks (see
// addressSolutions).
//
// Each row's subproblem depends on the row's entries and active set alone,
// so the rows are solved at once (eachRow), each worker keeping its rows'
// new active sets in its stepper.
func (t *roundTrainer) solveRows(rows []int32) ([]byte, error) {
	t.solving = t.solving[:0]
	for lo := 0; lo < len(t.entries); {
		hi := lo
		for hi < len(t.entries) && t.entries[hi].Row == t.entries[lo].Row {
			hi++
		}
		t.solving = append(t.solving, rowStep{q: int(t.entries[lo].Row), lo: lo, hi: hi})
		lo = hi
	}
	err := t.eachRow(len(t.solving), func(st *stepper, k int) {
		rs := &t.solving[k]
		t.solveShared(st, rs, rows[rs.q], t.entries[rs.lo:rs.hi])
	})
	if err != nil {
		return nil, err
	}
	return t.addressSolutions(rows), nil
}

// addressSolutions keeps the new active sets of the rows this rank solved
// (t.solving) for it to take, in t.rowSteps and t.solved, and returns what
// the other ranks take: for each rank in turn, the new variables of its
// classes in each row whose old or new active set holds one (see
// appendSolution), in row order, with the bytes for each rank in
// t.ownerCounts.
func (t *roundTrainer) addressSolutions(rows []int32) []byte {
	ranks, self := t.comm.Size(), t.comm.Rank()
	if len(t.toOwners) != ranks {
		t.toOwners, t.ownerCounts, t.sentRow = make([][]byte, ranks), make([]int, ranks), make([]int, ranks)
	}
	for r := range t.toOwners {
		t.toOwners[r], t.sentRow[r] = t.toOwners[r][:0], -1
	}
	t.rowSteps, t.solved = t.rowSteps[:0], t.solved[:0]
	t.readActive(rows, t.solving)
	for k := range t.solving {
		rs := &t.solving[k]
		i, next := rows[rs.q], rs.st.next[rs.nlo:rs.nhi]
		if rs.err == nil && len(next) == 0 {
			continue // the row's active set does not change
		}
		// The other ranks with a class in the row's old active set or its
		// new one: each takes the new variables of its classes, none
		// where they all leave.
		dests := t.dests[:0]
		for _, set := range [][]dualVar{t.act[i], next} {
			for _, a := range set {
				r := int(a.owner)
				if r < 0 && rs.err == nil {
					rs.err = fmt.Errorf("pdsparse: row %d's active set holds class %d, which no rank owns", i, a.class)
				}
				if r >= 0 && r != self && t.sentRow[r] != k {
					t.sentRow[r] = k
					dests = append(dests, int32(r))
				}
			}
		}
		t.dests = dests
		if rs.err != nil {
			for r := range ranks {
				if r != self {
					t.toOwners[r] = appendSolution(t.toOwners[r], rs.q, nil, solutionFailed)
				}
			}
			continue
		}
		t.rowSteps = append(t.rowSteps, rowStep{q: rs.q, nlo: len(t.solved), nhi: len(t.solved) + len(next)})
		t.solved = append(t.solved, next...)
		for _, r := range dests {
			t.toOwners[r] = appendSolution(t.toOwners[r], rs.q, next, r)
		}
	}
	msg := t.msg[:0]
	for r, part := range t.toOwners {
		t.ownerCounts[r] = len(part)
		msg = append(msg, part...)
	}
	t.msg = msg
	return msg
}

// solveShared solves row i, the q-th of the round, from its entries with
// st's scratch, and records in rs where st.next keeps its new active set
// (none: unchanged) or the error it met.
func (t *roundTrainer) solveShared(st *stepper, rs *rowStep, i int32, entries []train.RoundEntry) {
	if st.round != t.rounds {
		st.moves, st.cuts, st.next, st.round = st.moves[:0], st.cuts[:0], st.next[:0], t.rounds
	}
	rs.st, rs.nlo = st, len(st.next)
	st.next, _, rs.err = t.solution(st, i, entries, st.next)
	rs.nhi = len(st.next)
}

// A row's solution on the wire, for one rank: its place in the round's
// batch and the number of the rank's classes in its new active set
// (solutionFailed where its solver met an error), then each of those
// classes and its α, in the active set's order.
const (
	solutionHeadBytes = 8
	solutionVarBytes  = 12
	solutionFailed    = -1
)

// appendSolution appends to msg the solution for rank owner of the q-th
// row of the round, of new active set next: its variables of owner's
// classes. An owner of solutionFailed appends the row's failure.
func appendSolution(msg []byte, q int, next []dualVar, owner int32) []byte {
	n := int32(0)
	if owner == solutionFailed {
		n = solutionFailed
	}
	for _, a := range next {
		if a.owner == owner {
			n++
		}
	}
	msg = binary.LittleEndian.AppendUint32(msg, uint32(q))
	msg = binary.LittleEndian.AppendUint32(msg, uint32(n))
	for _, a := range next {
		if a.owner == owner {
			msg = binary.LittleEndian.AppendUint32(msg, uint32(a.class))
			msg = binary.LittleEndian.AppendUint64(msg, math.Float64bits(a.alpha))
		}
	}
	return msg
}

// decodeSolutions adds to t.rowSteps the rows of the round's solutions
// that other ranks sent this one, mine, with the new variables of this
// rank's classes in t.solved, and orders t.rowSteps by row: the rows this
// rank solved, which solveRows put there, among them. rows is the round's
// rows.
func (t *roundTrainer) decodeSolutions(mine []byte, rows int) error {
	for len(mine) > 0 {
		if len(mine) < solutionHeadBytes {
			return fmt.Errorf("pdsparse: a solution of %d bytes", len(mine))
		}
		q, n := int32(binary.LittleEndian.Uint32(mine)), int32(binary.LittleEndian.Uint32(mine[4:]))
		mine = mine[solutionHeadBytes:]
		if n == solutionFailed {
			return fmt.Errorf("pdsparse: the rank that solved row %d of round %d failed", q, t.rounds)
		}
		if q < 0 || int(q) >= rows || n < 0 || len(mine) < int(n)*solutionVarBytes {
			return fmt.Errorf("pdsparse: a solution of row %d of %d, of %d classes in %d bytes", q, rows, n, len(mine))
		}
		rs := rowStep{q: int(q), nlo: len(t.solved)}
		for range n {
			a := dualVar{class: int32(binary.LittleEndian.Uint32(mine)), owner: int32(t.comm.Rank()),
				alpha: math.Float64frombits(binary.LittleEndian.Uint64(mine[4:]))}
			if a.class < 0 || int(a.class) >= len(t.local) || t.local[a.class] < 0 {
				return fmt.Errorf("pdsparse: row %d's solution sends this rank class %d, not its own", q, a.class)
			}
			t.solved = append(t.solved, a)
			mine = mine[solutionVarBytes:]
		}
		rs.nhi = len(t.solved)
		t.rowSteps = append(t.rowSteps, rs)
	}
	// In row order: each row has one step at most, placed by its row
	// (sorting the steps, large structs, cost more than the decoding).
	step := slices.Grow(t.stepOf[:0], rows)[:rows] // per row, its step + 1, or 0
	clear(step)
	for k, rs := range t.rowSteps {
		if step[rs.q] != 0 {
			return fmt.Errorf("pdsparse: two solutions of row %d of round %d", rs.q, t.rounds)
		}
		step[rs.q] = int32(k + 1)
	}
	ordered := t.ordered[:0]
	for _, k := range step {
		if k > 0 {
			ordered = append(ordered, t.rowSteps[k-1])
		}
	}
	t.stepOf, t.rowSteps, t.ordered = step, ordered, t.rowSteps
	return nil
}

// takeSolutions has every row of the round's solutions (t.rowSteps, with
// their active sets in t.solved) take its new active set, recording the
// moves of this rank's classes, the rows at once, and applies their steps
// (applySteps), in one loop where the team holds more than one worker
// (takeThenApply).
func (t *roundTrainer) takeSolutions(rows []int32) error {
	t.readActive(rows, t.rowSteps)
	take := func(st *stepper, k int) {
		rs := &t.rowSteps[k]
		t.takeSolution(st, rs, rows[rs.q], t.solved[rs.nlo:rs.nhi])
	}
	if !t.applyingWhenTaken() {
		if err := t.eachRow(len(t.rowSteps), take); err != nil {
			return err
		}
		return t.applySteps(rows)
	}
	t.stepRows = slices.Grow(t.stepRows[:0], len(t.rowSteps))
	for _, rs := range t.rowSteps {
		t.stepRows = append(t.stepRows, rows[rs.q])
	}
	return t.takeThenApply(t.stepRows, func(loop train.Looper) error {
		return loop.For(len(t.rowSteps), solvePiece, func(w numa.Worker, a, b int) {
			st := t.steppers.Get(w)
			for k := a; k < b; k++ {
				take(st, k)
				t.tookStep(k)
			}
		})
	})
}

// readActive reads ahead the active sets of the steps' rows, their slices
// then their first variables: each pass's loads do not wait on each other,
// where a loop over the rows would wait on two misses a row in turn (the
// rows of a round are far apart in memory, and a rank may not have
// searched them).
func (t *roundTrainer) readActive(rows []int32, steps []rowStep) {
	n := 0
	for _, rs := range steps {
		n += len(t.act[rows[rs.q]])
	}
	ahead := 0.0
	for _, rs := range steps {
		if old := t.act[rows[rs.q]]; len(old) > 0 {
			ahead += old[0].alpha
		}
	}
	t.ahead = ahead + float64(n) // the sum only keeps the loads from being dropped
}

// eachRow calls f for rows 0 to n of a round's list with the stepper of
// the worker that takes row k: the rows at once, in pieces, on the team,
// or all of them on the lead where the team does not hold its members
// between loops (waking them would cost more).
func (t *roundTrainer) eachRow(n int, f func(st *stepper, k int)) error {
	rows := func(w numa.Worker, a, b int) {
		st := t.steppers.Get(w)
		for k := a; k < b; k++ {
			f(st, k)
		}
	}
	if !t.team.HoldsWorkers() {
		rows(t.team.Lead(), 0, n)
		return nil
	}
	return t.team.For(n, solvePiece, rows)
}

// solvePiece is the rows of a round a worker takes at a time to solve.
const solvePiece = 2

// solveReported returns search's follow-up for a rank alone, which solves
// row q where a worker searched it, from the entries the worker just
// reported (every entry of the row: the rank owns every class), and takes
// its solution there.
func (t *roundTrainer) solveReported(rows []int32) func(w numa.Worker, q int, report []byte) {
	t.rowSteps = slices.Grow(t.rowSteps[:0], len(rows))[:len(rows)]
	return func(w numa.Worker, q int, report []byte) {
		rs := &t.rowSteps[q]
		*rs = rowStep{q: q}
		if len(report) == 0 {
			return // nothing reported: no step, as a row without entries
		}
		st := t.steppers.Get(w)
		st.entries = train.AppendDecoded(st.entries[:0], report)
		next, changed, err := t.solution(st, rows[q], st.entries, st.next[:0])
		st.next, rs.err = next, err
		if changed {
			t.takeSolution(st, rs, rows[q], next)
		}
	}
}

// takeSolution has row i take its new active set next, with st's scratch:
// it records in rs the moves of this rank's classes, from the row's
// active set to next, and where the row's features enter each feature
// shard. next keeps, in order, the classes of the active set that stay,
// then those that join: a class that leaves moves by −α, one that joins
// by its α, one that stays by the difference (the subtractions of the
// solution's own, so that the steps are the same bytes on every rank).
func (t *roundTrainer) takeSolution(st *stepper, rs *rowStep, i int32, next []dualVar) {
	if st.round != t.rounds {
		st.moves, st.cuts, st.next, st.round = st.moves[:0], st.cuts[:0], st.next[:0], t.rounds
	}
	mlo := len(st.moves)
	move := func(class int32, d float64) {
		if d == 0 {
			return
		}
		if lc := t.local[class]; lc >= 0 {
			st.moves = append(st.moves, dualMove{c: lc, d: d})
		}
	}
	old, p := t.act[i], 0
	for _, a := range old {
		na := 0.0
		if p < len(next) && next[p].class == a.class {
			na = next[p].alpha
			p++
		}
		move(a.class, na-a.alpha)
	}
	for _, a := range next[p:] {
		move(a.class, a.alpha)
	}
	t.act[i] = append(old[:0], next...)
	if n := len(st.moves); n > mlo {
		rs.moves = st.moves[mlo:n:n]
		rs.idx, rs.val = t.x.Row(int(i))
		cut := len(st.cuts)
		st.cuts = appendCuts(st.cuts, rs.idx, t.shards)
		rs.cuts = st.cuts[cut:len(st.cuts):len(st.cuts)]
	}
}

// newActive returns the classes that join a row's active set, from the
// entries every rank reported for it: the best violators of all ranks,
// then untouched classes in fill order, MaxSelect in all. The slice is
// st.add, valid until the next call.
//
// Every rank reports up to MaxSelect violators and untouched classes for
// the row, so a row has up to ranks × MaxSelect of each: they are selected
// by insertion into the MaxSelect kept so far, one comparison dropping
// most, rather than sorted whole (sorting them was the larger part of
// every rank's solves at 16 ranks). Violators are distinct classes, in
// the order of their scores, high first, then of their classes; untouched
// classes in fill order; so the selection is the sort's first MaxSelect.
func (t *roundTrainer) newActive(st *stepper, entries []train.RoundEntry) []train.RoundEntry {
	n := t.p.MaxSelect
	add := st.add[:0]
	for _, e := range entries {
		if entryKind(e) == kindViolator && (len(add) < n || violatesMore(e, add[len(add)-1])) {
			add = insertBounded(add, e, n, violatesMore)
		}
	}
	if len(add) < n {
		fill, m := st.fill[:0], n-len(add)
		fillsFirst := func(a, b train.RoundEntry) bool { return t.fillPos[a.Class] < t.fillPos[b.Class] }
		for _, e := range entries {
			if entryKind(e) == kindUntouched && (len(fill) < m || fillsFirst(e, fill[len(fill)-1])) {
				fill = insertBounded(fill, e, m, fillsFirst)
			}
		}
		add = append(add, fill...)
		st.fill = fill
	}
	st.add = add
	return add
}

// violatesMore reports whether violator a joins an active set before b:
// a higher score (NaN lowest), then a lower class.
func violatesMore(a, b train.RoundEntry) bool {
	if c := cmp.Compare(b.Score, a.Score); c != 0 {
		return c < 0
	}
	return a.Class < b.Class
}

// insertBounded inserts e into list, kept in the order of before and cut
// to its first n entries; e must come before list's last entry or list
// must hold fewer than n.
func insertBounded[E any](list []E, e E, n int, before func(a, b E) bool) []E {
	if len(list) < n {
		list = append(list, e)
	} else {
		list[len(list)-1] = e
	}
	for k := len(list) - 1; k > 0 && before(list[k], list[k-1]); k-- {
		list[k], list[k-1] = list[k-1], list[k]
	}
	return list
}

// solution solves row i's subproblem, with st's scratch, from the entries
// every rank reported for it, and appends to into its new active set. It
// reports whether the active set changes: a row without features or
// labels, or without a negative class to separate, keeps its own.
func (t *roundTrainer) solution(st *stepper, i int32, entries []train.RoundEntry, into []dualVar) ([]dualVar, bool, error) {
	if t.skipsRow(i) {
		return into, false, nil // no loss to lower: a row without features or labels
	}
	A := t.sq[i]
	labels, _ := t.y.Row(int(i))
	// The row's curvature: ‖x_i‖², or the largest bound a rank reported
	// for the classes it shares with the round's other rows (curvatures).
	// The active classes' scores, sorted by class to be looked up: a
	// row's active set and entries grow to hundreds where its labels do
	// (Delicious: 19 a row), where a scan of the entries for each class
	// was much of the training.
	known := st.known[:0]
	for _, e := range entries {
		switch entryKind(e) {
		case kindCurvature:
			A = math.Max(A, e.Score)
		case kindScore:
			known = append(known, e)
		}
	}
	slices.SortFunc(known, func(a, b train.RoundEntry) int { return cmp.Compare(a.Class, b.Class) })
	st.known = known
	score := func(l int32) (float64, bool) {
		k, ok := slices.BinarySearchFunc(known, l, func(e train.RoundEntry, l int32) int { return cmp.Compare(e.Class, l) })
		if !ok {
			return 0, false
		}
		return known[k].Score, true
	}
	add := t.newActive(st, entries)
	active := append(st.active[:0], t.act[i]...)
	scores := st.scores[:0]
	for _, a := range active {
		s, ok := score(a.class)
		if !ok {
			return into, false, fmt.Errorf("pdsparse: no rank reported the score of class %d for row %d", a.class, i)
		}
		scores = append(scores, s)
	}
	for _, e := range add {
		active = append(active, dualVar{class: e.Class, owner: entryRank(e)})
		scores = append(scores, e.Score)
	}
	st.active, st.scores = active, scores
	if len(active) == len(labels) {
		return into, false, nil // no negative to separate from
	}
	// b for the negatives, c for the positives (see biSimplex): a step of
	// size 1/A from the current α along the dual gradient.
	b, c := st.b[:0], st.c[:0]
	for k, a := range active {
		if k < len(labels) { // the labels come first in every active set
			c = append(c, (A*a.alpha-scores[k])/A)
		} else {
			b = append(b, (1+scores[k]-A*a.alpha)/A)
		}
	}
	st.b, st.c = b, c
	st.x, st.y = slices.Grow(st.x[:0], len(b))[:len(b)], slices.Grow(st.y[:0], len(c))[:len(c)]
	x, y := st.x, st.y
	biSimplex(b, c, t.p.Cost, x, y, &st.simplex)
	for k, a := range active {
		na := 0.0
		if k < len(labels) {
			na = y[k]
		} else {
			na = -x[k-len(labels)]
		}
		if k < len(labels) || na != 0 {
			into = append(into, dualVar{class: a.class, owner: a.owner, alpha: na})
		}
	}
	return into, true, nil
}
