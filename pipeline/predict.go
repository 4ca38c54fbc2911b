package pipeline

import (
	"bufio"
	"errors"
	"fmt"
	"os"

	"xmc/atomicfile"
	"xmc/data"
	"xmc/job"
	"xmc/model"
	"xmc/runner"
)

// PredictConfig is what xmc predict does: score the rows of a data file
// with a model and write each row's top labels.
type PredictConfig struct {
	// ModelPath is a model file or the manifest of a sharded model.
	ModelPath string
	// Input reads DataPath, or the rows of it that TestSplit lists.
	Input               Input
	DataPath, TestSplit string
	// Out receives the scores (XMC score format).
	Out string
	// PredictOn is PredictOnRanks or PredictOnRoot.
	PredictOn string
	Eval      EvalOptions
	// Show prints the first Show rows' predictions to standard output,
	// with the label names read from LabelNames when it is set.
	Show       int
	LabelNames string
}

// Check reports the first inconsistent setting, before any rank starts.
func (c *PredictConfig) Check() error {
	switch {
	case c.ModelPath == "" || c.DataPath == "" || c.Out == "":
		return errors.New("--model, --data and --out are required")
	case c.PredictOn != PredictOnRanks && c.PredictOn != PredictOnRoot:
		return fmt.Errorf("--predict-on %q: want %s or %s", c.PredictOn, PredictOnRanks, PredictOnRoot)
	case c.Eval.TopK < 1:
		return fmt.Errorf("--top-k must be at least 1, got %d", c.Eval.TopK)
	case c.Show < 0:
		return fmt.Errorf("--show must be 0 or more, got %d", c.Show)
	}
	return nil
}

// Predict checks c and scores the data on every rank of the job opts lays
// out: with PredictOnRanks each rank loads only the units it owns.
func Predict(opts job.Options, c PredictConfig) error {
	if err := c.Check(); err != nil {
		return err
	}
	return job.Run("predict", opts, func(j *job.Rank) error { return predictRank(j, c) })
}

func predictRank(j *job.Rank, c PredictConfig) error {
	var part, whole model.Model
	var h model.Header
	err := j.Phase("load", func() error {
		var err error
		if c.PredictOn == PredictOnRoot {
			if j.ID == 0 {
				whole, h, err = model.Load(c.ModelPath, nil)
			}
			part = whole
		} else {
			part, h, err = model.Load(c.ModelPath, func(u int) bool { return runner.Owner(u, j.Size) == j.ID })
		}
		return err
	})
	if err != nil {
		return err
	}
	var test *data.Dataset
	if err := j.Phase("load", func() error {
		var err error
		test, err = c.Input.Load(c.DataPath, c.TestSplit, 0, 0)
		return err
	}); err != nil {
		return err
	}
	if j.ID == 0 || c.PredictOn == PredictOnRanks {
		if test.D() > h.D || test.L() > h.L {
			return fmt.Errorf("%s has D=%d L=%d but model %s was trained with D=%d L=%d", c.DataPath, test.D(), test.L(), c.ModelPath, h.D, h.L)
		}
	}
	j.Summary.Algorithm = h.Algorithm
	var scores [][]model.Scored
	if err := j.Phase("predict", func() error {
		var err error
		scores, err = predict(j, c.PredictOn, part, whole, test, c.Eval.TopK)
		return err
	}); err != nil || j.ID != 0 {
		return err
	}
	if err := j.Phase("write", func() error { return writeScoresFile(c.Out, h.L, scores) }); err != nil {
		return err
	}
	j.Log.Info("scores written", "path", c.Out, "rows", len(scores), "predict_s", fmt.Sprintf("%.3f", j.PhaseSeconds("predict")))
	if c.Show == 0 {
		return nil
	}
	var names data.LabelNames
	if c.LabelNames != "" {
		if names, err = data.ReadLabelNames(c.LabelNames); err != nil {
			return err
		}
	}
	return model.WriteReadable(os.Stdout, scores, &test.Y, names, c.Show)
}

// predict scores test and returns every row's top k on rank 0 (nil
// elsewhere). With PredictOnRanks each rank scores with its part and rank 0
// merges the sparse partial results (never dense L-vectors); with
// PredictOnRoot rank 0 scores alone with whole, which only rank 0 needs to
// hold.
func predict(j *job.Rank, mode string, part, whole model.Model, test *data.Dataset, k int) ([][]model.Scored, error) {
	if mode == PredictOnRoot {
		if j.ID != 0 {
			return nil, nil
		}
		return whole.Predict(&test.X, k, j.Pool)
	}
	rows, err := part.Partial(&test.X, k, j.Pool)
	if err != nil {
		return nil, err
	}
	parts, err := j.Comm.Gatherv(model.EncodeSums(rows), 0)
	if err != nil || j.ID != 0 {
		return nil, err
	}
	return part.Merge(parts, test.N(), k)
}

// evaluate predicts the test set with the trained model of total units
// and, on rank 0, prints and records the metrics. When the ranks predict
// with their own parts, it takes the encoded units out of own (leaving
// Data nil); when rank 0 predicts alone, the units are gathered to it.
func (t *training) evaluate(own []runner.Result, total int) error {
	j, c := t.j, t.c
	var scores [][]model.Scored
	err := j.Phase("predict", func() error {
		var part, all model.Model
		var err error
		if c.PredictOn == PredictOnRoot {
			// Rank 0 alone scores, with every unit: the one mode that
			// holds the whole model in one process.
			whole, err := runner.Gather(j.Comm, t.work.Units, own, 0)
			if err != nil {
				return err
			}
			if j.ID == 0 {
				if all, err = t.kind.Decode(t.header, whole, total); err != nil {
					return err
				}
			}
		} else {
			// The encoded units move into units, from which the model
			// takes them (a forest routes through the encodings
			// themselves): no rank holds its part twice.
			units := make([][]byte, t.work.Units)
			for i, r := range own {
				units[r.Unit], own[i].Data = r.Data, nil
			}
			if part, err = t.kind.Decode(t.header, units, total); err != nil {
				return err
			}
		}
		scores, err = predict(j, c.PredictOn, part, all, t.test, c.Eval.TopK)
		return err
	})
	if err != nil || j.ID != 0 {
		return err
	}
	if c.ScoresOut != "" {
		if err := writeScoresFile(c.ScoresOut, t.test.L(), scores); err != nil {
			return err
		}
	}
	return j.Phase("eval", func() error {
		ds := t.ds
		inv := model.InversePropensity(model.LabelCounts(&ds.Y), ds.N(), c.Eval.PropA, c.Eval.PropB)
		m, err := model.Evaluate(&t.test.Y, scores, inv, c.Eval.Ks())
		if err != nil {
			return err
		}
		j.Summary.Metrics = m
		testPath := c.TestPath
		if c.TestSplit != "" {
			testPath = c.DataPath + " (rows of " + c.TestSplit + ")"
		}
		fmt.Printf("%s: %d test rows, %s, %d ranks x %d threads\n", testPath, t.test.N(), c.Algorithm, j.Size, j.Threads)
		return model.WriteTable(os.Stdout, []string{c.Algorithm}, []model.Metrics{m}, c.Eval.Ks())
	})
}

// writeScoresFile writes rows in the XMC score format, atomically.
func writeScoresFile(path string, L int, rows [][]model.Scored) error {
	return atomicfile.Write(path, func(w *bufio.Writer) error { return model.WriteScores(w, L, rows) })
}
