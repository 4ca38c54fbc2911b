package pipeline

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"xmc/job"
	"xmc/model"
	"xmc/mpi"
	"xmc/runner"
)

// assembly is the distributed model under construction: the units the
// ranks trained, gathered into one model file on rank 0, or written as one
// shard per rank plus a manifest. A model that cannot be written leaves its
// units in the checkpoint, so that a rerun writes it without training.
type assembly struct {
	j           *job.Rank
	kind        model.Kind
	header      model.Header
	fingerprint string
	units       int // units of the whole model
	path        string
	shard       bool
	checkpoint  string
	// listUnits says that a shard's units were dealt on request, so its
	// header lists them; otherwise unit u lies on rank Owner(u, P).
	listUnits bool
}

// save writes the model from every rank's units own. It returns the
// number of units in the model (on every rank), on rank 0 when they were
// gathered the encoded units indexed by unit id, and the model file's
// commit, under way (nil where this rank wrote no single model file).
func (a *assembly) save(own []runner.Result) (int, [][]byte, *pendingCommit, error) {
	j := a.j
	count := []int64{int64(len(own))}
	if err := j.Comm.AllreduceInt64(count, mpi.Sum); err != nil {
		return 0, nil, nil, err
	}
	total := int(count[0])
	if a.path == "" {
		return total, nil, nil, nil
	}
	if total == 0 {
		j.Log.Warn("no " + a.kind.Unit() + " finished: no model written")
		return 0, nil, nil, nil
	}
	if a.shard {
		return total, nil, nil, a.writeShards(own, total)
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
		w, err = model.CreateUnits(a.kind, a.path, a.header, units)
		return err
	})
	if err != nil {
		return total, nil, nil, a.keepUnits(units, err)
	}
	return total, units, startCommit(w, a.path, a.kind.Unit()+"s", total), nil
}

// pendingCommit is a model file's Commit running in the background: it
// mostly waits for the disk (fsync), so rank 0 predicts meanwhile. A nil
// *pendingCommit has nothing to wait for.
type pendingCommit struct {
	w           *model.Writer
	path, units string
	count       int
	done        chan error
}

func startCommit(w *model.Writer, path, units string, count int) *pendingCommit {
	p := &pendingCommit{w: w, path: path, units: units, count: count, done: make(chan error, 1)}
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
	j.Log.Info("model written", "path", p.path, p.units, p.count, "bytes", j.Summary.ModelBytes)
	return nil
}

// keepUnits saves the finished units this rank holds to the checkpoint
// after writeErr, the failed write of the model or of this rank's shard,
// so that a rerun loads them rather than recomputing them (the runner
// saves units only some time after they finish), and returns writeErr.
func (a *assembly) keepUnits(units [][]byte, writeErr error) error {
	if a.checkpoint == "" {
		return writeErr
	}
	if err := runner.SaveUnits(a.checkpoint, a.fingerprint, units); err != nil {
		return fmt.Errorf("%w; saving the finished %ss to the checkpoint failed too: %v", writeErr, a.kind.Unit(), err)
	}
	held := 0
	for _, u := range units {
		if u != nil {
			held++
		}
	}
	a.j.Log.Warn("model not written: finished "+a.kind.Unit()+"s kept for a rerun", "checkpoint", a.checkpoint, a.kind.Unit()+"s", held)
	return writeErr
}

// writeShards writes this rank's units to <path>.rank-R-of-P and, on
// rank 0, the manifest at path.
func (a *assembly) writeShards(own []runner.Result, total int) error {
	j := a.j
	path := fmt.Sprintf("%s.rank-%04d-of-%04d", a.path, j.ID, j.Size)
	sh := a.header
	units := make([][]byte, a.units)
	held := make([]int64, 0, len(own))
	for _, r := range own {
		units[r.Unit] = r.Data
		held = append(held, int64(r.Unit))
	}
	if a.listUnits {
		// Units went to whichever rank asked: list them.
		sh.Shard = &model.ShardInfo{Rank: j.ID, Ranks: j.Size, Axis: a.kind.Axis(), Lo: 0, Hi: int64(a.units), Units: held}
	} else {
		sh.Shard = runner.StaticShard(j.ID, j.Size, a.units, a.kind.Axis())
	}
	var ref []byte
	err := j.Phase("write", func() error {
		w, err := model.CreateUnits(a.kind, path, sh, units)
		if err == nil {
			err = w.Commit()
		}
		if err != nil {
			return a.keepUnits(units, err)
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
	m.Header.Counts = a.kind.ManifestCounts(a.header, total)
	for _, r := range refs {
		var s model.ShardRef
		if err := json.Unmarshal(r, &s); err != nil {
			return fmt.Errorf("shard reference: %w", err)
		}
		m.Shards = append(m.Shards, s)
		j.Summary.ModelBytes += s.Bytes
	}
	if err := model.WriteManifest(a.path, m); err != nil {
		return err
	}
	j.Log.Info("sharded model written", "manifest", a.path, "shards", len(m.Shards), a.kind.Unit()+"s", total)
	return nil
}
