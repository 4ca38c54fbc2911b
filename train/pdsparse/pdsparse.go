package pdsparse

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"

	"xmc/data"
	"xmc/model/linear"
	"xmc/mpi"
	"xmc/numa"
	"xmc/runner"
	"xmc/train"
	"xmc/train/internal/prox"
)

// Params are the hyper-parameters of PD-Sparse (Yen, Huang, Zhong,
// Ravikumar and Dhillon, ICML 2016): one weight vector w_k per class,
// minimising
//
//	½ Σ_k ‖w_k‖² + λ Σ_k ‖w_k‖₁ + C Σ_i max_{k_n ∉ y_i, k_p ∈ y_i} (1 + w_{k_n}·x_i − w_{k_p}·x_i)₊
//
// (the Crammer–Singer hinge for one label per row, the separation ranking
// loss for several) by block-coordinate steps on the dual: for each row,
// its most violating negative classes join its active set and the row's
// dual variables are solved exactly over that set (biSimplex), while W is
// kept as the soft-thresholded dual sum w_k = prox_λ(Σ_i α_ik x_i), so
// that W and α both stay sparse.
type Params struct {
	// Cost is C and Lambda is λ.
	Cost   float64 `json:"cost"`
	Lambda float64 `json:"lambda"`
	// Epochs is the number of passes over the rows.
	Epochs int `json:"epochs"`
	// PostEpochs is the number of passes of the post-solve that follows
	// them, as the reference program's: the rows' active sets and the
	// support of W are frozen, λ is dropped (w_k becomes its dual sum on
	// the support) and the rows' subproblems are solved again.
	PostEpochs int `json:"post_epochs"`
	// BatchSize is the rows of a round: the ranks search their classes
	// for the rows of a batch against W as it was at the round's start,
	// then apply every row's step in row order.
	BatchSize int `json:"batch_size"`
	// ClassesPerUnit is the classes of a unit, a block of classes whose
	// weights one rank owns (0: see classesPerUnit). The weights do
	// not depend on it: only how they are dealt to ranks.
	ClassesPerUnit int `json:"classes_per_unit"`
	// MaxSelect is the number of negative classes a row's search adds to
	// its active set at most (0: the mean number of labels per row).
	MaxSelect int `json:"max_select"`
	// Prune drops trained weights of smaller magnitude from the model.
	Prune float64 `json:"prune"`
	// EarlyStop holds rows out to stop on their accuracy (of the top
	// class): the model is the best epoch's.
	train.EarlyStop
	// Seed orders the rows of every epoch and the classes tried first.
	Seed uint64 `json:"seed"`
	linear.Preprocess
}

// DefaultParams returns the defaults: the reference program's
// λ = 0.1 with C = 7, 10 epochs, batches of 64 rows (16 and 256 gave
// about the same accuracy on wordnet-mc, but with 256 Bibtex's P@1 fell
// from 60.28 to 24.17), rows scaled to unit norm, no bias (the
// Crammer–Singer model has none). C = 7 gave a higher P@1 than C = 10 on all
// five shared sets (seed 1: Bibtex 60.28 against 59.60, Delicious 43.52
// against 41.73, debian-tags 87.25 against 86.85, wordnet-hyper 86.43
// against 86.22, wordnet-mc 34.41 against 34.26; Bibtex over seeds 1-3
// 60.13 against 59.35). Smaller C falls off a cliff on Delicious (19
// labels a row; its cause not studied): P@1 22-24 at C = 3 and 4, and at
// C = 5 45.3 with seed 1 but 20.5 with seed 2 (C = 7 gave 40.7-43.5 over
// seeds 1-4); C = 1, the reference's, gave 20.8 there and 82.4 on
// debian-tags.
//
// No post-solve by default: with C = 10, 3 passes of it lowered Bibtex P@1
// from 59.60 to 58.89 (10 passes: 59.20), Delicious from 41.73 to 40.41
// and wordnet-mc accuracy from 34.26 to 33.95.
func DefaultParams() Params {
	return Params{Cost: 7, Lambda: 0.1, Epochs: 10, BatchSize: 64, ClassesPerUnit: 0, EarlyStop: train.EarlyStop{Patience: 3},
		Preprocess: linear.Preprocess{Normalize: true}}
}

// Validate reports the first parameter out of its range.
func (p Params) Validate() error {
	switch {
	case !(p.Cost > 0) || math.IsInf(p.Cost, 0):
		return fmt.Errorf("--cost must be a positive number, got %v", p.Cost)
	case !(p.Lambda >= 0) || math.IsInf(p.Lambda, 0):
		return fmt.Errorf("--lambda must be 0 or more, got %v", p.Lambda)
	case p.Epochs < 1:
		return fmt.Errorf("--epochs must be at least 1, got %d", p.Epochs)
	case p.PostEpochs < 0:
		return fmt.Errorf("--post-epochs must be 0 or more, got %d", p.PostEpochs)
	case p.BatchSize < 1:
		return fmt.Errorf("--batch-size must be at least 1, got %d", p.BatchSize)
	case p.ClassesPerUnit < 0:
		return fmt.Errorf("--classes-per-unit must be at least 0, got %d", p.ClassesPerUnit)
	case p.MaxSelect < 0:
		return fmt.Errorf("--max-select must be 0 (automatic) or more, got %d", p.MaxSelect)
	case !(p.Prune >= 0) || math.IsInf(p.Prune, 0):
		return fmt.Errorf("--prune must be 0 or more, got %v", p.Prune)
	}
	return p.EarlyStop.Validate()
}

// Trainer is the Trainer of --algo pdsparse.
type Trainer struct{ p Params }

func New() train.Trainer { return &Trainer{p: DefaultParams()} }

// Flags registers PD-Sparse's hyper-parameters.
func (a *Trainer) Flags(fs *flag.FlagSet) {
	p := &a.p
	fs.Float64Var(&p.Cost, "cost", p.Cost, "misclassification cost C (7: better than 10 on all five shared sets; 5 and less lost half of Delicious's P@1)")
	fs.Float64Var(&p.Lambda, "lambda", p.Lambda, "weight λ of the L1 regulariser")
	fs.IntVar(&p.Epochs, "epochs", p.Epochs, "passes over the rows")
	fs.IntVar(&p.PostEpochs, "post-epochs", p.PostEpochs, "passes of the reference program's post-solve after them: active sets and the support of W frozen, without the L1 term (lowered accuracy on the shared sets tried)")
	fs.IntVar(&p.BatchSize, "batch-size", p.BatchSize, "rows per round (searched against the weights of the round's start)")
	fs.IntVar(&p.ClassesPerUnit, "classes-per-unit", p.ClassesPerUnit, "classes per unit (a block of classes one rank owns; 0: classes/64, at most 256, so that small class sets spread over 64 ranks; the weights do not depend on it)")
	fs.IntVar(&p.MaxSelect, "max-select", p.MaxSelect, "negative classes a row's search adds at most (0: the mean labels per row)")
	fs.Float64Var(&p.Prune, "prune", p.Prune, "drop trained weights of smaller magnitude")
	p.EarlyStop.Flags(fs, "accuracy")
	fs.BoolVar(&p.Normalize, "normalize", p.Normalize, "scale rows to unit L2 norm, in training and prediction")
}

// Prepare checks the parameters and builds the round trainer. Every rank
// holds the rows and the rows' active sets; it holds the weights of the
// classes it owns only.
func (a *Trainer) Prepare(env train.Env, ds *data.Dataset) (*train.Work, error) {
	p := a.p
	p.Seed = env.Seed
	p.Bias = false
	if err := p.Validate(); err != nil {
		return nil, err
	}
	kept, held, err := p.EarlyStop.Rows(env, ds, p.Seed)
	if err != nil {
		return nil, err
	}
	t, err := newRoundTrainer(p, kept, env.Comm, env.Pool)
	if err != nil {
		return nil, err
	}
	if held != nil {
		t.held, t.heldY, t.log = p.Apply(&held.X), held.Y, env.Log
		env.Log.Info("pdsparse holds rows out to stop early", "heldout_rows", held.N(), "training_rows", kept.N(), "patience", p.Patience)
	}
	if err := train.LogUntrained(env.Log, data.LabelCounts(&kept.Y)); err != nil {
		return nil, err
	}
	return &train.Work{Kind: linear.Kind{}, Params: t.p, Units: len(t.blocks), Rounds: t,
		MaxRounds: (p.Epochs + p.PostEpochs) * t.order.Batches, RoundName: "round",
		Done: func(log *slog.Logger) {
			if t.held.Rows > 0 {
				log.Info("pdsparse early stopping", "best_heldout_accuracy", fmt.Sprintf("%.2f", t.bestAcc))
			}
			log.Info("pdsparse", "epochs", t.epochs, "mean_active_classes", fmt.Sprintf("%.2f", t.meanActive()),
				"weights_owned", t.nnz(), "max_select", t.p.MaxSelect,
				// Each round rank 0 gathers, and broadcasts to every
				// rank, 20 bytes per row for each active class and at
				// most 2 × max-select candidates per rank.
				"report_bytes_per_round", t.reportBytes/int64(max(t.rounds, 1)),
				"report_bytes_bound", int64(t.p.BatchSize)*train.RoundEntryBytes*int64(math.Round(t.meanActive())+float64(2*t.p.MaxSelect*t.comm.Size())))
		}}, nil
}

// dualVar is a class of a row's active set and its dual variable:
// α ≥ 0 for the row's labels, α ≤ 0 for the others.
type dualVar struct {
	class int32
	alpha float64
}

// weightPlace is the weight of a class (local id) on a feature: its dual sum
// v, whose weight is prox_λ(v) (roundTrainer.weight), and, where the weights
// are kept in lists rather than dense, its index in the feature's list of
// non-zero weights (-1: not listed). The lists do not keep the weight in
// the place: a place of 16 bytes rather than 24 let more of a step's
// places stay in cache.
type weightPlace struct {
	v      float64
	class  int32
	listed int32
}

// listedWeight is a non-zero weight of a feature as the search reads it: the
// class (local id), its place in the feature's lists and the weight.
type listedWeight struct {
	class, place int32
	w            float64
}

// roundTrainer is the runner.RoundTrainer of Params.
type roundTrainer struct {
	p      Params
	comm   mpi.Comm
	x, y   data.CSR  // the preprocessed rows and their labels
	sq     []float64 // ‖x_i‖²
	blocks [][]int32
	order  *train.EpochBatches // the rows of every round
	// fill is the classes with a positive in a seeded random order: a
	// row whose search finds fewer violators than MaxSelect tries the
	// first classes of it that score 0, as the reference program does.
	fill    []int32
	fillPos []int32 // per class, its place in fill (-1: none)

	// The owned classes' weights, by feature: places[j] holds feature j's
	// (class, dual sum, weight) places and at gives the place of class c
	// in it. nz[j] lists the non-zero weights, in no order, with their
	// class and place, side by side for the search, which reads nothing
	// else.
	owned  []int
	local  []int32 // per class: its local id on this rank, or -1
	global []int32 // per local id: its class
	places [][]weightPlace
	nz     [][]listedWeight
	at     placeTable
	// dense, when the rank's features × classes are at most
	// denseWeightLimit (denseWeightLimit but in tests), holds the weights
	// in place of nz and at: every pair has a place, at its class.
	dense            *denseWeights
	denseWeightLimit int
	// denseLimit is the most pairs of a dense place table (see
	// newPlaceTable).
	denseLimit int
	// post is whether the post-solve runs (after Epochs epochs); off marks,
	// per feature, the places outside the support of W when it began.
	post bool
	off  [][]bool
	// ownFill is the owned classes in the order of fill, ownSorted in
	// increasing order.
	ownFill, ownSorted []int32

	// The shared state, the same on every rank.
	act    [][]dualVar // per row
	epochs int
	// bestAcc is the best held-out accuracy so far (−1 before the first),
	// sinceBest the epochs since it improved.
	bestAcc   float64
	sinceBest int
	// bestWt is, with --heldout, the weights of the epoch of best
	// held-out accuracy, by feature and place as places (shorter lists:
	// zeros after); the model is made of them.
	bestWt [][]float64
	// rounds and reportBytes count this run's rounds and the bytes of the
	// reports every rank received, for the log.
	rounds      int
	reportBytes int64

	// The held-out rows (none without --heldout), preprocessed, and their
	// labels.
	held, heldY data.CSR
	log         *slog.Logger

	// Scratch.
	pool      *numa.Pool
	searchers *numa.PerWorker[*searcher]
	batch     train.BatchReports
	msg       []byte
	gather    train.AllGather
	entries   []train.RoundEntry
	steppers  *numa.PerWorker[*stepper]
	rowSteps  []rowStep
	// shards splits the features into one range per worker, of about
	// equal non-zeros: a worker applies the round's steps to the weights
	// of its range of features (shards[s] to shards[s+1]), in a round of
	// at least parallelAdds additions (parallelStepAdds but in tests).
	shards       []int32
	parallelAdds int
}

// stepper is a worker's memory for the steps of a round's rows: its
// scratch for their subproblems, and the moves they found.
type stepper struct {
	add, fill          []train.RoundEntry
	scores, b, c, x, y []float64
	at                 []int32
	simplex            simplexScratch
	moves              []dualMove
	round              int // the round moves belongs to
}

// dualMove is a step of a row's dual variable for an owned class: d added to
// α for local class c.
type dualMove struct {
	c int32
	d float64
}

// rowStep is a row of the round (the q-th of its batch): its entries,
// t.entries[lo:hi], and the moves its step found, moves[mlo:mhi] of
// stepper st, or the error it met.
type rowStep struct {
	q, lo, hi int
	st        *stepper
	mlo, mhi  int
	err       error
}

// classesPerUnit is the default classes of a unit for l classes: enough
// units (64) that a small class set spreads over the ranks (Bibtex's 159
// classes made one unit of 256, and one of 2 ranks did all the work: 5.5 s
// against 3.8 s with units of 32), and at most 256 classes a unit, the
// earlier default (on wordnet-mc, units of 32 peaked at 408 MiB against
// 379 with units of 256, in one interleaved pair of runs).
func classesPerUnit(l int) int { return min(256, max(1, (l+63)/64)) }

func newRoundTrainer(p Params, ds *data.Dataset, comm mpi.Comm, pool *numa.Pool) (*roundTrainer, error) {
	if ds.N() == 0 {
		return nil, errors.New("pdsparse: no training rows")
	}
	t := &roundTrainer{p: p, comm: comm, pool: pool, x: p.Apply(&ds.X), y: ds.Y.Clone(), denseLimit: placeDenseLimit,
		denseWeightLimit: denseWeightLimit, parallelAdds: parallelStepAdds}
	t.sq = make([]float64, t.x.Rows)
	for i := range t.x.Rows {
		_, val := t.x.Row(i)
		for _, v := range val {
			t.sq[i] += float64(v) * float64(v)
		}
	}
	counts := data.LabelCounts(&t.y)
	if t.p.MaxSelect == 0 {
		t.p.MaxSelect = max(1, int(math.Round(float64(t.y.NNZ())/float64(t.y.Rows))))
	}
	if t.p.ClassesPerUnit == 0 {
		t.p.ClassesPerUnit = classesPerUnit(len(counts))
	}
	t.blocks = train.LabelBlocks(counts, t.p.ClassesPerUnit)
	t.order = train.NewEpochBatches(t.x.Rows, p.BatchSize, p.Seed)
	for l, c := range counts {
		if c > 0 {
			t.fill = append(t.fill, int32(l))
		}
	}
	rng := rand.New(rand.NewPCG(data.SplitMix64(p.Seed^0x5bd1e995), 7))
	rng.Shuffle(len(t.fill), func(i, j int) { t.fill[i], t.fill[j] = t.fill[j], t.fill[i] })
	t.fillPos = make([]int32, t.y.Cols)
	for l := range t.fillPos {
		t.fillPos[l] = -1
	}
	for q, l := range t.fill {
		t.fillPos[l] = int32(q)
	}
	return t, nil
}

// Start sets up the owned classes and the active sets, fresh or from their
// saved state.
func (t *roundTrainer) Start(units []int, _ int, state [][]byte, shared []byte) error {
	t.owned = units
	t.local = make([]int32, t.y.Cols)
	for l := range t.local {
		t.local[l] = -1
	}
	var classes []int32
	for _, u := range units {
		for _, l := range t.blocks[u] {
			t.local[l] = int32(len(classes))
			classes = append(classes, l)
		}
	}
	t.global = classes
	t.ownSorted = slices.Sorted(slices.Values(classes))
	t.ownFill = t.ownFill[:0]
	for _, l := range t.fill {
		if t.local[l] >= 0 {
			t.ownFill = append(t.ownFill, l)
		}
	}
	t.places = make([][]weightPlace, t.x.Cols)
	t.nz, t.at, t.dense = nil, placeTable{}, nil
	if k := len(classes); t.x.Cols*k <= t.denseWeightLimit {
		// Every pair has its place, at its class.
		t.dense = newDenseWeights(t.x.Cols, k)
		all := make([]weightPlace, t.x.Cols*k)
		for j := range t.places {
			t.places[j] = all[j*k : (j+1)*k : (j+1)*k]
			for c := range t.places[j] {
				t.places[j][c] = weightPlace{class: int32(c), listed: -1}
			}
		}
	} else {
		t.nz = make([][]listedWeight, t.x.Cols)
		t.at = newPlaceTable(t.x.Cols, k, t.denseLimit)
	}
	t.searchers = numa.NewPerWorker(t.pool, func(numa.Worker) *searcher { return newSearcher(len(classes)) })
	t.steppers = numa.NewPerWorker(t.pool, func(numa.Worker) *stepper { return &stepper{round: -1} })
	t.shards = featureShards(&t.x, len(t.pool.Workers()))
	t.act = make([][]dualVar, t.x.Rows)
	t.epochs, t.bestAcc, t.sinceBest, t.bestWt, t.post, t.off = 0, -1, 0, nil, false, nil
	for i := range t.act {
		labels, _ := t.y.Row(i)
		for _, l := range labels {
			t.act[i] = append(t.act[i], dualVar{class: l})
		}
	}
	for q, u := range units {
		if state == nil {
			break
		}
		b := state[q]
		if len(b)%16 != 0 {
			return fmt.Errorf("unit %d: state of %d bytes, not whole (feature, class, v) records", u, len(b))
		}
		for ; len(b) > 0; b = b[16:] {
			fj, l := binary.LittleEndian.Uint32(b), int32(binary.LittleEndian.Uint32(b[4:]))
			j := int32(fj &^ bestRecord)
			v := math.Float64frombits(binary.LittleEndian.Uint64(b[8:]))
			if j < 0 || int(j) >= t.x.Cols || l < 0 || int(l) >= t.y.Cols || t.local[l] < 0 {
				return fmt.Errorf("unit %d: state names feature %d and class %d", u, j, l)
			}
			if fj&bestRecord == 0 {
				t.add(j, t.local[l], v)
				continue
			}
			// A weight of the best epoch's model: its place exists, as
			// the record of its dual sum comes first.
			e := t.placeOf(j, t.local[l])
			if e < 0 {
				return fmt.Errorf("unit %d: best weight of feature %d and class %d without its dual sum", u, j, l)
			}
			if t.bestWt == nil {
				t.bestWt = make([][]float64, t.x.Cols)
			}
			if len(t.bestWt[j]) <= int(e) {
				t.bestWt[j] = append(t.bestWt[j], make([]float64, int(e)+1-len(t.bestWt[j]))...)
			}
			t.bestWt[j][e] = v
		}
	}
	if shared != nil {
		if err := t.loadShared(shared); err != nil {
			return err
		}
		if t.epochs >= t.p.Epochs {
			t.startPost(true)
		}
	}
	return nil
}

// add adds v to the dual sum of local class c on feature j.
func (t *roundTrainer) add(j, c int32, v float64) {
	t.addAt(j, c, t.placeOf(j, c), v)
}

// placeOf returns the place of local class c in feature j's places: c
// itself with dense weights, else the table's entry, or -1 if it has none.
func (t *roundTrainer) placeOf(j, c int32) int32 {
	if t.dense != nil {
		return c
	}
	if e, ok := t.at.get(j, c); ok {
		return e
	}
	return -1
}

// addAt is add with the place e of the pair (-1: none yet) looked up.
func (t *roundTrainer) addAt(j, c, e int32, v float64) {
	if t.post && (e < 0 || t.off[j][e]) {
		return // outside the support the post-solve keeps
	}
	if e < 0 {
		e = int32(len(t.places[j]))
		t.at.put(j, c, e)
		t.places[j] = append(t.places[j], weightPlace{class: c, listed: -1})
	}
	p := &t.places[j][e]
	p.v += v
	w := t.weight(p)
	if t.dense != nil {
		t.dense.set(j, c, w)
		return
	}
	switch k := p.listed; {
	case w != 0 && k >= 0:
		t.nz[j][k].w = w
	case w != 0:
		p.listed = int32(len(t.nz[j]))
		t.nz[j] = append(t.nz[j], listedWeight{class: c, place: e, w: w})
	case k >= 0:
		// Zero: out of the list, whose last entry takes its slot.
		list := t.nz[j]
		last := list[len(list)-1]
		list[k] = last
		t.places[j][last.place].listed = k
		t.nz[j] = list[:len(list)-1]
		p.listed = -1
	}
}

// weight returns the weight of place p: prox_λ(v), or v in the post-solve,
// which drops λ.
func (t *roundTrainer) weight(p *weightPlace) float64 {
	if t.post {
		return p.v
	}
	return prox.SoftThreshold(p.v, t.p.Lambda)
}

// relist remakes feature j's list of non-zero weights.
func (t *roundTrainer) relist(j int32) {
	if t.dense != nil {
		for c := range t.places[j] {
			t.dense.set(j, int32(c), t.weight(&t.places[j][c]))
		}
		return
	}
	kept := t.nz[j][:0]
	for e := range t.places[j] {
		p := &t.places[j][e]
		p.listed = -1
		if w := t.weight(p); w != 0 {
			p.listed = int32(len(kept))
			kept = append(kept, listedWeight{class: p.class, place: int32(e), w: w})
		}
	}
	t.nz[j] = kept
}

// startPost begins the post-solve: places of zero weight leave the support
// (their dual sums are dropped) and the others' weights become their dual
// sums, as the reference program's PostSolve sets v = w ± λ. Resuming a
// post-solve from a checkpoint, whose records are the support's dual sums,
// the support is the places of non-zero dual sum (one that is exactly zero
// leaves it: a difference of measure zero).
func (t *roundTrainer) startPost(resumed bool) {
	t.off = make([][]bool, len(t.places))
	for j := range t.places {
		t.off[j] = make([]bool, len(t.places[j]))
		for e := range t.places[j] {
			p := &t.places[j][e]
			if (resumed && p.v == 0) || (!resumed && t.weight(p) == 0) {
				t.off[j][e], p.v = true, 0
			}
		}
	}
	t.post = true
	for j := range t.places {
		// The weights changed under the lists: remake them.
		t.relist(int32(j))
	}
}

// Kinds of the entries a rank reports for a row of the batch.
const (
	kindScore     = iota // the score of an active class
	kindViolator         // a class outside the active set, of positive score
	kindUntouched        // a class outside the active set, of score 0
)

// Round runs one batch: every rank scores the batch's rows against its
// classes and reports the scores of their active classes and its best
// candidates; every rank receives every report, solves each row's
// subproblem the same way, in row order, and applies the steps of its own
// classes.
func (t *roundTrainer) Round(_ context.Context, r int) (bool, error) {
	if !t.post && t.epochs >= t.p.Epochs {
		t.startPost(false)
	}
	rows := t.order.Rows(r)
	if err := t.search(rows); err != nil {
		return false, err
	}
	all, err := t.exchange()
	if err != nil {
		return false, err
	}
	t.rounds++
	t.reportBytes += int64(len(all))
	if t.entries, err = train.DecodeEntries(all, t.entries); err != nil {
		return false, fmt.Errorf("pdsparse: %w", err)
	}
	if err := t.steps(rows); err != nil {
		return false, err
	}
	if !t.order.LastOfEpoch(r) {
		return false, nil
	}
	t.epochs++
	if t.held.Rows == 0 {
		return false, nil
	}
	acc, err := t.heldoutAccuracy()
	if err != nil {
		return false, err
	}
	if acc > t.bestAcc {
		t.bestAcc, t.sinceBest = acc, 0
		t.keepBest()
	} else {
		t.sinceBest++
	}
	if t.log != nil {
		t.log.Info("pdsparse epoch", "epoch", t.epochs, "heldout_accuracy", fmt.Sprintf("%.2f", acc),
			"best", fmt.Sprintf("%.2f", t.bestAcc), "epochs_without_gain", t.sinceBest)
	}
	return t.sinceBest >= t.p.Patience, nil
}

// heldoutAccuracy returns the percentage of held-out rows whose top class
// is one of their labels: every rank reports its best class and score per
// row, and every rank takes the best of all, ties to the lower class.
func (t *roundTrainer) heldoutAccuracy() (float64, error) {
	n := t.held.Rows
	t.msg = slices.Grow(t.msg[:0], 12*n)[:12*n]
	err := t.pool.For(n, 64, func(w numa.Worker, lo, hi int) {
		s := t.searchers.Get(w)
		for i := lo; i < hi; i++ {
			t.heldoutBest(s, i)
		}
	})
	if err != nil {
		return 0, err
	}
	all, err := t.exchange()
	if err != nil {
		return 0, err
	}
	if len(all) != 12*n*t.comm.Size() {
		return 0, fmt.Errorf("pdsparse: held-out reports of %d bytes for %d rows and %d ranks", len(all), n, t.comm.Size())
	}
	hits := 0
	for i := range n {
		best, score := int32(-1), math.Inf(-1)
		for r := range t.comm.Size() {
			b := all[12*(r*n+i):]
			l, sc := int32(binary.LittleEndian.Uint32(b)), math.Float64frombits(binary.LittleEndian.Uint64(b[4:]))
			if l >= 0 && (sc > score || (sc == score && l < best)) {
				best, score = l, sc
			}
		}
		labels, _ := t.heldY.Row(i)
		if _, ok := slices.BinarySearch(labels, best); ok {
			hits++
		}
	}
	return 100 * float64(hits) / float64(max(n, 1)), nil
}

// heldoutBest writes into t.msg, at row i's place, this rank's best class
// for held-out row i and its score (class −1 if the rank owns none).
func (t *roundTrainer) heldoutBest(s *searcher, i int) {
	idx, val := t.held.Row(i)
	t.scoreRow(s, idx, val)
	best, score := int32(-1), math.Inf(-1)
	for _, c := range s.touched {
		if l := t.global[c]; s.score[c] > score || (s.score[c] == score && l < best) {
			best, score = l, s.score[c]
		}
	}
	// Untouched classes score 0: the best of them is the lowest one
	// this rank owns.
	if score <= 0 {
		for _, l := range t.ownSorted {
			if s.seen[t.local[l]] == 0 {
				if score < 0 || l < best {
					best, score = l, 0
				}
				break
			}
		}
	}
	for _, c := range s.touched {
		s.score[c], s.seen[c] = 0, 0
	}
	binary.LittleEndian.PutUint32(t.msg[12*i:], uint32(best))
	binary.LittleEndian.PutUint64(t.msg[12*i+4:], math.Float64bits(score))
}

// bestRecord flags, in the feature of a unit state's record, a weight of
// the best epoch's model rather than a dual sum.
const bestRecord = 1 << 31

// keepBest copies the current weights as the best epoch's.
func (t *roundTrainer) keepBest() {
	if t.bestWt == nil {
		t.bestWt = make([][]float64, t.x.Cols)
	}
	for j := range t.places {
		t.bestWt[j] = t.bestWt[j][:0]
		for e := range t.places[j] {
			t.bestWt[j] = append(t.bestWt[j], t.weight(&t.places[j][e]))
		}
	}
}

// bestWeight returns the best epoch's weight at place e of feature j.
func (t *roundTrainer) bestWeight(j, e int) float64 {
	if t.bestWt == nil || e >= len(t.bestWt[j]) {
		return 0
	}
	return t.bestWt[j][e]
}

// candidate is a class (local id) a search may report, and its score.
type candidate struct {
	class int32
	score float64
}

// searcher is a worker's scratch for the search of a batch's rows.
type searcher struct {
	score   []float64 // per local class
	seen    []uint8   // per local class: 1 if touched
	touched []int32
	marks   []uint64 // per 64 local classes, the touched ones (dense weights)
	best    []candidate
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
	if labels, _ := t.y.Row(int(i)); t.sq[i] == 0 || len(labels) == 0 {
		return // step skips the row: nothing to report
	}
	idx, val := t.x.Row(int(i))
	put := func(class int32, kind int32, score float64) {
		s.Msg = train.AppendEntry(s.Msg, train.RoundEntry{Row: q, Class: class, Kind: kind, Score: score})
	}
	active := t.act[i]
	if t.post {
		// The active sets are frozen: no candidates, and only the scores
		// of the active classes this rank owns, each summed from its own
		// places, feature by feature as the lists would add them (the
		// same sums), not from every weight of the row's features.
		for _, a := range active {
			c := t.local[a.class]
			if c < 0 {
				continue
			}
			sc := 0.0
			for e, j := range idx {
				if p := t.placeOf(j, c); p >= 0 {
					if w := t.weight(&t.places[j][p]); w != 0 {
						sc += float64(w * float64(val[e]))
					}
				}
			}
			put(a.class, kindScore, sc)
		}
		return
	}
	t.scoreRow(s, idx, val)
	// The scores of the active classes this rank owns; mark them so that
	// they are not candidates.
	for _, a := range active {
		if c := t.local[a.class]; c >= 0 {
			put(a.class, kindScore, s.score[c])
			s.score[c] = math.Inf(-1)
		}
	}
	// The first MaxSelect untouched classes of the fill order.
	found := 0
	for _, l := range t.ownFill {
		if found == t.p.MaxSelect {
			break
		}
		if c := t.local[l]; s.seen[c] == 0 && !isActive(active, l) {
			put(l, kindUntouched, 0)
			found++
		}
	}
	// The best MaxSelect violators of positive score, ties to the lower
	// class, kept sorted by insertion (MaxSelect is small), in the pass
	// that clears the scores.
	better := func(a, b candidate) bool {
		return a.score > b.score || (a.score == b.score && t.global[a.class] < t.global[b.class])
	}
	best := s.best[:0]
	// floor is 0 until best is full, then the score of its worst: most
	// classes fall below it, which one comparison tells.
	floor := 0.0
	for _, c := range s.touched {
		sc := s.score[c]
		s.score[c], s.seen[c] = 0, 0
		if sc < floor || (sc == floor && (len(best) < t.p.MaxSelect || !better(candidate{c, sc}, best[len(best)-1]))) {
			continue
		}
		if len(best) < t.p.MaxSelect {
			best = append(best, candidate{c, sc})
		} else {
			best[len(best)-1] = candidate{c, sc}
		}
		for k := len(best) - 1; k > 0 && better(best[k], best[k-1]); k-- {
			best[k], best[k-1] = best[k-1], best[k]
		}
		if len(best) == t.p.MaxSelect {
			floor = best[len(best)-1].score
		}
	}
	s.best = best
	for _, b := range best {
		put(t.global[b.class], kindViolator, b.score)
	}
	for _, a := range active {
		if c := t.local[a.class]; c >= 0 {
			s.score[c] = 0
		}
	}
}

// scoreRow adds to s.score the row's score for every class with a
// non-zero weight on one of its features (idx, val), marks them in s.seen
// and lists them in s.touched, in order of first appearance. It reads the
// weight lists only; the caller clears the scores and marks.
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
	for e, j := range idx {
		nt = scoreList(t.nz[j], float64(val[e]), score, seen, touched, nt)
	}
	s.touched = touched[:nt]
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

func isActive(active []dualVar, l int32) bool {
	for _, a := range active {
		if a.class == l {
			return true
		}
	}
	return false
}

// search fills t.msg with this rank's entries for the rows, in row order:
// the rank's workers search pieces of the batch at once, each with its own
// scratch.
func (t *roundTrainer) search(rows []int32) error {
	var err error
	t.msg, err = t.batch.Run(t.pool, len(rows), 8,
		func(w numa.Worker) *train.RowReports { return &t.searchers.Get(w).RowReports },
		func(w numa.Worker, q int, _ *train.RowReports) { t.report(t.searchers.Get(w), int32(q), rows[q]) }, t.msg)
	return err
}

// exchange gives every rank the reports of all ranks, in rank order.
func (t *roundTrainer) exchange() ([]byte, error) { return t.gather.Exchange(t.comm, t.msg) }

// steps solves the subproblems of the round's rows, whose entries are in
// t.entries, and applies their steps to this rank's weights.
//
// The subproblems are small and solved one after another; the steps, each
// an addition to a weight per feature of the row, are most of a round's
// work on data with many labels per row (Bibtex), and the rank's workers
// apply them by feature shard, held in a numa.Team: each worker adds to
// its features' weights the steps of every row in row order, so the
// additions to each weight come in the order of one worker taking the rows
// one by one and the weights do not depend on the number of workers. A
// round of fewer additions than parallelStepAdds is applied on the calling
// goroutine: handing it to the workers costs more (wordnet-mc, one label a
// row, 1 rank × 2 threads: 3.50-3.58 s for 3 epochs handed out every round,
// 2.82-3.21 s before).
func (t *roundTrainer) steps(rows []int32) error {
	workers := t.pool.Workers()
	t.rowSteps = t.rowSteps[:0]
	st := t.steppers.Get(workers[0])
	if st.round != t.rounds {
		st.moves, st.round = st.moves[:0], t.rounds
	}
	adds := 0
	for lo := 0; lo < len(t.entries); {
		hi := lo
		for hi < len(t.entries) && t.entries[hi].Row == t.entries[lo].Row {
			hi++
		}
		q := int(t.entries[lo].Row)
		rs := rowStep{q: q, lo: lo, hi: hi, st: st, mlo: len(st.moves)}
		if err := t.solve(st, rows[q], t.entries[lo:hi]); err != nil {
			return err
		}
		rs.mhi = len(st.moves)
		adds += (rs.mhi - rs.mlo) * int(t.x.Indptr[rows[q]+1]-t.x.Indptr[rows[q]])
		t.rowSteps = append(t.rowSteps, rs)
		lo = hi
	}
	if len(workers) == 1 || adds < t.parallelAdds {
		t.apply(workers[0], rows, 0, len(t.shards)-1)
		return nil
	}
	return t.pool.Together(func(team *numa.Team) error {
		return team.For(len(t.shards)-1, 1, func(w numa.Worker, s, _ int) { t.apply(w, rows, s, s+1) })
	})
}

// parallelStepAdds is the fewest additions to weights of a round that the
// rank's workers apply together (see steps): Bibtex's rounds make about
// 50,000 (64 rows, a dozen moving classes, 68 features), wordnet-mc's a few
// thousand.
const parallelStepAdds = 20000

// apply applies the round's steps to the weights of the features of shards
// lo to hi, row after row, with the scratch of worker w (the calling
// goroutine's, or w's own).
func (t *roundTrainer) apply(w numa.Worker, rows []int32, lo, hi int) {
	st := t.steppers.Get(w)
	flo, fhi := t.shards[lo], t.shards[hi]
	for _, rs := range t.rowSteps {
		if rs.mlo == rs.mhi {
			continue
		}
		idx, val := t.x.Row(int(rows[rs.q]))
		a, _ := slices.BinarySearch(idx, flo)
		b, _ := slices.BinarySearch(idx, fhi)
		idx, val = idx[a:b], val[a:b]
		if t.dense != nil && !t.post {
			t.applyDense(idx, val, rs.st.moves[rs.mlo:rs.mhi])
			continue
		}
		for _, m := range rs.st.moves[rs.mlo:rs.mhi] {
			// All the lookups first, then the updates: apart from the
			// updates the lookups' memory reads overlap (wordnet-mc
			// trained in 12.5 s rather than 13.5).
			at := st.at[:0]
			for _, j := range idx {
				at = append(at, t.placeOf(j, m.c))
			}
			for e, j := range idx {
				t.addAt(j, m.c, at[e], float64(m.d*float64(val[e])))
			}
			st.at = at
		}
	}
}

// applyDense is apply's loop over a row's features (idx, val) and the
// moves of its step, for dense weights outside the post-solve: addAt's
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

// solve solves row i's subproblem, with st's scratch, from the entries
// every rank reported for it: it updates the row's active set and appends
// to st.moves the moves of this rank's classes.
func (t *roundTrainer) solve(st *stepper, i int32, entries []train.RoundEntry) error {
	A := t.sq[i]
	labels, _ := t.y.Row(int(i))
	if A == 0 || len(labels) == 0 {
		return nil // no loss to lower: a row without features or labels
	}
	active := t.act[i]
	score := func(l int32) (float64, bool) {
		for _, e := range entries {
			if e.Class == l && e.Kind == kindScore {
				return e.Score, true
			}
		}
		return 0, false
	}
	// New classes: the best violators of all ranks, then untouched
	// classes in fill order, MaxSelect in all.
	add := st.add[:0]
	for _, e := range entries {
		if e.Kind == kindViolator {
			add = append(add, e)
		}
	}
	slices.SortFunc(add, func(a, b train.RoundEntry) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.Class, b.Class)
	})
	add = add[:min(len(add), t.p.MaxSelect)]
	if len(add) < t.p.MaxSelect {
		fill := st.fill[:0]
		for _, e := range entries {
			if e.Kind == kindUntouched {
				fill = append(fill, e)
			}
		}
		slices.SortFunc(fill, func(a, b train.RoundEntry) int { return cmp.Compare(t.fillPos[a.Class], t.fillPos[b.Class]) })
		add = append(add, fill[:min(len(fill), t.p.MaxSelect-len(add))]...)
		st.fill = fill
	}
	st.add = add
	scores := st.scores[:0]
	for _, a := range active {
		s, ok := score(a.class)
		if !ok {
			return fmt.Errorf("pdsparse: no rank reported the score of class %d for row %d", a.class, i)
		}
		scores = append(scores, s)
	}
	for _, e := range add {
		active = append(active, dualVar{class: e.Class})
		scores = append(scores, e.Score)
	}
	if len(active) == len(labels) {
		return nil // no negative to separate from
	}
	// b for the negatives, c for the positives (see biSimplex): a step of
	// size 1/A from the current α along the dual gradient.
	st.scores = scores
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
	kept := active[:0]
	for k, a := range active {
		na := 0.0
		if k < len(labels) {
			na = y[k]
		} else {
			na = -x[k-len(labels)]
		}
		if d := na - a.alpha; d != 0 {
			if lc := t.local[a.class]; lc >= 0 {
				st.moves = append(st.moves, dualMove{c: lc, d: d})
			}
		}
		if k < len(labels) || na != 0 {
			kept = append(kept, dualVar{class: a.class, alpha: na})
		}
	}
	t.act[i] = kept
	return nil
}

// Save returns each owned unit's dual sums, as (feature, class, v)
// records, and the active sets.
func (t *roundTrainer) Save() ([][]byte, []byte, error) {
	unitOf := make(map[int32]int, len(t.owned))
	for q, u := range t.owned {
		for _, l := range t.blocks[u] {
			unitOf[l] = q
		}
	}
	state := make([][]byte, len(t.owned))
	put := func(q int, j uint32, l int32, v float64) {
		state[q] = binary.LittleEndian.AppendUint32(state[q], j)
		state[q] = binary.LittleEndian.AppendUint32(state[q], uint32(l))
		state[q] = binary.LittleEndian.AppendUint64(state[q], math.Float64bits(v))
	}
	for j := range t.places {
		for e, p := range t.places[j] {
			c, v, best := p.class, p.v, t.bestWeight(j, e)
			if v == 0 && best == 0 {
				continue
			}
			l := t.global[c]
			put(unitOf[l], uint32(j), l, v)
			if best != 0 {
				put(unitOf[l], uint32(j)|bestRecord, l, best)
			}
		}
	}
	shared := binary.LittleEndian.AppendUint64(nil, uint64(t.epochs))
	shared = binary.LittleEndian.AppendUint64(shared, math.Float64bits(t.bestAcc))
	shared = binary.LittleEndian.AppendUint64(shared, uint64(t.sinceBest))
	for _, active := range t.act {
		shared = binary.LittleEndian.AppendUint32(shared, uint32(len(active)))
		for _, a := range active {
			shared = binary.LittleEndian.AppendUint32(shared, uint32(a.class))
			shared = binary.LittleEndian.AppendUint64(shared, math.Float64bits(a.alpha))
		}
	}
	return state, shared, nil
}

// loadShared restores the active sets saved by Save.
func (t *roundTrainer) loadShared(b []byte) error {
	bad := errors.New("pdsparse: shared state truncated")
	if len(b) < 24 {
		return bad
	}
	t.epochs = int(binary.LittleEndian.Uint64(b))
	t.bestAcc = math.Float64frombits(binary.LittleEndian.Uint64(b[8:]))
	t.sinceBest = int(binary.LittleEndian.Uint64(b[16:]))
	b = b[24:]
	for i := range t.act {
		if len(b) < 4 {
			return bad
		}
		n := int(binary.LittleEndian.Uint32(b))
		b = b[4:]
		if len(b) < 12*n {
			return bad
		}
		t.act[i] = t.act[i][:0]
		for range n {
			l := int32(binary.LittleEndian.Uint32(b))
			if l < 0 || int(l) >= t.y.Cols {
				return fmt.Errorf("pdsparse: shared state names class %d", l)
			}
			t.act[i] = append(t.act[i], dualVar{class: l, alpha: math.Float64frombits(binary.LittleEndian.Uint64(b[4:]))})
			b = b[12:]
		}
	}
	if len(b) != 0 {
		return errors.New("pdsparse: shared state has trailing bytes")
	}
	return nil
}

// Finish encodes every owned unit as a linear.Block of w = prox_λ(v).
func (t *roundTrainer) Finish() ([]runner.Result, error) {
	// Per local class, its (feature, weight) pairs in feature order.
	n := 0
	for _, u := range t.owned {
		n += len(t.blocks[u])
	}
	feats := make([][]int32, n)
	weights := make([][]float64, n)
	for j := range t.places {
		for e := range t.places[j] {
			p := &t.places[j][e]
			c, w := p.class, t.weight(p)
			if t.bestWt != nil {
				w = t.bestWeight(j, e)
			}
			if math.IsNaN(w) || math.IsInf(w, 0) {
				return nil, fmt.Errorf("class %d: training diverged: non-finite weight", t.global[c])
			}
			if w != 0 {
				feats[c] = append(feats[c], int32(j))
				weights[c] = append(weights[c], w)
			}
		}
	}
	out := make([]runner.Result, len(t.owned))
	c := 0
	dense := make([]float64, t.x.Cols)
	for q, u := range t.owned {
		var b linear.Block
		for _, l := range t.blocks[u] {
			for e, j := range feats[c] {
				dense[j] = weights[c][e]
			}
			b.AppendSparse(l, feats[c], dense, t.p.Prune)
			for _, j := range feats[c] {
				dense[j] = 0
			}
			c++
		}
		enc, err := b.MarshalBinary()
		if err != nil {
			return nil, err
		}
		out[q] = runner.Result{Unit: u, Data: enc}
	}
	return out, nil
}

// meanActive is the mean size of the rows' active sets.
func (t *roundTrainer) meanActive() float64 {
	s := 0
	for _, a := range t.act {
		s += len(a)
	}
	return float64(s) / float64(max(1, len(t.act)))
}

// nnz is the number of non-zero weights of this rank's classes.
func (t *roundTrainer) nnz() int {
	n := 0
	for j := range t.places {
		for e := range t.places[j] {
			if t.weight(&t.places[j][e]) != 0 {
				n++
			}
		}
	}
	return n
}
