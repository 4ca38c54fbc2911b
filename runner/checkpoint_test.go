package runner

import (
	"bytes"
	"context"
	"errors"
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
	if !errors.Is(err, errStopped) {
		t.Fatalf("first run: %v, want it stopped", err)
	}
	saved, _ := CheckpointUnits(dir)
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
				// Another rank may still be opening its checkpoint and
				// make the directory again between the two steps (this
				// test failed so, about once in 20 runs): retry until
				// the file stands.
				once.Do(func() {
					for range 1000 {
						os.RemoveAll(dir)
						if os.WriteFile(dir, nil, 0o644) == nil {
							return
						}
					}
					t.Error("could not replace the checkpoint directory by a file")
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
	err := mpi.Launch(2, mpi.MaxMessage, func(c mpi.Comm) error {
		p := Plan{Units: 10, Kind: "unit", Comm: c, Schedule: schedule, Pool: pools[c.Rank()], Log: slog.New(slog.DiscardHandler),
			Checkpoint: dir, CheckpointEvery: every, Fingerprint: "test"}
		own, _, runErr := p.Run(ctxOf(c.Rank()), work)
		if runErr != nil {
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
	units, _ := CheckpointUnits(dir)
	return len(units), 10 - countNil(gathered)
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

// TestCheckpointCrashAtAnyByte cuts a rank's checkpoint file at every byte,
// as a crash while appending would, and checks that the units saved whole
// before the cut are found, the partial one is not, and that appending
// after reopening continues the file where the whole records end.
func TestCheckpointCrashAtAnyByte(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ckpt")
	units := [][]byte{0: unitBytes(0), 3: unitBytes(3), 4: bytes.Repeat([]byte{9}, 100)}
	if err := SaveUnits(dir, "fp", 2, units); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "units-rank-0002.ckpt")
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ends := []int{recordHeader + len(units[0]), 2*recordHeader + len(units[0]) + len(units[3]), len(whole)}
	for cut := 0; cut <= len(whole); cut++ {
		os.WriteFile(path, whole[:cut], 0o644)
		want := 0
		for _, e := range ends {
			if cut >= e {
				want++
			}
		}
		found, err := CheckpointUnits(dir)
		if err != nil || len(found) != want {
			t.Fatalf("cut at %d: units %v (%v), want %d", cut, found, err, want)
		}
		// The owner appends unit 5 after the whole records: it is found,
		// and so is everything saved whole before.
		ck, err := openCheckpoint(dir, "fp", 2)
		if err != nil {
			t.Fatal(err)
		}
		if err := ck.save([]Result{{Unit: 5, Data: unitBytes(5)}}); err != nil {
			t.Fatal(err)
		}
		ck.close()
		if found, _ := CheckpointUnits(dir); len(found) != want+1 || found[len(found)-1] != 5 {
			t.Fatalf("cut at %d, then unit 5 appended: units %v", cut, found)
		}
		ck, _ = openCheckpoint(dir, "fp", 0)
		if data, ok, err := ck.load(5); !ok || err != nil || string(data) != string(unitBytes(5)) {
			t.Fatalf("cut at %d: unit 5 loads as %q, %v, %v", cut, data, ok, err)
		}
	}
}
