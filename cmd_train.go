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
	"os"
	"path/filepath"
	"runtime"

	"xmc/data"
	"xmc/model"
	"xmc/mpi"
	"xmc/numa"
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
	predictOn   string
	scoresOut   string
	data        dataFlags
	eval        evalFlags
	forest      train.ForestParams
	progressBar bool
}

func runTrain(args []string) error {
	fs := newFlagSet("train", "train --algo forest --data TRAIN [--test TEST] [--model-out FILE] [flags]")
	var jo jobOptions
	jo.register(fs)
	c := trainConfig{forest: train.DefaultForestParams()}
	c.data.register(fs)
	c.eval.register(fs)
	fs.StringVar(&c.algo, "algo", "forest", "algorithm: forest (CRAFTML, as in DXML)")
	fs.StringVar(&c.dataPath, "data", "", "training data `FILE` (or the DXML X_data.txt with --train-split)")
	fs.StringVar(&c.trainSplit, "train-split", "", "DXML trSplit `FILE`: rows of --data to train on")
	fs.StringVar(&c.testPath, "test", "", "test data `FILE`: evaluate after training")
	fs.StringVar(&c.testSplit, "test-split", "", "DXML tstSplit `FILE`: rows of --data to test on")
	fs.StringVar(&c.modelOut, "model-out", "", "write the model to `FILE`")
	fs.BoolVar(&c.shard, "shard", false, "write one model file per rank plus a manifest at --model-out, instead of gathering")
	fs.StringVar(&c.checkpoint, "checkpoint", "", "directory keeping finished trees for resumption (default: <model-out>.ckpt; \"none\" disables)")
	fs.StringVar(&c.predictOn, "predict-on", "ranks", "with --test: ranks (each rank scores with its own trees, sparse sums merged on rank 0) or root (rank 0 scores with the gathered forest)")
	fs.StringVar(&c.scoresOut, "scores-out", "", "with --test: also write the test scores to `FILE`")
	p := &c.forest
	fs.IntVar(&p.Trees, "trees", p.Trees, "number of trees")
	fs.Uint64Var(&p.Seed, "seed", 1, "random seed: the same seed gives the same model for any number of ranks, threads and NUMA domains")
	fs.IntVar(&p.DimX, "dim-x", 0, "projected feature dimension (0: min(D, 10000))")
	fs.IntVar(&p.DimY, "dim-y", 0, "projected label dimension (0: min(L, 10000))")
	fs.IntVar(&p.Sample, "sample", p.Sample, "instances sampled per node for k-means")
	fs.IntVar(&p.Branch, "branch", p.Branch, "children per node (k of the k-means)")
	fs.IntVar(&p.KMeansIters, "kmeans-iters", p.KMeansIters, "k-means passes per node")
	fs.IntVar(&p.CentroidKeep, "centroid-keep", p.CentroidKeep, "largest entries kept per child classifier")
	fs.IntVar(&p.LeafSize, "leaf-size", p.LeafSize, "nodes with at most this many instances become leaves")
	fs.IntVar(&p.MaxDepth, "max-depth", 0, "maximum tree depth (0: unlimited)")
	if err := parseFlags(fs, args, false); err != nil {
		return err
	}
	switch {
	case c.algo != "forest":
		return fmt.Errorf("--algo %q: this xmc trains forests only (--algo forest); the one-vs-all trainers are not implemented yet", c.algo)
	case c.dataPath == "":
		return errors.New("--data is required")
	case c.modelOut == "" && c.testPath == "" && c.testSplit == "":
		return errors.New("nothing to do: give --model-out, --test or both")
	case c.shard && c.modelOut == "":
		return errors.New("--shard needs --model-out (the manifest's path)")
	case c.predictOn != "ranks" && c.predictOn != "root":
		return fmt.Errorf("--predict-on %q: want ranks or root", c.predictOn)
	case c.testPath != "" && c.testSplit != "":
		return errors.New("give --test or --test-split, not both")
	}
	if c.checkpoint == "" && c.modelOut != "" {
		c.checkpoint = c.modelOut + ".ckpt"
	}
	if c.checkpoint == "none" {
		c.checkpoint = ""
	}
	c.progressBar = isTerminal(os.Stderr)
	return runJob("train", jo, func(j *job) error { return trainForest(j, &c) })
}

func trainForest(j *job, c *trainConfig) error {
	var ds, test *data.Dataset
	err := j.phase("load", func() error {
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
		return err
	}
	if test != nil && (test.D() > ds.D() || test.L() > ds.L()) {
		return fmt.Errorf("test set has D=%d L=%d but the training set D=%d L=%d", test.D(), test.L(), ds.D(), ds.L())
	}
	params, err := c.forest.Resolve(ds.D(), ds.L())
	if err != nil {
		return err
	}
	j.log.Info("training data", "path", c.dataPath, "N", ds.N(), "D", ds.D(), "L", ds.L(), "nnz", ds.X.NNZ(), "load_s", fmt.Sprintf("%.2f", j.phases["load"]))
	j.log.Info("forest", "trees", params.Trees, "ranks", j.size, "threads_per_rank", j.threads, "numa_domains", len(j.topo.Domains), "seed", params.Seed)

	replicas, err := numa.NewReplicas(j.pool, func(int) (*train.ForestData, error) {
		return train.NewForestData(ds, maphash.MakeSeed()), nil
	})
	if err != nil {
		return err
	}
	trainer := train.NewForestTrainer(params, replicas, len(j.pool.Workers()))
	plan := train.Plan{
		Units: params.Trees, Kind: "tree", Comm: j.comm, Pool: j.pool, Log: j.log,
		Checkpoint: c.checkpoint, Fingerprint: fingerprint(params, ds),
	}
	if j.rank == 0 {
		plan.Progress = newProgress(j.log, "trees", params.Trees, c.progressBar)
	}
	var own []train.Result
	var runErr error
	j.phase("train", func() error {
		own, runErr = plan.Run(j.ctx, trainer.Work)
		return nil
	})
	if runErr != nil && !errors.Is(runErr, train.ErrInterrupted) {
		return runErr
	}
	// Every rank must learn whether any rank was interrupted, to agree on
	// the outcome after the collectives below.
	flag := []int64{0}
	if runErr != nil {
		flag[0] = 1
		j.log.Warn(runErr.Error())
	}
	if err := j.comm.AllreduceInt64(flag, mpi.Max); err != nil {
		return err
	}
	interrupted := flag[0] == 1

	header := model.Header{Algorithm: model.AlgorithmForest, D: ds.D(), L: ds.L(), Seed: params.Seed,
		Params: mustJSON(params)}
	j.summary.Algorithm = "forest"
	j.summary.Params = header.Params
	j.summary.Data = map[string]any{"train": c.dataPath, "N": ds.N(), "D": ds.D(), "L": ds.L()}
	treesDone, whole, err := j.saveForest(c, header, own)
	if err != nil {
		return err
	}
	if c.checkpoint != "" && !interrupted && c.modelOut != "" {
		if err := j.comm.Barrier(); err != nil {
			return err
		}
		os.RemoveAll(c.checkpoint)
	}
	if c.predictOn != "root" {
		// The ranks predict with their own trees: return the gathered
		// copy's memory before prediction allocates its own.
		whole = nil
		runtime.GC()
	}
	if test != nil && treesDone > 0 {
		if err := j.evaluateForest(c, ds, test, own, whole, treesDone); err != nil {
			return err
		}
	}
	if interrupted {
		return fmt.Errorf("%w: stopped after %d of %d trees (%v); the model holds the finished trees and a rerun of the same command resumes from %s",
			errInterrupted, treesDone, params.Trees, context.Cause(j.ctx), c.checkpoint)
	}
	return nil
}

// saveForest gathers the trees on rank 0 and writes the model, or writes one
// shard per rank and a manifest. It returns the number of trees in the
// model (on every rank) and, on rank 0 when they were gathered, the encoded
// trees indexed by tree id.
func (j *job) saveForest(c *trainConfig, h model.Header, own []train.Result) (int, [][]byte, error) {
	count := []int64{int64(len(own))}
	if err := j.comm.AllreduceInt64(count, mpi.Sum); err != nil {
		return 0, nil, err
	}
	total := int(count[0])
	h.Counts = map[string]int64{"trees": int64(total)}
	if c.modelOut == "" {
		return total, nil, nil
	}
	if total == 0 {
		j.log.Warn("no tree finished: no model written")
		return 0, nil, nil
	}
	if c.shard {
		return total, nil, j.writeShards(c, h, own, total)
	}
	var trees [][]byte
	err := j.phase("gather", func() error {
		var err error
		trees, err = train.Gather(j.comm, c.forest.Trees, own, 0)
		return err
	})
	if err != nil || j.rank != 0 {
		return total, nil, err
	}
	err = j.phase("write", func() error {
		n, err := model.WriteForest(c.modelOut, h, trees)
		j.summary.ModelBytes = n
		return err
	})
	if err == nil {
		j.log.Info("model written", "path", c.modelOut, "trees", total, "bytes", j.summary.ModelBytes)
	}
	return total, trees, err
}

// writeShards writes this rank's trees to <model-out>.rank-R-of-P and, on
// rank 0, the manifest at --model-out.
func (j *job) writeShards(c *trainConfig, h model.Header, own []train.Result, total int) error {
	path := fmt.Sprintf("%s.rank-%04d-of-%04d", c.modelOut, j.rank, j.size)
	sh := h
	sh.Counts = map[string]int64{"trees": int64(len(own))}
	sh.Shard = &model.ShardInfo{Rank: j.rank, Ranks: j.size, Axis: "trees", Lo: int64(j.rank), Hi: int64(c.forest.Trees), Stride: int64(j.size)}
	trees := make([][]byte, c.forest.Trees)
	for _, r := range own {
		trees[r.Unit] = r.Data
	}
	var ref []byte
	err := j.phase("write", func() error {
		w, err := model.Create(path, sh)
		if err != nil {
			return err
		}
		for t, b := range trees {
			if b != nil {
				if err := w.AddSection(fmt.Sprintf("tree/%06d", t), b); err != nil {
					w.Abort()
					return err
				}
			}
		}
		if err := w.Commit(); err != nil {
			return err
		}
		ref = mustJSON(model.ShardRef{Path: filepath.Base(path), Rank: j.rank, Bytes: w.Bytes(), CRC32C: w.CRC32C()})
		return nil
	})
	if err != nil {
		return err
	}
	refs, err := j.comm.Gatherv(ref, 0)
	if err != nil || j.rank != 0 {
		return err
	}
	m := &model.Manifest{Header: h}
	for _, r := range refs {
		var s model.ShardRef
		if err := json.Unmarshal(r, &s); err != nil {
			return fmt.Errorf("shard reference: %w", err)
		}
		m.Shards = append(m.Shards, s)
		j.summary.ModelBytes += s.Bytes
	}
	if err := model.WriteManifest(c.modelOut, m); err != nil {
		return err
	}
	j.log.Info("sharded model written", "manifest", c.modelOut, "shards", len(m.Shards), "trees", total)
	return nil
}

// fingerprint identifies the hyper-parameters and training data of a run,
// for checkpoints: a CRC-32C of the parameters and of the data matrices.
func fingerprint(p train.ForestParams, d *data.Dataset) string {
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	h.Write(mustJSON(p))
	for _, m := range []*data.CSR{&d.X, &d.Y} {
		fmt.Fprintf(h, "%d %d %d;", m.Rows, m.Cols, m.NNZ())
		binary.Write(h, binary.LittleEndian, m.Indices)
		binary.Write(h, binary.LittleEndian, m.Values)
	}
	return fmt.Sprintf("forest %08x", h.Sum32())
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only plain structs are marshalled
	}
	return b
}
