package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"xmc/atomicfile"
	"xmc/mpi"
	"xmc/numa"
)

// RoundTrainer is a trainer whose work runs in synchronous rounds in which
// every rank takes part: a mini-batch or an epoch of a trainer whose units
// (blocks of classes) are coupled through the samples, so that ranks
// exchange what a round needs through collectives. Its state is held by
// units, each owned by one rank (unit u by rank Owner(u, P)), plus a
// shared state, saved from rank 0 and given whole to every rank on
// resuming; from them alone, with the round number, training continues
// exactly as it would have, which makes the model independent of how often
// it was stopped and resumed.
type RoundTrainer interface {
	// Start is called on every rank before the first round, with the
	// units this rank owns, in increasing order, and the round training
	// starts from: 0, or the round after the last one checkpointed. When
	// resuming, state holds the saved state of each owned unit and shared
	// the shared state, as Save returned them; on a fresh start both are
	// nil.
	Start(units []int, round int, state [][]byte, shared []byte) error
	// Round runs round r on every rank. Its parallel loops go to team,
	// the rank's workers held together for all the rounds (so that the
	// many short loops of a round cost no thread wake-ups), whose lead
	// calls Round. It may use the communicator's collectives, in the same
	// sequence on every rank, and must return the same done on every
	// rank: whether training is complete after round r.
	Round(ctx context.Context, r int, team *numa.Team) (done bool, err error)
	// Save returns the state of each owned unit, in the order Start gave
	// them, and the shared state, after the last round run. It is called
	// on every rank at once and may use the communicator's collectives, in
	// the same sequence on every rank: only rank 0's shared state is
	// saved, so a trainer whose ranks each hold a part of it gathers it
	// there.
	Save() (state [][]byte, shared []byte, err error)
	// Finish returns the model's encoded units that this rank owns, once
	// the rounds are over (complete or stopped). Its parallel loops go to
	// team, as the rounds' do: encoding every unit is work that grows with
	// the model, and would otherwise run on the lead alone while the
	// other workers wait.
	Finish(team *numa.Team) ([]Result, error)
}

// Rounds describes how Run trains a RoundTrainer.
type Rounds struct {
	// Units is the number of units the trainer's state is split into,
	// identified 0..Units-1, dealt to ranks as the static schedule deals
	// units. It must not depend on the number of ranks.
	Units int
	// Rounds bounds the rounds; training may end sooner (Round's done).
	Rounds int
	// Kind names a round in messages ("round", "epoch").
	Kind string
	// Comm connects the ranks.
	Comm mpi.Comm
	// Pool runs the rank's workers: held together in a numa.Team from the
	// first round to the last, its worker 0 leading the rounds.
	Pool *numa.Pool
	// Log receives the resume line, and a warning when some ranks own no
	// unit; only rank 0 logs them.
	Log *slog.Logger
	// Progress, if not nil, is told on rank 0 of every round done.
	Progress Progress
	// Checkpoint, if not empty, is a directory where the trainer's state
	// is saved at round boundaries, and from which a rerun of the same
	// Fingerprint resumes.
	Checkpoint string
	// CheckpointEvery is the least time between two saves (0: after every
	// round). A run stopped by a signal or its time limit saves its state
	// before Run returns, so only a crash loses rounds, at most this much.
	CheckpointEvery time.Duration
	// Fingerprint identifies the run's data and hyper-parameters; a
	// checkpoint written under another fingerprint is refused.
	Fingerprint string
	// AgreeEvery is about how far apart in time the ranks agree on
	// stopping and saving, a collective of its own: every round when 0,
	// else every so many rounds, their number doubled or halved at each
	// agreement to keep agreements about AgreeEvery apart. Short rounds
	// (a mini-batch) then do not pay a collective each; a signal or the
	// time limit is acted on at most about AgreeEvery late.
	AgreeEvery time.Duration
}

// maxAgreeRounds bounds the rounds between two agreements.
const maxAgreeRounds = 1 << 10

// Run trains t in rounds on every rank and returns the model's units this
// rank owns, in unit order. Between rounds the ranks agree on whether to
// stop (ctx done on any rank) and whether to save the state; a stopped run
// saves it, logs why, and returns the units trained so far with stopped
// true.
func (p Rounds) Run(ctx context.Context, t RoundTrainer) (results []Result, stopped bool, err error) {
	c := p.Comm
	ck, err := openCheckpoint(p.Checkpoint, p.Fingerprint, c.Rank())
	if err != nil {
		return nil, false, err
	}
	owned := OwnedUnits(p.Units, c.Rank(), c.Size())
	start, state, shared, err := p.resume(ck, owned)
	if err != nil {
		return nil, false, err
	}
	if err := t.Start(owned, start, state, shared); err != nil {
		return nil, false, err
	}
	if start > 0 && c.Rank() == 0 {
		p.Log.Info("resuming from checkpoint", "dir", p.Checkpoint, "round", start)
	}
	if c.Rank() == 0 {
		warnUnitBalance(p.Log, p.Units, c.Size())
	}
	report := func(done int) {
		if p.Progress != nil && c.Rank() == 0 {
			p.Progress.Done(done, p.Rounds)
		}
	}
	report(start)
	r := start
	err = p.Pool.Together(func(team *numa.Team) error {
		var err error
		if r, stopped, err = p.rounds(ctx, t, team, ck, owned, start, report); err != nil {
			return err
		}
		if p.Progress != nil && c.Rank() == 0 {
			p.Progress.Finish()
		}
		results, err = t.Finish(team)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	if stopped && c.Rank() == 0 {
		logStop(p.Log, ctx, p.Checkpoint, p.Kind+"s_done", r, "of_at_most", p.Rounds)
	}
	return results, stopped, nil
}

// minUnitBalance is the share of the ranks' time below which the units'
// deal to the ranks is worth a warning (see unitBalance).
const minUnitBalance = 0.95

// unitBalance returns the share of the ranks' time that units dealt
// cyclically to ranks ranks can keep busy, were every unit of the same
// cost: each round waits for the ranks that own the most units, so 16
// units on 10 ranks keep them busy 0.8 of the time at best.
func unitBalance(units, ranks int) float64 {
	most := (units + ranks - 1) / ranks
	return float64(units) / float64(ranks*most)
}

// warnUnitBalance warns when some of the ranks own no unit, or when the
// ranks own unequal numbers of units that keep them busy less than
// minUnitBalance of the rounds' time (see unitBalance).
func warnUnitBalance(log *slog.Logger, units, ranks int) {
	switch b := unitBalance(units, ranks); {
	case units < ranks:
		log.Warn("fewer units than ranks: some ranks own none and only take part in the rounds' exchanges",
			"units", units, "ranks", ranks)
	case b < minUnitBalance:
		log.Warn("the ranks own unequal numbers of units and each round waits for the busiest: "+
			"a number of ranks that divides the units would use them all", "units", units, "ranks", ranks,
			"busiest_rank_units", (units+ranks-1)/ranks, "busy_share_at_most", fmt.Sprintf("%.2f", b))
	}
}

// rounds runs the rounds from start on, on the lead of team, and returns
// the round it stopped before and whether it was stopped (ctx done on any
// rank) rather than complete.
func (p Rounds) rounds(ctx context.Context, t RoundTrainer, team *numa.Team, ck *checkpoint, owned []int, start int,
	report func(done int)) (int, bool, error) {
	c := p.Comm
	stopped := false
	lastSave, lastAgree := time.Now(), time.Now()
	every, next := 1, start // rounds between agreements, and the next one's
	r := start
	for ; r < p.Rounds; r++ {
		if r == next {
			// Agree on stopping and saving: ranks see the signal or the
			// time limit at different moments, and their save clocks
			// differ. Each rank proposes the rounds until the next
			// agreement; they take the fewest.
			flags := []int64{0, 0, -int64(p.nextEvery(every, r-start, time.Since(lastAgree)))}
			if ctx.Err() != nil {
				flags[0] = 1
			}
			if ck != nil && r > start && time.Since(lastSave) >= p.CheckpointEvery {
				flags[1] = 1
			}
			if err := c.AllreduceInt64(flags, mpi.Max); err != nil {
				return r, false, err
			}
			every, next, lastAgree = int(-flags[2]), r+int(-flags[2]), time.Now()
			if ck != nil && r > start && (flags[0] == 1 || flags[1] == 1) {
				if err := p.save(ck, t, owned, r); err != nil {
					return r, false, err
				}
				lastSave = time.Now()
			}
			if flags[0] == 1 {
				stopped = true
				break
			}
		}
		done, err := t.Round(ctx, r, team)
		if err != nil {
			return r, false, fmt.Errorf("%s %d: %w", p.Kind, r, err)
		}
		report(r + 1)
		if done {
			r++
			break
		}
	}
	return r, stopped, nil
}

// nextEvery returns the rounds this rank proposes until the next agreement,
// after every rounds that took elapsed (done rounds run so far): double
// while they took under half of AgreeEvery, half while they took over
// twice it.
func (p Rounds) nextEvery(every, done int, elapsed time.Duration) int {
	switch {
	case p.AgreeEvery <= 0 || done == 0:
		return 1
	case elapsed < p.AgreeEvery/2:
		return min(2*every, maxAgreeRounds)
	case elapsed > 2*p.AgreeEvery:
		return max(every/2, 1)
	}
	return every
}

// A round checkpoint holds, beside FINGERPRINT, a directory round-R per
// saved round R (the round training resumes from) with the units' states,
// in a file per rank as unit checkpoints are (see checkpoint: a file per
// unit would be 10^4-10^5 files a round at the scale of XMC data), and the
// shared state, and ROUND naming the newest complete one. Each rank writes
// its own units; ROUND is written only once every rank has written its
// part, and older rounds are removed only once every rank has updated
// ROUND. So after a crash at any point every rank's ROUND names a complete
// round, the oldest of them is still on disk, and the ranks resume from it,
// each finding its units in whichever rank's file holds them.
const roundFile = "ROUND"

func roundDir(dir string, r int) string { return filepath.Join(dir, fmt.Sprintf("round-%09d", r)) }

func roundSharedFile(dir string, r int) string { return filepath.Join(roundDir(dir, r), "shared.bin") }

// readRound returns the round ROUND names, or 0 if there is none.
func readRound(dir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dir, roundFile))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("checkpoint: %w", err)
	}
	r, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || r < 1 {
		return 0, fmt.Errorf("checkpoint %s: %s holds %q, not a round number", dir, roundFile, b)
	}
	return r, nil
}

// resume agrees with the other ranks on the round to resume from and loads
// this rank's units' state and the shared state saved after it (nil and
// round 0 without a checkpoint or on a fresh start).
func (p Rounds) resume(ck *checkpoint, owned []int) (int, [][]byte, []byte, error) {
	c := p.Comm
	round := 0
	var err error
	if ck != nil {
		if round, err = readRound(ck.dir); err != nil {
			return 0, nil, nil, err
		}
	}
	// Ranks may disagree after a crash between their updates of ROUND:
	// the oldest round they name is complete and still on disk.
	agreed := []int64{int64(round)}
	if err := c.AllreduceInt64(agreed, mpi.Min); err != nil {
		return 0, nil, nil, err
	}
	round = int(agreed[0])
	if round == 0 {
		return 0, nil, nil, nil
	}
	saved := &checkpoint{dir: roundDir(ck.dir, round), rank: c.Rank()}
	if err := saved.scanAll(); err != nil {
		return 0, nil, nil, fmt.Errorf("checkpoint round %d: %w", round, err)
	}
	state := make([][]byte, len(owned))
	for i, u := range owned {
		data, ok, err := saved.load(u)
		if err == nil && !ok {
			err = fmt.Errorf("unit %d not found in %s (a checkpoint on node-local disks resumes only with the same number of ranks)", u, saved.dir)
		}
		if err != nil {
			return 0, nil, nil, fmt.Errorf("checkpoint round %d: %w", round, err)
		}
		state[i] = data
	}
	var shared []byte
	if c.Rank() == 0 {
		if shared, err = os.ReadFile(roundSharedFile(ck.dir, round)); err != nil {
			// The other ranks wait in Bcast: end the job with the reason.
			return 0, nil, nil, fmt.Errorf("checkpoint round %d: %w", round, err)
		}
	}
	if shared, err = c.Bcast(shared, 0); err != nil {
		return 0, nil, nil, err
	}
	return round, state, shared, nil
}

// save writes the trainer's state after the rounds before round: every
// rank its units, rank 0 the shared state, then ROUND, then removes the
// round saved before, each step once every rank has done the one before.
func (p Rounds) save(ck *checkpoint, t RoundTrainer, owned []int, round int) error {
	c := p.Comm
	// Save first: it may use collectives, which every rank must reach.
	state, shared, err := t.Save()
	prev, rerr := readRound(ck.dir)
	if err == nil {
		err = rerr
	}
	if err == nil && len(state) != len(owned) {
		err = fmt.Errorf("checkpoint: the trainer saved %d units, this rank owns %d", len(state), len(owned))
	}
	if err == nil {
		err = os.MkdirAll(roundDir(ck.dir, round), 0o755)
	}
	if err == nil {
		results := make([]Result, len(owned))
		for i, u := range owned {
			results[i] = Result{Unit: u, Data: state[i]}
		}
		err = writeUnits(roundDir(ck.dir, round), c.Rank(), results)
	}
	if err == nil && c.Rank() == 0 {
		err = atomicfile.WriteBytes(roundSharedFile(ck.dir, round), shared)
	}
	if err := agree(c, err); err != nil {
		return fmt.Errorf("checkpoint round %d: %w", round, err)
	}
	err = atomicfile.WriteBytes(filepath.Join(ck.dir, roundFile), []byte(strconv.Itoa(round)+"\n"))
	if err := agree(c, err); err != nil {
		return fmt.Errorf("checkpoint round %d: %w", round, err)
	}
	if prev > 0 && prev != round {
		// Every rank, as on node-local disks each holds its own copy;
		// the files of ranks of an earlier run on more ranks go too.
		os.RemoveAll(roundDir(ck.dir, prev))
	}
	return nil
}

// agree returns err on the ranks where it is not nil and, on the others, an
// error saying that another rank failed, so that every rank leaves a
// multi-step save at the same step.
func agree(c mpi.Comm, err error) error {
	flag := []int64{0}
	if err != nil {
		flag[0] = 1
	}
	if aerr := c.AllreduceInt64(flag, mpi.Max); aerr != nil {
		return aerr
	}
	if err != nil {
		return err
	}
	if flag[0] == 1 {
		return errors.New("another rank failed to save its part")
	}
	return nil
}
