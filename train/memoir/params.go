package memoir

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"

	"xmc/data"
	"xmc/mips"
	"xmc/model/linear"
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
	// Tables, Bits and Probes shape the LSH: tables, bits a table (by
	// default mips.BitsFor the classes of a block: see withDefaults) and
	// buckets probed beyond a query's own per table.
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

// l1Lambda is λ's default with --regularizer l1, which makes models a
// fraction of the ℓ2 model's bytes at a cost in accuracy.
const l1Lambda = 1e-3

// DefaultParams returns the defaults (see the flags' help): λ = 1e-6,
// η₀ = 1 with η_step = 0.001, 3 epochs, 16 class blocks, 8 LSH tables with
// one probe each, each measured against its neighbours on wordnet-mc and
// the other shared sets (docs/algorithms/memoir.md gives the figures).
func DefaultParams() Params {
	return Params{Regularizer: "l2", Lambda: 1e-6, Eta0: 1, EtaStep: 0.001, Index: "lsh", Tables: 8, Probes: 1,
		Degree: 8, Ef: 4, Epochs: 3, BatchSize: 64, ClassBlocks: 16, EarlyStop: train.EarlyStop{Patience: 5}, Preprocess: linear.Preprocess{Normalize: true}}
}

// withDefaults returns p with the defaults that depend on the data or on
// other parameters filled, for the parameters whose flag set reports the
// user did not set: Lambda, l1Lambda with the l1 regulariser (the default
// is l2's), and Bits, enough for 2 to 4 of the classes of a block of
// blockClasses a bucket (mips.BitsFor).
func (p Params) withDefaults(blockClasses int, set func(flag string) bool) Params {
	if p.Regularizer == "l1" && !set("lambda") {
		p.Lambda = l1Lambda
	}
	if !set("bits") {
		p.Bits = mips.BitsFor(blockClasses)
	}
	return p
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
	case p.Bits < 1 || p.Bits > mips.MaxBits:
		return fmt.Errorf("--bits must be 1 to %d, got %d", mips.MaxBits, p.Bits)
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

// New returns the Trainer of --algo memoir, with the default hyper-parameters.
func New() train.Trainer { return &Trainer{p: DefaultParams()} }

// Flags registers MEMOIR's hyper-parameters.
func (a *Trainer) Flags(fs *flag.FlagSet) {
	p := &a.p
	fs.StringVar(&p.Regularizer, "regularizer", p.Regularizer, "l2 (MEMOIR-ℓ2, Pegasos's shrink and projection) or l1 (MEMOIR-ℓ1, truncated SGD: smaller models)")
	fs.Float64Var(&p.Lambda, "lambda", p.Lambda, fmt.Sprintf("weight λ of the regulariser (with --regularizer l1 the default is %g)", l1Lambda))
	fs.Float64Var(&p.Eta0, "eta0", p.Eta0, "step η₀ of η_t = η₀ / (1 + η_step t), t the round")
	fs.Float64Var(&p.EtaStep, "eta-step", p.EtaStep, "decay η_step of the step")
	fs.StringVar(&p.Index, "index", p.Index, "search for a row's most violating class, per class block: lsh (SimpleLSH with norm ranging), graph (small-world graph of inner products) or exact (every class scored)")
	fs.IntVar(&p.Tables, "tables", p.Tables, "LSH hash tables per class block")
	fs.IntVar(&p.Bits, "bits", p.Bits, "LSH bits per table (default: 2 to 4 classes of a class block a bucket)")
	fs.IntVar(&p.Probes, "probes", p.Probes, "LSH buckets probed per table beyond the query's own (one bit flipped each)")
	fs.IntVar(&p.Degree, "degree", p.Degree, "graph out-edges per class")
	fs.IntVar(&p.Ef, "ef", p.Ef, "graph search width (best classes kept while walking)")
	fs.IntVar(&p.Epochs, "epochs", p.Epochs, "passes over the rows")
	fs.IntVar(&p.BatchSize, "batch-size", p.BatchSize, "rows per round (searched against the weights of the round's start)")
	fs.IntVar(&p.ClassBlocks, "class-blocks", p.ClassBlocks, "blocks the classes are dealt into, each with its own index, whatever the ranks: ranks own blocks, so give at least one per rank, and a number the ranks divide (each round waits for the rank of most blocks); more blocks score more classes a row (more accuracy, more time)")
	fs.Float64Var(&p.Prune, "prune", p.Prune, "drop trained weights of smaller magnitude")
	p.EarlyStop.Flags(fs, "macro-F1")
	train.PreprocessFlags(fs, &p.Preprocess, false)
}

// Prepare checks the parameters and builds the round trainer. Every rank
// holds the rows; it holds the vectors and indexes of its blocks only.
func (a *Trainer) Prepare(env train.Env, ds *data.Dataset) (*train.Work, error) {
	p := a.p
	p.Seed = env.Seed
	p.Bias = false
	if err := p.EarlyStop.Validate(); err != nil {
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
	// Validate reports a --class-blocks below 1 once the defaults are in.
	blocks := train.DealtBlocks(counts, max(1, p.ClassBlocks))
	p = p.withDefaults(len(blocks[0]), env.UserSet)
	if err := p.Validate(); err != nil {
		return nil, err
	}
	p.ClassBlocks = len(blocks)
	t := &roundTrainer{p: p, comm: env.Comm, pool: env.Pool, log: env.Log, x: p.Apply(&kept.X), y: kept.Y.Clone(), blocks: blocks}
	if t.hasher, err = mips.NewHasher(t.p.Tables, t.p.Bits, p.Seed); err != nil {
		return nil, err
	}
	t.order = train.NewEpochBatches(t.x.Rows, p.BatchSize, p.Seed)
	if held != nil {
		t.held, t.heldY = p.Apply(&held.X), held.Y
		env.Log.Info("memoir holds rows out to stop early", "heldout_rows", held.N(), "training_rows", kept.N(), "patience", p.Patience)
	}
	shareBound := train.MaxRowShare(t.p.BatchSize, t.comm.Size()) // the rows a rank decides
	reportBound := int64(shareBound) * train.RoundEntryBytes * int64(t.comm.Size()+int(math.Ceil(float64(t.y.NNZ())/float64(t.y.Rows))))
	if t.p.Regularizer == "l2" && t.comm.Size() > 1 {
		reportBound += int64(len(t.blocks)) * train.RoundEntryBytes // the blocks' norms
	}
	return &train.Work{Kind: linear.Kind{}, Params: t.p, Units: len(t.blocks), Rounds: t,
		MaxRounds: p.Epochs * t.order.Batches, RoundName: "round",
		Done: func(log *slog.Logger) {
			log.Info("memoir", "epochs", t.epochs, "regularizer", t.p.Regularizer, "index", t.p.Index,
				"tables", t.p.Tables, "bits", t.p.Bits, "class_blocks", len(t.blocks),
				"weights_owned", t.nnz(), "block_state_bytes", t.stateBytes(), "violating_rows_last_epoch", t.violations,
				"scored_per_row_block", fmt.Sprintf("%.1f", t.scoredPerSearch()),
				// Each round a rank receives, for each row of its share,
				// 20 bytes for the rival of each rank and the score of
				// each label, and with ℓ2 20 bytes for each block's norm;
				// then 16 bytes for each step of every row.
				"report_bytes_per_round", t.reportBytes/int64(max(t.rounds, 1)),
				"report_bytes_bound", reportBound,
				"step_bytes_per_round", t.stepBytes/int64(max(t.rounds, 1)))
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
