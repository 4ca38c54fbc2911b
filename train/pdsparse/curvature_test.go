package pdsparse

import (
	"math"
	"math/rand/v2"
	"testing"

	"xmc/mpi"
	"xmc/numa"
	"xmc/numa/numatest"
	"xmc/runner"
	"xmc/train/traintest"
)

// TestCurvatureBounds checks a round's curvature bounds against their
// definition, computed pair by pair, on Bibtex's rows after a few rounds
// (active sets with negatives), with 1 and 3 workers; and checks the
// inequality they are for: for every class the round's rows share, and
// any steps a_i of its rows, ‖Σ a_i x_i‖² ≤ Σ a_i² A_i.
func TestCurvatureBounds(t *testing.T) {
	bibtex, _ := traintest.Bibtex(t)
	tr := traintest.Head(bibtex, 1200)
	p := DefaultParams()
	p.BatchSize = 128
	for _, workers := range []int{1, 3} {
		err := mpi.Launch(1, mpi.MaxMessage, func(c mpi.Comm) error {
			rt, err := newRoundTrainer(p.forData(tr, noneSet), tr, c, numatest.Pool(t, workers, 1))
			if err != nil {
				return err
			}
			if err := rt.Start(runner.OwnedUnits(len(rt.blocks), 0, 1), 0, nil, nil); err != nil {
				return err
			}
			if err := runRounds(rt, 0, 4); err != nil {
				return err
			}
			rows := rt.order.Rows(4)
			err = rt.pool.Together(func(team *numa.Team) error { return rt.boundCurvatures(team, rows) })
			if err != nil {
				return err
			}
			checkCurvatures(t, rt, rows)
			return nil
		})
		if err != nil {
			t.Fatalf("%d workers: %v", workers, err)
		}
	}
}

// checkCurvatures compares rt.curv.bound of the batch rows with the sums
// of |x_i|·|x_j| over the rows j that share a class with row i, and checks
// the bound's inequality with random steps.
func checkCurvatures(t *testing.T, rt *roundTrainer, rows []int32) {
	t.Helper()
	dot := func(i, j int32) float64 {
		a, b := map[int32]float64{}, 0.0
		idx, val := rt.x.Row(int(i))
		for e, d := range idx {
			a[d] = math.Abs(float64(val[e]))
		}
		idx, val = rt.x.Row(int(j))
		for e, d := range idx {
			b += a[d] * math.Abs(float64(val[e]))
		}
		return b
	}
	sharing := map[int32][]int32{} // class: its rows in the batch
	for _, i := range rows {
		if rt.skipsRow(i) {
			continue
		}
		for _, a := range rt.act[i] {
			sharing[a.class] = append(sharing[a.class], i)
		}
	}
	shared := 0
	for q, i := range rows {
		want := 0.0
		if !rt.skipsRow(i) {
			for _, a := range rt.act[i] {
				if s := sharing[a.class]; len(s) >= 2 {
					sum := 0.0
					for _, j := range s {
						sum += dot(i, j)
					}
					want = math.Max(want, sum)
				}
			}
		}
		if want > 0 {
			shared++
		}
		if got := rt.curv.bound(int32(q)); math.Abs(got-want) > 1e-12*want {
			t.Errorf("row %d: curvature bound %g, want %g", i, got, want)
		}
	}
	if shared == 0 {
		t.Fatal("no row of the round shares a class: nothing checked")
	}
	curvature := func(q int) float64 { return math.Max(rt.sq[rows[q]], rt.curv.bound(int32(q))) }
	at := map[int32]int{}
	for q, i := range rows {
		at[i] = q
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for class, s := range sharing {
		if len(s) < 2 {
			continue
		}
		for range 20 {
			sum := make([]float64, rt.x.Cols)
			bound := 0.0
			for _, i := range s {
				a := rng.NormFloat64()
				idx, val := rt.x.Row(int(i))
				for e, d := range idx {
					sum[d] += a * float64(val[e])
				}
				bound += a * a * curvature(at[i])
			}
			norm := 0.0
			for _, v := range sum {
				norm += v * v
			}
			if norm > bound*(1+1e-12) {
				t.Fatalf("class %d: ‖Σ a_i x_i‖² = %g above Σ a_i² A_i = %g", class, norm, bound)
			}
		}
	}
}
