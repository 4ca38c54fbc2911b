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
func runUnits(t *testing.T, ctx context.Context, schedule string, units, ranks, threads int, checkpoint string, work WorkFunc) ([][]byte, *countingProgress, error) {
	t.Helper()
	prog := &countingProgress{}
	var gathered [][]byte
	pools := rankPools(t, ranks, threads)
	err := mpi.Launch(ranks, func(c mpi.Comm) error {
		pool := pools[c.Rank()]
		p := Plan{Units: units, Kind: "unit", Comm: c, Schedule: schedule, Pool: pool, Log: slog.New(slog.DiscardHandler),
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

// workAll runs work on every unit of units on the pool's workers, which take
// units from a shared queue as the runner's do, and returns the results by
// unit; it fails t on the first error.
func workAll(t testing.TB, pool *numa.Pool, units int, work WorkFunc) [][]byte {
	t.Helper()
	out := make([][]byte, units)
	next := make(chan int, units)
	for u := range units {
		next <- u
	}
	close(next)
	err := pool.Run(func(w numa.Worker) error {
		for u := range next {
			b, err := work(w, u)
			if err != nil {
				return err
			}
			out[u] = b
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// rankPools returns a pool of threads workers for each of ranks in-process
// ranks, closed when t ends.
func rankPools(t testing.TB, ranks, threads int) []*numa.Pool {
	t.Helper()
	pools := make([]*numa.Pool, ranks)
	for r := range pools {
		pools[r] = newTestPool(t, threads, 1)
	}
	return pools
}

// schedules are the runner's schedules, which every runner test covers.
var schedules = []string{ScheduleStatic, ScheduleDynamic}

func TestRunnerSchedulesEveryUnitOnce(t *testing.T) {
	for _, c := range []struct {
		schedule              string
		units, ranks, threads int
	}{
		{ScheduleStatic, 1, 1, 1}, {ScheduleStatic, 7, 3, 2}, {ScheduleStatic, 20, 4, 1}, {ScheduleStatic, 2, 4, 1},
		{ScheduleDynamic, 1, 1, 1}, {ScheduleDynamic, 7, 3, 2}, {ScheduleDynamic, 50, 4, 2}, {ScheduleDynamic, 2, 4, 1}, {ScheduleDynamic, 0, 2, 1},
	} {
		var mu sync.Mutex
		calls := map[int]int{}
		all, prog, err := runUnits(t, context.Background(), c.schedule, c.units, c.ranks, c.threads, "", func(w numa.Worker, u int) ([]byte, error) {
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
	for _, schedule := range schedules {
		_, _, err := runUnits(t, context.Background(), schedule, 6, 2, 1, "", func(w numa.Worker, u int) ([]byte, error) {
			if u == 3 {
				return nil, errors.New("boom")
			}
			return unitBytes(u), nil
		})
		if err == nil || !strings.Contains(err.Error(), "unit 3: boom") {
			t.Errorf("%s: error = %v, want it to name unit 3", schedule, err)
		}
	}
}

// TestRunnerDynamicBalances makes rank 0 a slow node: under the dynamic
// schedule the other rank takes more than its static share of half the
// units.
func TestRunnerDynamicBalances(t *testing.T) {
	var mu sync.Mutex
	perRank := map[int]int{}
	pools := rankPools(t, 2, 1)
	err := mpi.Launch(2, func(c mpi.Comm) error {
		pool := pools[c.Rank()]
		p := Plan{Units: 20, Kind: "unit", Comm: c, Schedule: ScheduleDynamic, Pool: pool, Log: slog.New(slog.DiscardHandler)}
		own, err := p.Run(context.Background(), func(w numa.Worker, u int) ([]byte, error) {
			if c.Rank() == 0 {
				time.Sleep(20 * time.Millisecond)
			}
			return unitBytes(u), nil
		})
		mu.Lock()
		perRank[c.Rank()] = len(own)
		mu.Unlock()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if perRank[0]+perRank[1] != 20 || perRank[1] <= 10 {
		t.Errorf("units per rank %v: want 20 in all, more than 10 on the fast rank 1", perRank)
	}
}

func TestRunnerCheckpointResume(t *testing.T) {
	for _, schedule := range schedules {
		t.Run(schedule, func(t *testing.T) { testCheckpointResume(t, schedule) })
	}
}

// testCheckpointResume interrupts a run, resumes it with another number of
// ranks from the same (shared) directory, and checks that every unit is
// computed once over both runs.
func testCheckpointResume(t *testing.T, schedule string) {
	dir := filepath.Join(t.TempDir(), "ckpt")
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	computed := 0
	// The first run stops after 3 units: the context is cancelled by the
	// work function itself, so the runner stops taking units.
	_, _, err := runUnits(t, ctx, schedule, 10, 2, 1, dir, func(w numa.Worker, u int) ([]byte, error) {
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
	all, prog, err := runUnits(t, context.Background(), schedule, 10, 3, 1, dir, func(w numa.Worker, u int) ([]byte, error) {
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
	if _, _, err := runUnits(t, context.Background(), schedule, 10, 1, 1, dir, func(numa.Worker, int) ([]byte, error) { return nil, nil }); err == nil ||
		!strings.Contains(err.Error(), "different run") {
		t.Errorf("foreign checkpoint: %v", err)
	}
}

// TestRunnerCheckpointSaveFails checks that a unit the background saver
// cannot write ends the run with its error, on every schedule.
func TestRunnerCheckpointSaveFails(t *testing.T) {
	for _, schedule := range schedules {
		t.Run(schedule, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ckpt")
			var once sync.Once
			_, _, err := runUnits(t, context.Background(), schedule, 20, 2, 1, dir, func(w numa.Worker, u int) ([]byte, error) {
				// The directory becomes a file: no unit can be saved.
				once.Do(func() {
					os.RemoveAll(dir)
					os.WriteFile(dir, nil, 0o644)
				})
				return unitBytes(u), nil
			})
			if err == nil || !strings.Contains(err.Error(), "checkpoint") {
				t.Fatalf("run with unwritable checkpoint: %v", err)
			}
		})
	}
}

// TestRunnerCheckpointEvery checks when units that wait to be saved
// (Plan.CheckpointEvery) reach the checkpoint: when they are due during the
// run, all of them when the run is stopped, and none that are not yet due
// when the run finished every unit.
func TestRunnerCheckpointEvery(t *testing.T) {
	tests := []struct {
		name      string
		every     time.Duration
		stopAfter int           // cancel the run after this many units (0: never)
		unitTime  time.Duration // each unit sleeps this long
		check     func(saved, finished int) bool
		want      string
	}{
		{"finished run, nothing due", time.Hour, 0, 0, func(s, f int) bool { return s == 0 && f == 10 }, "no unit saved"},
		{"stopped run saves all", time.Hour, 3, 0, func(s, f int) bool { return s == f && f > 0 && f < 10 }, "every finished unit saved"},
		{"due during the run", 10 * time.Millisecond, 0, 40 * time.Millisecond, func(s, f int) bool { return s > 0 && f == 10 }, "units saved while the run went on"},
	}
	for _, tt := range tests {
		for _, schedule := range schedules {
			t.Run(tt.name+"/"+schedule, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				var mu sync.Mutex
				computed := 0
				saved, finished := runSaving(t, schedule, tt.every, func(int) context.Context { return ctx }, func(w numa.Worker, u int) ([]byte, error) {
					time.Sleep(tt.unitTime)
					mu.Lock()
					defer mu.Unlock()
					if computed++; computed == tt.stopAfter {
						cancel()
					}
					return unitBytes(u), nil
				})
				if !tt.check(saved, finished) {
					t.Errorf("%d units saved of %d finished, want %s", saved, finished, tt.want)
				}
			})
		}
	}
}

// TestRunnerCheckpointStopOnOneRank checks that when one rank is stopped
// and another finishes all of its units, the finished rank saves its
// waiting units too: the rerun must resume from every finished unit.
func TestRunnerCheckpointStopOnOneRank(t *testing.T) {
	stopped, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctxOf := func(rank int) context.Context {
		if rank == 1 {
			return stopped
		}
		return context.Background()
	}
	saved, finished := runSaving(t, ScheduleStatic, time.Hour, ctxOf, func(w numa.Worker, u int) ([]byte, error) {
		if u == 1 { // rank 1's first unit: rank 1 stops after it
			cancel()
		}
		return unitBytes(u), nil
	})
	if finished < 6 || finished == 10 || saved != finished {
		t.Errorf("%d units saved of %d finished (rank 0's 5 and some of rank 1's), want all finished ones saved", saved, finished)
	}
}

// runSaving runs 10 units on 2 ranks of one worker each, rank r stopping
// once ctxOf(r) is done, with a checkpoint saved every every, and returns
// the units the checkpoint holds and the units finished.
func runSaving(t *testing.T, schedule string, every time.Duration, ctxOf func(rank int) context.Context, work WorkFunc) (saved, finished int) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ckpt")
	var gathered [][]byte
	pools := rankPools(t, 2, 1)
	err := mpi.Launch(2, func(c mpi.Comm) error {
		p := Plan{Units: 10, Kind: "unit", Comm: c, Schedule: schedule, Pool: pools[c.Rank()], Log: slog.New(slog.DiscardHandler),
			Checkpoint: dir, CheckpointEvery: every, Fingerprint: "test"}
		own, runErr := p.Run(ctxOf(c.Rank()), work)
		if runErr != nil && !errors.Is(runErr, ErrInterrupted) {
			return runErr
		}
		all, err := Gather(c, 10, own, 0)
		if c.Rank() == 0 {
			gathered = all
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "unit-*.bin"))
	return len(files), 10 - countNil(gathered)
}

func countNil(units [][]byte) int {
	n := 0
	for _, u := range units {
		if u == nil {
			n++
		}
	}
	return n
}

// TestRunnerSlowRankIsNotAStall checks that ranks which finish early wait
// for the slowest one without tripping the communication watchdog: a long
// unit is work, not a dead node.
func TestRunnerSlowRankIsNotAStall(t *testing.T) {
	for _, schedule := range schedules {
		if err := slowRank(t, schedule); err != nil {
			t.Errorf("%s: %v", schedule, err)
		}
	}
}

func slowRank(t *testing.T, schedule string) error {
	pools := rankPools(t, 2, 1)
	return mpi.Launch(2, func(raw mpi.Comm) error {
		c := mpi.NewCounted(raw, 300*time.Millisecond)
		pool := pools[c.Rank()]
		p := Plan{Units: 2, Kind: "unit", Comm: c, Schedule: schedule, Pool: pool, Log: slog.New(slog.DiscardHandler)}
		if _, err := p.Run(context.Background(), func(w numa.Worker, u int) ([]byte, error) {
			if u == 0 { // unit 0 takes three watchdog periods
				time.Sleep(time.Second)
			}
			return unitBytes(u), nil
		}); err != nil {
			return err
		}
		return c.Barrier()
	})
}

// TestRunnerProgressWeights checks that progress counts units by weight
// (labels per label block) across ranks, including units resumed from a
// checkpoint.
func TestRunnerProgressWeights(t *testing.T) {
	for _, schedule := range schedules {
		dir := filepath.Join(t.TempDir(), "ckpt")
		// Units 0 and 7 are already done: a checkpoint of the same run.
		for _, u := range []int{0, 7} {
			if _, err := openCheckpoint(dir, "test", 0); err != nil {
				t.Fatal(err)
			}
			if err := (&checkpoint{dir: dir}).save(u, unitBytes(u)); err != nil {
				t.Fatal(err)
			}
		}
		prog := &countingProgress{}
		pools := rankPools(t, 3, 2)
		err := mpi.Launch(3, func(c mpi.Comm) error {
			pool := pools[c.Rank()]
			p := Plan{Units: 10, Kind: "unit", Comm: c, Schedule: schedule, Pool: pool, Log: slog.New(slog.DiscardHandler),
				Checkpoint: dir, Fingerprint: "test", Weight: func(u int) int { return u + 1 }}
			if c.Rank() == 0 {
				p.Progress = prog
			}
			_, err := p.Run(context.Background(), func(w numa.Worker, u int) ([]byte, error) { return unitBytes(u), nil })
			return err
		})
		if err != nil {
			t.Fatalf("%s: %v", schedule, err)
		}
		if prog.done != 55 || !prog.finished {
			t.Errorf("%s: progress reported %d of weight 55 (finished %v)", schedule, prog.done, prog.finished)
		}
	}
}

// sizeRecorder is a communicator that records the largest buffer this rank
// passed to Gatherv.
type sizeRecorder struct {
	mpi.Comm
	largest int
}

func (c *sizeRecorder) Gatherv(buf []byte, root int) ([][]byte, error) {
	c.largest = max(c.largest, len(buf))
	return c.Comm.Gatherv(buf, root)
}

// TestGatherBatches gathers results of uneven sizes (none on some ranks,
// some larger than a batch) in rounds of several batch sizes, to every
// root, and checks that every result arrives intact and that no rank sent
// more than a batch in a round, unless a single result was larger.
func TestGatherBatches(t *testing.T) {
	const units = 23
	result := func(u int) []byte { return []byte(strings.Repeat(string(rune('a'+u%26)), u*u%37)) }
	for _, ranks := range []int{1, 2, 3, 4} {
		for _, batch := range []int{1, 40, 100, 1 << 20} {
			for root := range ranks {
				var gathered [][]byte
				largest := make([]int, ranks)
				err := mpi.Launch(ranks, func(c mpi.Comm) error {
					// Rank r holds the units u ≡ r (mod ranks+1); the
					// units u ≡ ranks are held by no rank.
					var own []Result
					for u := c.Rank(); u < units; u += ranks + 1 {
						own = append(own, Result{Unit: u, Data: result(u)})
					}
					rec := &sizeRecorder{Comm: c}
					all, err := gatherBatched(rec, units, own, root, batch)
					largest[c.Rank()] = rec.largest
					if c.Rank() == root {
						gathered = all
					}
					return err
				})
				name := fmt.Sprintf("%d ranks, batch %d, root %d", ranks, batch, root)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				for u := range units {
					var want []byte
					if u%(ranks+1) < ranks {
						want = result(u)
					}
					if string(gathered[u]) != string(want) || (want != nil) != (gathered[u] != nil) {
						t.Errorf("%s: unit %d gathered %q, want %q", name, u, gathered[u], want)
					}
				}
				for r, n := range largest {
					if limit := max(batch, 12+36); n > limit {
						t.Errorf("%s: rank %d sent %d bytes in one round, more than %d", name, r, n, limit)
					}
				}
			}
		}
	}
}

// TestGatherBadUnitOnRoot gives root a result for a unit out of range: root
// reports it, and the other ranks still finish every round of the gather
// rather than waiting for a root that left.
func TestGatherBadUnitOnRoot(t *testing.T) {
	errs := make([]error, 3)
	mpi.Launch(3, func(c mpi.Comm) error {
		own := []Result{{Unit: c.Rank(), Data: []byte("ok")}}
		if c.Rank() == 0 {
			own = append(own, Result{Unit: 99, Data: []byte("bad")})
		}
		_, errs[c.Rank()] = gatherBatched(c, 5, own, 0, 1)
		return nil
	})
	if errs[0] == nil || !strings.Contains(errs[0].Error(), "unit 99 out of range") {
		t.Errorf("root: %v, want unit 99 out of range", errs[0])
	}
	for r, err := range errs[1:] {
		if err != nil {
			t.Errorf("rank %d: %v, want a complete gather", r+1, err)
		}
	}
}
