package pdsparse

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"xmc/data"
	"xmc/model/linear"
	"xmc/mpi"
	"xmc/numa"
	"xmc/numa/numatest"
	"xmc/runner"
	"xmc/train"
	"xmc/train/traintest"
)

func TestPDSparseParamsValidate(t *testing.T) {
	tests := []struct {
		edit func(*Params)
		want string // substring of the error, "" for none
	}{
		{func(p *Params) {}, ""},
		{func(p *Params) { p.Cost = 0 }, "--cost"},
		{func(p *Params) { p.Lambda = -1 }, "--lambda"},
		{func(p *Params) { p.Epochs = 0 }, "--epochs"},
		{func(p *Params) { p.BatchSize = 0 }, "--batch-size"},
		{func(p *Params) { p.ClassesPerUnit = 0 }, "--classes-per-unit"},
		{func(p *Params) { p.MaxSelect = 0 }, "--max-select"},
		{func(p *Params) { p.Heldout = 1 }, "--heldout"},
		{func(p *Params) { p.Heldout = 0.2; p.Patience = 0 }, "--patience"},
	}
	tr, _ := traintest.Bibtex(t)
	for i, tc := range tests {
		p := DefaultParams().forData(tr, noneSet)
		tc.edit(&p)
		err := p.Validate()
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("case %d: %v, want an error about %q", i, err, tc.want)
		}
	}
}

// TestPDSClassesPerUnit checks the default unit size: 64 units of small
// class sets, at most 256 classes a unit.
func TestPDSClassesPerUnit(t *testing.T) {
	for _, tc := range []struct{ classes, want int }{
		{1, 1}, {64, 1}, {65, 2}, {159, 3}, {983, 16}, {16384, 256}, {20206, 256}, {670091, 256},
	} {
		if got := classesPerUnit(tc.classes); got != tc.want {
			t.Errorf("%d classes: %d a unit, want %d", tc.classes, got, tc.want)
		}
	}
}

// TestPDSUnitCount checks that the units are the fewest of at most the
// classes a unit allows, rounded up to a multiple of 64 that no class set
// is too small for.
func TestPDSUnitCount(t *testing.T) {
	for _, tc := range []struct{ labeled, perUnit, want int }{
		{18499, 256, 128}, {16384, 256, 64}, {16385, 256, 128}, {670091, 256, 2624},
		{159, 3, 64}, {159, 1, 159}, {159, 159, 64}, {30, 1, 30}, {30, 30, 30}, {1, 1, 1},
	} {
		if got := unitCount(tc.labeled, tc.perUnit); got != tc.want {
			t.Errorf("%d classes, at most %d a unit: %d units, want %d", tc.labeled, tc.perUnit, got, tc.want)
		}
	}
}

// TestPDSparseWeightsWhateverTheUnits trains Bibtex's first 2,500 rows with
// the classes dealt into the default units, into one, into 7 and into one
// unit per class, on 1 rank and on 2: every class must get the same weights,
// bit for bit, so that the number of units can serve the ranks' balance.
func TestPDSparseWeightsWhateverTheUnits(t *testing.T) {
	bibtex, _ := traintest.Bibtex(t)
	tr := traintest.Head(bibtex, 2500)
	p := DefaultParams()
	p.Epochs = 2
	counts := data.LabelCounts(&tr.Y)
	var want map[int32]string
	for _, n := range []int{0, 1, 7, len(counts)} { // 0: the default units
		units := fmt.Sprint(n)
		if n == 0 {
			units = "default"
		}
		for _, ranks := range []int{1, 2} {
			got, err := sameWeightsRun(t, tr, p, 1, ranks, func(rt *roundTrainer) error {
				if n > 0 {
					rt.blocks = train.DealtBlocks(counts, n)
				}
				return nil
			}, func(*roundTrainer) error { return nil })
			if err != nil {
				t.Fatalf("%s units, %d ranks: %v", units, ranks, err)
			}
			weights := make(map[int32]string)
			for _, res := range got {
				var b linear.Block
				if err := b.UnmarshalBinary(res.Data); err != nil {
					t.Fatalf("%s units, %d ranks: unit %d: %v", units, ranks, res.Unit, err)
				}
				for r, l := range b.Labels {
					f, w := b.Row(r)
					weights[l] = fmt.Sprint(f, w)
				}
			}
			if want == nil {
				want = weights
				continue
			}
			if !maps.Equal(weights, want) {
				t.Errorf("%s units, %d ranks: the classes' weights differ from the default units' on 1 rank", units, ranks)
			}
		}
	}
}

// TestPDSparseSameWeights trains Bibtex's first 2,500 rows with the dense
// weights their size gets, and with weight lists whose place table is
// dense or hashed, and with the steps applied by 1 or 3 workers (every
// round, or none, handed to the workers), on a rank alone (which solves
// each row where it searched it) and on 2 ranks (which exchange their
// reports): the weights must be the same bytes. With -short, as make's
// race stage runs it, the runs of one worker on one rank, which have
// nothing concurrent for the race detector to check, are left out but the
// first, and the runs train one epoch rather than two.
func TestPDSparseSameWeights(t *testing.T) {
	bibtex, _ := traintest.Bibtex(t)
	tr := traintest.Head(bibtex, 2500)
	p := DefaultParams()
	p.Epochs = 2
	if testing.Short() {
		p.Epochs = 1
	}
	tests := []struct {
		name         string
		workers      int
		denseWeights bool
		denseLimit   int
		parallelAdds int
		parts        int  // shares of the classes a row's search is split into (0: as searchParts decides)
		apart        bool // the steps applied in a loop of their own (applyApart)
	}{
		{"dense weights, 1 worker", 1, true, placeDenseLimit, 0, 0, false},
		{"lists, dense table, 1 worker", 1, false, placeDenseLimit, 0, 0, false},
		{"lists, hashed table, 1 worker", 1, false, 0, 0, 0, false},
		{"dense weights, 3 workers", 3, true, placeDenseLimit, 0, 0, false},
		{"lists, dense table, 3 workers", 3, false, placeDenseLimit, 0, 0, false},
		{"lists, hashed table, 3 workers", 3, false, 0, 0, 0, false},
		{"dense weights, 2 workers", 2, true, placeDenseLimit, 0, 0, false},
		{"lists, hashed table, 2 workers", 2, false, 0, 0, 0, false},
		{"lists, hashed table, 2 workers, steps apart", 2, false, 0, 0, 0, true},
		{"dense weights, 2 workers, steps apart", 2, true, placeDenseLimit, 0, 0, true},
		{"dense weights, 3 workers, steps on the rank", 3, true, placeDenseLimit, math.MaxInt, 0, false},
		{"lists, 3 workers, steps on the rank", 3, false, placeDenseLimit, math.MaxInt, 0, false},
		{"lists, search in 2 shares, 1 worker", 1, false, placeDenseLimit, 0, 2, false},
		{"lists, search in 3 shares, 3 workers", 3, false, 0, 0, 3, false},
		{"lists, search in 7 shares, 2 workers", 2, false, placeDenseLimit, 0, 7, false},
	}
	var want []runner.Result
	for _, tc := range tests {
		for _, ranks := range []int{1, 2} {
			if testing.Short() && want != nil && (tc.workers == 1 && ranks == 1 || tc.apart) {
				continue
			}
			tt := tc
			tt.name = fmt.Sprintf("%s, ranks %d", tc.name, ranks)
			got, err := sameWeightsRun(t, tr, p, tt.workers, ranks, func(tr *roundTrainer) error {
				tr.denseLimit, tr.parallelAdds, tr.wantParts, tr.applyApart = tt.denseLimit, tt.parallelAdds, tt.parts, tt.apart
				if !tt.denseWeights {
					tr.denseWeightLimit = 0
				}
				return nil
			}, func(tr *roundTrainer) error {
				if (tr.dense != nil) != tt.denseWeights {
					return fmt.Errorf("dense weights %v, want %v", tr.dense != nil, tt.denseWeights)
				}
				if !tt.denseWeights && (tr.at.dense != nil) != (tt.denseLimit > 0) {
					return fmt.Errorf("dense limit %d: dense table %v", tt.denseLimit, tr.at.dense != nil)
				}
				if tt.parts > 0 && tr.parts != tt.parts {
					return fmt.Errorf("search in %d shares, want %d", tr.parts, tt.parts)
				}
				if len(tr.shards) != shardsPerWorker*tt.workers+1 {
					return fmt.Errorf("%d feature shards for %d workers", len(tr.shards)-1, tt.workers)
				}
				return nil
			})
			if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			if want == nil {
				want = got
				continue
			}
			if len(got) != len(want) {
				t.Fatalf("%s: %d units, want %d", tt.name, len(got), len(want))
			}
			for u := range want {
				if a, b := want[u], got[u]; a.Unit != b.Unit || !bytes.Equal(a.Data, b.Data) {
					t.Errorf("%s: unit %d: weights differ from %s's on 1 rank", tt.name, a.Unit, tests[0].name)
				}
			}
		}
	}
}

// sameWeightsRun trains p.Epochs of tr on ranks in-process ranks of
// workers workers each, set up by edit before Start and checked by check
// after it, and returns every rank's units by unit. It checks that the
// round phases a rank has were timed: a rank alone has no exchange, solves
// in its search (and applies the steps there, where its team holds more
// than one worker) and shares no solutions.
func sameWeightsRun(t *testing.T, tr *data.Dataset, p Params, workers, ranks int, edit, check func(*roundTrainer) error) ([]runner.Result, error) {
	t.Helper()
	pools := make([]*numa.Pool, ranks)
	for r := range pools {
		pools[r] = numatest.Pool(t, workers, 1)
	}
	var mu sync.Mutex
	var all []runner.Result
	err := mpi.Launch(ranks, mpi.MaxMessage, func(c mpi.Comm) error {
		rt, err := newRoundTrainer(p.forData(tr, noneSet), tr, c, pools[c.Rank()])
		if err != nil {
			return err
		}
		if err := edit(rt); err != nil {
			return err
		}
		if err := rt.Start(runner.OwnedUnits(len(rt.blocks), c.Rank(), ranks), 0, nil, nil); err != nil {
			return err
		}
		if err := check(rt); err != nil {
			return err
		}
		if err := runRounds(rt, 0, p.Epochs*rt.order.Batches); err != nil {
			return err
		}
		ph, applyApart := rt.phases, ranks > 1 || !rt.applyingWhenTaken()
		if timed := ph.search > 0 && (ph.apply > 0) == applyApart && (ph.exchange > 0) == (ranks > 1) && (ph.solve > 0) == (ranks > 1) && (ph.share > 0) == (ranks > 1); !timed {
			return fmt.Errorf("rank %d of %d: round phases %+v", c.Rank(), ranks, ph)
		}
		res, err := finish(rt)
		mu.Lock()
		all = append(all, res...)
		mu.Unlock()
		return err
	})
	slices.SortFunc(all, func(a, b runner.Result) int { return a.Unit - b.Unit })
	return all, err
}

// TestPDSparseResumeAcrossStores saves a trainer's state after an epoch and
// resumes it on a trainer that holds its weights the other way (dense or in
// lists, as another number of ranks may give a rank), for a second epoch:
// the weights must be the bytes of two epochs uninterrupted.
func TestPDSparseResumeAcrossStores(t *testing.T) {
	tr, _ := traintest.Bibtex(t)
	p := DefaultParams()
	p.Epochs = 2
	pool := numatest.Pool(t, 1, 1)
	// run runs rounds [from, to) of a trainer with dense weights or
	// lists, started from state and shared (nil: fresh), and returns its
	// weights and saved state.
	run := func(dense bool, from, to int, state [][]byte, shared []byte) (res []runner.Result, st [][]byte, sh []byte, err error) {
		err = mpi.Launch(1, mpi.MaxMessage, func(c mpi.Comm) error {
			tt, err := newRoundTrainer(p.forData(tr, noneSet), tr, c, pool)
			if err != nil {
				return err
			}
			if !dense {
				tt.denseWeightLimit = 0
			}
			if err := tt.Start(runner.OwnedUnits(len(tt.blocks), 0, 1), from, state, shared); err != nil {
				return err
			}
			if (tt.dense != nil) != dense {
				return fmt.Errorf("dense weights %v, want %v", tt.dense != nil, dense)
			}
			if err := runRounds(tt, from, to); err != nil {
				return err
			}
			// The resumed run's one epoch is the training's second.
			if stats := tt.stats(); from > 0 && (len(tt.duals) != 1 || stats["dual_objective_epoch_2"] != tt.duals[0]) {
				return fmt.Errorf("resumed: objectives %v, figures %v", tt.duals, stats)
			}
			if st, sh, err = tt.Save(); err != nil {
				return err
			}
			res, err = finish(tt)
			return err
		})
		return res, st, sh, err
	}
	batches := train.NewEpochBatches(tr.N(), p.BatchSize, p.Seed).Batches
	for _, first := range []bool{true, false} {
		want, _, _, err := run(!first, 0, 2*batches, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, state, shared, err := run(first, 0, batches, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, _, _, err := run(!first, batches, 2*batches, state, shared)
		if err != nil {
			t.Fatal(err)
		}
		for u := range want {
			if !bytes.Equal(want[u].Data, got[u].Data) {
				t.Errorf("saved with dense weights %v, resumed the other way: unit %d differs from an uninterrupted run", first, u)
			}
		}
	}
}

// TestPDSparseResumeOnOtherRanks stops a run of two epochs on some ranks
// mid-epoch and resumes it on another number of ranks: the weights must be
// the bytes of a run uninterrupted. Each rank holds whole active sets for
// its own rows alone, so the saved sets are gathered from every rank, and a
// resumed rank keeps its own part of them.
func TestPDSparseResumeOnOtherRanks(t *testing.T) {
	bibtex, _ := traintest.Bibtex(t)
	tr := traintest.Head(bibtex, 1000)
	a := New().(*Trainer)
	a.p.Epochs = 2
	a.p.BatchSize = 64 // 16 rounds an epoch: one to resume in the second
	const seed = 5
	want := traintest.TrainRounds(t, a, tr, seed, traintest.Layout{Ranks: 1, Threads: 1})
	at := train.NewEpochBatches(tr.N(), a.p.BatchSize, seed).Batches + 5
	for _, tc := range []struct{ saved, resumed int }{{2, 3}, {3, 1}, {1, 2}} {
		got := traintest.ResumedRounds(t, a, tr, seed, traintest.Layout{Ranks: tc.saved, Threads: 1},
			traintest.Layout{Ranks: tc.resumed, Threads: 1}, at)
		for u := range want {
			if !bytes.Equal(want[u], got[u]) {
				t.Errorf("%d ranks, resumed on %d: unit %d differs from an uninterrupted run", tc.saved, tc.resumed, u)
			}
		}
	}
}

// TestFeatureShards checks that the feature shards cover every column once,
// in order, with about equal non-zeros when the columns allow it.
func TestFeatureShards(t *testing.T) {
	// Columns 0..5 hold 4, 1, 1, 1, 1, 0 non-zeros.
	x := data.CSR{Rows: 4, Cols: 6, Indptr: []int64{0, 2, 4, 6, 8},
		Indices: []int32{0, 1, 0, 2, 0, 3, 0, 4}, Values: []float32{1, 1, 1, 1, 1, 1, 1, 1}}
	tests := []struct {
		n    int
		want []int32
	}{
		{1, []int32{0, 6}},
		{2, []int32{0, 1, 6}}, // column 0 alone holds half
		{4, []int32{0, 1, 2, 3, 6}},
		{8, []int32{0, 1, 2, 3, 4, 5, 6, 6, 6}}, // more shards than columns: empty ones at the end
	}
	for _, tt := range tests {
		if got := featureShards(&x, tt.n); !slices.Equal(got, tt.want) {
			t.Errorf("featureShards(n=%d) = %v, want %v", tt.n, got, tt.want)
		}
	}
}

// noneSet is the Env.Set of a command line that sets no flag.
func noneSet(string) bool { return false }

// runRounds runs rounds [from, to) of t on its pool's workers held
// together, as the runner does.
func runRounds(t *roundTrainer, from, to int) error {
	return t.pool.Together(func(team *numa.Team) error {
		for r := from; r < to; r++ {
			if _, err := t.Round(context.Background(), r, team); err != nil {
				return err
			}
		}
		return nil
	})
}

// finish runs t.Finish on its pool's workers, as runner.Rounds does.
func finish(t *roundTrainer) (res []runner.Result, err error) {
	err = t.pool.Together(func(team *numa.Team) error {
		res, err = t.Finish(team)
		return err
	})
	return res, err
}

func TestRoundPhasesStats(t *testing.T) {
	p := roundPhases{curvature: 800 * time.Microsecond, search: 2 * time.Millisecond, exchange: time.Millisecond,
		solve: 500 * time.Microsecond, share: 200 * time.Microsecond, apply: 4*time.Millisecond + 1400*time.Nanosecond, objective: 40 * time.Millisecond,
		heldout: 1500 * time.Millisecond}
	tests := []struct {
		rounds int
		want   map[string]float64
	}{
		{4, map[string]float64{"curvature_ms_per_round": 0.2, "search_ms_per_round": 0.5, "exchange_ms_per_round": 0.25,
			"solve_ms_per_round": 0.125, "share_ms_per_round": 0.05, "apply_ms_per_round": 1, "objective_s": 0.04, "heldout_s": 1.5}},
		{0, map[string]float64{"curvature_ms_per_round": 0.8, "search_ms_per_round": 2, "exchange_ms_per_round": 1,
			"solve_ms_per_round": 0.5, "share_ms_per_round": 0.2, "apply_ms_per_round": 4.001, "objective_s": 0.04, "heldout_s": 1.5}},
	}
	for _, tt := range tests {
		if got := p.stats(tt.rounds); !maps.Equal(got, tt.want) {
			t.Errorf("%d rounds: %v, want %v", tt.rounds, got, tt.want)
		}
	}
}

func TestSearchParts(t *testing.T) {
	tests := []struct {
		workers, batch, classes int
		dense                   bool
		want, parts             int
	}{
		{2, 64, 20000, false, 0, 1},
		{16, 64, 20000, false, 0, 1}, // 64 rows are four a worker
		{17, 64, 20000, false, 0, 2}, // more workers than a quarter of the rows
		{64, 64, 20000, false, 0, 4}, // four pieces a worker
		{128, 64, 20000, false, 0, 8},
		{128, 16, 20000, false, 0, 16}, // at most maxSearchParts
		{128, 64, 300, false, 0, 4},    // shares of at least 64 classes
		{128, 64, 20, false, 0, 1},     // too few classes to share
		{128, 64, 20000, true, 0, 1},   // dense weights: one pass a feature
		{2, 64, 20000, true, 3, 3},     // a test's choice
	}
	for _, tt := range tests {
		if got := searchParts(tt.workers, tt.batch, tt.classes, tt.dense, tt.want); got != tt.parts {
			t.Errorf("searchParts(%d, %d, %d, %v, %d) = %d, want %d", tt.workers, tt.batch, tt.classes, tt.dense, tt.want, got, tt.parts)
		}
	}
}

// TestFinishRefusesNonFiniteWeight makes two weights of untrained dense
// weights infinite, in features far apart, and checks that Finish, its
// gathering by class on 3 workers, names the class of the first in feature
// order.
func TestFinishRefusesNonFiniteWeight(t *testing.T) {
	tr, _ := traintest.Bibtex(t)
	p := DefaultParams()
	err := mpi.Launch(1, mpi.MaxMessage, func(c mpi.Comm) error {
		rt, err := newRoundTrainer(p.forData(tr, noneSet), tr, c, numatest.Pool(t, 3, 1))
		if err != nil {
			return err
		}
		if err := rt.Start(runner.OwnedUnits(len(rt.blocks), 0, 1), 0, nil, nil); err != nil {
			return err
		}
		if rt.dense == nil {
			return fmt.Errorf("Bibtex's weights are not dense")
		}
		late, early := len(rt.places)-2, 3
		rt.places[late][0].v = math.Inf(1)
		rt.places[early][len(rt.places[early])-1].v = math.Inf(-1)
		_, err = finish(rt)
		want := fmt.Sprintf("class %d: training diverged", rt.global[rt.places[early][len(rt.places[early])-1].class])
		if err == nil || !strings.Contains(err.Error(), want) {
			return fmt.Errorf("Finish: %v, want %q", err, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
