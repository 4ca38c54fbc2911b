package memoir

import (
	"context"
	"fmt"
	"math"
	"slices"

	"xmc/numa"
	"xmc/train"
)

// Round runs one batch: every rank searches its blocks for each row's
// rival and scores the row's labels it owns; every rank receives every
// report, decides the same steps, and applies those of its own classes.
func (t *roundTrainer) Round(_ context.Context, r int, team *numa.Team) (bool, error) {
	t.team = team
	rows := t.order.Rows(r)
	np := t.hasher.Projections()
	t.proj = slices.Grow(t.proj[:0], len(rows)*np)[:len(rows)*np]
	if err := t.search(rows); err != nil {
		return false, err
	}
	all, err := t.gather.Exchange(t.comm, t.msg)
	if err != nil {
		return false, err
	}
	t.rounds++
	t.reportBytes += int64(len(all))
	if t.entries, err = train.DecodeEntries(all, t.entries); err != nil {
		return false, fmt.Errorf("memoir: %w", err)
	}
	eta := t.eta(r)
	shrink := 1.0
	if t.p.Regularizer == "l2" {
		shrink = 1 - t.p.Lambda*eta
	}
	if t.order.LastOfEpoch(r - 1) {
		t.violations = 0
	}
	// The steps, on v: W = s·v gains ±η x once s has shrunk.
	coef := eta / (t.scale * shrink)
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
	if err != nil {
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
		if err := t.project(); err != nil {
			return false, err
		}
	}
	if !t.order.LastOfEpoch(r) {
		return false, nil
	}
	return t.endEpoch()
}

// search fills t.msg with this rank's entries for the rows, in row order,
// and t.proj with the rows' projections; the rank's workers take pieces of
// the batch.
func (t *roundTrainer) search(rows []int32) error {
	var err error
	t.msg, err = t.batch.Run(t.team, &t.x, rows,
		func(w numa.Worker) *train.RowReports { return &t.searchers.Get(w).RowReports },
		func(w numa.Worker, q int, _ *train.RowReports) { t.report(t.searchers.Get(w), int32(q), rows[q]) }, t.msg)
	return err
}

// report appends to s.msg this rank's entries for row i, the q-th of the
// batch: the scores of the row's labels it owns, and its rival, the best
// of its classes that is not a label of the row. It only reads the blocks.
func (t *roundTrainer) report(s *searcher, q, i int32) {
	labels, _ := t.y.Row(int(i))
	xi, xv := t.x.Row(int(i))
	np := t.hasher.Projections()
	proj := t.proj[int(q)*np : int(q+1)*np]
	t.hasher.Project(xi, xv, proj)
	s.keys = t.hasher.QueryKeys(proj, t.p.Probes, s.keys)
	if len(labels) == 0 || len(xi) == 0 {
		return // nothing to learn from the row
	}
	for _, l := range labels {
		if b := t.blockOf[l]; b >= 0 {
			s.Msg = train.AppendEntry(s.Msg, train.RoundEntry{Row: q, Class: l, Kind: kindLabel, Score: t.mine[b].vec.Dot(int(t.slot[l]), xi, xv)})
		}
	}
	rival, rs := int32(-1), math.Inf(-1)
	for bi, b := range t.mine {
		s.skip = s.skip[:0]
		for _, l := range labels {
			if t.blockOf[l] == int32(bi) {
				s.skip = append(s.skip, int(t.slot[l]))
			}
		}
		k, sc := t.blockBest(b, s, xi, xv)
		if k >= 0 && (sc > rs || (sc == rs && b.classes[k] < rival)) {
			rival, rs = b.classes[k], sc
		}
	}
	if rival >= 0 {
		s.Msg = train.AppendEntry(s.Msg, train.RoundEntry{Row: q, Class: rival, Kind: kindRival, Score: rs})
	}
}

// blockBest returns the class (its place in b) of greatest score on x in
// block b, other than those of s.skip, as the index finds it; a class of
// zero vector scores 0. It returns −1 when b has no other class.
func (t *roundTrainer) blockBest(b *classBlock, s *searcher, xi []int32, xv []float32) (int, float64) {
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
			k, sc, scored, ok = b.lsh.Search(xi, xv, s.keys, s.skip, &s.lsh)
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

// apply makes the round's steps on the owned classes, block by block on the
// rank's workers, each block's in row order.
func (t *roundTrainer) apply(rows []int32) error {
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
			proj := t.proj[int(st.q)*np : int(st.q+1)*np]
			for i, v := range proj {
				s.dproj[i] = st.coef * v
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
