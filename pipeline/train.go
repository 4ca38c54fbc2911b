package pipeline

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"xmc/atomicfile"
	"xmc/data"
	"xmc/job"
	"xmc/model"
	"xmc/mpi"
	"xmc/numa"
	"xmc/runner"
	"xmc/train"
)

// Prediction modes of TrainConfig.PredictOn and PredictConfig.PredictOn.
const (
	// PredictOnRanks has each rank score with its part of the model, and
	// rank 0 merge the sparse partial results.
	PredictOnRanks = "ranks"
	// PredictOnRoot has rank 0 score alone, with the whole model.
	PredictOnRoot = "root"
)

// TrainConfig is what xmc train does: which algorithm, on what data, and
// where its model, checkpoint and scores go.
type TrainConfig struct {
	// Algorithm names the trainer (see train.Algorithms), and Trainer holds
	// its hyper-parameters, as set by its flags.
	Algorithm string
	Trainer   train.Trainer
	// Set reports whether the user set a flag, for the trainer's
	// data-dependent defaults; nil means none was set.
	Set func(name string) bool
	// Input reads DataPath (or the rows of it TrainSplit lists) to train
	// on and TestPath (or the rows of DataPath TestSplit lists) to test on.
	// DataLabels and TestLabels are their labels files in the NumPy
	// format (empty: named after them, see data.LabelsPath).
	Input                  Input
	DataPath, TrainSplit   string
	TestPath, TestSplit    string
	DataLabels, TestLabels string
	// ModelOut is the model file (or the manifest, with Shard) to write;
	// empty writes none.
	ModelOut string
	Shard    bool
	// ShardAbove shards the model, as Shard, when its units add up to more
	// than this many bytes (0: never by size).
	ShardAbove int64
	// Checkpoint is the directory of finished work (empty: none), saved
	// at most CheckpointEvery apart.
	Checkpoint      string
	CheckpointEvery time.Duration
	// PredictOn is PredictOnRanks or PredictOnRoot.
	PredictOn string
	// Schedule overrides the trainer's schedule of units when set.
	Schedule string
	// ScoresOut, if set, receives the test scores.
	ScoresOut string
	Seed      uint64
	Eval      EvalOptions
	// ProgressBar shows a progress bar rather than log lines.
	ProgressBar bool
	// Labels is --label-range: the labels a one-vs-all trainer trains
	// (the zero value: every label). The model then records the range,
	// and xmc merge joins the ranges' models.
	Labels train.LabelRange
	// Heldout is a fraction of the training rows, drawn by the seed, that
	// training leaves out (0: none): xmc train --algo ensemble fits its
	// members' weights on them.
	Heldout float64
}

// Check reports the first inconsistent setting, before any rank starts.
func (c *TrainConfig) Check() error {
	switch {
	case c.Trainer == nil:
		return errors.New("no trainer")
	case c.DataPath == "":
		return errors.New("--data is required")
	case c.ModelOut == "" && c.TestPath == "" && c.TestSplit == "":
		return errors.New("nothing to do: give --model-out, --test or both")
	case c.Shard && c.ModelOut == "":
		return errors.New("--shard needs --model-out (the manifest's path)")
	case c.Schedule != "" && c.Schedule != runner.ScheduleStatic && c.Schedule != runner.ScheduleDynamic:
		return fmt.Errorf("--schedule %q: want %s or %s", c.Schedule, runner.ScheduleStatic, runner.ScheduleDynamic)
	case c.PredictOn != PredictOnRanks && c.PredictOn != PredictOnRoot:
		return fmt.Errorf("--predict-on %q: want %s or %s", c.PredictOn, PredictOnRanks, PredictOnRoot)
	case c.TestPath != "" && c.TestSplit != "":
		return errors.New("give --test or --test-split, not both")
	case c.Eval.TopK < 1:
		return fmt.Errorf("--top-k must be at least 1, got %d", c.Eval.TopK)
	}
	return checkOutput("--model-out", c.ModelOut)
}

// checkOutput returns an error naming flag where the output path it gives
// cannot be written as a file (a directory), before any rank starts.
func checkOutput(flag, path string) error {
	if err := atomicfile.CheckPath(path); err != nil {
		return fmt.Errorf("%s %w: give a file's path", flag, err)
	}
	return nil
}

// Train checks c and runs the training on every rank of the job opts lays
// out.
func Train(opts job.Options, c TrainConfig) error {
	if err := c.Check(); err != nil {
		return err
	}
	return job.Run("train", opts, func(j *job.Rank) error { return trainRank(j, c) })
}

// training is one rank's training: its configuration, data and prepared
// work, and the model's header.
type training struct {
	j        *job.Rank
	c        TrainConfig
	ds, test *data.Dataset
	work     *train.Work
	// held are the rows left out of ds by TrainConfig.Heldout (nil
	// without, never empty with), and trainY and trainN the labels and
	// rows of the whole training set, for the propensities of the metrics.
	held        *data.Dataset
	trainY      data.CSR
	trainN      int
	kind        model.Kind
	header      model.Header
	fingerprint string
	// rounds counts the rounds run, for a trainer of rounds (nil
	// otherwise).
	rounds *int
}

// trainRank is one rank's part of xmc train.
func trainRank(j *job.Rank, c TrainConfig) error {
	_, err := trainModel(j, c)
	return err
}

// trainModel is trainRank, returning the training it ran.
func trainModel(j *job.Rank, c TrainConfig) (*training, error) {
	t := &training{j: j, c: c}
	return t, t.run()
}

// run trains, writes the model and evaluates it, as configured.
func (t *training) run() error {
	if err := t.prepare(); err != nil {
		return err
	}
	return t.trainPrepared()
}

// trainPrepared is run once prepare has loaded the data and prepared the
// trainer.
func (t *training) trainPrepared() error {
	j, c := t.j, t.c
	w := t.work
	j.Log.Info(c.Algorithm, t.kind.Unit()+"s", w.Units, "ranks", j.Size, "threads_per_rank", j.Threads,
		"numa_domains", len(j.Topo.Domains), "seed", c.Seed)
	var own []runner.Result
	var complete bool
	var err error
	if w.Rounds != nil {
		own, complete, err = t.runRounds()
	} else {
		own, complete, err = t.runUnits()
	}
	if err != nil {
		return err
	}

	j.Summary.Algorithm = c.Algorithm
	j.Summary.Params = t.header.Params
	j.Summary.Data = map[string]any{"train": c.DataPath, "N": t.ds.N(), "D": t.ds.D(), "L": t.ds.L()}
	a := &assembly{j: j, kind: t.kind, header: t.header, fingerprint: t.fingerprint, units: w.Units,
		path: c.ModelOut, shard: c.Shard, shardAbove: c.ShardAbove, checkpoint: c.Checkpoint, listUnits: t.schedule() == runner.ScheduleDynamic}
	done, commit, err := a.save(own)
	if err != nil {
		return err
	}
	if !complete && w.Rounds == nil && done == w.Units {
		// Stopped after the last unit was taken: the model is whole.
		complete = true
	}
	var evalErr error
	if t.test != nil && done > 0 {
		evalErr = t.evaluate(own, done)
	}
	// The model is committed even if evaluation failed: it is whole.
	if err := commit.wait(j); err != nil {
		return err
	}
	if evalErr != nil {
		return evalErr
	}
	if c.Checkpoint != "" && complete && c.ModelOut != "" {
		// Only once the model is committed on rank 0.
		if err := j.Comm.Barrier(); err != nil {
			return err
		}
		if err := runner.RemoveCheckpoint(c.Checkpoint); err != nil {
			j.Log.Warn(err.Error())
		}
	}
	if !complete {
		rerun := "a rerun of the same command resumes from " + c.Checkpoint
		if c.Checkpoint == "" {
			rerun = "no checkpoint was kept (--checkpoint none), so a rerun starts over"
		}
		if w.Rounds != nil {
			return fmt.Errorf("%w: stopped before training was complete (%v); the model holds the weights trained so far and %s",
				job.ErrInterrupted, j.StopReason(), rerun)
		}
		return fmt.Errorf("%w: stopped after %d of %d %ss (%v); the model holds the finished ones and %s",
			job.ErrInterrupted, done, w.Units, t.kind.Unit(), j.StopReason(), rerun)
	}
	return nil
}

// prepare loads the training data and the test data, if any, and prepares
// the trainer with its data replicas. What it builds lives for the whole
// run, so the collector pauses meanwhile (see job.Rank.PauseGC), except
// for the DXML split format, whose reader leaves the whole data file as
// garbage.
func (t *training) prepare() error {
	j, c := t.j, t.c
	if c.TrainSplit == "" && c.TestSplit == "" {
		j.PauseGC()
		defer j.ResumeGC()
	}
	err := j.Phase("load", func() error {
		var err error
		if t.ds, err = c.Input.Load(c.DataPath, c.DataLabels, c.TrainSplit, 0, 0); err != nil {
			return err
		}
		return t.loadTest(c)
	})
	if err != nil {
		return err
	}
	t.trainY, t.trainN = t.ds.Y, t.ds.N()
	if c.Heldout > 0 {
		t.ds, t.held = train.HeldoutSplit(t.ds, c.Heldout, c.Seed)
		if t.held == nil {
			// Checked before training: the rows are held out to be fitted on.
			return fmt.Errorf("--heldout %v of %d rows holds out none of them, or all", c.Heldout, t.trainN)
		}
		j.Log.Info("rows held out of training", "heldout_rows", t.held.N(), "training_rows", t.ds.N())
	}
	ds := t.ds
	j.Log.Info("training data", "path", c.DataPath, "N", ds.N(), "D", ds.D(), "L", ds.L(), "nnz", ds.X.NNZ(),
		"load_s", fmt.Sprintf("%.2f", j.PhaseSeconds("load")))
	set := c.Set
	if set == nil {
		set = func(string) bool { return false }
	}
	env := train.Env{Pool: j.Pool, Comm: j.Comm, Log: j.Log, Seed: c.Seed, Set: set,
		Load:   func(path string) (*data.Dataset, error) { return c.Input.Load(path, "", "", ds.D(), ds.L()) },
		Labels: c.Labels}
	crc := dataCRC(ds)
	if t.work, err = c.Trainer.Prepare(env, ds); err != nil {
		return err
	}
	if !c.Labels.All() && t.work.Range == nil {
		return fmt.Errorf("--label-range: %s trains its labels together; dismec and ppdsparse train a label range", c.Algorithm)
	}
	// The trainer holds what it needs of the features, in its replicas;
	// the loaded copy goes (a forest on one NUMA domain trains on it and
	// keeps it).
	ds.X = data.CSR{Rows: ds.X.Rows, Cols: ds.X.Cols}
	if err := t.work.Check(); err != nil {
		return fmt.Errorf("%s: %w", c.Algorithm, err)
	}
	t.kind = t.work.Kind
	t.header = model.NewHeader(t.kind, c.Algorithm, ds.D(), ds.L(), c.Seed, mustJSON(t.work.Params))
	t.fingerprint = fingerprint(c.Algorithm, t.work.Params, t.work.Units, unitLayout(t.work.Units, t.work.Weight), crc)
	if r := t.work.Range; r != nil {
		r.DataCRC = crc
		t.header.Range = r
		t.fingerprint += fmt.Sprintf(" labels %d:%d", r.From, r.To)
		j.Log.Info("training a label range", "from", r.From, "to", r.To, "of", r.Labels, "first_unit", r.FirstUnit, "units", t.work.Units)
		if t.test != nil || c.TestPath != "" || c.TestSplit != "" {
			j.Log.Warn("the test metrics are those of this label range's model alone: merge the ranges (xmc merge) and evaluate the whole model")
		}
	}
	return nil
}

// loadTest loads the test set that c names, if any, over the training
// set's features and labels.
func (t *training) loadTest(c TrainConfig) error {
	var err error
	switch {
	case c.TestSplit != "":
		t.test, err = c.Input.Load(c.DataPath, c.DataLabels, c.TestSplit, t.ds.D(), t.ds.L())
	case c.TestPath != "":
		t.test, err = c.Input.Load(c.TestPath, c.TestLabels, "", t.ds.D(), t.ds.L())
	}
	if err == nil && t.test != nil && (t.test.D() > t.ds.D() || t.test.L() > t.ds.L()) {
		return fmt.Errorf("test set has D=%d L=%d but the training set D=%d L=%d", t.test.D(), t.test.L(), t.ds.D(), t.ds.L())
	}
	return err
}

// schedule is the schedule of the units: the user's, or the trainer's.
func (t *training) schedule() string {
	if t.c.Schedule != "" && t.work.Rounds == nil {
		return t.c.Schedule
	}
	if t.work.Schedule == "" || t.work.Rounds != nil {
		return runner.ScheduleStatic
	}
	return t.work.Schedule
}

// progress returns rank 0's progress report of what, total of it; nil on
// the other ranks.
func (t *training) progress(what string, total int) runner.Progress {
	if t.j.ID != 0 {
		return nil
	}
	return runner.NewProgress(t.j.Log, what, total, t.c.ProgressBar)
}

// teamGCHeadroom is how far the heap may grow past the live data before a
// collection while the rank's workers compute a unit together: 64 MiB, a
// first Delicious tree's growth three times over (see job.Rank.GCHeadroom).
// With Go's collector off for the unit instead, a tree of Wiki10-31K's
// shape (20,000 rows) peaked 100 MiB higher, as its garbage stayed.
const teamGCHeadroom = 64 << 20

// runUnits runs work of independent units and returns this rank's results
// and whether every rank ran to the end.
func (t *training) runUnits() ([]runner.Result, bool, error) {
	j, c, w := t.j, t.c, t.work
	schedule := t.schedule()
	trainStart := time.Now()
	var busy, scheduling time.Duration
	plan := runner.Plan{
		Units: w.Units, Kind: t.kind.Unit(), Comm: j.Comm, Schedule: schedule, Pool: j.Pool, Log: j.Log,
		Checkpoint: c.Checkpoint, CheckpointEvery: c.CheckpointEvery, Fingerprint: t.fingerprint,
		OnIdle: func(wait time.Duration) { busy, scheduling = time.Since(trainStart), wait }, Weight: w.Weight, Cost: w.Cost,
		Help: w.Help,
	}
	what := t.kind.Unit() + "s"
	if w.Weight != nil {
		what = t.kind.Axis()
	}
	plan.Progress = t.progress(what, plan.TotalWeight())
	own, stopped, err := t.trainPhase(func() ([]runner.Result, bool, error) {
		if w.Team != nil {
			return plan.RunTeam(j.Ctx, func(u int) ([]byte, error) {
				defer j.GCHeadroom(teamGCHeadroom)()
				return w.Team(u)
			})
		}
		return plan.Run(j.Ctx, w.Unit)
	})
	if err != nil {
		return nil, false, err
	}
	// Every rank must learn whether any rank was stopped before any other
	// collective: ranks are stopped at slightly different moments (a time
	// limit runs from each process's start, a signal reaches each task on
	// its own), and a rank whose units were all taken reports no stop, so
	// the ranks' own outcomes may differ.
	flag := []int64{0}
	if stopped {
		flag[0] = 1
	}
	if err := j.Comm.AllreduceInt64(flag, mpi.Max); err != nil {
		return nil, false, err
	}
	if err := recordBalance(j, schedule, busy, scheduling, len(own)); err != nil {
		return nil, false, err
	}
	return own, flag[0] == 0, nil
}

// agreeEvery is how far apart the ranks of a training in rounds agree on
// stopping and saving (see runner.Rounds.AgreeEvery): a signal or the time
// limit is acted on this much late at most, about.
const agreeEvery = 50 * time.Millisecond

// runRounds runs work of synchronous rounds and returns the units this
// rank owns and whether training ran to its end; the ranks agree on
// stopping at round boundaries.
func (t *training) runRounds() ([]runner.Result, bool, error) {
	j, c, w := t.j, t.c, t.work
	rounds := runner.Rounds{
		Units: w.Units, Rounds: w.MaxRounds, Kind: w.RoundName, Comm: j.Comm, Pool: j.Pool, Log: j.Log,
		Checkpoint: c.Checkpoint, CheckpointEvery: c.CheckpointEvery, Fingerprint: t.fingerprint,
		Progress: t.progress(w.RoundName+"s", w.MaxRounds), AgreeEvery: agreeEvery,
	}
	counted := &countedRounds{RoundTrainer: w.Rounds}
	t.rounds = &counted.rounds
	own, stopped, err := t.trainPhase(func() ([]runner.Result, bool, error) { return rounds.Run(j.Ctx, counted) })
	return own, !stopped, err
}

// trainPhase runs the runner's training run in the train phase and, unless
// it failed, lets the trainer log what it learnt.
func (t *training) trainPhase(run func() ([]runner.Result, bool, error)) ([]runner.Result, bool, error) {
	var own []runner.Result
	var stopped bool
	pool0, comm0, start := t.j.Pool.Profile(), t.j.Comm.Stats().CollectiveSeconds(), time.Now()
	err := t.j.Phase("train", func() error {
		var err error
		own, stopped, err = run()
		return err
	})
	if err != nil {
		return nil, false, err
	}
	loops, rounds := t.j.Pool.Profile().Sub(pool0), 0
	if t.rounds != nil {
		rounds = *t.rounds
	}
	prof := job.NewProfile(t.j.Threads, time.Since(start).Seconds(), loops.LoopS, loops.Loops, loops.BusyS,
		t.j.Comm.Stats().CollectiveSeconds()-comm0, rounds)
	if err := recordProfile(t.j, prof); err != nil {
		return nil, false, err
	}
	if t.work.Done != nil {
		t.work.Done(t.j.Log)
	}
	if t.work.Stats != nil {
		stats := t.work.Stats()
		logTrainerStats(t.j, t.c.Algorithm, stats)
		if err := recordTrainerStats(t.j, stats); err != nil {
			return nil, false, err
		}
	}
	return own, stopped, nil
}

// logTrainerStats logs a rank's trainer figures, by name, under the
// algorithm's name: whole numbers as integers.
func logTrainerStats(j *job.Rank, algorithm string, stats map[string]float64) {
	attrs := make([]any, 0, 2*len(stats))
	for _, k := range slices.Sorted(maps.Keys(stats)) {
		v := stats[k]
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			attrs = append(attrs, k, int64(v))
		} else {
			attrs = append(attrs, k, v)
		}
	}
	j.Log.Info(algorithm, attrs...)
}

// countedRounds is a round trainer that counts its rounds, for the
// training's profile.
type countedRounds struct {
	runner.RoundTrainer
	rounds int
}

// Round runs round r and counts it.
func (c *countedRounds) Round(ctx context.Context, r int, team *numa.Team) (bool, error) {
	c.rounds++
	return c.RoundTrainer.Round(ctx, r, team)
}

// recordProfile gathers every rank's profile into the summary, and logs
// rank 0's, with the run's serial fraction (job.SerialFraction, over every
// rank's) and the speed-ups it allows.
func recordProfile(j *job.Rank, p job.Profile) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	all, err := j.Comm.Gatherv(b, 0, nil)
	if err != nil || j.ID != 0 {
		return err
	}
	j.Summary.Profile = make([]job.Profile, len(all))
	for r, b := range all {
		if err := json.Unmarshal(b, &j.Summary.Profile[r]); err != nil {
			return fmt.Errorf("profile of rank %d: %w", r, err)
		}
	}
	f := job.SerialFraction(j.Summary.Profile)
	args := []any{"serial_s", fmt.Sprintf("%.3f", p.SerialS), "collective_s", fmt.Sprintf("%.3f", p.CollectiveS),
		"loop_s", fmt.Sprintf("%.3f", p.LoopS), "loop_efficiency", fmt.Sprintf("%.2f", p.LoopEfficiency()),
		"serial_fraction", fmt.Sprintf("%.4f", f)}
	for _, n := range []int{16, 64, 128} {
		args = append(args, fmt.Sprintf("amdahl_%d", n), fmt.Sprintf("%.1f", job.AmdahlSpeedup(f, n)))
	}
	j.Log.Info("profile of rank 0", args...)
	return nil
}

// recordTrainerStats gathers every rank's trainer figures into the summary.
func recordTrainerStats(j *job.Rank, stats map[string]float64) error {
	b, err := json.Marshal(stats)
	if err != nil {
		return err
	}
	all, err := j.Comm.Gatherv(b, 0, nil)
	if err != nil || j.ID != 0 {
		return err
	}
	j.Summary.TrainerStats = make([]map[string]float64, len(all))
	for r, b := range all {
		if err := json.Unmarshal(b, &j.Summary.TrainerStats[r]); err != nil {
			return fmt.Errorf("trainer figures of rank %d: %w", r, err)
		}
	}
	return nil
}

// recordBalance gathers every rank's busy time, time waiting for units
// and unit count into the summary and logs the imbalance on rank 0.
func recordBalance(j *job.Rank, schedule string, busy, scheduling time.Duration, units int) error {
	var buf []byte
	buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(busy.Seconds()))
	buf = binary.LittleEndian.AppendUint64(buf, uint64(units))
	buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(scheduling.Seconds()))
	all, err := j.Comm.Gather(buf, 0)
	if err != nil || j.ID != 0 {
		return err
	}
	b := &job.Balance{Schedule: schedule}
	sum, most := 0.0, 0.0
	for _, r := range all {
		s := math.Float64frombits(binary.LittleEndian.Uint64(r))
		b.BusyS = append(b.BusyS, s)
		b.Units = append(b.Units, int64(binary.LittleEndian.Uint64(r[8:])))
		b.ScheduleS = append(b.ScheduleS, math.Float64frombits(binary.LittleEndian.Uint64(r[16:])))
		sum += s
		most = max(most, s)
	}
	if sum > 0 {
		b.Imbalance = most / (sum / float64(len(all)))
	}
	j.Summary.Balance = b
	j.Log.Info("load balance", "schedule", schedule, "imbalance", fmt.Sprintf("%.3f", b.Imbalance),
		"busy_s", fmt.Sprint(b.BusyS), "units", fmt.Sprint(b.Units), "waiting_for_units_s", fmt.Sprint(b.ScheduleS))
	return nil
}
