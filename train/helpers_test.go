package train

import (
	"testing"

	"xmc/numa"
	"xmc/runner"
)

// workAll runs work on every unit of units on the pool's workers, which take
// units from a shared queue as the runner's do, and returns the results by
// unit; it fails t on the first error.
func workAll(t testing.TB, pool *numa.Pool, units int, work runner.WorkFunc) [][]byte {
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
