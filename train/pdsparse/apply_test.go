package pdsparse

import (
	"strings"
	"testing"
	"time"

	"xmc/mpi"
	"xmc/numa/numatest"
	"xmc/runner"
	"xmc/train/traintest"
)

// TestRowPanicEndsRound has a rank alone of 2 workers, whose loop of a
// round searches the rows and then applies their steps (takeThenApply),
// meet a panic in a row's search: its active set names a class past the
// last. The round must return the panic as its error, with no worker left
// waiting for the row's step.
func TestRowPanicEndsRound(t *testing.T) {
	bibtex, _ := traintest.Bibtex(t)
	tr := traintest.Head(bibtex, 500)
	p := DefaultParams()
	p.Epochs = 1
	var roundErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		roundErr = mpi.Launch(1, mpi.MaxMessage, func(c mpi.Comm) error {
			rt, err := newRoundTrainer(p.forData(tr, noneSet), tr, c, numatest.Pool(t, 2, 1))
			if err != nil {
				return err
			}
			if err := rt.Start(runner.OwnedUnits(len(rt.blocks), 0, 1), 0, nil, nil); err != nil {
				return err
			}
			rows := rt.order.Rows(0)
			row := rows[len(rows)-1]
			rt.act[row] = append(rt.act[row], dualVar{class: int32(len(rt.local) + 5)})
			return runRounds(rt, 0, 1)
		})
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("a round whose row panicked did not return")
	}
	if roundErr == nil || !strings.Contains(roundErr.Error(), "panic") {
		t.Fatalf("round error %v, want the row's panic", roundErr)
	}
}

func TestHasFeatureIn(t *testing.T) {
	idx := []int32{2, 5, 9}
	tests := []struct {
		lo, hi int32
		want   bool
	}{
		{0, 2, false}, {0, 3, true}, {3, 5, false}, {5, 6, true}, {6, 9, false},
		{9, 10, true}, {10, 20, false}, {0, 100, true}, {4, 4, false},
	}
	for _, tt := range tests {
		if got := hasFeatureIn(idx, tt.lo, tt.hi); got != tt.want {
			t.Errorf("hasFeatureIn(%v, %d, %d) = %v, want %v", idx, tt.lo, tt.hi, got, tt.want)
		}
	}
	if hasFeatureIn(nil, 0, 10) {
		t.Error("a row without features has one in [0, 10)")
	}
}

// TestOneWorkerAppliesInALoop has a rank alone of one worker run rounds:
// each must apply its steps in a loop of the team, after the search's, so
// that the profile counts the additions as the parallel work they are at
// more workers. Applied by the lead outside a loop, they were most of a
// one-thread run's serial fraction. Each round has three loops before them,
// the curvature bounds' (the rows' classes, their grouping by class, then
// the sums of the shared ones: Bibtex's rounds all have rows that share a
// label).
func TestOneWorkerAppliesInALoop(t *testing.T) {
	bibtex, _ := traintest.Bibtex(t)
	tr := traintest.Head(bibtex, 500)
	p := DefaultParams()
	p.Epochs = 1
	const rounds = 5
	err := mpi.Launch(1, mpi.MaxMessage, func(c mpi.Comm) error {
		pool := numatest.Pool(t, 1, 1)
		rt, err := newRoundTrainer(p.forData(tr, noneSet), tr, c, pool)
		if err != nil {
			return err
		}
		if err := rt.Start(runner.OwnedUnits(len(rt.blocks), 0, 1), 0, nil, nil); err != nil {
			return err
		}
		before := pool.Profile()
		if err := runRounds(rt, 0, rounds); err != nil {
			return err
		}
		// An epoch's end adds the dual objective's loop (500 rows: every
		// round ends one).
		if want, loops := int64(5*rounds+rt.epochs), pool.Profile().Sub(before).Loops; rt.epochs == 0 || loops != want {
			t.Errorf("%d rounds of %d epochs ran %d loops, want %d: the curvature bounds' three, the search's and the additions', and the objective's", rounds, rt.epochs, loops, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
