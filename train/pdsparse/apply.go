package pdsparse

import (
	"slices"

	"xmc/data"
	"xmc/numa"
	"xmc/train"
	"xmc/train/internal/prox"
)

// applySteps applies the steps of the round's rows (t.rowSteps) to this
// rank's weights, on the team. The steps, each an addition to a weight per
// feature of the row, are applied by feature shard: each worker adds to
// its shards' weights the steps of every row in row order, so the
// additions to each weight come in the order of one worker taking the rows
// one by one and the weights do not depend on the number of workers.
// A team of one worker applies every shard in one loop of one piece: the
// work of a loop at more workers, which the profile counts as such, so that
// a one-thread run's serial fraction is what stays serial at more (outside
// a loop, the additions were most of it: docs/algorithms/pdsparse.md).
// Where the team does not hold its members between loops, a round of fewer
// additions than parallelAdds is applied by the lead alone, outside a loop.
func (t *roundTrainer) applySteps(rows []int32) error {
	adds := 0
	for _, rs := range t.rowSteps {
		if rs.err != nil {
			return rs.err
		}
		adds += len(rs.moves) * int(t.x.Indptr[rows[rs.q]+1]-t.x.Indptr[rows[rs.q]])
	}
	switch {
	case t.team.Workers() == 1:
		every := t.everyStep()
		return t.team.For(1, 1, func(w numa.Worker, _, _ int) { t.apply(w, every, 0, len(t.shards)-1) })
	case !t.team.HoldsWorkers() && adds < t.parallelAdds:
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
// outgrow the caches, so it reads in passes over many additions at once,
// whose loads do not wait on each other and overlap: the additions listed
// in row order, then the first slot of each pair's lookup, then the pairs'
// places, then their dual sums, then the updates, in row order. Passes over
// one row at a time overlapped few loads where a shard holds a few of each
// row's features (docs/scaling/16-core.md, "PD-Sparse's round phases").
// The passes take the rows a chunk of about applyChunk additions at a time,
// so that a chunk's additions stay in cache from one pass to the next
// however many rows a round has. A pair that had no place in the lookups is
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
		if len(adds) >= applyChunk {
			t.addInPasses(st, adds)
			adds = adds[:0]
		}
	}
	t.addInPasses(st, adds)
	st.adds = adds[:0]
}

// applyChunk is about the most additions applyLists takes in one set of
// passes: 16 bytes each, with their places 80 KiB, which a core's L2 cache
// holds (chunks measured in docs/journal.md, 2026-11-28, twelfth entry).
const applyChunk = 1 << 12

// addInPasses makes the additions adds to the weights in lists, in order,
// in applyLists' passes.
func (t *roundTrainer) addInPasses(st *stepper, adds []stepAddition) {
	if len(adds) == 0 {
		return
	}
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
