package memoir

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"slices"

	"xmc/data"
	"xmc/metrics"
	"xmc/mips"
	"xmc/model"
	"xmc/model/linear"
	"xmc/mpi"
	"xmc/numa"
	"xmc/runner"
	"xmc/train"
)

// Params are the hyper-parameters of MEMOIR (Belyy and Sholokhov,
// "MEMOIR: Multi-class Extreme Classification with Inexact Margin", 2018):
// a Crammer–Singer multi-class SVM, one weight vector w_k per class,
// trained by mini-batch stochastic sub-gradient steps in which each row's
// most violating class r = argmax_{r ∉ y} ⟨w_r, x⟩ comes from an
// approximate maximum inner product search (MIPS) over the class vectors:
// when 1 + ⟨w_r − w_y, x⟩ > 0, w_r −= η_t x and w_y += η_t x, with
// η_t = η₀ / (1 + η_step · t) in round t. Rows with several labels take as
// y their label of lowest score (the separation ranking loss).
type Params struct {
	// Regularizer is "l2" (Pegasos: W ← (1 − λη_t) W before each batch,
	// then W ← min{1, 1/(√λ ‖W‖)} W, both as one shared scale of W) or
	// "l1" (truncated SGD with the cumulative penalty of Tsuruoka, Tsujii
	// and Ananiadou, ACL 2009: every round owes every weight a shrink of
	// λη_t towards zero; a class pays what it owes, as a soft threshold of
	// all its weights, when a batch moves it and at each epoch's end, so
	// that untouched classes cost nothing).
	Regularizer string  `json:"regularizer"`
	Lambda      float64 `json:"lambda"`
	Eta0        float64 `json:"eta0"`
	EtaStep     float64 `json:"eta_step"`
	// Index is the search for the violating class, one per class block
	// (package mips): "lsh" (SimpleLSH with norm ranging), "graph" (a
	// navigable small-world graph of inner products) or "exact" (every
	// class of the block scored: the baseline the approximations are
	// measured against).
	Index string `json:"index"`
	// Tables, Bits and Probes shape the LSH: tables, bits a table (0:
	// mips.BitsFor the block's classes) and buckets probed beyond a
	// query's own per table.
	Tables int `json:"tables"`
	Bits   int `json:"bits"`
	Probes int `json:"probes"`
	// Degree and Ef shape the graph: out-edges per class and the width
	// of its searches.
	Degree int `json:"degree"`
	Ef     int `json:"ef"`
	// Epochs is the passes over the rows and BatchSize the rows of a
	// round, all searched against W as it was at the round's start.
	Epochs    int `json:"epochs"`
	BatchSize int `json:"batch_size"`
	// ClassBlocks is the number of blocks the classes are dealt into,
	// each with its own index, whatever the number of ranks: ranks own
	// blocks.
	ClassBlocks int `json:"class_blocks"`
	// Prune drops trained weights of smaller magnitude from the model.
	Prune float64 `json:"prune"`
	// EarlyStop holds rows out to stop on their macro-F1 (P@1 if rows
	// have several labels): the model is the best epoch's.
	train.EarlyStop
	// Seed orders the rows of every epoch and draws the LSH projections.
	Seed uint64 `json:"seed"`
	linear.Preprocess
}

// l1Lambda is λ's default with --regularizer l1: on wordnet-mc (3
// epochs) it made a model 0.15 of the ℓ2 model's bytes at 25.8% accuracy
// against 34.1%; 5e-4 made 0.32 of them at 28.7%, 3e-4 0.55 at 30.5%.
const l1Lambda = 1e-3

// DefaultParams returns the defaults (see the flags' help), measured
// on wordnet-mc: λ = 1e-6 (1e-8 gave 0.3 point less accuracy after 5 epochs;
// 1e-4 held ‖W‖ so small that 95% of the rows violated their margin to the
// end: 28.3% after 5 epochs), η₀ = 1 with η_step = 0.001, 3 epochs (34.1%
// accuracy; 5 gave 34.6% in 1.7 times the time), 8 LSH tables (4 gave 34.0%
// after 5 epochs against 34.6%) with one probe each. No probes and 4 epochs
// (fewer classes scored in all) gave, over seeds 1-3, better P@1 on Bibtex
// (59.19 ± 1.73 against 58.66 ± 0.23), debian-tags (87.09 against 86.57),
// Delicious (33.50 against 31.61) and wordnet-hyper (83.79 against 83.66)
// but less accuracy on wordnet-mc (33.86 ± 0.24 against 34.27 ± 0.16), in no
// less time there (31-42 s a run against 25-27 s; this VM's times vary by
// ±15%): not adopted. All of these were measured with 32 class blocks, the
// first default. 16 class blocks rather than 32 (each block's search scores
// about as many classes whatever its size, so half the blocks score half the
// classes a row) trained wordnet-mc on 2 ranks in 16.2-22.6 s (5 runs)
// against 27.0 s, at 33.67 ± 0.38 accuracy against 34.27 ± 0.16 (seeds 1-3),
// with 83.42 against 83.66 P@1 on wordnet-hyper, the same on Bibtex and
// debian-tags, more on Delicious; 32 blocks with one more LSH bit, as few
// classes scored, gave 33.76 (seed 1). More blocks than the default serve
// more ranks, at more work a row.
func DefaultParams() Params {
	return Params{Regularizer: "l2", Lambda: 1e-6, Eta0: 1, EtaStep: 0.001, Index: "lsh", Tables: 8, Probes: 1,
		Degree: 8, Ef: 4, Epochs: 3, BatchSize: 64, ClassBlocks: 16, EarlyStop: train.EarlyStop{Patience: 5}, Preprocess: linear.Preprocess{Normalize: true}}
}

// Validate reports the first parameter out of its range.
func (p Params) Validate() error {
	switch {
	case p.Regularizer != "l2" && p.Regularizer != "l1":
		return fmt.Errorf("--regularizer must be l2 or l1, got %q", p.Regularizer)
	case p.Index != "lsh" && p.Index != "graph" && p.Index != "exact":
		return fmt.Errorf("--index must be lsh, graph or exact, got %q", p.Index)
	case !(p.Lambda >= 0) || math.IsInf(p.Lambda, 0):
		return fmt.Errorf("--lambda must be 0 or more, got %v", p.Lambda)
	case p.Regularizer == "l2" && !(p.Lambda > 0):
		return errors.New("--lambda must be positive with --regularizer l2")
	case !(p.Eta0 > 0) || math.IsInf(p.Eta0, 0):
		return fmt.Errorf("--eta0 must be positive, got %v", p.Eta0)
	case p.Regularizer == "l2" && !(p.Lambda*p.Eta0 < 1):
		return fmt.Errorf("--lambda × --eta0 must be below 1 (the shrink 1 − λη of each round), got %v", p.Lambda*p.Eta0)
	case !(p.EtaStep >= 0) || math.IsInf(p.EtaStep, 0):
		return fmt.Errorf("--eta-step must be 0 or more, got %v", p.EtaStep)
	case p.Tables < 1:
		return fmt.Errorf("--tables must be at least 1, got %d", p.Tables)
	case p.Bits < 0 || p.Bits > mips.MaxBits:
		return fmt.Errorf("--bits must be 0 (automatic) to %d, got %d", mips.MaxBits, p.Bits)
	case p.Probes < 0:
		return fmt.Errorf("--probes must be 0 or more, got %d", p.Probes)
	case p.Degree < 1 || p.Ef < 1:
		return fmt.Errorf("--degree and --ef must be at least 1, got %d and %d", p.Degree, p.Ef)
	case p.Epochs < 1:
		return fmt.Errorf("--epochs must be at least 1, got %d", p.Epochs)
	case p.BatchSize < 1:
		return fmt.Errorf("--batch-size must be at least 1, got %d", p.BatchSize)
	case p.ClassBlocks < 1:
		return fmt.Errorf("--class-blocks must be at least 1, got %d", p.ClassBlocks)
	case !(p.Prune >= 0) || math.IsInf(p.Prune, 0):
		return fmt.Errorf("--prune must be 0 or more, got %v", p.Prune)
	}
	return p.EarlyStop.Validate()
}

// Trainer is the Trainer of --algo memoir.
type Trainer struct{ p Params }

func New() train.Trainer { return &Trainer{p: DefaultParams()} }

// Flags registers MEMOIR's hyper-parameters.
func (a *Trainer) Flags(fs *flag.FlagSet) {
	p := &a.p
	fs.StringVar(&p.Regularizer, "regularizer", p.Regularizer, "l2 (MEMOIR-ℓ2, Pegasos's shrink and projection) or l1 (MEMOIR-ℓ1, truncated SGD: smaller models)")
	fs.Float64Var(&p.Lambda, "lambda", p.Lambda, fmt.Sprintf("weight λ of the regulariser (default %g with l2, %g with l1)", p.Lambda, l1Lambda))
	fs.Float64Var(&p.Eta0, "eta0", p.Eta0, "step η₀ of η_t = η₀ / (1 + η_step t), t the round")
	fs.Float64Var(&p.EtaStep, "eta-step", p.EtaStep, "decay η_step of the step")
	fs.StringVar(&p.Index, "index", p.Index, "search for a row's most violating class, per class block: lsh (SimpleLSH with norm ranging), graph (small-world graph of inner products) or exact (every class scored)")
	fs.IntVar(&p.Tables, "tables", p.Tables, "LSH hash tables per class block")
	fs.IntVar(&p.Bits, "bits", p.Bits, "LSH bits per table (0: 2 to 4 classes a bucket)")
	fs.IntVar(&p.Probes, "probes", p.Probes, "LSH buckets probed per table beyond the query's own (one bit flipped each)")
	fs.IntVar(&p.Degree, "degree", p.Degree, "graph out-edges per class")
	fs.IntVar(&p.Ef, "ef", p.Ef, "graph search width (best classes kept while walking)")
	fs.IntVar(&p.Epochs, "epochs", p.Epochs, "passes over the rows")
	fs.IntVar(&p.BatchSize, "batch-size", p.BatchSize, "rows per round (searched against the weights of the round's start)")
	fs.IntVar(&p.ClassBlocks, "class-blocks", p.ClassBlocks, "blocks the classes are dealt into, each with its own index, whatever the ranks: ranks own blocks, so give at least one per rank; more blocks score more classes a row (more accuracy, more time)")
	fs.Float64Var(&p.Prune, "prune", p.Prune, "drop trained weights of smaller magnitude")
	p.EarlyStop.Flags(fs, "macro-F1")
	fs.BoolVar(&p.Normalize, "normalize", p.Normalize, "scale rows to unit L2 norm, in training and prediction")
}

// Prepare checks the parameters and builds the round trainer. Every rank
// holds the rows; it holds the vectors and indexes of its blocks only.
func (a *Trainer) Prepare(env train.Env, ds *data.Dataset) (*train.Work, error) {
	p := a.p
	p.Seed = env.Seed
	p.Bias = false
	if p.Regularizer == "l1" && (env.Set == nil || !env.Set("lambda")) {
		p.Lambda = l1Lambda
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	kept, held, err := p.EarlyStop.Rows(env, ds, p.Seed)
	if err != nil {
		return nil, err
	}
	if kept.N() == 0 {
		return nil, errors.New("memoir: no training rows")
	}
	counts := data.LabelCounts(&kept.Y)
	if err := train.LogUntrained(env.Log, counts); err != nil {
		return nil, err
	}
	t := &roundTrainer{p: p, comm: env.Comm, pool: env.Pool, log: env.Log, x: p.Apply(&kept.X), y: kept.Y.Clone()}
	t.blocks = classBlocks(counts, p.ClassBlocks)
	t.p.ClassBlocks = len(t.blocks)
	if t.p.Bits == 0 {
		t.p.Bits = mips.BitsFor(len(t.blocks[0]))
	}
	if t.hasher, err = mips.NewHasher(t.p.Tables, t.p.Bits, p.Seed); err != nil {
		return nil, err
	}
	t.order = train.NewEpochBatches(t.x.Rows, p.BatchSize, p.Seed)
	if held != nil {
		t.held, t.heldY = p.Apply(&held.X), held.Y
		env.Log.Info("memoir holds rows out to stop early", "heldout_rows", held.N(), "training_rows", kept.N(), "patience", p.Patience)
	}
	return &train.Work{Kind: linear.Kind{}, Params: t.p, Units: len(t.blocks), Rounds: t,
		MaxRounds: p.Epochs * t.order.Batches, RoundName: "round",
		Done: func(log *slog.Logger) {
			log.Info("memoir", "epochs", t.epochs, "regularizer", t.p.Regularizer, "index", t.p.Index,
				"tables", t.p.Tables, "bits", t.p.Bits, "class_blocks", len(t.blocks),
				"weights_owned", t.nnz(), "block_state_bytes", t.stateBytes(), "violating_rows_last_epoch", t.violations,
				"scored_per_row_block", fmt.Sprintf("%.1f", t.scoredPerSearch()),
				// Each round rank 0 gathers, and broadcasts to every
				// rank, 20 bytes per row for the rival of each rank and
				// the score of each label.
				"report_bytes_per_round", t.reportBytes/int64(max(t.rounds, 1)),
				"report_bytes_bound", int64(t.p.BatchSize)*train.RoundEntryBytes*int64(t.comm.Size()+int(math.Ceil(float64(t.y.NNZ())/float64(t.y.Rows)))))
		},
		Stats: func() map[string]float64 {
			m := map[string]float64{"block_state_bytes": float64(t.stateBytes()), "weights": float64(t.nnz()),
				"scored_per_row_block": t.scoredPerSearch()}
			for _, r := range t.recalls {
				m[fmt.Sprintf("index_recall@1_epoch_%d", r.epoch)] = r.recall
			}
			return m
		}}, nil
}

// classBlocks deals the classes with a training row into at most n
// blocks, by decreasing frequency in turn, so that blocks carry like work;
// each block lists its classes in increasing order.
func classBlocks(counts []int64, n int) [][]int32 {
	order := train.LabelBlocks(counts, len(counts))[0]
	n = min(n, len(order))
	blocks := make([][]int32, n)
	for i, l := range order {
		blocks[i%n] = append(blocks[i%n], l)
	}
	for _, b := range blocks {
		slices.Sort(b)
	}
	return blocks
}

// classBlock is a class block a rank owns: its classes' vectors v (the
// weights are s·v, s the trainer's shared scale), their index, and the sum
// of their squared norms.
type classBlock struct {
	unit    int
	classes []int32
	vec     *mips.Vectors
	lsh     *mips.LSH   // with --index lsh
	graph   *mips.Graph // with --index graph
	sq      float64
	// paid is, per class, the cumulative ℓ1 penalty it has paid (see
	// Regularizer).
	paid []float64
	// zeroFrom is the lowest class that may still have a zero vector:
	// zero vectors score 0, and the lowest one not a label of the row is
	// the rival when no vector scores more.
	zeroFrom int
	// best is, with --heldout, the vectors of the best epoch (weights
	// bestScale·v).
	best *mips.Vectors
}

// Entry kinds of MEMOIR's reports.
const (
	kindRival = iota // the rank's best class that is not a label of the row
	kindLabel        // the score of a label of the row
)

// roundTrainer is the runner.RoundTrainer of Params.
type roundTrainer struct {
	p      Params
	comm   mpi.Comm
	pool   *numa.Pool
	log    *slog.Logger
	x, y   data.CSR // the preprocessed rows and their labels
	blocks [][]int32
	order  *train.EpochBatches
	hasher *mips.Hasher

	mine    []*classBlock // the owned blocks, in unit order
	blockOf []int32       // per class: its place in mine, or −1
	slot    []int32       // per class: its place in its block

	// The shared state, the same on every rank.
	scale     float64 // s: the weights are s·v
	owed      float64 // the cumulative ℓ1 penalty Σ λη_t
	epochs    int
	bestF1    float64 // the best held-out macro-F1 (−1 before the first)
	bestScale float64
	sinceBest int

	held, heldY data.CSR

	// Counters for the log and the summary; recalls holds the index's
	// recall@1 at the end of each epoch of this run.
	recalls            []epochRecall
	rounds, violations int
	reportBytes        int64

	// Scratch.
	searchers *numa.PerWorker[*searcher]
	proj      []float64 // the batch's rows' projections, row after row
	msg       []byte
	batch     train.BatchReports
	gather    train.AllGather
	entries   []train.RoundEntry
	steps     []classStep
	norms     []float64
}

// epochRecall is the recall@1 of the index at the end of an epoch.
type epochRecall struct {
	epoch  int
	recall float64
}

// classStep is a class's change of a round: v_class += coef · x_row.
type classStep struct {
	q     int32
	class int32
	coef  float64
}

// searcher is a worker's scratch.
type searcher struct {
	// scored and searched count the classes the index scored and its
	// searches, for the log.
	scored, searched int64
	lsh              mips.Scratch
	graph            mips.GraphScratch
	exact            mips.InvertedScratch
	skip             []int
	train.RowReports
	dproj    []float64
	keys     []int // the LSH buckets of the row searched
	di       []int32
	dv       []float64
	shrinkDP []float64
}

// Start makes the owned blocks, fresh or from their saved state.
func (t *roundTrainer) Start(units []int, _ int, state [][]byte, shared []byte) error {
	t.blockOf = make([]int32, t.y.Cols)
	t.slot = make([]int32, t.y.Cols)
	for l := range t.blockOf {
		t.blockOf[l] = -1
	}
	t.mine = t.mine[:0]
	for q, u := range units {
		b := &classBlock{unit: u, classes: t.blocks[u], paid: make([]float64, len(t.blocks[u]))}
		for s, l := range b.classes {
			t.blockOf[l], t.slot[l] = int32(q), int32(s)
		}
		if state == nil {
			b.vec = mips.NewVectors(len(b.classes))
			switch t.p.Index {
			case "lsh":
				b.lsh = mips.NewLSH(t.hasher, b.vec)
			case "graph":
				b.graph = mips.NewGraph(b.vec, t.p.Degree, t.p.Ef)
			}
		} else if err := t.decodeBlock(b, state[q]); err != nil {
			return fmt.Errorf("unit %d: %w", u, err)
		}
		t.mine = append(t.mine, b)
	}
	t.scale, t.owed, t.epochs, t.bestF1, t.bestScale, t.sinceBest = 1, 0, 0, -1, 1, 0
	t.searchers = numa.NewPerWorker(t.pool, func(numa.Worker) *searcher {
		return &searcher{dproj: make([]float64, t.hasher.Projections()), shrinkDP: make([]float64, t.hasher.Projections())}
	})
	if shared != nil {
		if len(shared) != 48 {
			return fmt.Errorf("memoir: shared state of %d bytes, want 48", len(shared))
		}
		f := func(i int) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(shared[8*i:])) }
		n := func(i int) int { return int(binary.LittleEndian.Uint64(shared[8*i:])) }
		t.scale, t.owed, t.epochs, t.bestF1, t.bestScale, t.sinceBest = f(0), f(1), n(2), f(3), f(4), n(5)
	}
	return nil
}

// eta is the step of round r.
func (t *roundTrainer) eta(r int) float64 { return t.p.Eta0 / (1 + t.p.EtaStep*float64(r)) }

// Round runs one batch: every rank searches its blocks for each row's
// rival and scores the row's labels it owns; every rank receives every
// report, decides the same steps, and applies those of its own classes.
func (t *roundTrainer) Round(_ context.Context, r int) (bool, error) {
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
	t.msg, err = t.batch.Run(t.pool, len(rows), 4,
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
	return t.pool.For(len(t.mine), 1, func(w numa.Worker, bi, _ int) {
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

// settle makes every owned class pay the ℓ1 penalty it owes, on the rank's
// workers, so that the weights are those of the objective at an epoch's
// end.
func (t *roundTrainer) settle() error {
	return t.pool.For(len(t.mine), 1, func(w numa.Worker, bi, _ int) {
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
	np := t.hasher.Projections()
	t.proj = slices.Grow(t.proj[:0], n*np)[:n*np]
	t.msg = slices.Grow(t.msg[:0], 2*n*train.RoundEntryBytes)[:2*n*train.RoundEntryBytes]
	err := t.pool.For(n, 1, func(w numa.Worker, q, _ int) {
		s := t.searchers.Get(w)
		xi, xv := t.x.Row(q * step)
		proj := t.proj[q*np : (q+1)*np]
		t.hasher.Project(xi, xv, proj)
		s.keys = t.hasher.QueryKeys(proj, t.p.Probes, s.keys)
		s.skip = s.skip[:0]
		approx, as := int32(-1), math.Inf(-1)
		for _, b := range t.mine {
			if k, sc := t.blockBest(b, s, xi, xv); k >= 0 && (sc > as || (sc == as && b.classes[k] < approx)) {
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
	all, err := t.gather.Exchange(t.comm, t.msg)
	if err != nil {
		return 0, err
	}
	if t.entries, err = train.DecodeEntries(all, t.entries); err != nil {
		return 0, fmt.Errorf("memoir: %w", err)
	}
	hits := 0
	err = train.ForEachRow(t.entries, func(_ int32, entries []train.RoundEntry) error {
		var best [2]train.RoundEntry
		best[0].Class, best[1].Class = -1, -1
		best[0].Score, best[1].Score = math.Inf(-1), math.Inf(-1)
		for _, e := range entries {
			if b := &best[e.Kind]; e.Class >= 0 && (e.Score > b.Score || (e.Score == b.Score && e.Class < b.Class)) {
				*b = e
			}
		}
		if best[0].Class == best[1].Class || best[0].Score >= best[1].Score {
			hits++
		}
		return nil
	})
	return float64(hits) / float64(n), err
}

// heldoutScore returns the macro-F1 (metrics.Evaluate's) of the exact best
// class of each held-out row, or its P@1 if a row has several labels, and
// the metric's name: each rank reports its best, and the best of all ranks
// is the prediction.
func (t *roundTrainer) heldoutScore(exact *mips.Inverted) (float64, string, error) {
	n := t.held.Rows
	t.msg = slices.Grow(t.msg[:0], n*train.RoundEntryBytes)[:n*train.RoundEntryBytes]
	err := t.pool.For(n, 1, func(w numa.Worker, i, _ int) {
		s := t.searchers.Get(w)
		xi, xv := t.held.Row(i)
		c, sc := exact.Best(xi, xv, &s.exact)
		train.AppendEntry(t.msg[i*train.RoundEntryBytes:][:0], train.RoundEntry{Row: int32(i), Class: c, Score: sc})
	})
	if err != nil {
		return 0, "", err
	}
	all, err := t.gather.Exchange(t.comm, t.msg)
	if err != nil {
		return 0, "", err
	}
	if t.entries, err = train.DecodeEntries(all, t.entries); err != nil {
		return 0, "", fmt.Errorf("memoir: %w", err)
	}
	pred := make([][]model.Scored, n)
	err = train.ForEachRow(t.entries, func(q int32, entries []train.RoundEntry) error {
		best := train.RoundEntry{Class: -1, Score: math.Inf(-1)}
		for _, e := range entries {
			if e.Class >= 0 && (e.Score > best.Score || (e.Score == best.Score && e.Class < best.Class)) {
				best = e
			}
		}
		if best.Class >= 0 {
			pred[q] = []model.Scored{{Label: best.Class, Score: float32(best.Score)}}
		}
		return nil
	})
	if err != nil {
		return 0, "", err
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

// Save returns each owned block's vectors and index, and the shared scale
// and early-stopping state.
func (t *roundTrainer) Save() ([][]byte, []byte, error) {
	state := make([][]byte, len(t.mine))
	for q, b := range t.mine {
		e := binary.LittleEndian.AppendUint64(nil, math.Float64bits(b.sq))
		for _, v := range b.paid {
			e = binary.LittleEndian.AppendUint64(e, math.Float64bits(v))
		}
		e = b.vec.AppendBinary(e)
		if b.lsh != nil {
			e = b.lsh.AppendBinary(e)
		}
		if b.graph != nil {
			e = b.graph.AppendBinary(e)
		}
		if b.best != nil {
			e = b.best.AppendBinary(append(e, 1))
		} else {
			e = append(e, 0)
		}
		state[q] = e
	}
	shared := binary.LittleEndian.AppendUint64(nil, math.Float64bits(t.scale))
	shared = binary.LittleEndian.AppendUint64(shared, math.Float64bits(t.owed))
	shared = binary.LittleEndian.AppendUint64(shared, uint64(t.epochs))
	shared = binary.LittleEndian.AppendUint64(shared, math.Float64bits(t.bestF1))
	shared = binary.LittleEndian.AppendUint64(shared, math.Float64bits(t.bestScale))
	shared = binary.LittleEndian.AppendUint64(shared, uint64(t.sinceBest))
	return state, shared, nil
}

// decodeBlock restores block b from its saved state.
func (t *roundTrainer) decodeBlock(b *classBlock, e []byte) error {
	if len(e) < 8 {
		return errors.New("memoir: block state truncated")
	}
	b.sq = math.Float64frombits(binary.LittleEndian.Uint64(e))
	e = e[8:]
	if len(e) < 8*len(b.classes) {
		return errors.New("memoir: block state truncated")
	}
	for k := range b.paid {
		b.paid[k] = math.Float64frombits(binary.LittleEndian.Uint64(e[8*k:]))
	}
	var err error
	if b.vec, e, err = mips.DecodeVectors(e[8*len(b.classes):], t.x.Cols); err != nil {
		return err
	}
	if b.vec.Len() != len(b.classes) {
		return fmt.Errorf("memoir: block state of %d classes, want %d", b.vec.Len(), len(b.classes))
	}
	switch t.p.Index {
	case "lsh":
		if b.lsh, e, err = mips.DecodeLSH(t.hasher, b.vec, e); err != nil {
			return err
		}
	case "graph":
		if b.graph, e, err = mips.DecodeGraph(b.vec, t.p.Degree, t.p.Ef, e); err != nil {
			return err
		}
	}
	if len(e) < 1 {
		return errors.New("memoir: block state truncated")
	}
	if e[0] == 1 {
		if b.best, e, err = mips.DecodeVectors(e[1:], t.x.Cols); err != nil {
			return err
		}
	} else {
		e = e[1:]
	}
	if len(e) != 0 {
		return errors.New("memoir: block state has trailing bytes")
	}
	for b.zeroFrom < b.vec.Len() && !b.vec.IsZero(b.zeroFrom) {
		b.zeroFrom++
	}
	return nil
}

// Finish encodes every owned block as a linear.Block of its weights
// s·v (the best epoch's with --heldout).
func (t *roundTrainer) Finish() ([]runner.Result, error) {
	out := make([]runner.Result, len(t.mine))
	dense := make([]float64, t.x.Cols)
	for q, b := range t.mine {
		vec, scale := b.vec, t.scale
		if b.best != nil {
			vec, scale = b.best, t.bestScale
		}
		var lb linear.Block
		for k, l := range b.classes {
			idx, val := vec.Vector(k)
			for e, j := range idx {
				w := scale * val[e]
				if math.IsNaN(w) || math.IsInf(w, 0) {
					return nil, fmt.Errorf("class %d: training diverged: non-finite weight", l)
				}
				dense[j] = w
			}
			lb.AppendSparse(l, idx, dense, t.p.Prune)
			for _, j := range idx {
				dense[j] = 0
			}
		}
		enc, err := lb.MarshalBinary()
		if err != nil {
			return nil, err
		}
		out[q] = runner.Result{Unit: b.unit, Data: enc}
	}
	return out, nil
}

// stateBytes is the memory of this rank's class blocks: their vectors, the
// best epoch's, and their indexes.
func (t *roundTrainer) stateBytes() int {
	n := 0
	for _, b := range t.mine {
		n += b.vec.Bytes()
		if b.best != nil {
			n += b.best.Bytes()
		}
		if b.lsh != nil {
			n += b.lsh.Bytes()
		}
		if b.graph != nil {
			n += b.graph.Bytes()
		}
	}
	return n
}

// scoredPerSearch is the mean number of classes an index search scored.
func (t *roundTrainer) scoredPerSearch() float64 {
	var scored, searched int64
	t.searchers.Each(func(s *searcher) { scored, searched = scored+s.scored, searched+s.searched })
	return float64(scored) / float64(max(searched, 1))
}

// nnz is the number of stored weights of this rank's classes.
func (t *roundTrainer) nnz() int {
	n := 0
	for _, b := range t.mine {
		n += b.vec.NNZ()
	}
	return n
}
