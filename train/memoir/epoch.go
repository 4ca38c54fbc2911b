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

// project applies the ℓ2 regulariser's projection of the weights,
// W ← min{1, 1/(√λ ‖W‖)} W, to the shared scale, ‖W‖² the sum of t.norms,
// the blocks' squared norms, in block order: the same for any number of
// ranks.
//
// A round's projection needs its norms, which only the blocks' owners
// know once they have applied its steps. Rather than by an all-reduce of
// their own, a collective more a round, they travel with the next round's
// reports (normEntries, takeNorms), and the projection is made there,
// before the steps are decided, where the scale is next used (projectDue
// until then). Where no round follows at once (an epoch's end, a
// checkpoint, the end of training), settleProjection makes it by an
// all-reduce.
func (t *roundTrainer) project() {
	sq := 0.0
	for _, v := range t.norms {
		sq += v
	}
	if norm := t.scale * math.Sqrt(sq); norm*math.Sqrt(t.p.Lambda) > 1 {
		t.scale /= norm * math.Sqrt(t.p.Lambda)
	}
	t.projectDue = false
}

// normRow is the row of the report entries that carry a block's squared
// norm (kind kindNorm, class the block's unit): outside every round's rows.
const normRow = -1

// normEntries returns an entry of each owned block's squared norm.
func (t *roundTrainer) normEntries() []byte {
	t.normMsg = t.normMsg[:0]
	for _, b := range t.mine {
		t.normMsg = train.AppendEntry(t.normMsg, train.RoundEntry{Row: normRow, Class: int32(b.unit), Kind: kindNorm, Score: b.sq})
	}
	return t.normMsg
}

// takeNorms sets t.norms to the blocks' squared norms that every rank
// sent with its reports (normEntries).
func (t *roundTrainer) takeNorms(reports []byte) error {
	t.norms = slices.Grow(t.norms[:0], len(t.blocks))[:len(t.blocks)]
	n := 0
	for k := 0; k+train.RoundEntryBytes <= len(reports); k += train.RoundEntryBytes {
		e := train.DecodeEntry(reports[k:])
		if e.Row != normRow {
			continue
		}
		if e.Kind != kindNorm || e.Class < 0 || int(e.Class) >= len(t.blocks) {
			return fmt.Errorf("memoir: a norm entry of kind %d and block %d of %d", e.Kind, e.Class, len(t.blocks))
		}
		t.norms[e.Class] = e.Score
		n++
	}
	if n != len(t.blocks) {
		return fmt.Errorf("memoir: %d block norms received, want %d", n, len(t.blocks))
	}
	return nil
}

// settleProjection makes the projection that waits (projectDue), if any,
// its norms summed by an all-reduce where each block's owner alone
// contributes.
func (t *roundTrainer) settleProjection() error {
	if !t.projectDue {
		return nil
	}
	t.norms = slices.Grow(t.norms[:0], len(t.blocks))[:len(t.blocks)]
	clear(t.norms)
	for _, b := range t.mine {
		t.norms[b.unit] = b.sq
	}
	if t.comm.Size() > 1 {
		if err := t.comm.AllreduceFloat64(t.norms, mpi.Sum); err != nil {
			return err
		}
	}
	t.project()
	return nil
}

// fold folds the shared scale into the vectors, on every rank at the same
// round, once it gets small.
func (t *roundTrainer) fold() {
	if t.scale >= 1.0/(1<<20) {
		return
	}
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

// endEpoch measures, on every rank alike, the recall of the index against
// exact search and, with --heldout, the held-out macro-F1, keeping the best
// epoch's vectors; it returns whether to stop.
func (t *roundTrainer) endEpoch() (bool, error) {
	if err := t.settleProjection(); err != nil {
		return false, err
	}
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
