// Package traintest gives the tests of the trainers what they share: the
// bundled data sets, a way to compute every unit of a trainer's work on a
// pool as the runner does, and the benchmark of one-vs-all training by
// label frequency.
package traintest

import (
	"os"
	"path/filepath"
	"testing"

	"xmc/data"
	"xmc/numa"
	"xmc/runner"
)

// WorkAll runs work on every unit of units on the pool's workers, which
// take units from a shared queue as the runner's do, and returns the
// results by unit; it fails t on the first error.
func WorkAll(t testing.TB, pool *numa.Pool, units int, work runner.WorkFunc) [][]byte {
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
