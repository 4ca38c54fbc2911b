package pipeline

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"xmc/atomicfile"
	"xmc/data"
	"xmc/job"
	"xmc/metrics"
	"xmc/model"
	"xmc/numa"
	"xmc/runner"
	"xmc/scores"
)

// PredictConfig is what xmc predict does: score the rows of a data file
// with a model and write each row's top labels.
type PredictConfig struct {
	// Models are a model file, the manifest of a sharded model or an
	// ensemble file; several make an ensemble of equal weights (see
	// ensemble.Equal).
	Models []string
	// Input reads DataPath, or the rows of it that TestSplit lists;
	// DataLabels is its labels file in the NumPy format (empty: named
	// after DataPath, see data.LabelsPath; data.NoLabels: none).
	Input                           Input
	DataPath, DataLabels, TestSplit string
	// Out receives the scores: a SciPy CSR matrix when it ends in .npz
	// (see scores.NewNPZWriter), else the XMC score format.
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
	case len(c.Models) == 0 || c.DataPath == "" || c.Out == "":
		return errors.New("--model, --data and --out are required")
	case c.PredictOn != PredictOnRanks && c.PredictOn != PredictOnRoot:
		return fmt.Errorf("--predict-on %q: want %s or %s", c.PredictOn, PredictOnRanks, PredictOnRoot)
	case c.Eval.TopK < 1:
		return fmt.Errorf("--top-k must be at least 1, got %d", c.Eval.TopK)
	case c.Show < 0:
		return fmt.Errorf("--show must be 0 or more, got %d", c.Show)
	}
	return checkOutput("--out", c.Out)
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
				whole, h, err = loadModels(c.Models, nil)
			}
			part = whole
		} else {
			part, h, err = loadModels(c.Models, func(u int) bool { return runner.Owner(u, j.Size) == j.ID })
		}
		return err
	})
	if err != nil {
		return err
	}
	var test *data.Dataset
	if err := j.Phase("load", func() error {
		var err error
		test, err = c.Input.Load(c.DataPath, c.DataLabels, c.TestSplit, 0, 0)
		return err
	}); err != nil {
		return err
	}
	if j.ID == 0 || c.PredictOn == PredictOnRanks {
		if test.D() > h.D || test.L() > h.L {
			return fmt.Errorf("%s has D=%d L=%d but model %s was trained with D=%d L=%d", c.DataPath, test.D(), test.L(), strings.Join(c.Models, ", "), h.D, h.L)
		}
	}
	j.Summary.Algorithm, j.Summary.TestRows = h.Algorithm, test.N()
	var out *scoreFile
	if j.ID == 0 {
		if out, err = createScoreFile(c.Out, test.N(), h.L); err != nil {
			return err
		}
		defer out.abort()
	}
	var shown [][]model.Scored // the first Show rows
	err = j.Phase("predict", func() error {
		return predict(j, c.PredictOn, part, whole, &test.X, c.Eval.TopK, func(lo int, rows [][]model.Scored) error {
			shown = append(shown, rows[:max(0, min(len(rows), c.Show-lo))]...)
			return out.write(rows)
		})
	})
	if err != nil || j.ID != 0 {
		return err
	}
	if err := j.Phase("write", out.commit); err != nil {
		return err
	}
	j.Log.Info("scores written", "path", c.Out, "rows", test.N(), "predict_s", fmt.Sprintf("%.3f", j.PhaseSeconds("predict")))
	if c.Show == 0 {
		return nil
	}
	var names data.LabelNames
	if c.LabelNames != "" {
		if names, err = data.ReadLabelNames(c.LabelNames); err != nil {
			return err
		}
	}
	return scores.WriteReadable(os.Stdout, shown, &test.Y, names, c.Show)
}

// scoreFile is a score file written a batch of rows at a time, atomically.
// A nil *scoreFile writes nothing.
type scoreFile struct {
	f *atomicfile.File
	w *scores.Writer
}

// createScoreFile starts the score file of n rows over L labels at path:
// a SciPy CSR matrix if path ends in .npz, else the XMC score format.
func createScoreFile(path string, n, L int) (*scoreFile, error) {
	f, err := atomicfile.Create(path)
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	newWriter := scores.NewWriter
	if strings.HasSuffix(path, ".npz") {
		newWriter = scores.NewNPZWriter
	}
	w, err := newWriter(f, n, L)
	if err != nil {
		f.Abort()
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return &scoreFile{f: f, w: w}, nil
}

func (s *scoreFile) write(rows [][]model.Scored) error {
	if s == nil {
		return nil
	}
	if err := s.w.Write(rows); err != nil {
		return fmt.Errorf("write %s: %w", s.f.Path(), err)
	}
	return nil
}

// commit completes the file and moves it to its path.
func (s *scoreFile) commit() error {
	if s == nil {
		return nil
	}
	err := s.w.Close()
	if err == nil {
		err = s.f.Commit()
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", s.f.Path(), err)
	}
	return nil
}

// abort removes an uncommitted file; it can be deferred.
func (s *scoreFile) abort() {
	if s != nil {
		s.f.Abort()
	}
}

// Batches of test rows: rank 0 receives the ranks' partial results of one
// batch at a time, and sizes the next batch so that it brings about
// predictBatchBytes, between minBatchRows and maxBatchRows rows; the first
// batch has firstBatchRows (the test sets of Bibtex and Delicious fit in
// it, whose forests' partial results are 2-3 KB a row). Memory thus
// depends on the batch, never on the number of test rows.
const (
	predictBatchBytes = 64 << 20
	minBatchRows      = 1024
	firstBatchRows    = 8192
	maxBatchRows      = 1 << 16
)

// predict scores the rows of x in batches and calls emit on rank 0 with
// each batch's top k, in row order, lo being the batch's first row. With
// PredictOnRanks each rank scores every batch with its part and rank 0
// merges the sparse partial results (never dense L-vectors); with
// PredictOnRoot rank 0 scores alone with whole, which only rank 0 needs to
// hold. A job of one rank scores as PredictOnRoot with its part, the whole
// model: the partial results' encoding and merge would change nothing. Every
// rank must pass an x of the same number of rows.
func predict(j *job.Rank, mode string, part, whole model.Model, x *data.CSR, k int, emit func(lo int, rows [][]model.Scored) error) error {
	if mode == PredictOnRanks && j.Comm.Size() == 1 {
		mode, whole = PredictOnRoot, part
	}
	if mode == PredictOnRoot {
		if j.ID != 0 {
			return nil
		}
		for lo := 0; lo < x.Rows; lo += maxBatchRows {
			batch := x.Slice(lo, min(lo+maxBatchRows, x.Rows))
			rows, err := whole.Predict(&batch, k, j.Pool)
			if err != nil {
				return err
			}
			if err := emit(lo, rows); err != nil {
				return err
			}
		}
		return nil
	}
	size := firstBatchRows
	var recv []byte // rank 0 receives every batch's sums here, grown as needed
	for lo := 0; lo < x.Rows; {
		hi := min(lo+size, x.Rows)
		batch := x.Slice(lo, hi)
		partial, err := part.Partial(&batch, k, j.Pool)
		if err != nil {
			return err
		}
		parts, err := j.Comm.Gatherv(model.EncodeSums(partial), 0, recv)
		if err != nil {
			return err
		}
		next := []byte{}
		if j.ID == 0 {
			rows, err := part.Merge(parts, hi-lo, k)
			if err != nil {
				return err
			}
			if err := emit(lo, rows); err != nil {
				return err
			}
			received := 0
			for _, p := range parts {
				received += len(p)
			}
			if cap(recv) < received {
				// The batches after the first are sized to about
				// predictBatchBytes; a quarter more spares most
				// regrowths.
				recv = numa.LargeBytes(received + received/4)[:0]
			}
			perRow := max(1, received/(hi-lo))
			next = binary.LittleEndian.AppendUint64(nil, uint64(min(max(predictBatchBytes/perRow, minBatchRows), maxBatchRows)))
		}
		if next, err = j.Comm.Bcast(next, 0); err != nil {
			return err
		}
		if len(next) != 8 {
			return fmt.Errorf("predict: malformed batch size of %d bytes", len(next))
		}
		size = int(binary.LittleEndian.Uint64(next))
		lo = hi
	}
	return nil
}

// evaluate predicts the test set with the trained model of total units
// and, on rank 0, prints and records the metrics. When the ranks predict
// with their own parts, it takes the encoded units out of own (leaving
// Data nil); when rank 0 predicts alone, the units are gathered to it.
func (t *training) evaluate(own []runner.Result, total int) error {
	var part, all model.Model
	err := t.j.Phase("predict", func() error {
		var err error
		if t.c.PredictOn == PredictOnRoot {
			// Rank 0 alone scores, with every unit: the one mode that
			// holds the whole model in one process.
			whole, err := runner.Gather(t.j.Comm, t.work.Units, own, 0)
			if err != nil {
				return err
			}
			if t.j.ID == 0 {
				all, err = t.kind.Decode(t.header, whole, total)
			}
			return err
		}
		// The encoded units move into units, from which the model takes
		// them (a forest routes through the encodings themselves): no
		// rank holds its part twice.
		units := make([][]byte, t.work.Units)
		for i, r := range own {
			units[r.Unit], own[i].Data = r.Data, nil
		}
		part, err = t.kind.Decode(t.header, units, total)
		return err
	})
	if err != nil {
		return err
	}
	return t.evaluateWith(part, all)
}

// evaluateWith predicts the test set with part (each rank's part of the
// model) or all (the whole model, on rank 0, with PredictOnRoot) and, on
// rank 0, prints and records the metrics and writes the scores.
func (t *training) evaluateWith(part, all model.Model) error {
	j, c := t.j, t.c
	// Rank 0 evaluates, and writes the scores, a batch of rows at a time.
	var eval *metrics.Evaluator
	var out *scoreFile
	if j.ID == 0 {
		var err error
		inv := metrics.InversePropensity(data.LabelCounts(&t.trainY), t.trainN, c.Eval.PropA, c.Eval.PropB)
		if eval, err = metrics.NewEvaluator(t.test.L(), inv, c.Eval.Ks()); err != nil {
			return err
		}
		if c.ScoresOut != "" {
			if out, err = createScoreFile(c.ScoresOut, t.test.N(), t.test.L()); err != nil {
				return err
			}
			defer out.abort()
		}
	}
	j.Summary.TestRows = t.test.N()
	var evalTime time.Duration
	err := j.Phase("predict", func() error {
		return predict(j, c.PredictOn, part, all, &t.test.X, c.Eval.TopK, func(lo int, rows [][]model.Scored) error {
			start := time.Now()
			truth := t.test.Y.Slice(lo, lo+len(rows))
			err := eval.Add(&truth, rows)
			evalTime += time.Since(start)
			if err != nil {
				return err
			}
			return out.write(rows)
		})
	})
	j.AddPhase("predict", -evalTime)
	j.AddPhase("eval", evalTime)
	if err != nil || j.ID != 0 {
		return err
	}
	if err := out.commit(); err != nil {
		return err
	}
	return j.Phase("eval", func() error {
		m, err := eval.Metrics()
		if err != nil {
			return err
		}
		j.Summary.Metrics = m
		testPath := c.TestPath
		if c.TestSplit != "" {
			testPath = c.DataPath + " (rows of " + c.TestSplit + ")"
		}
		fmt.Printf("%s: %d test rows, %s, %d ranks x %d threads\n", testPath, t.test.N(), c.Algorithm, j.Size, j.Threads)
		return metrics.WriteTable(os.Stdout, []string{c.Algorithm}, []metrics.Metrics{m}, c.Eval.Ks())
	})
}
