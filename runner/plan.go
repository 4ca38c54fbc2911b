// Package runner schedules a training's work over the ranks of a job and
// the pinned workers of each rank, and knows nothing of what the work is.
//
// A trainer's work comes in one of two shapes. Independent units (a tree of
// a forest, a block of labels of a one-vs-all model) are scheduled by a
// [Plan]: each unit is computed once, by one worker of one rank, and its
// result is an opaque byte slice. Synchronous rounds (mini-batches or
// epochs of a multi-class trainer whose classes are coupled through each
// sample) are run by [Rounds]: every rank takes part in every round, and a
// round may use the communicator's collectives. Both give the trainer the
// same runtime: progress across ranks, the time limit and signals honoured
// (between units, or at round boundaries), a checkpoint saved at most
// every so often and resumed from, and the communication accounting of
// the communicator they run on. [Stream] hands the ranks' results to one
// rank in unit order, holding a bounded number of bytes at once, to write
// the model; [Gather] collects them all on one rank.
package runner

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"xmc/mpi"
	"xmc/numa"
)

// WorkFunc computes one unit on worker w and returns its encoded result. It
// must depend only on the unit (and the read-only inputs it closes over), not
// on the worker, rank or order, so that results are the same for any number
// of ranks, threads and NUMA domains.
type WorkFunc func(w numa.Worker, unit int) ([]byte, error)

// TeamFunc computes one work unit with every worker of the rank's pool
// together: it is called outside the pool, one unit at a time, and runs
// its parallel parts with Pool.Run. For work of fewer units than workers
// (a forest of few trees), where a unit per worker would leave workers
// idle. Its result must not depend on the number of workers.
type TeamFunc func(unit int) ([]byte, error)

// Plan describes how Run schedules a set of units.
type Plan struct {
	// Units is the number of work units, identified 0..Units-1.
	Units int
	// Kind names a unit in messages ("tree", "label block").
	Kind string
	// Comm connects the ranks.
	Comm mpi.Comm
	// Schedule deals units to ranks: ScheduleStatic (the default when
	// empty) or ScheduleDynamic.
	Schedule string
	// Pool runs this rank's units: its workers pull units from a shared
	// queue, so a slow unit does not hold up the others.
	Pool *numa.Pool
	// Log receives progress lines; only rank 0 logs progress.
	Log *slog.Logger
	// Progress, if not nil, is told on rank 0 of every unit done by any rank.
	Progress Progress
	// Weight, if set, is what unit u counts for in progress reports (the
	// labels of a label block); each unit counts 1 otherwise.
	Weight func(u int) int
	// Cost, if set, estimates what unit u costs to compute, relative to
	// the other units (a label block: its labels' positives). The dynamic
	// schedule's chunks then hold a share of the cost left rather than of
	// the units left: units dealt costly first otherwise put the costliest
	// together in the first chunk, which one rank then computes while the
	// others run out of work. Nil: units cost alike.
	Cost func(u int) float64
	// Checkpoint, if not empty, is a directory where each finished unit is
	// saved atomically and from which a rerun of the same Fingerprint loads
	// finished units instead of recomputing them.
	Checkpoint string
	// CheckpointEvery is how long a finished unit may wait before it is
	// saved (0: saved at once). Units waiting together are saved together.
	// A run stopped by a signal or its time limit saves every finished
	// unit before Run returns, so only a crash loses finished work, at
	// most this much; a run that finished every unit does not save the
	// ones still waiting: its model is written next.
	CheckpointEvery time.Duration
	// Fingerprint identifies the run's data and hyper-parameters; a
	// checkpoint written under another fingerprint is refused.
	Fingerprint string
	// Help, if set, is called by Run on each worker that finds no unit left
	// to take, while other workers may still compute theirs, so that it
	// helps them (a forest's workers help split the nodes of the trees
	// still growing). It returns once it has nothing left to help with; an
	// error ends the run as a unit's does.
	Help func(w numa.Worker) error
	// OnIdle, if set, is called once this rank has no unit left to compute,
	// before it waits for the other ranks, with the time the rank's workers
	// waited for units from rank 0 (the dynamic schedule's cost): the time
	// until then is the rank's busy time, which shows the load balance.
	OnIdle func(scheduling time.Duration)
}

// Schedules of Plan.Schedule.
const (
	// ScheduleStatic gives unit u to rank u mod size: no messages, and
	// ranks get an equal number of units ± 1 and, when unit costs drift
	// with the id, a similar mix of cheap and costly ones.
	ScheduleStatic = "static"
	// ScheduleDynamic has rank 0 hand out units in id order to whichever
	// rank asks next (a goroutine of rank 0 answers, blocked in a receive
	// between requests, and rank 0's own workers take units from the same
	// queue): ranks whose units turn out cheap take more of them. It costs
	// a request and a reply per chunk of units (see coordinator); units
	// should be costly first.
	ScheduleDynamic = "dynamic"
)

// Result is one finished unit.
type Result struct {
	Unit int
	Data []byte
}

// tagProgress marks the messages by which ranks tell rank 0 of finished
// units, and tagAllDone rank 0's word that every rank has finished. Tags
// below 1000 are left to trainers.
const (
	tagProgress = 1000
	tagAllDone  = 1001
	tagRequest  = 1002 // dynamic schedule: a rank asks rank 0 for a unit
	tagAssign   = 1003 // dynamic schedule: rank 0's answer
)

// Run computes this rank's units, each on one of the pool's workers (then
// Help, if set), and returns their results in unit order. It stops taking
// new units once ctx is done (a signal or the time limit) and then returns
// the finished ones, kept in the checkpoint directory if any so that a
// rerun resumes from them, with stopped true if units were left; it logs
// where they were kept and why it stopped (the cause of ctx).
func (p Plan) Run(ctx context.Context, work WorkFunc) (results []Result, stopped bool, err error) {
	return p.run(ctx, func(take taker) error {
		return p.Pool.Run(func(w numa.Worker) error {
			compute := func(u int) ([]byte, error) { return work(w, u) }
			for {
				more, err := take(compute)
				if err != nil {
					return err
				}
				if !more {
					break
				}
			}
			if p.Help != nil {
				return p.Help(w)
			}
			return nil
		})
	})
}

// RunTeam is Run for units that the whole pool computes together, one at
// a time.
func (p Plan) RunTeam(ctx context.Context, work TeamFunc) (results []Result, stopped bool, err error) {
	return p.run(ctx, func(take taker) error {
		for {
			if more, err := take(work); err != nil || !more {
				return err
			}
		}
	})
}

// taker takes the next unit of the rank, if any and not stopped, computes
// it with compute and records its result; it reports whether to go on.
type taker func(compute func(unit int) ([]byte, error)) (bool, error)

// run is Run and RunTeam: compute calls take until it reports no more
// units, from as many goroutines as it likes.
func (p Plan) run(ctx context.Context, compute func(take taker) error) ([]Result, bool, error) {
	rank := p.Comm.Rank()
	ck, err := openCheckpoint(p.Checkpoint, p.Fingerprint, rank)
	if err != nil {
		return nil, false, err
	}
	defer ck.close()
	// results holds the units loaded from the checkpoint, then computed ones.
	d, results, err := p.dealer(ctx, ck)
	if err != nil {
		return nil, false, err
	}
	resumedWeight := 0
	for _, r := range results {
		resumedWeight += p.weight(r.Unit)
	}
	tracker := p.startTracker(resumedWeight, p.Schedule == ScheduleDynamic)
	d.start(tracker)
	saves := startSaver(ck, p.CheckpointEvery)
	var mu sync.Mutex
	var interrupted atomic.Bool
	runErr := compute(func(work func(int) ([]byte, error)) (bool, error) {
		if ctx.Err() != nil {
			interrupted.Store(true)
			return false, nil
		}
		if err := saves.failed(); err != nil {
			return false, err
		}
		u, ok, err := d.next()
		if err != nil || !ok {
			return false, err
		}
		data, err := work(u)
		if err != nil {
			return false, fmt.Errorf("%s %d: %w", p.Kind, u, err)
		}
		saves.add(u, data)
		mu.Lock()
		results = append(results, Result{Unit: u, Data: data})
		mu.Unlock()
		return true, tracker.unitDone(p.weight(u))
	})
	if runErr != nil {
		saves.close(true) // keep the finished units for a rerun
		return nil, false, runErr
	}
	if p.OnIdle != nil {
		p.OnIdle(d.waited())
	}
	left, err := d.close()
	if err == nil {
		err = tracker.finish()
	}
	if err != nil {
		saves.close(true)
		return nil, false, err
	}
	if err := p.saveWaiting(saves, interrupted.Load() && left); err != nil {
		return nil, false, err
	}
	slices.SortFunc(results, func(a, b Result) int { return cmp.Compare(a.Unit, b.Unit) })
	stopped := interrupted.Load() && left
	if stopped {
		logStop(p.Log, ctx, p.Checkpoint, "rank", rank, p.Kind+"s_finished", len(results))
	}
	return results, stopped, nil
}

// dealer returns the dealer of p's schedule and the units this rank
// resumes from the checkpoint.
func (p Plan) dealer(ctx context.Context, ck *checkpoint) (dealer, []Result, error) {
	var d dealer
	var results []Result
	var err error
	switch p.Schedule {
	case ScheduleStatic, "":
		d, results, err = p.staticDealer(ck)
	case ScheduleDynamic:
		d, results, err = p.dynamicDealer(ctx, ck)
	default:
		err = fmt.Errorf("schedule %q: want %s or %s", p.Schedule, ScheduleStatic, ScheduleDynamic)
	}
	if err == nil && len(results) > 0 {
		p.Log.Info("resuming from checkpoint", "dir", p.Checkpoint, p.Kind+"s", len(results))
	}
	return d, results, err
}

// logStop logs that training stopped before its end, why (the cause of
// ctx), and where its finished work went; args add what was done.
func logStop(log *slog.Logger, ctx context.Context, checkpoint string, args ...any) {
	where := "not saved: no checkpoint directory"
	if checkpoint != "" {
		where = "saved in " + checkpoint + "; rerun the same command to resume"
	}
	why := "another rank stopped" // ranks agree to stop together
	if cause := context.Cause(ctx); cause != nil {
		why = cause.Error()
	}
	log.Warn("training stopped", append([]any{"why", why, "finished_work", where}, args...)...)
}

// saveWaiting ends the saver. The units still waiting to be saved are
// saved if any rank stopped with units left (stopped on this rank), so that
// the rerun resumes from every finished unit; the ranks agree on it, as a
// rank may finish its own units while another is stopped.
func (p Plan) saveWaiting(saves *saver, stopped bool) error {
	if p.Checkpoint == "" {
		return saves.close(false)
	}
	flag := []int64{0}
	if stopped {
		flag[0] = 1
	}
	if err := p.Comm.AllreduceInt64(flag, mpi.Max); err != nil {
		saves.close(true)
		return err
	}
	return saves.close(flag[0] == 1)
}
