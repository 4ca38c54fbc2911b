package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"xmc/mpi"
	"xmc/numa"
	"xmc/numa/numatest"
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
	err := mpi.Launch(ranks, mpi.MaxMessage, func(c mpi.Comm) error {
		pool := pools[c.Rank()]
		p := Plan{Units: units, Kind: "unit", Comm: c, Schedule: schedule, Pool: pool, Log: slog.New(slog.DiscardHandler),
			Checkpoint: checkpoint, Fingerprint: "test"}
		if c.Rank() == 0 {
			p.Progress = prog
		}
		own, stopped, runErr := p.Run(ctx, work)
		if runErr != nil {
			return runErr
		}
		all, err := Gather(c, units, own, 0)
		if c.Rank() == 0 {
			gathered = all
		}
		if err != nil {
			return err
		}
		if stopped {
			return errStopped
		}
		return nil
	})
	return gathered, prog, err
}

// errStopped is the error of the tests' runs that a rank reported stopped
// before its end.
var errStopped = errors.New("stopped")

// rankPools returns a pool of threads workers for each of ranks in-process
// ranks, closed when t ends.
func rankPools(t testing.TB, ranks, threads int) []*numa.Pool {
	t.Helper()
	pools := make([]*numa.Pool, ranks)
	for r := range pools {
		pools[r] = numatest.Pool(t, threads, 1)
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

// TestRunnerHelp checks Plan.Help: each worker calls it once it finds no
// unit left, while others still compute theirs (unit 0 waits for a help
// call), and its error ends the run.
func TestRunnerHelp(t *testing.T) {
	for _, fail := range []bool{false, true} {
		helping := make(chan struct{})
		var once sync.Once
		var mu sync.Mutex
		calls := map[int]int{} // by worker
		var own []Result
		pool := numatest.Pool(t, 3, 1)
		err := mpi.Launch(1, mpi.MaxMessage, func(c mpi.Comm) error {
			p := Plan{Units: 2, Kind: "unit", Comm: c, Pool: pool, Log: slog.New(slog.DiscardHandler),
				Help: func(w numa.Worker) error {
					mu.Lock()
					calls[w.ID]++
					mu.Unlock()
					once.Do(func() { close(helping) })
					if fail {
						return errors.New("help failed")
					}
					return nil
				}}
			var err error
			own, _, err = p.Run(context.Background(), func(w numa.Worker, u int) ([]byte, error) {
				if u == 0 {
					select {
					case <-helping:
					case <-time.After(10 * time.Second):
						return nil, errors.New("no worker was helping while unit 0 ran")
					}
				}
				return unitBytes(u), nil
			})
			return err
		})
		if fail {
			if err == nil || !strings.Contains(err.Error(), "help failed") {
				t.Errorf("a failing help: error %v", err)
			}
			continue
		}
		if err != nil || len(own) != 2 {
			t.Fatalf("%d results, error %v", len(own), err)
		}
		if len(calls) != 3 {
			t.Errorf("help called on workers %v, want each of 3 once", calls)
		}
		for w, n := range calls {
			if n != 1 {
				t.Errorf("help called %d times on worker %d", n, w)
			}
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
	err := mpi.Launch(2, mpi.MaxMessage, func(c mpi.Comm) error {
		pool := pools[c.Rank()]
		p := Plan{Units: 20, Kind: "unit", Comm: c, Schedule: ScheduleDynamic, Pool: pool, Log: slog.New(slog.DiscardHandler)}
		own, _, err := p.Run(context.Background(), func(w numa.Worker, u int) ([]byte, error) {
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
	return mpi.Launch(2, mpi.MaxMessage, func(raw mpi.Comm) error {
		c := mpi.NewCounted(raw, 300*time.Millisecond)
		pool := pools[c.Rank()]
		p := Plan{Units: 2, Kind: "unit", Comm: c, Schedule: schedule, Pool: pool, Log: slog.New(slog.DiscardHandler)}
		if _, _, err := p.Run(context.Background(), func(w numa.Worker, u int) ([]byte, error) {
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

// TestRunTeam checks the team mode: every unit is computed once, by a
// function that may run the whole pool, one unit at a time per rank, and a
// unit's error names it, on both schedules.
func TestRunTeam(t *testing.T) {
	for _, schedule := range schedules {
		const units, ranks, threads = 7, 2, 3
		pools := rankPools(t, ranks, threads)
		var mu sync.Mutex
		calls := map[int]int{}
		var gathered [][]byte
		err := mpi.Launch(ranks, mpi.MaxMessage, func(c mpi.Comm) error {
			pool := pools[c.Rank()]
			p := Plan{Units: units, Kind: "unit", Comm: c, Schedule: schedule, Pool: pool, Log: slog.New(slog.DiscardHandler)}
			var busy sync.Mutex // held while a unit runs: units of a rank must not overlap
			own, _, err := p.RunTeam(context.Background(), func(u int) ([]byte, error) {
				if !busy.TryLock() {
					return nil, errors.New("two units of a rank at once")
				}
				defer busy.Unlock()
				var workers sync.Map
				if err := pool.Run(func(w numa.Worker) error { workers.Store(w.ID, true); return nil }); err != nil {
					return nil, err
				}
				n := 0
				workers.Range(func(any, any) bool { n++; return true })
				if n != threads {
					return nil, fmt.Errorf("%d of %d workers ran", n, threads)
				}
				mu.Lock()
				calls[u]++
				mu.Unlock()
				return unitBytes(u), nil
			})
			if err != nil {
				return err
			}
			all, err := Gather(c, units, own, 0)
			if c.Rank() == 0 {
				gathered = all
			}
			return err
		})
		if err != nil {
			t.Fatalf("%s: %v", schedule, err)
		}
		for u := range units {
			if calls[u] != 1 || string(gathered[u]) != string(unitBytes(u)) {
				t.Errorf("%s: unit %d computed %d times, gathered %q", schedule, u, calls[u], gathered[u])
			}
		}
		err = mpi.Launch(ranks, mpi.MaxMessage, func(c mpi.Comm) error {
			p := Plan{Units: units, Kind: "unit", Comm: c, Schedule: schedule, Pool: pools[c.Rank()], Log: slog.New(slog.DiscardHandler)}
			_, _, err := p.RunTeam(context.Background(), func(u int) ([]byte, error) {
				if u == 4 {
					return nil, errors.New("boom")
				}
				return unitBytes(u), nil
			})
			return err
		})
		if err == nil || !strings.Contains(err.Error(), "unit 4: boom") {
			t.Errorf("%s: error = %v, want it to name unit 4", schedule, err)
		}
	}
}

// TestCoordinatorChunk checks the dynamic schedule's chunk sizes: a
// 1/(2·ranks) share of the units left when they cost alike, and of the
// estimated cost left when they do not, so that the costliest units,
// dealt first, are not handed to one rank together.
func TestCoordinatorChunk(t *testing.T) {
	uniform := func(int) float64 { return 1 }
	heavyFirst := func(u int) float64 { // 8 units of 100, then units of 1
		if u < 8 {
			return 100
		}
		return 1
	}
	for _, c := range []struct {
		name               string
		units, taken, size int
		cost               func(int) float64
		want               int
	}{
		{"alike, none taken", 75, 0, 2, nil, 18},
		{"alike by Cost", 75, 0, 2, uniform, 18},
		{"alike, near the end", 75, 72, 2, nil, 1},
		{"alike, all taken", 75, 75, 2, nil, 1},
		{"alike, capped", 100000, 0, 8, nil, maxChunk},
		{"costly first", 75, 0, 2, heavyFirst, 2},          // 867/4: two of 100
		{"costly first, 4 ranks", 75, 0, 4, heavyFirst, 1}, // 867/8: one of 100
		{"costly ones gone", 75, 8, 2, heavyFirst, 16},     // 67/4: 16 of 1
		{"costly unit alone", 75, 7, 2, heavyFirst, 1},     // 167/4 < 100: still one
	} {
		queue := make([]int, c.units)
		for u := range queue {
			queue[u] = u
		}
		co := coordinator{cost: cumulativeCost(queue, c.cost)}
		if got := co.chunk(c.taken, c.size); got != c.want {
			t.Errorf("%s: chunk(taken %d, %d ranks) = %d, want %d", c.name, c.taken, c.size, got, c.want)
		}
	}
}
