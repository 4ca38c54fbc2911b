package traintest

import (
	"testing"

	"xmc/data"
	"xmc/metrics"
	"xmc/model"
	"xmc/numa"
)

// PrecisionAtK predicts the 5 best labels of te's rows with m on the pool
// and returns their P@1, P@3 and P@5, in percent, under the keys "P@1",
// "P@3" and "P@5": what the trainers' accuracy tests compare with the
// papers' figures.
func PrecisionAtK(t testing.TB, m model.Model, te *data.Dataset, pool *numa.Pool) map[string]float64 {
	t.Helper()
	scores, err := m.Predict(&te.X, 5, pool)
	if err != nil {
		t.Fatal(err)
	}
	got, err := metrics.Evaluate(&te.Y, scores, nil, []int{1, 3, 5})
	if err != nil {
		t.Fatal(err)
	}
	return got
}
