// Package traintest gives the tests of the trainers what they share: the
// bundled data sets, a way to compute every unit of a trainer's work on a
// pool as the runner does, and the benchmark of one-vs-all training by
// label frequency.
package traintest

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"xmc/data"
	"xmc/mpi"
	"xmc/numa"
	"xmc/numa/numatest"
	"xmc/runner"
	"xmc/train"
)

// WorkAll runs work on every unit of units on the pool's workers, which
// take units from a shared queue as the runner's do, then help, if not
// nil (runner.Plan.Help), and returns the results by unit; it fails t on
// the first error.
func WorkAll(t testing.TB, pool *numa.Pool, units int, work runner.WorkFunc, help func(numa.Worker) error) [][]byte {
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
		if help != nil {
			return help(w)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Bibtex reads the bundled Bibtex split (159 labels, 4,880 training rows).
func Bibtex(t testing.TB) (tr, te *data.Dataset) {
	t.Helper()
	return Split(t, "bibtex")
}

// Delicious reads the bundled Delicious split (983 labels, 12,920
// training rows).
func Delicious(t testing.TB) (tr, te *data.Dataset) {
	t.Helper()
	return Split(t, "delicious")
}

// Split reads the training and test files of the bundled data set name,
// testdata/NAME/{train,test}.txt at the top of the module.
func Split(t testing.TB, name string) (tr, te *data.Dataset) {
	t.Helper()
	dir := filepath.Join(moduleRoot(t), "testdata", name)
	tr, err := data.ReadFile(filepath.Join(dir, "train.txt"), data.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	te, err = data.ReadFile(filepath.Join(dir, "test.txt"), data.ReadOptions{D: tr.D(), L: tr.L()})
	if err != nil {
		t.Fatal(err)
	}
	return tr, te
}

// moduleRoot returns the directory holding go.mod, above the test's
// working directory (its package's directory).
func moduleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Tiny builds a dataset from dense feature rows and label lists.
func Tiny(rows [][]float32, labels [][]int32, L int) *data.Dataset {
	ds := &data.Dataset{
		X: data.CSR{Rows: len(rows), Cols: len(rows[0]), Indptr: []int64{0}},
		Y: data.CSR{Rows: len(rows), Cols: L, Indptr: []int64{0}},
	}
	for i, r := range rows {
		for j, v := range r {
			if v != 0 {
				ds.X.Indices = append(ds.X.Indices, int32(j))
				ds.X.Values = append(ds.X.Values, v)
			}
		}
		ds.X.Indptr = append(ds.X.Indptr, int64(len(ds.X.Indices)))
		for _, l := range labels[i] {
			ds.Y.Indices = append(ds.Y.Indices, l)
			ds.Y.Values = append(ds.Y.Values, 1)
		}
		ds.Y.Indptr = append(ds.Y.Indptr, int64(len(ds.Y.Indices)))
	}
	return ds
}

// Head returns the first n rows of ds.
func Head(ds *data.Dataset, n int) *data.Dataset {
	rows := make([]int, n)
	for i := range rows {
		rows[i] = i
	}
	return ds.Subset(rows)
}

// Layout is a number of in-process ranks and of workers per rank.
type Layout struct{ Ranks, Threads int }

// TrainRounds prepares trainer on ds and runs its rounds to the end on
// the ranks and threads of layout, in process, and returns the model's
// units gathered on rank 0: what a trainer of rounds must make the same,
// byte for byte, on every layout.
func TrainRounds(t testing.TB, trainer train.Trainer, ds *data.Dataset, seed uint64, l Layout) [][]byte {
	t.Helper()
	var units [][]byte
	err := launchRounds(t, trainer, ds, seed, l, func(c mpi.Comm, env train.Env, w *train.Work) error {
		rounds := runner.Rounds{Units: w.Units, Rounds: w.MaxRounds, Kind: w.RoundName, Comm: c, Pool: env.Pool, Log: env.Log}
		own, _, err := rounds.Run(context.Background(), w.Rounds)
		if err != nil {
			return err
		}
		all, err := runner.Gather(c, w.Units, own, 0)
		if c.Rank() == 0 {
			units = all
		}
		return err
	})
	if err != nil {
		t.Fatalf("%d ranks × %d threads: %v", l.Ranks, l.Threads, err)
	}
	return units
}

// launchRounds prepares trainer on ds on the ranks and threads of layout
// l, in process, and calls fn on each rank with its environment and its
// work, which must be of rounds.
func launchRounds(t testing.TB, trainer train.Trainer, ds *data.Dataset, seed uint64, l Layout,
	fn func(c mpi.Comm, env train.Env, w *train.Work) error) error {
	pools := make([]*numa.Pool, l.Ranks)
	for r := range pools {
		pools[r] = numatest.Pool(t, l.Threads, 1)
	}
	return mpi.Launch(l.Ranks, mpi.MaxMessage, func(c mpi.Comm) error {
		env := train.Env{Pool: pools[c.Rank()], Comm: c, Log: slog.New(slog.DiscardHandler), Seed: seed}
		w, err := trainer.Prepare(env, ds)
		if err != nil {
			return err
		}
		if w.Rounds == nil {
			return errors.New("not a trainer of rounds")
		}
		return fn(c, env, w)
	})
}

// SameRounds checks that trainer makes the same units, byte for byte, on
// 1, 2 and 5 ranks × 1 and 3 threads.
func SameRounds(t *testing.T, trainer train.Trainer, ds *data.Dataset, seed uint64) {
	t.Helper()
	want := TrainRounds(t, trainer, ds, seed, Layout{1, 1})
	size := 0
	for _, u := range want {
		size += len(u)
	}
	if size == 0 {
		t.Fatal("1 rank × 1 thread trained an empty model")
	}
	t.Logf("%d units, %d bytes", len(want), size)
	for _, l := range []Layout{{1, 3}, {2, 1}, {2, 3}, {5, 1}, {5, 3}} {
		got := TrainRounds(t, trainer, ds, seed, l)
		if len(got) != len(want) {
			t.Fatalf("%d ranks × %d threads: %d units, want %d", l.Ranks, l.Threads, len(got), len(want))
		}
		for u := range want {
			if !bytes.Equal(got[u], want[u]) {
				t.Errorf("%d ranks × %d threads: unit %d differs from 1 rank × 1 thread's", l.Ranks, l.Threads, u)
			}
		}
	}
}

// ResumedRounds is TrainRounds stopped after round at: rounds [0, at) run
// on the layout saved, which then saves the trainer's state as a
// checkpoint does (every rank its units, rank 0 the shared state), and
// the rounds from at run to the end on the layout resumed, started from
// that state. A trainer of rounds must make the units of an uninterrupted
// run, byte for byte.
func ResumedRounds(t testing.TB, trainer train.Trainer, ds *data.Dataset, seed uint64, saved, resumed Layout, at int) [][]byte {
	t.Helper()
	state := map[int][]byte{} // by unit
	var shared []byte         // rank 0's
	var units [][]byte
	// run runs rounds [from, to) on layout l, from the saved state if
	// from > 0, and saves the state after them, or, at the end, gathers
	// the model's units.
	run := func(l Layout, from, to int) error {
		var mu sync.Mutex
		return launchRounds(t, trainer, ds, seed, l, func(c mpi.Comm, env train.Env, w *train.Work) error {
			own := runner.OwnedUnits(w.Units, c.Rank(), c.Size())
			var st [][]byte
			var sh []byte
			if from > 0 {
				for _, u := range own {
					st = append(st, state[u])
				}
				sh = shared
			}
			if err := w.Rounds.Start(own, from, st, sh); err != nil {
				return err
			}
			last := to >= w.MaxRounds
			var results []runner.Result
			err := env.Pool.Together(func(team *numa.Team) error {
				for r := from; r < min(to, w.MaxRounds); r++ {
					done, err := w.Rounds.Round(context.Background(), r, team)
					if err != nil {
						return err
					}
					if done {
						last = true
						break
					}
				}
				if !last {
					return nil
				}
				var err error
				results, err = w.Rounds.Finish(team)
				return err
			})
			if err != nil {
				return err
			}
			if last {
				all, err := runner.Gather(c, w.Units, results, 0)
				if c.Rank() == 0 {
					units = all
				}
				return err
			}
			st, sh, err = w.Rounds.Save()
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			for q, u := range own {
				state[u] = st[q]
			}
			if c.Rank() == 0 {
				shared = sh
			}
			return nil
		})
	}
	if err := run(saved, 0, at); err != nil {
		t.Fatalf("%d ranks × %d threads, rounds to %d: %v", saved.Ranks, saved.Threads, at, err)
	}
	if units != nil {
		t.Fatalf("training ended before round %d", at)
	}
	if err := run(resumed, at, math.MaxInt); err != nil {
		t.Fatalf("resumed on %d ranks × %d threads at round %d: %v", resumed.Ranks, resumed.Threads, at, err)
	}
	return units
}

// SameWhenHelped checks a one-vs-all trainer's help to the units still
// being trained (onevsall.Labels): train trains the units blocks, here 3
// units of 16 labels, on pool and returns their encodings and the labels
// trained helping. 4 workers in 2 NUMA domains must give the units of one
// worker, some of their labels trained by the worker left without a unit.
func SameWhenHelped(t *testing.T, train func(pool *numa.Pool, blocks [][]int32) ([][]byte, int64)) {
	t.Helper()
	blocks := make([][]int32, 3)
	for u := range blocks {
		for l := range int32(16) {
			blocks[u] = append(blocks[u], int32(16*u)+l)
		}
	}
	want, _ := train(numatest.Pool(t, 1, 1), blocks)
	got, helped := train(numatest.Pool(t, 4, 2), blocks)
	for u := range want {
		if !bytes.Equal(want[u], got[u]) {
			t.Errorf("unit %d differs from one worker's", u)
		}
	}
	if helped == 0 {
		t.Error("no label was trained helping")
	}
}
