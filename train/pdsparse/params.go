package pdsparse

import (
	"flag"
	"fmt"
	"log/slog"
	"math"

	"xmc/data"
	"xmc/model/linear"
	"xmc/train"
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
	// BatchSize is the rows of a round: the ranks search their classes
	// for the rows of a batch against W as it was at the round's start,
	// then apply every row's step in row order, each step sized for the
	// rows of the batch that share its classes (see curvatures).
	BatchSize int `json:"batch_size"`
	// ClassesPerUnit is the classes of a unit at most, a block of classes
	// whose weights one rank owns (by default, see forData); the units
	// are as few as it allows, rounded up to a multiple of 64 (see
	// unitCount), and the classes are dealt to them by frequency in turn,
	// so that units carry like work. The weights do not depend on it:
	// only how they are dealt to ranks.
	ClassesPerUnit int `json:"classes_per_unit"`
	// MaxSelect is the number of negative classes a row's search adds to
	// its active set at most (by default, see forData).
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

// DefaultParams returns the defaults: the reference program's λ = 0.1
// with C = 7 rather than its C = 1, 10 epochs, batches of 512 rows, rows
// scaled to unit norm and no bias (the Crammer–Singer model has none).
// docs/algorithms/pdsparse.md gives the measurements behind C and the
// batch size.
func DefaultParams() Params {
	return Params{Cost: 7, Lambda: 0.1, Epochs: 10, BatchSize: 512, EarlyStop: train.EarlyStop{Patience: 3},
		Preprocess: linear.Preprocess{Normalize: true}}
}

// forData returns p with the defaults that depend on the training rows ds
// filled, for the parameters whose flag set reports the user did not set:
// MaxSelect, the mean number of labels per row (at least 1), and
// ClassesPerUnit (see classesPerUnit).
func (p Params) forData(ds *data.Dataset, set func(flag string) bool) Params {
	if !set("max-select") {
		p.MaxSelect = max(1, int(math.Round(float64(ds.Y.NNZ())/float64(max(1, ds.Y.Rows)))))
	}
	if !set("classes-per-unit") {
		p.ClassesPerUnit = classesPerUnit(ds.L())
	}
	return p
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
	case p.BatchSize < 1:
		return fmt.Errorf("--batch-size must be at least 1, got %d", p.BatchSize)
	case p.ClassesPerUnit < 1:
		return fmt.Errorf("--classes-per-unit must be at least 1, got %d", p.ClassesPerUnit)
	case p.MaxSelect < 1:
		return fmt.Errorf("--max-select must be at least 1, got %d", p.MaxSelect)
	case !(p.Prune >= 0) || math.IsInf(p.Prune, 0):
		return fmt.Errorf("--prune must be 0 or more, got %v", p.Prune)
	}
	return p.EarlyStop.Validate()
}

// Trainer is the Trainer of --algo pdsparse.
type Trainer struct{ p Params }

// New returns the Trainer of --algo pdsparse, with the default hyper-parameters.
func New() train.Trainer { return &Trainer{p: DefaultParams()} }

// Flags registers PD-Sparse's hyper-parameters.
func (a *Trainer) Flags(fs *flag.FlagSet) {
	p := &a.p
	fs.Float64Var(&p.Cost, "cost", p.Cost, "misclassification cost C")
	fs.Float64Var(&p.Lambda, "lambda", p.Lambda, "weight λ of the L1 regulariser")
	fs.IntVar(&p.Epochs, "epochs", p.Epochs, "passes over the rows")
	fs.IntVar(&p.BatchSize, "batch-size", p.BatchSize, "rows per round (searched against the weights of the round's start, stepped together)")
	fs.IntVar(&p.ClassesPerUnit, "classes-per-unit", p.ClassesPerUnit, "classes per unit at most, a block of classes one rank owns, dealt to the units by frequency in turn; the units are as few as it allows, rounded up to a multiple of 64 so that 2, 4, ... 64 ranks own as many each (default: the classes / 64, at most 256); the weights do not depend on it")
	fs.IntVar(&p.MaxSelect, "max-select", p.MaxSelect, "negative classes a row's search adds at most (default: the mean labels per row)")
	fs.Float64Var(&p.Prune, "prune", p.Prune, "drop trained weights of smaller magnitude")
	p.EarlyStop.Flags(fs, "accuracy")
	train.PreprocessFlags(fs, &p.Preprocess, false)
}

// Prepare checks the parameters and builds the round trainer. Every rank
// holds the rows, the whole active sets of the rows it is the home of and
// its own classes' part of the others', and the weights of the classes it
// owns only.
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
	p = p.forData(kept, env.UserSet)
	if err := p.Validate(); err != nil {
		return nil, err
	}
	t, err := newRoundTrainer(p, kept, env.Comm, env.Pool)
	if err != nil {
		return nil, err
	}
	t.log = env.Log
	if held != nil {
		t.held, t.heldY = p.Apply(&held.X), held.Y
		env.Log.Info("pdsparse holds rows out to stop early", "heldout_rows", held.N(), "training_rows", kept.N(), "patience", p.Patience)
	}
	if err := train.LogUntrained(env.Log, data.LabelCounts(&kept.Y)); err != nil {
		return nil, err
	}
	// The rows a rank solves a round, on the mean over the rounds: it is
	// the home of a P-th of the rows.
	shareBound := train.MaxRowShare(t.p.BatchSize, t.comm.Size())
	return &train.Work{Kind: linear.Kind{}, Params: t.p, Units: len(t.blocks), Rounds: t,
		MaxRounds: p.Epochs * t.order.Batches, RoundName: "round",
		Done: func(log *slog.Logger) {
			if t.held.Rows > 0 {
				log.Info("pdsparse early stopping", "best_heldout_accuracy", fmt.Sprintf("%.2f", t.bestAcc))
			}
			log.Info("pdsparse", "epochs", t.epochs, "mean_active_classes", fmt.Sprintf("%.2f", t.meanActive()),
				"weights_owned", t.nnz(), "max_select", t.p.MaxSelect, "search_shares", t.parts,
				// Each round a rank receives, for each of its home rows,
				// 20 bytes for each active class and at most 2 ×
				// max-select candidates from each rank, then, for each
				// row whose active set held or holds one of its classes,
				// the new variables of its classes, 12 bytes a class.
				"report_bytes_per_round", t.reportBytes/int64(max(t.rounds, 1)),
				"report_bytes_bound", int64(shareBound)*train.RoundEntryBytes*int64(math.Round(t.meanActive())+float64(2*t.p.MaxSelect*t.comm.Size())),
				"solution_bytes_per_round", t.solutionBytes/int64(max(t.rounds, 1)))
		},
		Stats: func() map[string]float64 { return t.stats() }}, nil
}
