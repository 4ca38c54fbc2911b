package train

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"xmc/mpi"
	"xmc/numa"
)

// unitBytes is the result of unit u in these tests.
func unitBytes(u int) []byte { return []byte(fmt.Sprintf("unit %d", u)) }

// countingProgress records the last progress report on rank 0.
type countingProgress struct {
	mu       sync.Mutex
	done     int
	finished bool
}

func (p *countingProgress) Done(done, _ int) { p.mu.Lock(); p.done = done; p.mu.Unlock() }
func (p *countingProgress) Finish()          { p.finished = true }

// runUnits runs a plan of units over ranks in-process, each rank with a
// pool of threads workers, and returns the gathered results.
func runUnits(t *testing.T, ctx context.Context, units, ranks, threads int, checkpoint string, work WorkFunc) ([][]byte, *countingProgress, error) {
	t.Helper()
	prog := &countingProgress{}
	var gathered [][]byte
	err := mpi.Launch(ranks, func(c mpi.Comm) error {
		topo, err := numa.Detect()
		if err != nil {
			return err
		}
		pool, err := numa.NewPool(topo, threads, nil)
		if err != nil {
			return err
		}
		defer pool.Close()
		p := Plan{Units: units, Kind: "unit", Comm: c, Pool: pool, Log: slog.New(slog.DiscardHandler),
			Checkpoint: checkpoint, Fingerprint: "test"}
		if c.Rank() == 0 {
			p.Progress = prog
		}
		own, runErr := p.Run(ctx, work)
		if runErr != nil && !errors.Is(runErr, ErrInterrupted) {
			return runErr
		}
		all, err := Gather(c, units, own, 0)
		if c.Rank() == 0 {
			gathered = all
		}
		if err != nil {
			return err
		}
		return runErr
	})
	return gathered, prog, err
}

func TestRunnerSchedulesEveryUnitOnce(t *testing.T) {
	for _, c := range []struct{ units, ranks, threads int }{{1, 1, 1}, {7, 3, 2}, {20, 4, 1}, {2, 4, 1}} {
		var mu sync.Mutex
		calls := map[int]int{}
		all, prog, err := runUnits(t, context.Background(), c.units, c.ranks, c.threads, "", func(w numa.Worker, u int) ([]byte, error) {
			mu.Lock()
			calls[u]++
			mu.Unlock()
			return unitBytes(u), nil
		})
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		for u := range c.units {
			if calls[u] != 1 || string(all[u]) != string(unitBytes(u)) {
				t.Errorf("%+v: unit %d computed %d times, gathered %q", c, u, calls[u], all[u])
			}
		}
		if prog.done != c.units || !prog.finished {
			t.Errorf("%+v: progress reported %d of %d units (finished %v)", c, prog.done, c.units, prog.finished)
		}
	}
}

func TestRunnerErrorNamesUnit(t *testing.T) {
	_, _, err := runUnits(t, context.Background(), 6, 2, 1, "", func(w numa.Worker, u int) ([]byte, error) {
		if u == 3 {
			return nil, errors.New("boom")
		}
		return unitBytes(u), nil
	})
	if err == nil || !strings.Contains(err.Error(), "unit 3: boom") {
		t.Errorf("error = %v, want it to name unit 3", err)
	}
}

func TestRunnerCheckpointResume(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ckpt")
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	computed := 0
	// The first run stops after 3 units: the context is cancelled by the
	// work function itself, so the runner stops taking units.
	_, _, err := runUnits(t, ctx, 10, 2, 1, dir, func(w numa.Worker, u int) ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		if computed++; computed == 3 {
			cancel()
		}
		return unitBytes(u), nil
	})
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("first run: %v, want ErrInterrupted", err)
	}
	saved, _ := filepath.Glob(filepath.Join(dir, "unit-*.bin"))
	if len(saved) == 0 || len(saved) >= 10 {
		t.Fatalf("%d units saved after the interruption", len(saved))
	}
	recomputed := 0
	all, prog, err := runUnits(t, context.Background(), 10, 3, 1, dir, func(w numa.Worker, u int) ([]byte, error) {
		mu.Lock()
		recomputed++
		mu.Unlock()
		return unitBytes(u), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if recomputed != 10-len(saved) || prog.done != 10 {
		t.Errorf("resumed run computed %d units (want %d) and reported %d done", recomputed, 10-len(saved), prog.done)
	}
	for u := range 10 {
		if string(all[u]) != string(unitBytes(u)) {
			t.Errorf("unit %d: %q", u, all[u])
		}
	}
	// A checkpoint of another run is refused.
	os.WriteFile(filepath.Join(dir, fingerprintFile), []byte("other"), 0o644)
	if _, _, err := runUnits(t, context.Background(), 10, 1, 1, dir, func(numa.Worker, int) ([]byte, error) { return nil, nil }); err == nil ||
		!strings.Contains(err.Error(), "different run") {
		t.Errorf("foreign checkpoint: %v", err)
	}
}

// TestRunnerSlowRankIsNotAStall checks that ranks which finish early wait
// for the slowest one without tripping the communication watchdog: a long
// unit is work, not a dead node.
func TestRunnerSlowRankIsNotAStall(t *testing.T) {
	err := mpi.Launch(2, func(raw mpi.Comm) error {
		c := mpi.NewCounted(raw, 300*time.Millisecond)
		topo, err := numa.Detect()
		if err != nil {
			return err
		}
		pool, err := numa.NewPool(topo, 1, nil)
		if err != nil {
			return err
		}
		defer pool.Close()
		p := Plan{Units: 2, Kind: "unit", Comm: c, Pool: pool, Log: slog.New(slog.DiscardHandler)}
		if _, err := p.Run(context.Background(), func(w numa.Worker, u int) ([]byte, error) {
			if u == 0 { // rank 0's unit takes three watchdog periods
				time.Sleep(time.Second)
			}
			return unitBytes(u), nil
		}); err != nil {
			return err
		}
		return c.Barrier()
	})
	if err != nil {
		t.Fatal(err)
	}
}
