package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"

	"xmc/data"
	"xmc/model"
	"xmc/train"
)

// predictForest scores test with forest parts held by the ranks and returns
// every row's top-k on rank 0 (nil elsewhere). With mode "ranks" each rank
// scores with its own trees and rank 0 adds the sparse partial sums; with
// "root" rank 0 scores alone with whole, which only rank 0 needs to hold.
func (j *job) predictForest(mode string, part, whole *model.Forest, test *data.Dataset, k int) ([][]model.Scored, error) {
	if mode == "root" {
		if j.rank != 0 {
			return nil, nil
		}
		return whole.Predict(&test.X, k, j.pool)
	}
	var enc []byte
	if len(part.Trees) > 0 {
		sums, err := part.PartialSums(&test.X, j.pool)
		if err != nil {
			return nil, err
		}
		enc = model.EncodeSums(sums)
	} else {
		enc = model.EncodeSums(make([]model.Sparse, test.N()))
	}
	parts, err := j.comm.Gatherv(enc, 0)
	if err != nil || j.rank != 0 {
		return nil, err
	}
	return model.MergeSums(parts, test.N(), part.L, k, part.TotalTrees)
}

// evaluateForest predicts the test set with the trained trees and, on rank
// 0, prints and records the metrics.
func (j *job) evaluateForest(c *trainConfig, ds, test *data.Dataset, own []train.Result, whole [][]byte, trees int) error {
	var scores [][]model.Scored
	err := j.phase("predict", func() error {
		part := &model.Forest{D: ds.D(), L: ds.L(), TotalTrees: trees}
		var all *model.Forest
		if c.predictOn == "root" {
			if whole == nil { // sharded or not written: gather the trees now
				var err error
				if whole, err = train.Gather(j.comm, c.forest.Trees, own, 0); err != nil {
					return err
				}
			}
			if j.rank == 0 {
				all = &model.Forest{D: ds.D(), L: ds.L(), TotalTrees: trees}
				if err := decodeTrees(all, whole); err != nil {
					return err
				}
			}
		} else {
			blobs := make([][]byte, len(own))
			for i, r := range own {
				blobs[i] = r.Data
			}
			if err := decodeTrees(part, blobs); err != nil {
				return err
			}
		}
		var err error
		scores, err = j.predictForest(c.predictOn, part, all, test, c.eval.topK)
		return err
	})
	if err != nil || j.rank != 0 {
		return err
	}
	if c.scoresOut != "" {
		if err := writeScoresFile(c.scoresOut, test.L(), scores); err != nil {
			return err
		}
	}
	return j.phase("eval", func() error {
		inv := model.InversePropensity(model.LabelCounts(&ds.Y), ds.N(), c.eval.propA, c.eval.propB)
		m, err := model.Evaluate(&test.Y, scores, inv, c.eval.metricKs())
		if err != nil {
			return err
		}
		j.summary.Metrics = m
		fmt.Printf("%s: %d test rows, %d trees, %d ranks x %d threads\n", c.dataPath, test.N(), trees, j.size, j.threads)
		return model.WriteTable(os.Stdout, []string{"forest"}, []model.Metrics{m}, c.eval.metricKs())
	})
}

// decodeTrees appends the trees encoded in blobs (nil entries skipped) to f.
func decodeTrees(f *model.Forest, blobs [][]byte) error {
	for i, b := range blobs {
		if b == nil {
			continue
		}
		t := new(model.Tree)
		if err := t.UnmarshalBinary(b); err != nil {
			return fmt.Errorf("tree %d: %w", i, err)
		}
		f.Trees = append(f.Trees, t)
	}
	return nil
}

// writeScoresFile writes rows in the XMC score format, atomically.
func writeScoresFile(path string, L int, rows [][]model.Scored) error {
	return model.WriteAtomic(path, func(w *bufio.Writer) error { return model.WriteScores(w, L, rows) })
}

func runPredict(args []string) error {
	fs := newFlagSet("predict", "predict --model FILE --data TEST --out SCORES [--top-k K] [flags]")
	var jo jobOptions
	jo.register(fs)
	var df dataFlags
	df.register(fs)
	var ef evalFlags
	ef.register(fs)
	var modelPath, dataPath, split, out, mode string
	fs.StringVar(&modelPath, "model", "", "model `FILE` (or the manifest of a sharded model)")
	fs.StringVar(&dataPath, "data", "", "test data `FILE`")
	fs.StringVar(&split, "test-split", "", "DXML tstSplit `FILE`: rows of --data to predict")
	fs.StringVar(&out, "out", "", "write the scores to `FILE` (XMC score format)")
	fs.StringVar(&mode, "predict-on", "ranks", "ranks (each rank scores with its trees, sums merged on rank 0) or root (rank 0 scores alone)")
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
	return runJob("predict", jo, func(j *job) error {
		var part, whole *model.Forest
		var h model.Header
		err := j.phase("load", func() error {
			var err error
			if mode == "root" {
				if j.rank == 0 {
					whole, h, err = model.LoadForest(modelPath, nil)
				}
				part = whole
			} else {
				part, h, err = model.LoadForest(modelPath, func(t int) bool { return t%j.size == j.rank })
			}
			return err
		})
		if err != nil {
			return err
		}
		var test *data.Dataset
		if err := j.phase("load", func() error {
			var err error
			test, err = df.load(dataPath, split, 0, 0)
			return err
		}); err != nil {
			return err
		}
		if j.rank == 0 || mode == "ranks" {
			if test.D() > h.D || test.L() > h.L {
				return fmt.Errorf("%s has D=%d L=%d but model %s was trained with D=%d L=%d", dataPath, test.D(), test.L(), modelPath, h.D, h.L)
			}
		}
		j.summary.Algorithm = h.Algorithm
		var scores [][]model.Scored
		if err := j.phase("predict", func() error {
			var err error
			scores, err = j.predictForest(mode, part, whole, test, ef.topK)
			return err
		}); err != nil || j.rank != 0 {
			return err
		}
		if err := j.phase("write", func() error { return writeScoresFile(out, h.L, scores) }); err != nil {
			return err
		}
		j.log.Info("scores written", "path", out, "rows", len(scores), "predict_s", fmt.Sprintf("%.3f", j.phases["predict"]))
		return nil
	})
}
