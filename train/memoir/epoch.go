package memoir

import (
	"fmt"
	"math"
	"slices"

	"xmc/metrics"
	"xmc/mips"
	"xmc/model"
	"xmc/mpi"
	"xmc/numa"
	"xmc/train"
)

// settle makes every owned class pay the ℓ1 penalty it owes, on the rank's
// workers, so that the weights are those of the objective at an epoch's
// end.
func (t *roundTrainer) settle() error {
	return t.team.For(len(t.mine), 1, func(w numa.Worker, bi, _ int) {
		s := t.searchers.Get(w)
		b := t.mine[bi]
		for k := range b.classes {
			old := b.vec.SquaredNorm(k)
			clear(s.dproj)
			if t.pay(b, k, s) {
				b.moved(k, old, s.dproj)
			}
		}
	})
}

// project applies Pegasos's projection W ← min{1, 1/(√λ ‖W‖)} W to the
// shared scale: ‖W‖² sums the blocks' squared norms, in block order, from
// an all-reduce where each block's owner alone contributes (so the sum is
// the same for any number of ranks). When the scale gets small, every rank
// folds it into its vectors at the same round.
func (t *roundTrainer) project() error {
	t.norms = slices.Grow(t.norms[:0], len(t.blocks))[:len(t.blocks)]
	clear(t.norms)
	for _, b := range t.mine {
		t.norms[b.unit] = b.sq
	}
	if err := t.comm.AllreduceFloat64(t.norms, mpi.Sum); err != nil {
		return err
	}
	sq := 0.0
	for _, v := range t.norms {
		sq += v
	}
	if norm := t.scale * math.Sqrt(sq); norm*math.Sqrt(t.p.Lambda) > 1 {
		t.scale /= norm * math.Sqrt(t.p.Lambda)
	}
	if t.scale < 1.0/(1<<20) {
		for _, b := range t.mine {
			b.vec.Scale(t.scale)
			if b.lsh != nil {
				b.lsh.Scale(t.scale)
			}
			if b.graph != nil {
				b.graph.Scale(t.scale)
			}
			b.sq = 0
			for k := range b.vec.Len() {
				b.sq += b.vec.SquaredNorm(k)
			}
		}
		t.scale = 1
	}
	return nil
}

// endEpoch measures, on every rank alike, the recall of the index against
// exact search and, with --heldout, the held-out macro-F1, keeping the best
// epoch's vectors; it returns whether to stop.
func (t *roundTrainer) endEpoch() (bool, error) {
	t.epochs++
	if t.comm.Size() > 1 { // each rank counted the rows it decided
		v := []int64{int64(t.violations)}
		if err := t.comm.AllreduceInt64(v, mpi.Sum); err != nil {
			return false, err
		}
		t.violations = int(v[0])
	}
	if t.p.Regularizer == "l1" {
		if err := t.settle(); err != nil {
			return false, err
		}
	}
	var exact *mips.Inverted // built only for what needs it
	if t.p.Index != "exact" || t.held.Rows > 0 {
		exact = t.snapshot()
	}
	recall := -1.0
	if t.p.Index != "exact" {
		var err error
		if recall, err = t.recall(exact); err != nil {
			return false, err
		}
	}
	attrs := []any{"epoch", t.epochs, "violating_rows", t.violations, "scale", t.scale}
	if recall >= 0 {
		attrs = append(attrs, "index_recall@1", fmt.Sprintf("%.3f", recall))
		t.recalls = append(t.recalls, epochRecall{t.epochs, recall})
	}
	stop := false
	if t.held.Rows > 0 {
		f1, metric, err := t.heldoutScore(exact)
		if err != nil {
			return false, err
		}
		if f1 > t.bestF1 {
			t.bestF1, t.sinceBest, t.bestScale = f1, 0, t.scale
			for _, b := range t.mine {
				b.best = b.vec.Clone()
			}
		} else {
			t.sinceBest++
		}
		attrs = append(attrs, "heldout_"+metric, fmt.Sprintf("%.2f", f1), "best", fmt.Sprintf("%.2f", t.bestF1), "epochs_without_gain", t.sinceBest)
		stop = t.sinceBest >= t.p.Patience
	}
	if t.log != nil {
		t.log.Info("memoir epoch", attrs...)
	}
	return stop, nil
}

// snapshot indexes the owned vectors for exact search.
func (t *roundTrainer) snapshot() *mips.Inverted {
	sets, ids := make([]*mips.Vectors, len(t.mine)), make([][]int32, len(t.mine))
	for q, b := range t.mine {
		sets[q], ids[q] = b.vec, b.classes
	}
	return mips.NewInverted(t.x.Cols, sets, ids, 1)
}

// recallRows is the most training rows the recall of an epoch is measured
// on.
const recallRows = 1000

// recall returns the fraction of up to recallRows training rows (spread
// over the data) whose best class by the indexes is the exact best, or
// scores as much: each rank reports both for its blocks, and the bests of
// all ranks are compared.
func (t *roundTrainer) recall(exact *mips.Inverted) (float64, error) {
	n := min(recallRows, t.x.Rows)
	step := t.x.Rows / n
	t.msg = slices.Grow(t.msg[:0], 2*n*train.RoundEntryBytes)[:2*n*train.RoundEntryBytes]
	err := t.team.For(n, 1, func(w numa.Worker, q, _ int) {
		s := t.searchers.Get(w)
		xi, xv := t.x.Row(q * step)
		keys := t.keysOf(s, q*step)
		s.skip = s.skip[:0]
		approx, as := int32(-1), math.Inf(-1)
		for _, b := range t.mine {
			if k, sc := t.blockBest(b, s, xi, xv, keys); k >= 0 && (sc > as || (sc == as && b.classes[k] < approx)) {
				approx, as = b.classes[k], sc
			}
		}
		ex, es := exact.Best(xi, xv, &s.exact)
		train.AppendEntry(t.msg[2*q*train.RoundEntryBytes:][:0], train.RoundEntry{Row: int32(q), Class: approx, Kind: 0, Score: as})
		train.AppendEntry(t.msg[(2*q+1)*train.RoundEntryBytes:][:0], train.RoundEntry{Row: int32(q), Class: ex, Kind: 1, Score: es})
	})
	if err != nil {
		return 0, err
	}
	if err := t.shareRows(n); err != nil {
		return 0, err
	}
	hits, err := train.CountRows(t.comm, t.entries, func(_ int32, entries []train.RoundEntry) bool {
		var best [2]train.RoundEntry
		best[0].Class, best[1].Class = -1, -1
		best[0].Score, best[1].Score = math.Inf(-1), math.Inf(-1)
		for _, e := range entries {
			if train.Outranks(e, best[e.Kind]) {
				best[e.Kind] = e
			}
		}
		return best[0].Class == best[1].Class || best[0].Score >= best[1].Score
	})
	return float64(hits) / float64(n), err
}

// shareRows sets t.entries to every rank's entries in t.msg of this rank's
// share of n rows (train.RowShare), ordered by row, then rank: the rows of
// an epoch's end whose best classes this rank takes.
func (t *roundTrainer) shareRows(n int) error {
	mine, err := t.toDeciders.Exchange(t.comm, t.msg, n)
	if err != nil {
		return fmt.Errorf("memoir: %w", err)
	}
	lo, hi := train.RowShare(n, t.comm.Rank(), t.comm.Size())
	if t.entries, err = train.DecodeEntriesOf(mine, lo, hi, t.entries); err != nil {
		return fmt.Errorf("memoir: %w", err)
	}
	return nil
}

// heldoutScore returns the macro-F1 (metrics.Evaluate's) of the exact best
// class of each held-out row, or its P@1 if a row has several labels, and
// the metric's name: each rank reports its best, and the best of all ranks
// is the prediction.
func (t *roundTrainer) heldoutScore(exact *mips.Inverted) (float64, string, error) {
	n := t.held.Rows
	t.msg = slices.Grow(t.msg[:0], n*train.RoundEntryBytes)[:n*train.RoundEntryBytes]
	err := t.team.For(n, 1, func(w numa.Worker, i, _ int) {
		s := t.searchers.Get(w)
		xi, xv := t.held.Row(i)
		c, sc := exact.Best(xi, xv, &s.exact)
		train.AppendEntry(t.msg[i*train.RoundEntryBytes:][:0], train.RoundEntry{Row: int32(i), Class: c, Score: sc})
	})
	if err != nil {
		return 0, "", err
	}
	if err := t.shareRows(n); err != nil {
		return 0, "", err
	}
	// Each rank's best of its rows, then every rank's, in row order.
	lo, hi := train.RowShare(n, t.comm.Rank(), t.comm.Size())
	bests := slices.Grow(t.stepMsg[:0], (hi-lo)*train.RoundEntryBytes)
	err = train.ForEachRow(t.entries, func(q int32, entries []train.RoundEntry) error {
		best := train.RoundEntry{Row: q, Class: -1, Score: math.Inf(-1)}
		for _, e := range entries {
			if train.Outranks(e, best) {
				best = e
			}
		}
		bests = train.AppendEntry(bests, best)
		return nil
	})
	if err != nil {
		return 0, "", err
	}
	t.stepMsg = bests
	all, err := t.gather.Exchange(t.comm, bests)
	if err != nil {
		return 0, "", err
	}
	if t.entries, err = train.DecodeEntries(all, t.entries); err != nil {
		return 0, "", fmt.Errorf("memoir: %w", err)
	}
	pred := make([][]model.Scored, n)
	for _, e := range t.entries {
		if e.Row < 0 || int(e.Row) >= n {
			return 0, "", fmt.Errorf("memoir: a held-out prediction of row %d of %d", e.Row, n)
		}
		if e.Class >= 0 {
			pred[e.Row] = []model.Scored{{Label: e.Class, Score: float32(e.Score)}}
		}
	}
	ev, err := metrics.NewEvaluator(t.heldY.Cols, nil, []int{1})
	if err != nil {
		return 0, "", err
	}
	if err := ev.Add(&t.heldY, pred); err != nil {
		return 0, "", err
	}
	m, err := ev.Metrics()
	if err != nil {
		return 0, "", err
	}
	if f1, ok := m[metrics.MetricMacroF1]; ok {
		return f1, metrics.MetricMacroF1, nil
	}
	return m["P@1"], "P@1", nil
}
