package memoir

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"xmc/numa"
	"xmc/train"
)

// Round runs one batch: every rank searches its blocks for each row's
// rival and scores the row's labels it owns; each rank receives every
// rank's reports of its share of the rows and decides their steps; the
// ranks share the steps, and each applies those of its own classes.
func (t *roundTrainer) Round(_ context.Context, r int, team *numa.Team) (bool, error) {
	t.team = team
	if err := t.computeKeys(); err != nil {
		return false, err
	}
	rows := t.order.Rows(r)
	if err := t.search(rows); err != nil {
		return false, err
	}
	t.rounds++
	eta := t.eta(r)
	shrink := 1.0
	if t.p.Regularizer == "l2" {
		shrink = 1 - t.p.Lambda*eta
	}
	if t.order.LastOfEpoch(r - 1) {
		t.violations = 0
	}
	if err := t.decide(len(rows), eta, shrink); err != nil {
		return false, err
	}
	if t.p.Regularizer == "l1" {
		t.owed += t.p.Lambda * eta
	}
	if err := t.apply(rows); err != nil {
		return false, err
	}
	t.scale *= shrink
	if t.p.Regularizer == "l2" {
		t.fold()
		t.projectDue = true // made with the next round's reports
	}
	if !t.order.LastOfEpoch(r) {
		return false, nil
	}
	return t.endEpoch()
}

// decide sets t.steps to the round's steps in row order: each rank decides
// those of its share of the rows (train.RowShare) from every rank's
// reports of them, which it alone receives, and the ranks share the steps
// (a rank alone decides every row from its own reports). The reports also
// bring the last round's block norms, for its projection (projectDue). A
// step's coefficient is ±η/(s·shrink): W = s·v gains ±η x once s has
// shrunk. It counts in t.violations the rows this rank decided that
// violate their margin.
func (t *roundTrainer) decide(rows int, eta, shrink float64) error {
	reports := t.msg
	if t.comm.Size() > 1 {
		var norms []byte
		if t.projectDue {
			norms = t.normEntries()
		}
		var err error
		if reports, err = t.toDeciders.ExchangeWith(t.comm, norms, t.msg, rows); err != nil {
			return fmt.Errorf("memoir: %w", err)
		}
		if t.projectDue {
			if err := t.takeNorms(reports); err != nil {
				return err
			}
			t.project()
		}
	} else if err := t.settleProjection(); err != nil { // a rank alone has every norm
		return err
	}
	coef := eta / (t.scale * shrink)
	t.reportBytes += int64(len(reports))
	lo, hi := train.RowShare(rows, t.comm.Rank(), t.comm.Size())
	var err error
	if t.entries, err = train.DecodeEntriesOf(reports, lo, hi, t.entries); err != nil {
		return fmt.Errorf("memoir: %w", err)
	}
	t.steps = t.steps[:0]
	err = train.ForEachRow(t.entries, func(q int32, entries []train.RoundEntry) error {
		rival, rs := int32(-1), math.Inf(-1)
		label, ls := int32(-1), math.Inf(1)
		for _, e := range entries {
			switch {
			case e.Kind == kindRival && (e.Score > rs || (e.Score == rs && e.Class < rival)):
				rival, rs = e.Class, e.Score
			case e.Kind == kindLabel && (e.Score < ls || (e.Score == ls && e.Class < label)):
				label, ls = e.Class, e.Score
			}
		}
		if label < 0 || rival < 0 {
			return nil // no label, or no class that is not one
		}
		if 1+t.scale*(rs-ls) > 0 {
			t.violations++
			t.steps = append(t.steps, classStep{q, rival, -coef}, classStep{q, label, coef})
		}
		return nil
	})
	if err != nil || t.comm.Size() == 1 {
		return err
	}
	return t.shareSteps(rows)
}

// stepBytes is a step's size on the wire: its row's place in the round,
// its class and its coefficient.
const stepBytes = 16

// shareSteps gives every rank, in t.steps, the steps every rank decided,
// in rank order, so in row order, for a round of rows rows.
func (t *roundTrainer) shareSteps(rows int) error {
	msg := t.stepMsg[:0]
	for _, st := range t.steps {
		msg = binary.LittleEndian.AppendUint32(msg, uint32(st.q))
		msg = binary.LittleEndian.AppendUint32(msg, uint32(st.class))
		msg = binary.LittleEndian.AppendUint64(msg, math.Float64bits(st.coef))
	}
	t.stepMsg = msg
	all, err := t.stepGather.Exchange(t.comm, msg)
	if err != nil {
		return err
	}
	t.stepBytes += int64(len(all))
	if len(all)%stepBytes != 0 {
		return fmt.Errorf("memoir: steps of %d bytes, not whole %d-byte steps", len(all), stepBytes)
	}
	t.steps = t.steps[:0]
	for k := 0; k < len(all); k += stepBytes {
		st := classStep{q: int32(binary.LittleEndian.Uint32(all[k:])), class: int32(binary.LittleEndian.Uint32(all[k+4:])),
			coef: math.Float64frombits(binary.LittleEndian.Uint64(all[k+8:]))}
		if st.q < 0 || int(st.q) >= rows || st.class < 0 || int(st.class) >= len(t.blockOf) ||
			(len(t.steps) > 0 && st.q < t.steps[len(t.steps)-1].q) {
			return fmt.Errorf("memoir: a step of row %d of %d and class %d of %d, or out of row order", st.q, rows, st.class, len(t.blockOf))
		}
		t.steps = append(t.steps, st)
	}
	return nil
}

// search fills t.msg with this rank's entries for the rows, in row order,
// in two loops on the team: each row's label scores; then the search of
// every (row, block) pair for the row's best class in the block, the rows
// of more features first. A row searched whole by one worker bounded the
// round: at 16 workers a round's longest row took longer than a worker's
// even share of the round's searches (docs/scaling/16-core.md); its blocks
// dealt apart do not. The entries are then joined in row order, each row's
// rival the best of its blocks', ties to the lower class, as one worker
// searching the blocks in turn would find it.
func (t *roundTrainer) search(rows []int32) error {
	n, blocks := len(rows), len(t.mine)
	t.labelAt = slices.Grow(t.labelAt[:0], n+1)[:n+1]
	t.labelAt[0] = 0
	for q, i := range rows {
		labels, _ := t.y.Row(int(i))
		owned := 0
		for _, l := range labels {
			if t.blockOf[l] >= 0 {
				owned++
			}
		}
		t.labelAt[q+1] = t.labelAt[q] + int32(owned)
	}
	t.labelScore = slices.Grow(t.labelScore[:0], int(t.labelAt[n]))[:t.labelAt[n]]
	err := t.team.For(n, 1, func(w numa.Worker, q, _ int) {
		xi, xv := t.x.Row(int(rows[q]))
		labels, _ := t.y.Row(int(rows[q]))
		at := t.labelAt[q]
		for _, l := range labels {
			if b := t.blockOf[l]; b >= 0 {
				t.labelScore[at] = t.mine[b].vec.Dot(int(t.slot[l]), xi, xv)
				at++
			}
		}
	})
	if err != nil {
		return err
	}
	dealt := t.dealt.Of(&t.x, rows)
	t.best = slices.Grow(t.best[:0], n*blocks)[:n*blocks]
	err = t.team.For(n*blocks, 1, func(w numa.Worker, u, _ int) {
		q, bi := int(dealt[u/blocks]), u%blocks
		s := t.searchers.Get(w)
		t.best[q*blocks+bi] = t.searchBlock(s, rows[q], bi, t.keysOf(s, int(rows[q])))
	})
	if err != nil {
		return err
	}
	t.msg = t.msg[:0]
	for q, i := range rows {
		labels, _ := t.y.Row(int(i))
		if len(labels) == 0 || t.x.Indptr[i+1] == t.x.Indptr[i] {
			continue // nothing to learn from the row
		}
		at := t.labelAt[q]
		for _, l := range labels {
			if t.blockOf[l] >= 0 {
				t.msg = train.AppendEntry(t.msg, train.RoundEntry{Row: int32(q), Class: l, Kind: kindLabel, Score: t.labelScore[at]})
				at++
			}
		}
		rival := blockFind{class: -1, score: math.Inf(-1)}
		for _, f := range t.best[q*blocks : (q+1)*blocks] {
			if f.class >= 0 && (f.score > rival.score || (f.score == rival.score && f.class < rival.class)) {
				rival = f
			}
		}
		if rival.class >= 0 {
			t.msg = train.AppendEntry(t.msg, train.RoundEntry{Row: int32(q), Class: rival.class, Kind: kindRival, Score: rival.score})
		}
	}
	return nil
}

// blockFind is a block's best class for a row and its score; class −1
// when the block has none to offer.
type blockFind struct {
	class int32
	score float64
}

// searchBlock returns the best class of block bi for training row i, of
// LSH keys keys, other than the row's labels: none for a row without
// labels or features, which the round does not learn from. It only reads
// the blocks.
func (t *roundTrainer) searchBlock(s *searcher, i int32, bi int, keys []int) blockFind {
	labels, _ := t.y.Row(int(i))
	xi, xv := t.x.Row(int(i))
	if len(labels) == 0 || len(xi) == 0 {
		return blockFind{class: -1}
	}
	b := t.mine[bi]
	s.skip = s.skip[:0]
	for _, l := range labels {
		if t.blockOf[l] == int32(bi) {
			s.skip = append(s.skip, int(t.slot[l]))
		}
	}
	k, sc := t.blockBest(b, s, xi, xv, keys)
	if k < 0 {
		return blockFind{class: -1}
	}
	return blockFind{class: b.classes[k], score: sc}
}

// blockBest returns the class (its place in b) of greatest score on x, of
// LSH keys keys, in block b, other than those of s.skip, as the index
// finds it; a class of zero vector scores 0. It returns −1 when b has no
// other class.
func (t *roundTrainer) blockBest(b *classBlock, s *searcher, xi []int32, xv []float32, keys []int) (int, float64) {
	best, score := -1, math.Inf(-1)
	better := func(k int, sc float64) {
		if sc > score || (sc == score && k < best) {
			best, score = k, sc
		}
	}
	if b.lsh != nil || b.graph != nil {
		// The index holds the non-zero vectors.
		var k, scored int
		var sc float64
		var ok bool
		if b.lsh != nil {
			k, sc, scored, ok = b.lsh.Search(xi, xv, keys, s.skip, &s.lsh)
		} else {
			k, sc, scored, ok = b.graph.Search(xi, xv, s.skip, &s.graph)
		}
		s.scored += int64(scored)
		s.searched++
		if ok {
			better(k, sc)
		}
	} else {
		for k := range b.vec.Len() {
			if !b.vec.IsZero(k) && !slices.Contains(s.skip, k) {
				better(k, b.vec.Dot(k, xi, xv))
			}
		}
	}
	if score < 0 || best < 0 {
		for k := b.zeroFrom; k < b.vec.Len(); k++ {
			if b.vec.IsZero(k) && !slices.Contains(s.skip, k) {
				better(k, 0)
				break
			}
		}
	}
	return best, score
}

// moved brings the block up to date with a change of class k's vector, of
// squared norm old before it and of projections dproj (for the LSH): its
// index, its sum of squared norms and its lowest zero vector.
func (b *classBlock) moved(k int, old float64, dproj []float64) {
	if b.lsh != nil {
		b.lsh.Shift(k, dproj)
	}
	if b.graph != nil {
		b.graph.Changed(k)
	}
	b.sq += b.vec.SquaredNorm(k) - old
	if b.vec.IsZero(k) {
		b.zeroFrom = min(b.zeroFrom, k)
	}
}

// computeKeys sets t.keys, once a run, for an LSH index: each rank
// computes the keys of its share of the training rows (train.RowShare), on
// its workers, and an all-gather gives every rank all of them. A row's keys
// depend on the row alone: every rank projected every row of every round
// before, work that more ranks did not share.
func (t *roundTrainer) computeKeys() error {
	if t.keys != nil || t.p.Index != "lsh" {
		return nil
	}
	nk, np := t.hasher.QueryKeyCount(t.p.Probes), t.hasher.Projections()
	lo, hi := train.RowShare(t.x.Rows, t.comm.Rank(), t.comm.Size())
	mine := make([]byte, 4*nk*(hi-lo))
	err := t.team.For(hi-lo, 64, func(w numa.Worker, a, b int) {
		s, proj := t.searchers.Get(w), make([]float64, np)
		for k := a; k < b; k++ {
			xi, xv := t.x.Row(lo + k)
			t.hasher.Project(xi, xv, proj)
			s.keys = t.hasher.QueryKeys(proj, t.p.Probes, s.keys)
			for e, key := range s.keys {
				binary.LittleEndian.PutUint32(mine[4*(k*nk+e):], uint32(key))
			}
		}
	})
	if err != nil {
		return err
	}
	var g train.AllGather // once a run: its buffer need not stay
	all, err := g.Exchange(t.comm, mine)
	if err != nil {
		return err
	}
	if len(all) != 4*nk*t.x.Rows {
		return fmt.Errorf("memoir: the rows' keys in %d bytes, want %d", len(all), 4*nk*t.x.Rows)
	}
	t.keys = make([]int32, nk*t.x.Rows)
	for e := range t.keys {
		t.keys[e] = int32(binary.LittleEndian.Uint32(all[4*e:]))
	}
	return nil
}

// keysOf returns training row i's LSH keys in s's scratch; none without an
// LSH index.
func (t *roundTrainer) keysOf(s *searcher, i int) []int {
	if t.keys == nil {
		return nil
	}
	nk := t.hasher.QueryKeyCount(t.p.Probes)
	s.keys = s.keys[:0]
	for _, key := range t.keys[i*nk : (i+1)*nk] {
		s.keys = append(s.keys, int(key))
	}
	return s.keys
}

// projectSteps sets, for an LSH index, t.proj at the place of each of the
// round's rows with a step on this rank's classes to the row's
// projections, on the team, for the index to follow its vectors' changes.
func (t *roundTrainer) projectSteps(rows []int32) error {
	if t.keys == nil {
		return nil
	}
	np := t.hasher.Projections()
	t.proj = slices.Grow(t.proj[:0], len(rows)*np)[:len(rows)*np]
	t.stepRows = t.stepRows[:0]
	for _, st := range t.steps { // in row order
		if t.blockOf[st.class] >= 0 && (len(t.stepRows) == 0 || t.stepRows[len(t.stepRows)-1] != st.q) {
			t.stepRows = append(t.stepRows, st.q)
		}
	}
	return t.team.For(len(t.stepRows), 1, func(_ numa.Worker, k, _ int) {
		q := int(t.stepRows[k])
		xi, xv := t.x.Row(int(rows[q]))
		t.hasher.Project(xi, xv, t.proj[q*np:(q+1)*np])
	})
}

// apply makes the round's steps on the owned classes, block by block on the
// rank's workers, each block's in row order.
func (t *roundTrainer) apply(rows []int32) error {
	if err := t.projectSteps(rows); err != nil {
		return err
	}
	np := t.hasher.Projections()
	return t.team.For(len(t.mine), 1, func(w numa.Worker, bi, _ int) {
		s := t.searchers.Get(w)
		b := t.mine[bi]
		for _, st := range t.steps {
			if t.blockOf[st.class] != int32(bi) {
				continue
			}
			k := int(t.slot[st.class])
			xi, xv := t.x.Row(int(rows[st.q]))
			old := b.vec.SquaredNorm(k)
			b.vec.Add(k, st.coef, xi, xv)
			if t.keys != nil { // an LSH index: see projectSteps
				proj := t.proj[int(st.q)*np : int(st.q+1)*np]
				for i, v := range proj {
					s.dproj[i] = st.coef * v
				}
			}
			if t.p.Regularizer == "l1" {
				t.pay(b, k, s)
			}
			b.moved(k, old, s.dproj)
		}
		for b.zeroFrom < b.vec.Len() && !b.vec.IsZero(b.zeroFrom) {
			b.zeroFrom++
		}
	})
}

// pay soft-thresholds class k of block b by the ℓ1 penalty it owes, adding
// the change of its projections to s.dproj (for the LSH).
func (t *roundTrainer) pay(b *classBlock, k int, s *searcher) (changed bool) {
	g := t.owed - b.paid[k]
	if g <= 0 {
		return false
	}
	b.paid[k] = t.owed
	s.di, s.dv = b.vec.Shrink(k, g, s.di[:0], s.dv[:0])
	if b.lsh != nil && len(s.di) > 0 {
		t.hasher.ProjectDense(s.di, s.dv, s.shrinkDP)
		for i, v := range s.shrinkDP {
			s.dproj[i] += v
		}
	}
	return len(s.di) > 0
}
