package pdsparse

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"xmc/data"
	"xmc/numa"
	"xmc/train"
	"xmc/train/internal/prox"
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

// applySteps applies the steps of the round's rows (t.rowSteps) to this
// rank's weights, on the team. The steps, each an addition to a weight per
// feature of the row, are applied by feature shard: each worker adds to
// its shards' weights the steps of every row in row order, so the
// additions to each weight come in the order of one worker taking the rows
// one by one and the weights do not depend on the number of workers.
// Where the team does not hold its members between loops, a round of
// fewer additions than parallelAdds is applied by the lead alone.
func (t *roundTrainer) applySteps(rows []int32) error {
	adds := 0
	for _, rs := range t.rowSteps {
		if rs.err != nil {
			return rs.err
		}
		adds += len(rs.moves) * int(t.x.Indptr[rows[rs.q]+1]-t.x.Indptr[rows[rs.q]])
	}
	if t.team.Workers() == 1 || (!t.team.HoldsWorkers() && adds < t.parallelAdds) {
		t.apply(t.team.Lead(), t.everyStep(), 0, len(t.shards)-1)
		return nil
	}
	return t.applyShards()
}

// applyShards applies the round's steps on the team, a shard at a time,
// spread so that each worker takes the shards of its own share first, the
// same every round, and their weights stay in its core's cache (dealt from
// one counter, a shard went to any worker each round, and its weights with
// it from one core's cache to another's).
func (t *roundTrainer) applyShards() error {
	every := t.everyStep()
	return t.team.Spread(len(t.shards)-1, func(w numa.Worker, s int) { t.apply(w, every, s, s+1) })
}

// everyStep returns the indices of every row of rowSteps, in order.
func (t *roundTrainer) everyStep() []int32 {
	for len(t.stepIndex) < len(t.rowSteps) {
		t.stepIndex = append(t.stepIndex, int32(len(t.stepIndex)))
	}
	return t.stepIndex[:len(t.rowSteps)]
}

// applyingWhenTaken reports whether the round's loop that takes the rows'
// steps applies the shards too (see takeThenApply): where the team holds
// its members and has more than one, unless a test wants them apart
// (applyApart).
func (t *roundTrainer) applyingWhenTaken() bool {
	return t.team.Workers() > 1 && t.team.HoldsWorkers() && !t.applyApart
}

// takeThenApply has takeRows take the steps of the rows of rowSteps, in a
// loop whose workers, once no row is left to take, apply the steps by
// feature shard, each shard once the rows with features in it have taken
// theirs (applyWhenTaken): the second part of the loop (numa.Team.ForThen)
// that takeRows runs with the Looper it is given, over the rows (a
// BatchReports' search, or chunks of row steps), calling tookStep(k) once
// the step of row k of rowSteps is taken. stepRows[k] is that row's index
// in the data. Two loops (take every row, then apply) held the workers done
// first until the last row was taken. It returns the first error of a
// row's step after the loop, once the other rows' steps are applied.
func (t *roundTrainer) takeThenApply(stepRows []int32, takeRows func(loop train.Looper) error) error {
	if len(t.taken) < len(t.rowSteps) {
		t.taken = make([]takenFlag, len(t.rowSteps))
	}
	t.takenRows.Store(0)
	t.everyStep() // for the workers' shards once every row is taken
	if err := takeRows(applyAfter{t: t, stepRows: stepRows}); err != nil {
		return err
	}
	for _, rs := range t.rowSteps {
		if rs.err != nil {
			return rs.err
		}
	}
	return nil
}

// tookStep marks the step of row k of rowSteps taken in this round, for
// applyWhenTaken.
func (t *roundTrainer) tookStep(k int) {
	t.taken[k].Store(int64(t.rounds))
	t.takenRows.Add(1)
}

// applyAfter is the train.Looper of takeThenApply: its loops apply the
// round's steps by feature shard after their own chunks.
type applyAfter struct {
	t        *roundTrainer
	stepRows []int32
}

// For runs fn over [0, n) in chunks of chunk, then applies the shards.
func (a applyAfter) For(n, chunk int, fn func(w numa.Worker, lo, hi int)) error {
	t := a.t
	return t.team.ForThen(n, chunk, fn, len(t.shards)-1, func(w numa.Worker, s int) { t.applyWhenTaken(w, a.stepRows, s) })
}

// applyWhenTaken applies the round's steps to the weights of feature shard
// s once every row of rowSteps with features in the shard (row stepRows[k]
// for step k) has taken its step (tookStep), reading no other row's step:
// one not yet taken may be being written. The additions come in row order,
// as apply's, so the weights are the same bytes.
func (t *roundTrainer) applyWhenTaken(w numa.Worker, stepRows []int32, s int) {
	if int(t.takenRows.Load()) == len(t.rowSteps) {
		t.apply(w, t.stepIndex[:len(t.rowSteps)], s, s+1)
		return
	}
	st := t.steppers.Get(w)
	lo, hi := t.shards[s], t.shards[s+1]
	round := int64(t.rounds)
	applied := st.applied[:0]
	for k := range t.rowSteps {
		if taken := &t.taken[k]; taken.Load() != round {
			idx, _ := t.x.Row(int(stepRows[k]))
			if !hasFeatureIn(idx, lo, hi) {
				continue
			}
			if !t.team.WaitFor(func() bool { return taken.Load() == round }) {
				return // the loop failed: it returns the error
			}
		}
		applied = append(applied, int32(k))
	}
	st.applied = applied
	t.apply(w, applied, s, s+1)
}

// hasFeatureIn reports whether the sorted features idx hold one in
// [lo, hi).
func hasFeatureIn(idx []int32, lo, hi int32) bool {
	e, _ := slices.BinarySearch(idx, lo)
	return e < len(idx) && idx[e] < hi
}

// appendCuts appends to cuts, for each bound of shards (a feature), the
// first position of the sorted features idx at or above it: O(len(idx) +
// len(shards)), once per row, rather than each shard searching every row
// of the round: with 64 shards (16 workers) the searches cost more than
// the additions (docs/scaling/16-core.md, run 5).
func appendCuts(cuts []int32, idx []int32, shards []int32) []int32 {
	e := 0
	for _, bound := range shards {
		for e < len(idx) && idx[e] < bound {
			e++
		}
		cuts = append(cuts, int32(e))
	}
	return cuts
}

// solvePiece is the rows of a round a worker takes at a time to solve.
const solvePiece = 2

// parallelStepAdds is the fewest additions to weights of a round that a
// team that does not hold its members between loops applies together
// rather than its lead alone (see applySteps): below it, waking them costs
// more than the additions (Bibtex's rounds make about 50,000, wordnet-mc's
// a few thousand).
const parallelStepAdds = 20000

// shardsPerWorker is the feature shards per worker: a round's additions
// fall unevenly on the features, and shards dealt a few at a time to the
// workers balance them.
const shardsPerWorker = 4

// apply applies the steps of the rows steps of rowSteps (indices, in
// order) to the weights of the features of shards lo to hi, row after row,
// with the scratch of worker w (the calling goroutine's, or w's own).
func (t *roundTrainer) apply(w numa.Worker, steps []int32, lo, hi int) {
	if t.dense == nil {
		t.applyLists(t.steppers.Get(w), steps, lo, hi)
		return
	}
	for _, k := range steps {
		rs := &t.rowSteps[k]
		if len(rs.moves) == 0 {
			continue
		}
		a, b := rs.cuts[lo], rs.cuts[hi]
		t.applyDense(rs.idx[a:b], rs.val[a:b], rs.moves)
	}
}

// stepAddition is a step's addition v to the dual sum of local class c on
// feature j.
type stepAddition struct {
	j, c int32
	v    float64
}

// applyLists is apply for weights in lists. Their places and tables
// outgrow the caches, so it reads in passes over all the round's additions
// to the shards, whose loads do not wait on each other and overlap: the
// additions listed in row order, then the first slot of each pair's
// lookup, then the pairs' places, then their dual sums, then the updates,
// in row order. Passes over one row at a time overlapped few loads where a
// shard holds a few of each row's features (docs/scaling/16-core.md,
// "PD-Sparse's round phases"). A pair that had no place in the lookups is
// looked up again when it is updated: an earlier row of the round may have
// made its place.
func (t *roundTrainer) applyLists(st *stepper, steps []int32, lo, hi int) {
	adds := st.adds[:0]
	for _, k := range steps {
		rs := &t.rowSteps[k]
		if len(rs.moves) == 0 {
			continue
		}
		a, b := rs.cuts[lo], rs.cuts[hi]
		if a == b {
			continue // none of the row's features in these shards
		}
		idx, val := rs.idx[a:b], rs.val[a:b]
		for _, m := range rs.moves {
			for e, j := range idx {
				adds = append(adds, stepAddition{j: j, c: m.c, v: float64(m.d * float64(val[e]))})
			}
		}
	}
	st.adds = adds
	at := slices.Grow(st.at[:0], len(adds))[:len(adds)]
	st.at = at
	ahead := uint64(0)
	for _, a := range adds {
		ahead += t.at.first(a.j, a.c)
	}
	st.ahead = ahead
	for i, a := range adds {
		at[i] = t.placeOf(a.j, a.c)
	}
	// The sum only keeps the loads from being dropped.
	touched := 0.0
	for i, a := range adds {
		if e := at[i]; e >= 0 {
			touched += t.places[a.j][e].v
		}
	}
	st.touched = touched
	for i, a := range adds {
		e := at[i]
		if e < 0 {
			e = t.placeOf(a.j, a.c)
		}
		t.addAt(a.j, a.c, e, a.v)
	}
}

// applyDense is apply's loop over a row's features (idx, val) and the
// moves of its step, for dense weights: addAt's
// work without its lookups and checks, a feature's weights at a time. Each
// weight receives one addition a row, so the order of the loops does not
// change the sums.
func (t *roundTrainer) applyDense(idx []int32, val []float32, moves []dualMove) {
	d, lambda := t.dense, t.p.Lambda
	for e, j := range idx {
		xv := float64(val[e])
		places, row := t.places[j], d.row(j)
		for _, m := range moves {
			p := &places[m.c]
			p.v += float64(m.d * xv)
			d.setIn(row, j, m.c, prox.SoftThreshold(p.v, lambda))
		}
	}
}

// featureShards splits the columns of x into n ranges of about equal
// non-zeros, as n+1 bounds.
func featureShards(x *data.CSR, n int) []int32 {
	count := make([]int64, x.Cols)
	for _, j := range x.Indices {
		count[j]++
	}
	bounds := []int32{0}
	total, sum := int64(len(x.Indices)), int64(0)
	for j, c := range count {
		sum += c
		if len(bounds) < n && sum*int64(n) >= total*int64(len(bounds)) {
			bounds = append(bounds, int32(j+1))
		}
	}
	for len(bounds) <= n {
		bounds = append(bounds, int32(x.Cols))
	}
	return bounds
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
	A := t.sq[i]
	labels, _ := t.y.Row(int(i))
	if A == 0 || len(labels) == 0 {
		return into, false, nil // no loss to lower: a row without features or labels
	}
	score := func(l int32) (float64, bool) {
		for _, e := range entries {
			if e.Class == l && entryKind(e) == kindScore {
				return e.Score, true
			}
		}
		return 0, false
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
