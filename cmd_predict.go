package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"

	"xmc/atomicfile"
	"xmc/data"
	"xmc/job"
	"xmc/model"
	"xmc/numa"
	"xmc/runner"
)

// scorer is a model, or the part of one a rank holds, that predicts: whole
// with Predict, or in parts whose sparse partial results rank 0 merges.
type scorer interface {
	Predict(x *data.CSR, k int, pool *numa.Pool) ([][]model.Scored, error)
	partial(x *data.CSR, k int, pool *numa.Pool) ([]model.Sparse, error)
	merge(parts [][]byte, rows, k int) ([][]model.Scored, error)
}

// forestScorer: the parts' leaf sums add up exactly.
type forestScorer struct{ *model.Forest }

func (f forestScorer) partial(x *data.CSR, _ int, pool *numa.Pool) ([]model.Sparse, error) {
	return f.PartialSums(x, pool)
}

func (f forestScorer) merge(parts [][]byte, rows, k int) ([][]model.Scored, error) {
	return model.MergeSums(parts, rows, f.L, k, f.TotalTrees)
}

// linearScorer: the parts hold disjoint labels, so their top-k lists merge.
type linearScorer struct{ *model.Linear }

func (l linearScorer) partial(x *data.CSR, k int, pool *numa.Pool) ([]model.Sparse, error) {
	return l.PartialTopK(x, k, pool)
}

func (l linearScorer) merge(parts [][]byte, rows, k int) ([][]model.Scored, error) {
	return model.MergeTopK(parts, rows, l.L, k)
}

// predict scores test and returns every row's top-k on rank 0 (nil
// elsewhere). With mode "ranks" each rank scores with its part and rank 0
// merges the sparse partial results (never dense L-vectors); with "root"
// rank 0 scores alone with whole, which only rank 0 needs to hold.
func predict(j *job.Rank, mode string, part, whole scorer, test *data.Dataset, k int) ([][]model.Scored, error) {
	if mode == "root" {
		if j.ID != 0 {
			return nil, nil
		}
		return whole.Predict(&test.X, k, j.Pool)
	}
	rows, err := part.partial(&test.X, k, j.Pool)
	if err != nil {
		return nil, err
	}
	parts, err := j.Comm.Gatherv(model.EncodeSums(rows), 0)
	if err != nil || j.ID != 0 {
		return nil, err
	}
	return part.merge(parts, test.N(), k)
}

// evaluate predicts the test set with the trained model of total units and,
// on rank 0, prints and records the metrics. whole holds every encoded unit
// on rank 0 when the model was gathered. When the ranks predict with their
// own parts, it takes the encoded units out of own (leaving Data nil).
func evaluate(j *job.Rank, c *trainConfig, a *algorithm, ds, test *data.Dataset, own []runner.Result, whole [][]byte, total int) error {
	var scores [][]model.Scored
	err := j.Phase("predict", func() error {
		var part, all scorer
		var err error
		if c.predictOn == "root" {
			// Unless the model was sharded or not written, its units
			// were gathered to rank 0 to write it; otherwise every rank
			// takes part in gathering them now. (Only rank 0 holds
			// whole: the other ranks cannot decide by it.)
			if c.shard || c.modelOut == "" {
				if whole, err = runner.Gather(j.Comm, a.units, own, 0); err != nil {
					return err
				}
			}
			if j.ID == 0 {
				if all, err = a.scorer(whole); err != nil {
					return err
				}
			}
		} else {
			// The encoded units move into units, from which the
			// scorer takes them (a forest routes through the
			// encodings themselves): no rank holds its part twice.
			units := make([][]byte, a.units)
			for i, r := range own {
				units[r.Unit], own[i].Data = r.Data, nil
			}
			if part, err = a.scorer(units); err != nil {
				return err
			}
		}
		if f, ok := part.(forestScorer); ok {
			f.TotalTrees = total // this rank's trees are a part of the forest
		}
		scores, err = predict(j, c.predictOn, part, all, test, c.eval.topK)
		return err
	})
	if err != nil || j.ID != 0 {
		return err
	}
	if c.scoresOut != "" {
		if err := writeScoresFile(c.scoresOut, test.L(), scores); err != nil {
			return err
		}
	}
	return j.Phase("eval", func() error {
		inv := model.InversePropensity(model.LabelCounts(&ds.Y), ds.N(), c.eval.propA, c.eval.propB)
		m, err := model.Evaluate(&test.Y, scores, inv, c.eval.metricKs())
		if err != nil {
			return err
		}
		j.Summary.Metrics = m
		fmt.Printf("%s: %d test rows, %s, %d ranks x %d threads\n", c.dataPath, test.N(), a.name, j.Size, j.Threads)
		return model.WriteTable(os.Stdout, []string{a.name}, []model.Metrics{m}, c.eval.metricKs())
	})
}

// addTrees adds the trees encoded in blobs (nil entries skipped) to f and
// counts them in f.TotalTrees. The forest keeps the encodings, and routes
// through them without decoding.
func addTrees(f *model.Forest, blobs [][]byte) error {
	for i, b := range blobs {
		if b == nil {
			continue
		}
		if err := f.AddTree(b); err != nil {
			return fmt.Errorf("tree %d: %w", i, err)
		}
	}
	f.TotalTrees = len(f.Trees)
	return nil
}

// writeScoresFile writes rows in the XMC score format, atomically.
func writeScoresFile(path string, L int, rows [][]model.Scored) error {
	return atomicfile.Write(path, func(w *bufio.Writer) error { return model.WriteScores(w, L, rows) })
}

// loadScorer loads the model at path, or on each rank the part of it the
// rank scores with (keep(unit)), whatever its algorithm.
func loadScorer(path string, keep func(unit int) bool) (scorer, model.Header, error) {
	h, err := model.ReadHeader(path)
	if err != nil {
		return nil, h, err
	}
	switch {
	case h.Algorithm == model.AlgorithmForest:
		f, h, err := model.LoadForest(path, keep)
		return forestScorer{f}, h, err
	case model.IsLinear(h.Algorithm):
		m, h, err := model.LoadLinear(path, keep)
		return linearScorer{m}, h, err
	}
	return nil, h, fmt.Errorf("%s: unknown algorithm %q", path, h.Algorithm)
}

func runPredict(args []string) error {
	fs := newFlagSet("predict", "predict --model FILE --data TEST --out SCORES [--top-k K] [flags]")
	jo := job.Options{Version: version}
	jo.Register(fs)
	var df dataFlags
	df.register(fs)
	var ef evalFlags
	ef.register(fs)
	var modelPath, dataPath, split, out, mode string
	fs.StringVar(&modelPath, "model", "", "model `FILE` (or the manifest of a sharded model)")
	fs.StringVar(&dataPath, "data", "", "test data `FILE`")
	fs.StringVar(&split, "test-split", "", "DXML tstSplit `FILE`: rows of --data to predict")
	fs.StringVar(&out, "out", "", "write the scores to `FILE` (XMC score format)")
	fs.StringVar(&mode, "predict-on", "ranks", "ranks (each rank scores with its part of the model, merged on rank 0) or root (rank 0 scores alone)")
	if err := parseFlags(fs, args, false); err != nil {
		return err
	}
	switch {
	case modelPath == "" || dataPath == "" || out == "":
		return errors.New("--model, --data and --out are required")
	case mode != "ranks" && mode != "root":
		return fmt.Errorf("--predict-on %q: want ranks or root", mode)
	case ef.topK < 1:
		return fmt.Errorf("--top-k must be at least 1, got %d", ef.topK)
	}
	return job.Run("predict", jo, func(j *job.Rank) error {
		var part, whole scorer
		var h model.Header
		err := j.Phase("load", func() error {
			var err error
			if mode == "root" {
				if j.ID == 0 {
					whole, h, err = loadScorer(modelPath, nil)
				}
				part = whole
			} else {
				part, h, err = loadScorer(modelPath, func(u int) bool { return u%j.Size == j.ID })
			}
			return err
		})
		if err != nil {
			return err
		}
		var test *data.Dataset
		if err := j.Phase("load", func() error {
			var err error
			test, err = df.load(dataPath, split, 0, 0)
			return err
		}); err != nil {
			return err
		}
		if j.ID == 0 || mode == "ranks" {
			if test.D() > h.D || test.L() > h.L {
				return fmt.Errorf("%s has D=%d L=%d but model %s was trained with D=%d L=%d", dataPath, test.D(), test.L(), modelPath, h.D, h.L)
			}
		}
		j.Summary.Algorithm = h.Algorithm
		var scores [][]model.Scored
		if err := j.Phase("predict", func() error {
			var err error
			scores, err = predict(j, mode, part, whole, test, ef.topK)
			return err
		}); err != nil || j.ID != 0 {
			return err
		}
		if err := j.Phase("write", func() error { return writeScoresFile(out, h.L, scores) }); err != nil {
			return err
		}
		j.Log.Info("scores written", "path", out, "rows", len(scores), "predict_s", fmt.Sprintf("%.3f", j.PhaseSeconds("predict")))
		return nil
	})
}
