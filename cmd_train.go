package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"hash/maphash"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"xmc/data"
	"xmc/job"
	"xmc/model"
	"xmc/mpi"
	"xmc/numa"
	"xmc/runner"
	"xmc/train"
)

// dataFlags locate a dataset: a file in the XMC or LIBSVM format, or rows of
// a DXML split-format data file chosen by a split file.
type dataFlags struct {
	format   data.Format
	splitCol int
}

func (d *dataFlags) register(fs *flag.FlagSet) {
	fs.Var(&d.format, "format", "dataset format: xmc (Extreme Classification Repository) or libsvm")
	fs.IntVar(&d.splitCol, "split-col", 1, "column of the split files to use (1-based), for the DXML split format")
}

// load reads path, or the rows of path listed in splitPath when it is set;
// d and l widen the matrices (0 keeps the file's).
func (d *dataFlags) load(path, splitPath string, D, L int) (*data.Dataset, error) {
	opt := data.ReadOptions{Format: d.format, D: D, L: L}
	if splitPath != "" {
		return data.ReadSplit(path, splitPath, d.splitCol, opt)
	}
	return data.ReadFile(path, opt)
}

// evalFlags choose the metrics computed after prediction.
type evalFlags struct {
	topK         int
	propA, propB float64
}

func (e *evalFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&e.topK, "top-k", 5, "labels predicted per row")
	fs.Float64Var(&e.propA, "prop-a", model.PropensityA, "propensity model parameter A (Jain et al. 2016)")
	fs.Float64Var(&e.propB, "prop-b", model.PropensityB, "propensity model parameter B")
}

// metricKs returns the k of P@k and friends: 1, 3, 5 up to top-k.
func (e *evalFlags) metricKs() []int {
	var ks []int
	for _, k := range []int{1, 3, 5} {
		if k <= e.topK {
			ks = append(ks, k)
		}
	}
	return ks
}

type trainConfig struct {
	algo        string
	dataPath    string
	trainSplit  string
	testPath    string
	testSplit   string
	modelOut    string
	shard       bool
	checkpoint  string
	ckptEvery   time.Duration
	predictOn   string
	schedule    string
	scoresOut   string
	seed        uint64
	data        dataFlags
	eval        evalFlags
	forest      train.ForestParams
	dismec      train.DismecParams
	ppdsparse   train.PPDSparseParams
	progressBar bool
}

func runTrain(args []string) error {
	fs := newFlagSet("train", "train --algo forest|dismec|ppdsparse --data TRAIN [--test TEST] [--model-out FILE] [flags]")
	jo := job.Options{Version: version}
	jo.Register(fs)
	c := trainConfig{forest: train.DefaultForestParams(), dismec: train.DefaultDismecParams(), ppdsparse: train.DefaultPPDSparseParams()}
	c.data.register(fs)
	c.eval.register(fs)
	fs.StringVar(&c.algo, "algo", "forest", "algorithm: forest (CRAFTML, as in DXML), dismec (one-vs-all squared hinge, Newton, MSI) or ppdsparse (one-vs-all L1+L2, primal-dual sparse active set)")
	fs.StringVar(&c.dataPath, "data", "", "training data `FILE` (or the DXML X_data.txt with --train-split)")
	fs.StringVar(&c.trainSplit, "train-split", "", "DXML trSplit `FILE`: rows of --data to train on")
	fs.StringVar(&c.testPath, "test", "", "test data `FILE`: evaluate after training")
	fs.StringVar(&c.testSplit, "test-split", "", "DXML tstSplit `FILE`: rows of --data to test on")
	fs.StringVar(&c.modelOut, "model-out", "", "write the model to `FILE`")
	fs.BoolVar(&c.shard, "shard", false, "write one model file per rank plus a manifest at --model-out, instead of gathering")
	fs.StringVar(&c.checkpoint, "checkpoint", "", "directory keeping finished work units for resumption (default: <model-out>.ckpt; \"none\" disables)")
	fs.DurationVar(&c.ckptEvery, "checkpoint-every", time.Minute, "save finished work units to the checkpoint at most this long after they finish, together (0: each at once); a signal or --time-limit saves them all before exit")
	fs.StringVar(&c.predictOn, "predict-on", "ranks", "with --test: ranks (each rank scores with its part of the model, merged on rank 0) or root (rank 0 scores with the gathered model)")
	fs.StringVar(&c.schedule, "schedule", "", "how units are dealt to ranks: static (unit u on rank u mod P) or dynamic (rank 0 hands them out on request); default: static for forest, "+linearSchedule+" for one-vs-all")
	fs.StringVar(&c.scoresOut, "scores-out", "", "with --test: also write the test scores to `FILE`")
	fs.Uint64Var(&c.seed, "seed", 1, "random seed: the same seed gives the same model for any number of ranks, threads and NUMA domains")
	p := &c.forest
	fs.IntVar(&p.Trees, "trees", p.Trees, "forest: number of trees")
	fs.IntVar(&p.DimX, "dim-x", 0, "forest: projected feature dimension (0: min(D, 10000))")
	fs.IntVar(&p.DimY, "dim-y", 0, "forest: projected label dimension (0: min(L, 10000))")
	fs.IntVar(&p.Sample, "sample", p.Sample, "forest: instances sampled per node for k-means")
	fs.IntVar(&p.Branch, "branch", p.Branch, "forest: children per node (k of the k-means)")
	fs.IntVar(&p.KMeansIters, "kmeans-iters", p.KMeansIters, "forest: k-means passes per node")
	fs.IntVar(&p.CentroidKeep, "centroid-keep", p.CentroidKeep, "forest: largest entries kept per child classifier")
	fs.IntVar(&p.LeafSize, "leaf-size", p.LeafSize, "forest: nodes with at most this many instances become leaves")
	fs.IntVar(&p.MaxDepth, "max-depth", 0, "forest: maximum tree depth (0: unlimited)")
	// The one-vs-all trainers share these flags but not their defaults:
	// the flags fill DiSMEC's parameters and, for ppdsparse, those set on
	// the command line are copied over after parsing (see linearFlags).
	d, pp := &c.dismec, &c.ppdsparse
	fs.Float64Var(&d.Cost, "cost", d.Cost, fmt.Sprintf("linear: misclassification cost C (default: dismec %v, ppdsparse %v)", d.Cost, pp.Cost))
	fs.Float64Var(&d.Prune, "prune", d.Prune, "linear: drop trained weights of smaller magnitude")
	fs.IntVar(&d.LabelsPerUnit, "labels-per-unit", d.LabelsPerUnit, fmt.Sprintf("linear: labels per work unit (default: dismec %d, ppdsparse %d)", d.LabelsPerUnit, pp.LabelsPerUnit))
	fs.BoolVar(&d.Normalize, "normalize", d.Normalize, fmt.Sprintf("linear: scale rows to unit L2 norm, in training and prediction (default: dismec %v, ppdsparse %v)", d.Normalize, pp.Normalize))
	fs.BoolVar(&d.Bias, "bias", d.Bias, "linear: append a constant bias feature")
	fs.StringVar(&d.Init, "init", d.Init, "dismec: weight initialisation: zero, bias or msi (mean-separating)")
	fs.Float64Var(&d.Eps, "eps", d.Eps, "dismec: relative gradient tolerance of the Newton iterations")
	fs.StringVar(&pp.Loss, "loss", pp.Loss, "ppdsparse: loss, sqhinge or hinge")
	fs.Float64Var(&pp.Lambda, "lambda", pp.Lambda, "ppdsparse: weight of the L1 regulariser")
	fs.Float64Var(&pp.Tol, "tol", pp.Tol, "ppdsparse: largest dual violation (projected gradient) left at the end")
	fs.IntVar(&pp.MaxIters, "max-iters", pp.MaxIters, "ppdsparse: active-set rounds per label at most")
	fs.IntVar(&pp.InnerPasses, "inner-passes", pp.InnerPasses, "ppdsparse: coordinate-descent passes per round at most")
	fs.Float64Var(&pp.Sparsify, "sparsify", pp.Sparsify, "ppdsparse: search violating rows with nnz(w)/r sampled weights (r = 1: exact search)")
	fs.Float64Var(&pp.SearchCutoff, "search-cutoff", pp.SearchCutoff, "ppdsparse: in sampled searches, skip index entries contributing less than this")
	if err := parseFlags(fs, args, false); err != nil {
		return err
	}
	switch {
	case c.algo != "forest" && c.algo != "dismec" && c.algo != "ppdsparse":
		return fmt.Errorf("--algo %q: want forest, dismec or ppdsparse", c.algo)
	case c.dataPath == "":
		return errors.New("--data is required")
	case c.modelOut == "" && c.testPath == "" && c.testSplit == "":
		return errors.New("nothing to do: give --model-out, --test or both")
	case c.shard && c.modelOut == "":
		return errors.New("--shard needs --model-out (the manifest's path)")
	case c.schedule != "" && c.schedule != runner.ScheduleStatic && c.schedule != runner.ScheduleDynamic:
		return fmt.Errorf("--schedule %q: want %s or %s", c.schedule, runner.ScheduleStatic, runner.ScheduleDynamic)
	case c.predictOn != "ranks" && c.predictOn != "root":
		return fmt.Errorf("--predict-on %q: want ranks or root", c.predictOn)
	case c.testPath != "" && c.testSplit != "":
		return errors.New("give --test or --test-split, not both")
	case c.eval.topK < 1:
		return fmt.Errorf("--top-k must be at least 1, got %d", c.eval.topK)
	}
	c.forest.Seed = c.seed
	c.ppdsparse.Seed = c.seed
	linearFlags(fs, &c.dismec, &c.ppdsparse)
	if c.checkpoint == "" && c.modelOut != "" {
		c.checkpoint = c.modelOut + ".ckpt"
	}
	if c.checkpoint == "none" {
		c.checkpoint = ""
	}
	c.progressBar = runner.IsTerminal(os.Stderr)
	// Every rank works on its own copy: in-process ranks would share c.
	return job.Run("train", jo, func(j *job.Rank) error { rc := c; return trainModel(j, &rc) })
}

// algorithm adapts one trainer to the train command, which schedules its
// work units, gathers or shards their encoded results, writes the model
// and evaluates it without knowing what a unit is.
type algorithm struct {
	name        string
	kind        string // a unit in messages: "tree", "label block"
	axis        string // what shards split: "trees", "labels"
	units       int
	work        runner.WorkFunc
	header      model.Header
	fingerprint string
	// create writes encoded units (index = unit id, nil = not held) into
	// one model file or shard, to be committed by the caller.
	create func(path string, h model.Header, units [][]byte) (*model.Writer, error)
	// scorer decodes encoded units (nil = not held) into a model part that
	// predicts.
	scorer func(units [][]byte) (scorer, error)
	// done logs what the trainer learnt of its units, if anything.
	done func(j *job.Rank)
	// schedule is the runner's default schedule for this algorithm.
	schedule string
	// weight, if set, is what a unit counts for in progress, in units of
	// the axis (the labels of a label block).
	weight func(u int) int
}

// linearFlags copies the shared one-vs-all flags set on the command line,
// parsed into DiSMEC's parameters, to PPDSparse's; the others keep
// PPDSparse's own defaults.
func linearFlags(fs *flag.FlagSet, d *train.DismecParams, p *train.PPDSparseParams) {
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "cost":
			p.Cost = d.Cost
		case "prune":
			p.Prune = d.Prune
		case "labels-per-unit":
			p.LabelsPerUnit = d.LabelsPerUnit
		case "normalize":
			p.Normalize = d.Normalize
		case "bias":
			p.Bias = d.Bias
		}
	})
}

func newAlgorithm(j *job.Rank, c *trainConfig, ds *data.Dataset) (*algorithm, error) {
	switch c.algo {
	case "forest":
		return newForestAlgorithm(j, c, ds)
	case "ppdsparse":
		return newPPDSparseAlgorithm(j, c, ds)
	default:
		return newDismecAlgorithm(j, c, ds)
	}
}

func newForestAlgorithm(j *job.Rank, c *trainConfig, ds *data.Dataset) (*algorithm, error) {
	params, err := c.forest.Resolve(ds.D(), ds.L())
	if err != nil {
		return nil, err
	}
	c.forest = params
	// With several NUMA domains each gets its own copy of the data.
	copyData := j.Pool.Domains() > 1
	replicas, err := numa.NewReplicas(j.Pool, func(int) (*train.ForestData, error) {
		return train.NewForestData(ds, maphash.MakeSeed(), copyData), nil
	})
	if err != nil {
		return nil, err
	}
	trainer := train.NewForestTrainer(params, replicas, j.Pool)
	D, L := ds.D(), ds.L()
	return &algorithm{
		name: model.AlgorithmForest, kind: "tree", axis: "trees", units: params.Trees, work: trainer.Work,
		// Trees cost about the same: a cyclic deal balances them without
		// messages.
		schedule:    runner.ScheduleStatic,
		header:      model.Header{Algorithm: model.AlgorithmForest, D: D, L: L, Seed: params.Seed, Params: mustJSON(params)},
		fingerprint: fingerprint("forest", params, ds),
		create: func(path string, h model.Header, units [][]byte) (*model.Writer, error) {
			h.Counts = map[string]int64{"trees": int64(countHeld(units))}
			return model.CreateForest(path, h, units)
		},
		scorer: func(units [][]byte) (scorer, error) {
			f := &model.Forest{D: D, L: L}
			if err := addTrees(f, units); err != nil {
				return nil, err
			}
			return forestScorer{f}, nil
		},
	}, nil
}

func newDismecAlgorithm(j *job.Rank, c *trainConfig, ds *data.Dataset) (*algorithm, error) {
	params, err := c.dismec.Resolve()
	if err != nil {
		return nil, err
	}
	replicas, err := numa.NewReplicas(j.Pool, func(int) (*train.LinearData, error) {
		return train.NewLinearData(ds, params.Preprocess)
	})
	if err != nil {
		return nil, err
	}
	trainer := train.NewDismecTrainer(params, replicas, j.Pool)
	a := newLinearAlgorithm(model.AlgorithmDiSMEC, c.seed, params, params.Preprocess, ds, trainer.Units(), trainer.Work)
	a.weight = func(u int) int { return len(trainer.Block(u)) }
	a.done = func(j *job.Rank) {
		st := trainer.Stats()
		// Every rank reports its own labels (rank 0 alone logs unless -v).
		j.Log.Info("dismec", "labels", st.Labels, "newton_iters", st.Newton, "cg_iters", st.CG, "unconverged", st.Unconverged)
	}
	return a, nil
}

func newPPDSparseAlgorithm(j *job.Rank, c *trainConfig, ds *data.Dataset) (*algorithm, error) {
	params := c.ppdsparse
	if err := params.Validate(); err != nil {
		return nil, err
	}
	replicas, err := numa.NewReplicas(j.Pool, func(int) (*train.PPDSparseData, error) {
		return train.NewPPDSparseData(ds, params.Preprocess)
	})
	if err != nil {
		return nil, err
	}
	trainer := train.NewPPDSparseTrainer(params, replicas, j.Pool)
	a := newLinearAlgorithm(model.AlgorithmPPDSparse, c.seed, params, params.Preprocess, ds, trainer.Units(), trainer.Work)
	a.weight = func(u int) int { return len(trainer.Block(u)) }
	a.done = func(j *job.Rank) {
		st := trainer.Stats()
		mean := 0.0
		if st.Labels > 0 {
			mean = float64(st.ActiveRows) / float64(st.Labels)
		}
		j.Log.Info("ppdsparse", "labels", st.Labels, "rounds", st.Rounds, "cd_passes", st.Passes, "dual_updates", st.Updates,
			"index_entries_scanned", st.Scanned, "mean_active_rows", fmt.Sprintf("%.0f", mean), "unconverged", st.Unconverged)
	}
	return a, nil
}

// linearSchedule is the default schedule of the one-vs-all trainers,
// whose label blocks cost very unequal amounts: dealt on request, they
// left ranks 0.3–1.6% apart where the cyclic deal left them 1.5–12% apart
// (see the README's load-balance measurements).
const linearSchedule = runner.ScheduleDynamic

// newLinearAlgorithm adapts a one-vs-all trainer whose units are label
// blocks encoded as model.LinearBlock.
func newLinearAlgorithm(name string, seed uint64, params any, prep model.Preprocess, ds *data.Dataset, units int, work runner.WorkFunc) *algorithm {
	D, L := ds.D(), ds.L()
	return &algorithm{
		name: name, kind: "label block", axis: "labels", units: units, work: work, schedule: linearSchedule,
		header:      model.Header{Algorithm: name, D: D, L: L, Seed: seed, Params: mustJSON(params)},
		fingerprint: fingerprint(name, params, ds),
		create:      model.CreateLinear,
		scorer: func(units [][]byte) (scorer, error) {
			m, err := model.DecodeLinear(D, L, prep, units)
			return linearScorer{m}, err
		},
	}
}

func countHeld(units [][]byte) int {
	n := 0
	for _, u := range units {
		if u != nil {
			n++
		}
	}
	return n
}

func trainModel(j *job.Rank, c *trainConfig) error {
	ds, test, a, err := prepare(j, c)
	if err != nil {
		return err
	}
	j.Log.Info(a.name, a.kind+"s", a.units, "ranks", j.Size, "threads_per_rank", j.Threads, "numa_domains", len(j.Topo.Domains), "seed", c.seed)

	if c.schedule == "" {
		c.schedule = a.schedule
	}
	schedule := c.schedule
	trainStart := time.Now()
	var busy time.Duration
	plan := runner.Plan{
		Units: a.units, Kind: a.kind, Comm: j.Comm, Schedule: schedule, Pool: j.Pool, Log: j.Log,
		Checkpoint: c.checkpoint, CheckpointEvery: c.ckptEvery, Fingerprint: a.fingerprint,
		OnIdle: func() { busy = time.Since(trainStart) },
	}
	if a.weight != nil {
		plan.Weight = a.weight
	}
	if j.ID == 0 {
		what, total := a.kind+"s", a.units
		if a.weight != nil {
			what, total = a.axis, ds.L()
		}
		plan.Progress = runner.NewProgress(j.Log, what, total, c.progressBar)
	}
	var own []runner.Result
	var runErr error
	j.Phase("train", func() error {
		own, runErr = plan.Run(j.Ctx, a.work)
		return nil
	})
	if runErr != nil && !errors.Is(runErr, runner.ErrInterrupted) {
		return runErr
	}
	if a.done != nil {
		a.done(j)
	}
	// Every rank must learn whether any rank was interrupted before any
	// other collective: ranks are stopped at slightly different moments (a
	// time limit runs from each process's start, a signal reaches each
	// task on its own), and a rank whose units were all taken reports no
	// interruption, so the ranks' own outcomes may differ.
	flag := []int64{0}
	if runErr != nil {
		flag[0] = 1
		j.Log.Warn(runErr.Error())
	}
	if err := j.Comm.AllreduceInt64(flag, mpi.Max); err != nil {
		return err
	}
	interrupted := flag[0] == 1
	if err := recordBalance(j, schedule, busy, len(own)); err != nil {
		return err
	}

	j.Summary.Algorithm = a.name
	j.Summary.Params = a.header.Params
	j.Summary.Data = map[string]any{"train": c.dataPath, "N": ds.N(), "D": ds.D(), "L": ds.L()}
	done, whole, commit, err := saveModel(j, c, a, own)
	if err != nil {
		return err
	}
	if interrupted && done == a.units {
		// Stopped after the last unit was taken: the model is whole.
		interrupted = false
	}
	if c.predictOn != "root" {
		// The ranks predict with their own parts: return the gathered
		// copy's memory before prediction allocates its own.
		whole = nil
		runtime.GC()
	}
	var evalErr error
	if test != nil && done > 0 {
		evalErr = evaluate(j, c, a, ds, test, own, whole, done)
	}
	// The model is committed even if evaluation failed: it is whole.
	if err := commit.wait(j); err != nil {
		return err
	}
	if evalErr != nil {
		return evalErr
	}
	if c.checkpoint != "" && !interrupted && c.modelOut != "" {
		// Only once the model is committed on rank 0.
		if err := j.Comm.Barrier(); err != nil {
			return err
		}
		os.RemoveAll(c.checkpoint)
	}
	if interrupted {
		rerun := "a rerun of the same command resumes from " + c.checkpoint
		if c.checkpoint == "" {
			rerun = "no checkpoint was kept (--checkpoint none), so a rerun starts over"
		}
		return fmt.Errorf("%w: stopped after %d of %d %ss (%v); the model holds the finished ones and %s",
			job.ErrInterrupted, done, a.units, a.kind, context.Cause(j.Ctx), rerun)
	}
	return nil
}

// prepare loads the training data and the test data, if any, and the
// algorithm with its data replicas. What it builds lives for the whole run,
// so the collector pauses meanwhile (see gcPause), except for the DXML split
// format, whose reader leaves the whole data file as garbage.
func prepare(j *job.Rank, c *trainConfig) (ds, test *data.Dataset, a *algorithm, err error) {
	if c.trainSplit == "" && c.testSplit == "" {
		j.PauseGC()
		defer j.ResumeGC()
	}
	err = j.Phase("load", func() error {
		var err error
		if ds, err = c.data.load(c.dataPath, c.trainSplit, 0, 0); err != nil {
			return err
		}
		switch {
		case c.testSplit != "":
			test, err = c.data.load(c.dataPath, c.testSplit, ds.D(), ds.L())
		case c.testPath != "":
			test, err = c.data.load(c.testPath, "", ds.D(), ds.L())
		}
		return err
	})
	if err != nil {
		return nil, nil, nil, err
	}
	if test != nil && (test.D() > ds.D() || test.L() > ds.L()) {
		return nil, nil, nil, fmt.Errorf("test set has D=%d L=%d but the training set D=%d L=%d", test.D(), test.L(), ds.D(), ds.L())
	}
	j.Log.Info("training data", "path", c.dataPath, "N", ds.N(), "D", ds.D(), "L", ds.L(), "nnz", ds.X.NNZ(), "load_s", fmt.Sprintf("%.2f", j.PhaseSeconds("load")))
	a, err = newAlgorithm(j, c, ds)
	return ds, test, a, err
}

// recordBalance gathers every rank's busy time and unit count into the
// summary and logs the imbalance on rank 0.
func recordBalance(j *job.Rank, schedule string, busy time.Duration, units int) error {
	var buf []byte
	buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(busy.Seconds()))
	buf = binary.LittleEndian.AppendUint64(buf, uint64(units))
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
		sum += s
		most = max(most, s)
	}
	if sum > 0 {
		b.Imbalance = most / (sum / float64(len(all)))
	}
	j.Summary.Balance = b
	j.Log.Info("load balance", "schedule", schedule, "imbalance", fmt.Sprintf("%.3f", b.Imbalance),
		"busy_s", fmt.Sprint(b.BusyS), "units", fmt.Sprint(b.Units))
	return nil
}

// saveModel gathers the units on rank 0 and writes the model, or writes one
// shard per rank and a manifest. It returns the number of units in the
// model (on every rank), on rank 0 when they were gathered the encoded units
// indexed by unit id, and the model file's commit, under way (a no-op where
// this rank wrote no single model file).
func saveModel(j *job.Rank, c *trainConfig, a *algorithm, own []runner.Result) (int, [][]byte, *pendingCommit, error) {
	count := []int64{int64(len(own))}
	if err := j.Comm.AllreduceInt64(count, mpi.Sum); err != nil {
		return 0, nil, nil, err
	}
	total := int(count[0])
	if c.modelOut == "" {
		return total, nil, nil, nil
	}
	if total == 0 {
		j.Log.Warn("no " + a.kind + " finished: no model written")
		return 0, nil, nil, nil
	}
	if c.shard {
		return total, nil, nil, writeShards(j, c, a, own, total)
	}
	var units [][]byte
	err := j.Phase("gather", func() error {
		var err error
		units, err = runner.Gather(j.Comm, a.units, own, 0)
		return err
	})
	if err != nil || j.ID != 0 {
		return total, nil, nil, err
	}
	var w *model.Writer
	err = j.Phase("write", func() error {
		w, err = a.create(c.modelOut, a.header, units)
		return err
	})
	if err != nil {
		return total, nil, nil, keepUnits(j, c, a, units, err)
	}
	return total, units, startCommit(w, c.modelOut, a.kind+"s", total), nil
}

// pendingCommit is a model file's Commit running in the background: it
// mostly waits for the disk (fsync), so rank 0 predicts meanwhile. A nil
// *pendingCommit has nothing to wait for.
type pendingCommit struct {
	w           *model.Writer
	path, kinds string
	units       int
	done        chan error
}

func startCommit(w *model.Writer, path, kinds string, units int) *pendingCommit {
	p := &pendingCommit{w: w, path: path, kinds: kinds, units: units, done: make(chan error, 1)}
	go func() { p.done <- w.Commit() }()
	return p
}

// wait returns the commit's error; the time spent waiting counts as
// writing. On success it logs the model and records its size.
func (p *pendingCommit) wait(j *job.Rank) error {
	if p == nil {
		return nil
	}
	err := j.Phase("write", func() error { return <-p.done })
	if err != nil {
		return err
	}
	j.Summary.ModelBytes = p.w.Bytes()
	j.Log.Info("model written", "path", p.path, p.kinds, p.units, "bytes", j.Summary.ModelBytes)
	return nil
}

// keepUnits saves the finished units this rank holds to the checkpoint
// after writeErr, the failed write of the model or of this rank's shard,
// so that a rerun loads them rather than recomputing them (the runner
// saves units only some time after they finish), and returns writeErr.
func keepUnits(j *job.Rank, c *trainConfig, a *algorithm, units [][]byte, writeErr error) error {
	if c.checkpoint == "" {
		return writeErr
	}
	if err := runner.SaveUnits(c.checkpoint, a.fingerprint, units); err != nil {
		return fmt.Errorf("%w; saving the finished %ss to the checkpoint failed too: %v", writeErr, a.kind, err)
	}
	j.Log.Warn("model not written: finished "+a.kind+"s kept for a rerun", "checkpoint", c.checkpoint, a.kind+"s", countHeld(units))
	return writeErr
}

// writeShards writes this rank's units to <model-out>.rank-R-of-P and, on
// rank 0, the manifest at --model-out.
func writeShards(j *job.Rank, c *trainConfig, a *algorithm, own []runner.Result, total int) error {
	path := fmt.Sprintf("%s.rank-%04d-of-%04d", c.modelOut, j.ID, j.Size)
	sh := a.header
	units := make([][]byte, a.units)
	held := make([]int64, 0, len(own))
	for _, r := range own {
		units[r.Unit] = r.Data
		held = append(held, int64(r.Unit))
	}
	if c.schedule == runner.ScheduleDynamic {
		// Units went to whichever rank asked: list them.
		sh.Shard = &model.ShardInfo{Rank: j.ID, Ranks: j.Size, Axis: a.axis, Lo: 0, Hi: int64(a.units), Units: held}
	} else {
		// Units are dealt cyclically: rank r holds r, r+P, r+2P, ...
		sh.Shard = &model.ShardInfo{Rank: j.ID, Ranks: j.Size, Axis: a.axis, Lo: int64(j.ID), Hi: int64(a.units), Stride: int64(j.Size)}
	}
	var ref []byte
	err := j.Phase("write", func() error {
		w, err := a.create(path, sh, units)
		if err == nil {
			err = w.Commit()
		}
		if err != nil {
			return keepUnits(j, c, a, units, err)
		}
		ref = mustJSON(model.ShardRef{Path: filepath.Base(path), Rank: j.ID, Bytes: w.Bytes(), CRC32C: w.CRC32C()})
		return nil
	})
	if err != nil {
		return err
	}
	refs, err := j.Comm.Gatherv(ref, 0)
	if err != nil || j.ID != 0 {
		return err
	}
	m := &model.Manifest{Header: a.header}
	m.Header.Counts = map[string]int64{a.axis: 0}
	for _, r := range refs {
		var s model.ShardRef
		if err := json.Unmarshal(r, &s); err != nil {
			return fmt.Errorf("shard reference: %w", err)
		}
		m.Shards = append(m.Shards, s)
		j.Summary.ModelBytes += s.Bytes
	}
	if a.axis == "trees" {
		m.Header.Counts["trees"] = int64(total)
	} else {
		m.Header.Counts["labels"] = int64(a.header.L)
	}
	if err := model.WriteManifest(c.modelOut, m); err != nil {
		return err
	}
	j.Log.Info("sharded model written", "manifest", c.modelOut, "shards", len(m.Shards), a.kind+"s", total)
	return nil
}

// fingerprint identifies the algorithm, hyper-parameters and training data
// of a run, for checkpoints: a CRC-32C of the parameters and of the data
// matrices (their entries little-endian, through one small buffer: an
// encoding of the whole matrix in fresh memory cost 11 ms of page faults per
// rank on Bibtex).
func fingerprint(algo string, params any, d *data.Dataset) string {
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	h.Write(mustJSON(params))
	buf := make([]byte, 0, 64<<10)
	flushIfFull := func() {
		if len(buf)+4 > cap(buf) {
			h.Write(buf)
			buf = buf[:0]
		}
	}
	for _, m := range []*data.CSR{&d.X, &d.Y} {
		fmt.Fprintf(h, "%d %d %d;", m.Rows, m.Cols, m.NNZ())
		for _, v := range m.Indices {
			flushIfFull()
			buf = binary.LittleEndian.AppendUint32(buf, uint32(v))
		}
		for _, v := range m.Values {
			flushIfFull()
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
		}
		h.Write(buf)
		buf = buf[:0]
	}
	return fmt.Sprintf("%s %08x", algo, h.Sum32())
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only plain structs are marshalled
	}
	return b
}
