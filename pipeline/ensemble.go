package pipeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"xmc/atomicfile"
	"xmc/data"
	"xmc/job"
	"xmc/model"
	"xmc/model/ensemble"
	"xmc/model/kinds"
	"xmc/runner"
	"xmc/train"
)

// EnsembleTrainConfig is what xmc train --algo ensemble does: train each
// member on the same ranks, one after the other, on the training rows
// less a held-out fraction drawn by the seed; choose the members'
// calibrations and weights on the held-out rows; write the ensemble file
// at Train.ModelOut and each member beside it (MemberPath); evaluate the
// ensemble on the test set, if any.
type EnsembleTrainConfig struct {
	// Train holds the settings every member shares (data, test, model
	// path, seed, checkpoint, evaluation); its Algorithm, Trainer and Set
	// are unused.
	Train TrainConfig
	// Members are the members' algorithms, each with its
	// hyper-parameters.
	Members []EnsembleMember
	// Heldout is the fraction of the training rows held out of every
	// member's training to fit the ensemble on.
	Heldout float64
}

// EnsembleMember is one member of an ensemble to train: its algorithm,
// trainer and the flags the user set for it.
type EnsembleMember struct {
	Algorithm string
	Trainer   train.Trainer
	Set       func(name string) bool
}

// MemberPath returns the path of member i (of algorithm algo) of the
// ensemble at path: beside it, named after it.
func MemberPath(path string, i int, algo string) string {
	return path + "." + strconv.Itoa(i) + "-" + algo
}

// Check reports the first inconsistent setting.
func (c *EnsembleTrainConfig) Check() error {
	switch {
	case len(c.Members) == 0:
		return errors.New("an ensemble needs at least one member")
	case c.Train.ModelOut == "":
		return errors.New("--algo ensemble needs --model-out: the ensemble file names its members' files")
	case c.Train.Shard:
		return errors.New("--algo ensemble does not shard its members (--shard)")
	case !(c.Heldout > 0 && c.Heldout < 1):
		return fmt.Errorf("--heldout must be a fraction in (0, 1), got %v", c.Heldout)
	case !c.Train.Labels.All():
		return errors.New("--label-range: an ensemble trains every label")
	}
	for i, m := range c.Members {
		t := c.memberConfig(i, m)
		if err := t.Check(); err != nil {
			return fmt.Errorf("member %s: %w", m.Algorithm, err)
		}
	}
	return checkOutput("--model-out", c.Train.ModelOut)
}

// memberConfig returns the training configuration of member i.
func (c *EnsembleTrainConfig) memberConfig(i int, m EnsembleMember) TrainConfig {
	t := c.Train
	t.Algorithm, t.Trainer, t.Set = m.Algorithm, m.Trainer, m.Set
	t.TestPath, t.TestSplit, t.TestLabels, t.ScoresOut = "", "", "", ""
	t.ModelOut = MemberPath(c.Train.ModelOut, i, m.Algorithm)
	if c.Train.Checkpoint != "" {
		t.Checkpoint = t.ModelOut + ".ckpt"
	}
	t.Heldout = c.Heldout
	return t
}

// TrainEnsemble checks c and trains the ensemble on every rank of the job
// opts lays out.
func TrainEnsemble(opts job.Options, c EnsembleTrainConfig) error {
	if err := c.Check(); err != nil {
		return err
	}
	return job.Run("train", opts, func(j *job.Rank) error { return trainEnsembleRank(j, c) })
}

// trainEnsembleRank is one rank's part of xmc train --algo ensemble.
func trainEnsembleRank(j *job.Rank, c EnsembleTrainConfig) error {
	var held *data.Dataset
	var last *training
	paths := make([]string, len(c.Members))
	for i, m := range c.Members {
		mc := c.memberConfig(i, m)
		j.Log.Info("ensemble member", "member", i, "algorithm", m.Algorithm, "model", mc.ModelOut)
		t, err := trainMember(j, c.Train.Checkpoint, i, mc)
		if err != nil {
			return fmt.Errorf("ensemble member %d (%s): %w", i, m.Algorithm, err)
		}
		paths[i], held, last = mc.ModelOut, t.held, t
	}
	params, err := json.Marshal(map[string]any{"heldout": c.Heldout, "heldout_rows": held.N()})
	if err != nil {
		return err
	}
	e, h, err := fitEnsemble(j, c.Train.ModelOut, paths, held, c.Train.Seed, params, c.Train.Eval.TopK)
	if err != nil {
		return err
	}
	if c.Train.Checkpoint != "" {
		// The ensemble file is written: its members need no resuming.
		if err := j.Comm.Barrier(); err != nil {
			return err
		}
		if j.ID == 0 {
			if err := runner.RemoveCheckpoint(c.Train.Checkpoint); err != nil {
				j.Log.Warn(err.Error())
			}
		}
	}
	j.Summary.Algorithm, j.Summary.Params = ensemble.Algorithm, h.Params
	if last.test == nil {
		if c.Train.TestPath == "" && c.Train.TestSplit == "" {
			return nil
		}
		// The members were trained without the test set: load it now.
		if err := j.Phase("load", func() error { return last.loadTest(c.Train) }); err != nil {
			return err
		}
	}
	last.c = c.Train
	last.c.Algorithm = ensemble.Algorithm
	var whole model.Model
	if c.Train.PredictOn == PredictOnRoot && j.ID == 0 {
		if whole, _, err = kinds.Load(c.Train.ModelOut, nil); err != nil {
			return err
		}
	}
	return last.evaluateWith(e, whole)
}

// trainMember trains member i of an ensemble as mc configures it, unless
// a run before this one finished it: then its model file is that run's
// and its record in the ensemble's checkpoint directory (none: no
// resuming) names the same algorithm, parameters and training rows. A
// member just trained is recorded there, so that an ensemble interrupted
// in a later member resumes without training it again. Either way the
// data are loaded and the held-out rows drawn, which the ensemble's fit
// needs.
func trainMember(j *job.Rank, checkpoint string, i int, mc TrainConfig) (*training, error) {
	t := &training{j: j, c: mc}
	if checkpoint == "" {
		return t, t.run()
	}
	if err := t.prepare(); err != nil {
		return nil, err
	}
	record := filepath.Join(checkpoint, "member-"+strconv.Itoa(i)+".done")
	done, err := memberDone(j, record, t.fingerprint, mc.ModelOut)
	if err != nil {
		return nil, err
	}
	if done {
		j.Log.Info("ensemble member trained before: its model is kept", "member", i, "model", mc.ModelOut)
		return t, nil
	}
	if err := t.trainPrepared(); err != nil {
		return nil, err
	}
	if j.ID == 0 {
		info, err := os.Stat(mc.ModelOut)
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(checkpoint, 0o755); err != nil {
			return nil, fmt.Errorf("checkpoint: %w", err)
		}
		if err := atomicfile.WriteBytes(record, []byte(memberRecord(t.fingerprint, info.Size()))); err != nil {
			return nil, fmt.Errorf("checkpoint: %w", err)
		}
	}
	return t, nil
}

// memberRecord is the content of a finished member's record: the run's
// fingerprint (algorithm, parameters, training rows) and the size of the
// model file it wrote.
func memberRecord(fingerprint string, size int64) string {
	return fmt.Sprintf("%s\nmodel bytes %d\n", fingerprint, size)
}

// memberDone reports, the same on every rank (rank 0 reads), whether the
// record at path says that a run of this fingerprint wrote the model file
// at model, as it is now.
func memberDone(j *job.Rank, path, fingerprint, model string) (bool, error) {
	flag := []byte{0}
	if j.ID == 0 {
		b, err := os.ReadFile(path)
		info, statErr := os.Stat(model)
		if err == nil && statErr == nil && string(b) == memberRecord(fingerprint, info.Size()) {
			flag[0] = 1
		}
	}
	flag, err := j.Comm.Bcast(flag, 0)
	if err != nil {
		return false, err
	}
	return len(flag) == 1 && flag[0] == 1, nil
}

// fitEnsemble loads this rank's part of the members at paths, predicts the
// held-out rows with each (distributed as xmc predict), and on rank 0
// fits the calibrations and weights and writes the ensemble file at path
// (members named relative to it). Every rank returns its part of the
// ensemble and its header.
func fitEnsemble(j *job.Rank, path string, paths []string, held *data.Dataset, seed uint64, params json.RawMessage, k int) (*ensemble.Model, model.Header, error) {
	parts := make([]model.Model, len(paths))
	spec := make([]ensemble.Member, len(paths))
	// Rank 0 has committed the members it wrote once it reaches here.
	if err := j.Comm.Barrier(); err != nil {
		return nil, model.Header{}, err
	}
	err := j.Phase("load", func() error {
		for m, p := range paths {
			part, h, err := kinds.Load(p, func(u int) bool { return runner.Owner(u, j.Size) == j.ID })
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(filepath.Dir(path), p)
			if err != nil {
				rel = p
			}
			parts[m], spec[m] = part, ensemble.Member{Path: rel, Header: h}
		}
		return nil
	})
	if err != nil {
		return nil, model.Header{}, err
	}
	h := ensemble.Header(spec[0].Header.D, spec[0].Header.L, seed, params, len(spec))
	lists := make([][][]model.Scored, len(parts))
	memberKinds := make([]string, len(parts))
	err = j.Phase("fit", func() error {
		for m, part := range parts {
			memberKinds[m] = model.KindName(spec[m].Header)
			err := predict(j, PredictOnRanks, part, nil, &held.X, ensemble.Candidates(memberKinds[m], k), func(_ int, rows [][]model.Scored) error {
				lists[m] = append(lists[m], rows...)
				return nil
			})
			if err != nil {
				return fmt.Errorf("held-out rows, member %d: %w", m, err)
			}
		}
		var b []byte
		if j.ID == 0 {
			f, err := ensemble.Fit(lists, &held.Y, memberKinds, k, j.Pool)
			if err != nil {
				return err
			}
			for m := range spec {
				spec[m].Weight, spec[m].Calibration = f.Weights[m], f.Calibrations[m]
			}
			if err := ensemble.Write(path, h, spec); err != nil {
				return err
			}
			j.Log.Info("ensemble written", "path", path, "heldout_rows", held.N(), "heldout_mean_p_at_k", fmt.Sprintf("%.2f", f.Objective),
				"resamples_searched", f.Searched,
				"weights", fmt.Sprint(f.Weights))
			if b, err = json.Marshal(spec); err != nil {
				return err
			}
		}
		// Every rank scores with the weights rank 0 chose.
		b, err := j.Comm.Bcast(b, 0)
		if err != nil {
			return err
		}
		return json.Unmarshal(b, &spec)
	})
	if err != nil {
		return nil, h, err
	}
	e, err := ensemble.New(parts, spec, h.L)
	return e, h, err
}

// EnsembleConfig is what xmc ensemble does: choose the calibrations and
// weights of trained models on held-out rows that none of them trained on,
// and write the ensemble file.
type EnsembleConfig struct {
	// Models are the members' model files or manifests.
	Models []string
	// Input reads HeldoutPath, a labelled data file (HeldoutLabels: its
	// labels file in the NumPy format).
	Input                      Input
	HeldoutPath, HeldoutLabels string
	// Out is the ensemble file to write.
	Out  string
	Seed uint64
	// TopK is the k of the P@k the weights maximise (1, 3 and 5 up to it).
	TopK int
}

// FitEnsemble checks c and makes the ensemble on every rank of the job
// opts lays out: the held-out rows are predicted as xmc predict does.
func FitEnsemble(opts job.Options, c EnsembleConfig) error {
	switch {
	case len(c.Models) == 0 || c.HeldoutPath == "" || c.Out == "":
		return errors.New("give --out, --heldout and at least one --model")
	case c.TopK < 1:
		return fmt.Errorf("--top-k must be at least 1, got %d", c.TopK)
	}
	return job.Run("ensemble", opts, func(j *job.Rank) error {
		var held *data.Dataset
		if err := j.Phase("load", func() error {
			var err error
			held, err = c.Input.Load(c.HeldoutPath, c.HeldoutLabels, "", 0, 0)
			return err
		}); err != nil {
			return err
		}
		params, err := json.Marshal(map[string]any{"heldout_file": c.HeldoutPath, "heldout_rows": held.N()})
		if err != nil {
			return err
		}
		_, _, err = fitEnsemble(j, c.Out, c.Models, held, c.Seed, params, c.TopK)
		return err
	})
}

// loadModels loads the model at paths[0] or, given several, the ensemble
// of them with equal weights and each kind's default calibration,
// keeping the units keep accepts of each.
func loadModels(paths []string, keep func(unit int) bool) (model.Model, model.Header, error) {
	if len(paths) == 1 {
		return kinds.Load(paths[0], keep)
	}
	parts := make([]model.Model, len(paths))
	headers := make([]model.Header, len(paths))
	for m, p := range paths {
		var err error
		if parts[m], headers[m], err = kinds.Load(p, keep); err != nil {
			return nil, model.Header{}, err
		}
	}
	return ensemble.Equal(parts, headers, paths)
}
