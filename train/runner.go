// Package train holds xmc's training algorithms and the runner they share.
//
// Every trainer splits its work into independent units (a tree of a forest, a
// block of labels of a one-vs-all model) and hands them to Run, which
// schedules units over MPI ranks and the pinned workers of each rank, shows
// progress, honours time limits and signals, and keeps a resume point. Run
// knows nothing of what a unit is: a unit's result is an opaque byte slice.
package train

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"xmc/model"
	"xmc/mpi"
	"xmc/numa"
)

// ErrInterrupted is returned by Run when a signal or the time limit stopped
// it before every unit was done. Finished units are kept in the checkpoint
// directory, if any, so a rerun resumes from them.
var ErrInterrupted = errors.New("training interrupted")

// WorkFunc computes one unit on worker w and returns its encoded result. It
// must depend only on the unit (and the read-only inputs it closes over), not
// on the worker, rank or order, so that results are the same for any number
// of ranks, threads and NUMA domains.
type WorkFunc func(w numa.Worker, unit int) ([]byte, error)

// Plan describes how Run schedules a set of units.
type Plan struct {
	// Units is the number of work units, identified 0..Units-1.
	Units int
	// Kind names a unit in messages ("tree", "label block").
	Kind string
	// Comm connects the ranks; unit u belongs to rank u mod Comm.Size()
	// (cyclic, so ranks get an equal number of units ± 1 and, when unit costs
	// drift with the id, a similar mix of cheap and costly ones).
	Comm mpi.Comm
	// Pool runs this rank's units: its workers pull units from a shared
	// queue, so a slow unit does not hold up the others.
	Pool *numa.Pool
	// Log receives progress lines; only rank 0 logs progress.
	Log *slog.Logger
	// Progress, if not nil, is told on rank 0 of every unit done by any rank.
	Progress Progress
	// Checkpoint, if not empty, is a directory where each finished unit is
	// saved atomically and from which a rerun of the same Fingerprint loads
	// finished units instead of recomputing them.
	Checkpoint string
	// Fingerprint identifies the run's data and hyper-parameters; a
	// checkpoint written under another fingerprint is refused.
	Fingerprint string
}

// Progress is told how many units are done out of the total.
type Progress interface {
	Done(done, total int)
	Finish()
}

// Owner returns the rank that computes unit u among size ranks.
func Owner(u, size int) int { return u % size }

// OwnedUnits returns the units of rank among size ranks, in increasing order.
func OwnedUnits(units, rank, size int) []int {
	var own []int
	for u := rank; u < units; u += size {
		own = append(own, u)
	}
	return own
}

// Result is one finished unit.
type Result struct {
	Unit int
	Data []byte
}

// tagProgress marks the messages by which ranks tell rank 0 of finished
// units, and tagAllDone rank 0's word that every rank has finished. Tags
// below 1000 are left to trainers.
const (
	tagProgress = 1000
	tagAllDone  = 1001
)

// Run computes this rank's units and returns their results in unit order.
// It stops taking new units once ctx is done and then returns the finished
// ones with an error wrapping ErrInterrupted.
func (p Plan) Run(ctx context.Context, work WorkFunc) ([]Result, error) {
	rank, size := p.Comm.Rank(), p.Comm.Size()
	own := OwnedUnits(p.Units, rank, size)
	results := make([]Result, len(own))
	for i, u := range own {
		results[i].Unit = u
	}

	ck, err := openCheckpoint(p.Checkpoint, p.Fingerprint, rank)
	if err != nil {
		return nil, err
	}
	var todo []int // indices into own
	for i, u := range own {
		if data, ok, err := ck.load(u); err != nil {
			return nil, err
		} else if ok {
			results[i].Data = data
		} else {
			todo = append(todo, i)
		}
	}
	resumed := len(own) - len(todo)
	if resumed > 0 {
		p.Log.Info("resuming from checkpoint", "dir", p.Checkpoint, p.Kind+"s", resumed)
	}

	tracker := p.startTracker(resumed)
	var next atomic.Int64
	var interrupted atomic.Bool
	runErr := p.Pool.Run(func(w numa.Worker) error {
		for {
			if ctx.Err() != nil {
				interrupted.Store(true)
				return nil
			}
			k := int(next.Add(1)) - 1
			if k >= len(todo) {
				return nil
			}
			i := todo[k]
			u := own[i]
			data, err := work(w, u)
			if err != nil {
				return fmt.Errorf("%s %d: %w", p.Kind, u, err)
			}
			if err := ck.save(u, data); err != nil {
				return err
			}
			results[i].Data = data
			if err := tracker.unitDone(); err != nil {
				return err
			}
		}
	})
	if runErr != nil {
		return nil, runErr
	}
	done := 0
	for _, r := range results {
		if r.Data != nil {
			done++
		}
	}
	if err := tracker.finish(); err != nil {
		return nil, err
	}
	if interrupted.Load() && done < len(own) {
		kept := results[:0]
		for _, r := range results {
			if r.Data != nil {
				kept = append(kept, r)
			}
		}
		where := "not saved: no checkpoint directory"
		if p.Checkpoint != "" {
			where = "saved in " + p.Checkpoint + "; rerun the same command to resume"
		}
		return kept, fmt.Errorf("%w (%v): rank %d finished %d of its %d %ss, %s",
			ErrInterrupted, context.Cause(ctx), rank, done, len(own), p.Kind, where)
	}
	return results, nil
}

// tracker counts finished units of all ranks on rank 0: other ranks send a
// zero-length message per unit and, when they stop, a 4-byte message with
// the number of units they loaded from a checkpoint; a goroutine of rank 0
// receives them. The messages are tiny and appear in the comm report under
// "send"/"recv".
type tracker struct {
	p        Plan
	mu       sync.Mutex
	done     int // on rank 0: units finished by all ranks
	resumed  int // on other ranks: units loaded from the checkpoint
	received chan error
}

func (p Plan) startTracker(resumed int) *tracker {
	t := &tracker{p: p}
	if p.Comm.Rank() != 0 {
		// Units loaded from a checkpoint are reported in the final message.
		t.resumed = resumed
		return t
	}
	t.add(resumed)
	if p.Comm.Size() > 1 {
		t.received = make(chan error, 1)
		go func() { t.received <- t.receive() }()
	}
	return t
}

func (t *tracker) receive() error {
	stopped := 0
	for stopped < t.p.Comm.Size()-1 {
		msg, _, err := t.p.Comm.Recv(mpi.AnySource, tagProgress)
		if err != nil {
			return fmt.Errorf("progress: %w", err)
		}
		if len(msg) == 0 {
			t.add(1)
			continue
		}
		if len(msg) != 4 {
			return fmt.Errorf("progress: malformed message of %d bytes", len(msg))
		}
		t.add(int(binary.LittleEndian.Uint32(msg)))
		stopped++
	}
	return nil
}

func (t *tracker) unitDone() error {
	if t.p.Comm.Rank() == 0 {
		t.add(1)
		return nil
	}
	return t.p.Comm.Send(nil, 0, tagProgress)
}

// add records n more finished units and reports progress on rank 0.
func (t *tracker) add(n int) {
	if n == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.done += n
	if t.p.Progress != nil {
		t.p.Progress.Done(t.done, t.p.Units)
	}
}

// finish tells rank 0 that this rank has stopped (with the number of units it
// loaded from a checkpoint rather than reported one by one) and, on rank 0,
// waits until every rank has stopped.
//
// Ranks that finish early wait here, in a receive from any source, rather
// than in the next collective: the communicator's watchdog leaves such
// receives alone, so waiting for the slowest rank of an hours-long training
// is not mistaken for a dead node.
func (t *tracker) finish() error {
	c := t.p.Comm
	if c.Rank() != 0 {
		if err := c.Send(binary.LittleEndian.AppendUint32(nil, uint32(t.resumed)), 0, tagProgress); err != nil {
			return err
		}
		_, _, err := c.Recv(mpi.AnySource, tagAllDone)
		return err
	}
	var err error
	if t.received != nil {
		err = <-t.received
	}
	if t.p.Progress != nil {
		t.p.Progress.Finish()
	}
	if err != nil {
		return err
	}
	for r := 1; r < c.Size(); r++ {
		if err := c.Send(nil, r, tagAllDone); err != nil {
			return err
		}
	}
	return nil
}

// writeFile writes data to path atomically (temporary file, fsync, rename),
// so a checkpoint never holds a partial unit.
func writeFile(path string, data []byte) error {
	return model.WriteAtomic(path, func(w *bufio.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// checkpoint saves finished units as files unit-NNNNNNN.bin in a directory
// stamped with the run's fingerprint. A nil *checkpoint saves nothing.
type checkpoint struct {
	dir string
}

const fingerprintFile = "FINGERPRINT"

func openCheckpoint(dir, fingerprint string, rank int) (*checkpoint, error) {
	if dir == "" {
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	path := filepath.Join(dir, fingerprintFile)
	old, err := os.ReadFile(path)
	switch {
	case err == nil && string(old) != fingerprint:
		return nil, fmt.Errorf("checkpoint directory %s belongs to a different run (other data or hyper-parameters); remove it or choose another --checkpoint", dir)
	case errors.Is(err, os.ErrNotExist):
		// Every rank stamps the directory: on node-local disks each rank is
		// the first, on a shared one the atomic writes carry the same bytes.
		if err := writeFile(path, []byte(fingerprint)); err != nil {
			return nil, fmt.Errorf("checkpoint: %w", err)
		}
	case err != nil:
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	return &checkpoint{dir: dir}, nil
}

func (c *checkpoint) file(u int) string {
	return filepath.Join(c.dir, fmt.Sprintf("unit-%07d.bin", u))
}

func (c *checkpoint) load(u int) ([]byte, bool, error) {
	if c == nil {
		return nil, false, nil
	}
	data, err := os.ReadFile(c.file(u))
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("checkpoint: %w", err)
	}
	return data, true, nil
}

func (c *checkpoint) save(u int, data []byte) error {
	if c == nil {
		return nil
	}
	if err := writeFile(c.file(u), data); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// Gather collects the results of every rank on root, indexed by unit (nil
// for a unit no rank finished); other ranks get nil. Results travel in one
// Gatherv, each as unit id, length and bytes; root keeps its own results
// where they are rather than sending itself a copy.
func Gather(c mpi.Comm, units int, own []Result, root int) ([][]byte, error) {
	var buf []byte
	if c.Rank() != root {
		size := 0
		for _, r := range own {
			size += 12 + len(r.Data)
		}
		buf = make([]byte, 0, size)
		for _, r := range own {
			buf = binary.LittleEndian.AppendUint32(buf, uint32(r.Unit))
			buf = binary.LittleEndian.AppendUint64(buf, uint64(len(r.Data)))
			buf = append(buf, r.Data...)
		}
	}
	parts, err := c.Gatherv(buf, root)
	if err != nil || c.Rank() != root {
		return nil, err
	}
	all := make([][]byte, units)
	for _, r := range own {
		if r.Unit >= units {
			return nil, fmt.Errorf("gather: unit %d out of range", r.Unit)
		}
		all[r.Unit] = r.Data
	}
	for rank, p := range parts {
		for len(p) > 0 {
			if len(p) < 12 {
				return nil, fmt.Errorf("gather: rank %d sent a truncated result", rank)
			}
			u, n := int(binary.LittleEndian.Uint32(p)), binary.LittleEndian.Uint64(p[4:])
			p = p[12:]
			if u >= units || n > uint64(len(p)) || all[u] != nil {
				return nil, fmt.Errorf("gather: rank %d sent a malformed result for unit %d", rank, u)
			}
			all[u] = p[:n:n]
			p = p[n:]
		}
	}
	return all, nil
}
