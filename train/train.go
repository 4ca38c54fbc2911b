// Package train is the contract between xmc's trainers and the runtime
// that runs them: a Trainer registers its hyper-parameter flags and
// prepares, on each rank, the Work the runner runs (independent units or
// synchronous rounds) and the kind of model it makes; Env is what it may
// use of the rank. Beside the contract are the parts several trainers
// share: held-out rows for early stopping (EarlyStop), the rows of each
// round (EpochBatches), the exchange of a round's reports between ranks
// (RoundEntry, BatchReports, AllGather) and label blocks (LabelBlocks).
//
// Each algorithm is a package below this one (train/forest, train/dismec,
// train/ppdsparse, train/pdsparse, train/memoir, train/plt, train/lsq), and
// train/registry lists them.
package train

import (
	"flag"
	"fmt"
	"log/slog"

	"xmc/data"
	"xmc/model"
	"xmc/model/linear"
	"xmc/mpi"
	"xmc/numa"
	"xmc/runner"
)

// Trainer is one algorithm's hyper-parameters, set by its flags, and the
// way it prepares its training.
type Trainer interface {
	// Flags registers the trainer's hyper-parameter flags on fs, bound to
	// the trainer's parameters, with their defaults.
	Flags(fs *flag.FlagSet)
	// Prepare checks the parameters, resolves those that depend on the
	// data, and builds on one rank the trainer's data replicas and its
	// work: what the runner runs. In-process ranks share the trainer, so
	// Prepare must not modify it.
	Prepare(env Env, ds *data.Dataset) (*Work, error)
}

// Env is what a trainer may use of the rank it prepares on.
type Env struct {
	// Pool runs the rank's workers: replicas go one per NUMA domain, and
	// per-worker scratch is made by each worker (numa.PerWorker).
	Pool *numa.Pool
	// Comm connects the ranks, for trainers of synchronous rounds.
	Comm mpi.Comm
	// Log is the rank's logger.
	Log *slog.Logger
	// Seed is --seed: every random choice derives from it and the id of
	// what is drawn, never from the rank or worker.
	Seed uint64
	// Set reports whether the user set the flag called name on the
	// command line (nil: none was set). It is how every trainer resolves
	// a default that depends on the data or on another parameter: its
	// Prepare replaces the value of each such parameter whose flag the
	// user did not set (see UserSet), and takes an explicit value as
	// given. No parameter uses a magic value (such as 0) to mean "decide".
	Set func(name string) bool
	// Load reads another data file of the run (a held-out set) as the
	// training data was read, with its feature and label dimensions.
	Load func(path string) (*data.Dataset, error)
	// Labels is --label-range: the labels a one-vs-all trainer trains
	// (the zero value: every label; see SelectLabels). A trainer whose
	// labels are coupled fails on any other.
	Labels LabelRange
}

// UserSet reports whether the user set the flag called name (see Set).
func (e Env) UserSet(name string) bool { return e.Set != nil && e.Set(name) }

// Work is a prepared training: independent units (Unit is set) or
// synchronous rounds (Rounds is set), and the model they make.
type Work struct {
	// Kind is the kind of model the units make up.
	Kind model.Kind
	// Params are the resolved hyper-parameters, recorded in the model
	// header as JSON: with the seed and the data they determine the model.
	Params any
	// Units is the number of units of the model, identified 0..Units-1.
	Units int
	// Unit computes one unit on one worker, for work of independent units.
	Unit runner.WorkFunc
	// Help, if set with Unit, is called on each worker that finds no unit
	// left, to help the workers still computing theirs (runner.Plan.Help).
	Help func(w numa.Worker) error
	// Team, set instead of Unit, computes one unit with all the rank's
	// workers together (see runner.TeamFunc).
	Team runner.TeamFunc
	// Schedule is the schedule of the units unless the user chose one
	// (runner.ScheduleStatic or runner.ScheduleDynamic).
	Schedule string
	// Weight, if set, is what a unit counts for in progress reports (the
	// labels of a label block), in units of Kind.Axis(); each unit counts
	// 1 otherwise.
	Weight func(u int) int
	// Cost, if set, estimates what a unit costs to compute relative to the
	// others, for the dynamic schedule's chunks (see runner.Plan.Cost).
	Cost func(u int) float64
	// Rounds trains in synchronous rounds, for work of coupled units; its
	// units are Units, and MaxRounds bounds the rounds.
	Rounds    runner.RoundTrainer
	MaxRounds int
	// RoundName names a round in messages ("round", "epoch").
	RoundName string
	// Done, if set, logs what the trainer learnt of its work once training
	// ended on this rank (iterations, unconverged labels).
	Done func(log *slog.Logger)
	// Stats, if set, returns figures of this rank's training, which the
	// rank logs and the run summary records (job.Summary.TrainerStats, one
	// map per rank), after Done.
	Stats func() map[string]float64
	// Range describes the labels trained, for a training of a label
	// range (Env.Labels); nil for a training of every label.
	Range *model.LabelRange
}

// Check reports whether w describes one shape of work completely.
func (w *Work) Check() error {
	switch {
	case w.Kind == nil:
		return fmt.Errorf("work has no model kind")
	case btoi(w.Unit != nil)+btoi(w.Team != nil)+btoi(w.Rounds != nil) != 1:
		return fmt.Errorf("work must have exactly one of a unit function, a team function or a round trainer")
	case w.Help != nil && w.Unit == nil:
		return fmt.Errorf("work has a help function without a unit function")
	case w.Rounds != nil && w.MaxRounds < 1:
		return fmt.Errorf("round work with %d rounds at most", w.MaxRounds)
	case w.Units < 0:
		return fmt.Errorf("work of %d units", w.Units)
	}
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// PreprocessFlags registers --normalize and, with bias, --bias: the row
// preprocessing of the trainers of linear weights, which their models
// record for prediction.
func PreprocessFlags(fs *flag.FlagSet, p *linear.Preprocess, bias bool) {
	fs.BoolVar(&p.Normalize, "normalize", p.Normalize, "scale rows to unit L2 norm, in training and prediction")
	if bias {
		fs.BoolVar(&p.Bias, "bias", p.Bias, "append a constant bias feature")
	}
}
