package pdsparse

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"

	"xmc/mpi"
	"xmc/numa/numatest"
	"xmc/runner"
	"xmc/train/traintest"
)

// TestDualObjectiveFalls trains Bibtex's first rows for three epochs on
// several layouts, with the weights dense and in lists, and checks the dual objective at the epochs' ends: it
// falls every epoch (its sign or a double count of rows would make it
// rise or differ), every rank of a run holds the same figures, and the
// layouts agree to rounding (each rank sums its own classes and home rows).
// On a rank alone, it also checks the last figure against the definition,
// summed in one pass over the weights and the rows; and the trainer's
// figures give each epoch's and the last.
func TestDualObjectiveFalls(t *testing.T) {
	bibtex, _ := traintest.Bibtex(t)
	tr := traintest.Head(bibtex, 2500)
	p := DefaultParams()
	p.Epochs = 3
	// lists keeps the weights in lists rather than dense, as on data of
	// more features × classes.
	tests := []struct {
		ranks, workers int
		lists          bool
	}{{1, 1, false}, {2, 2, false}, {3, 1, false}, {1, 1, true}, {2, 2, true}}
	var want []float64
	for _, tt := range tests {
		var mu sync.Mutex
		var got [][]float64
		err := mpi.Launch(tt.ranks, mpi.MaxMessage, func(c mpi.Comm) error {
			rt, err := newRoundTrainer(p.forData(tr, noneSet), tr, c, numatest.Pool(t, tt.workers, 1))
			if err != nil {
				return err
			}
			if tt.lists {
				rt.denseWeightLimit = 0
			}
			if err := rt.Start(runner.OwnedUnits(len(rt.blocks), c.Rank(), tt.ranks), 0, nil, nil); err != nil {
				return err
			}
			if (rt.dense == nil) != tt.lists {
				return fmt.Errorf("weights in lists: %v, want %v", rt.dense == nil, tt.lists)
			}
			if err := runRounds(rt, 0, p.Epochs*rt.order.Batches); err != nil {
				return err
			}
			if tt.ranks == 1 {
				if d, last := definedDual(rt), rt.duals[len(rt.duals)-1]; math.Abs(d-last) > 1e-9*math.Abs(d) {
					return fmt.Errorf("dual objective %v, by its definition %v", last, d)
				}
			}
			stats := rt.stats()
			for e, d := range rt.duals {
				if key := fmt.Sprintf("dual_objective_epoch_%d", e+1); stats[key] != d {
					return fmt.Errorf("stats %s = %v, want %v", key, stats[key], d)
				}
			}
			if last := rt.duals[len(rt.duals)-1]; stats["dual_objective"] != last {
				return fmt.Errorf("stats dual_objective = %v, want %v", stats["dual_objective"], last)
			}
			mu.Lock()
			got = append(got, rt.duals)
			mu.Unlock()
			return nil
		})
		if err != nil {
			t.Fatalf("%d ranks × %d workers (lists %v): %v", tt.ranks, tt.workers, tt.lists, err)
		}
		for _, g := range got[1:] {
			if !slices.Equal(g, got[0]) {
				t.Errorf("%d ranks × %d workers (lists %v): ranks' objectives %v and %v", tt.ranks, tt.workers, tt.lists, got[0], g)
			}
		}
		duals := got[0]
		if len(duals) != p.Epochs {
			t.Fatalf("%d ranks × %d workers (lists %v): %d objectives for %d epochs", tt.ranks, tt.workers, tt.lists, len(duals), p.Epochs)
		}
		for e := 1; e < len(duals); e++ {
			if duals[e] >= duals[e-1] {
				t.Errorf("%d ranks × %d workers (lists %v): the objective rose from %v to %v at epoch %d", tt.ranks, tt.workers, tt.lists, duals[e-1], duals[e], e+1)
			}
		}
		if want == nil {
			want = duals
			continue
		}
		for e := range want {
			if math.Abs(duals[e]-want[e]) > 1e-9*math.Abs(want[e]) {
				t.Errorf("%d ranks × %d workers (lists %v): epoch %d's objective %v, on 1 rank %v", tt.ranks, tt.workers, tt.lists, e+1, duals[e], want[e])
			}
		}
	}
}

// definedDual returns the dual objective of a rank alone summed straight
// from its definition: half the squared weights, plus the negatives' α.
func definedDual(t *roundTrainer) float64 {
	d := 0.0
	for j := range t.places {
		for e := range t.places[j] {
			w := t.weight(&t.places[j][e])
			d += w * w / 2
		}
	}
	for i, act := range t.act {
		labels, _ := t.y.Row(i)
		for _, a := range act {
			if _, label := slices.BinarySearch(labels, a.class); !label {
				d += a.alpha
			}
		}
	}
	return d
}
