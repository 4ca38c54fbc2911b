package pipeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"time"

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
	shardAbove  int64 // shard a model larger than this (0: never by size)
	checkpoint  string
	// listUnits says that a shard's units were dealt on request, so its
	// header lists them; otherwise unit u lies on rank Owner(u, P).
	listUnits bool
}

// save writes the model from every rank's units own. It returns the
// number of units in the model (on every rank) and the model file's
// commit, under way (nil where this rank wrote no single model file).
func (a *assembly) save(own []runner.Result) (int, *pendingCommit, error) {
	j := a.j
	var bytes int64
	for _, r := range own {
		bytes += int64(len(r.Data))
	}
	count := []int64{int64(len(own)), bytes}
	if err := j.Comm.AllreduceInt64(count, mpi.Sum); err != nil {
		return 0, nil, err
	}
	total := int(count[0])
	if a.path == "" {
		return total, nil, nil
	}
	if total == 0 {
		j.Log.Warn("no " + a.kind.Unit() + " finished: no model written")
		return 0, nil, nil
	}
	if !a.shard && a.shardAbove > 0 && count[1] > a.shardAbove {
		a.shard = true
		j.Log.Info("sharding the model: its units exceed --shard-above", "bytes", count[1], "shard_above", a.shardAbove,
			"manifest", a.path, "shards", j.Size)
	}
	if a.shard {
		return total, nil, a.writeShards(own, total)
	}
	w, err := a.stream(own)
	if err != nil || j.ID != 0 {
		return total, nil, err
	}
	return total, startCommit(w, a.path, a.kind.Unit()+"s", total), nil
}

// held returns this rank's units indexed by unit id (nil: not held).
func (a *assembly) held(own []runner.Result) [][]byte {
	units := make([][]byte, a.units)
	for _, r := range own {
		units[r.Unit] = r.Data
	}
	return units
}

// stream writes the model on rank 0 as the units stream in, in id order
// (runner.Stream): rank 0 holds at most runner.StreamBytes of other ranks'
// units at once, however large the model. The header's counts are summed
// over the ranks first. If the model cannot be written, every rank keeps
// its own units in the checkpoint and returns rank 0's error. On rank 0 it
// returns the flushed Writer, to be committed.
func (a *assembly) stream(own []runner.Result) (*model.Writer, error) {
	j := a.j
	mine, err := a.kind.Counts(a.header, a.held(own))
	if err != nil {
		return nil, err
	}
	keys := slices.Sorted(maps.Keys(mine))
	sums := make([]int64, len(keys))
	for i, k := range keys {
		sums[i] = mine[k]
	}
	if err := j.Comm.AllreduceInt64(sums, mpi.Sum); err != nil {
		return nil, err
	}
	var w *model.Writer
	var werr error // rank 0: the first failure to write
	if j.ID == 0 {
		h := a.header
		h.Counts = map[string]int64{}
		for i, k := range keys {
			h.Counts[k] = sums[i]
		}
		w, werr = model.Create(a.path, h)
	}
	// The time spent in w counts as writing, the rest as gathering.
	var writing time.Duration
	start := time.Now()
	err = runner.Stream(j.Comm, own, 0, runner.StreamBytes, func(u int, data []byte) error {
		if werr != nil {
			return werr
		}
		t := time.Now()
		werr = w.AddSection(a.kind.Section(u), data)
		writing += time.Since(t)
		return werr
	})
	j.AddPhase("gather", time.Since(start)-writing)
	if j.ID != 0 && err != nil {
		return nil, err
	}
	if j.ID == 0 {
		if werr == nil {
			werr = err
		}
		if werr == nil {
			t := time.Now()
			werr = w.Flush()
			writing += time.Since(t)
		}
		j.AddPhase("write", writing)
	}
	// Every rank learns whether rank 0 wrote the model, and why not.
	var msg []byte
	if werr != nil {
		msg = []byte(werr.Error())
		if w != nil {
			w.Abort()
		}
	}
	if msg, err = j.Comm.Bcast(msg, 0); err != nil {
		return nil, err
	}
	if len(msg) > 0 {
		return nil, a.keepUnits(a.held(own), errors.New(string(msg)))
	}
	return w, nil
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
	j.Summary.ModelBytes, j.Summary.ModelUnits = p.w.Bytes(), p.count
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
	if err := runner.SaveUnits(a.checkpoint, a.fingerprint, a.j.ID, units); err != nil {
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
	units := a.held(own)
	if a.listUnits {
		// Units went to whichever rank asked: list them.
		held := make([]int64, len(own))
		for i, r := range own {
			held[i] = int64(r.Unit)
		}
		sh.Shard = &model.ShardInfo{Rank: j.ID, Ranks: j.Size, Axis: a.kind.Axis(), Lo: 0, Hi: int64(a.units), Units: held}
	} else {
		sh.Shard = staticShard(j.ID, j.Size, a.units, a.kind.Axis())
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
	refs, err := j.Comm.Gatherv(ref, 0, nil)
	if err != nil || j.ID != 0 {
		return err
	}
	m := &model.Manifest{Header: a.header}
	m.Header.Counts = a.kind.ManifestCounts(a.header, total)
	j.Summary.ModelUnits = total
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

// staticShard describes the shard of a model of units units along axis
// written by rank among size ranks that hold the units they own: dealt
// cyclically (runner.Owner), rank, rank+size, and so on.
func staticShard(rank, size, units int, axis string) *model.ShardInfo {
	return &model.ShardInfo{Rank: rank, Ranks: size, Axis: axis, Lo: int64(rank), Hi: int64(units), Stride: int64(size)}
}
