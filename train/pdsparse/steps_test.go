package pdsparse

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"xmc/mpi"
	"xmc/numa/numatest"
	"xmc/runner"
	"xmc/train"
	"xmc/train/traintest"
)

// TestNewActive checks the selection of the classes that join a row's
// active set against sorting every candidate, for rows of the reports of
// many ranks: the best violators (ties to the lower class, NaN last),
// then untouched classes in fill order.
func TestNewActive(t *testing.T) {
	const classes = 400
	rng := rand.New(rand.NewPCG(3, 4))
	fillPos := make([]int32, classes)
	for l, q := range rng.Perm(classes) {
		fillPos[l] = int32(q)
	}
	for _, tc := range []struct {
		name                 string
		maxSelect            int
		violators, untouched int
		scoreLevels          int // few levels: many ties
		nan                  bool
	}{
		{"one of many violators", 1, 16, 0, 1000, false},
		{"ties", 3, 40, 0, 3, false},
		{"too few violators", 5, 2, 30, 1000, false},
		{"no violators", 4, 0, 10, 1000, false},
		{"NaN scores", 3, 20, 5, 10, true},
		{"as many as asked", 6, 6, 6, 1000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &roundTrainer{p: Params{MaxSelect: tc.maxSelect}, fillPos: fillPos}
			for round := range 50 {
				perm := rng.Perm(classes)
				var entries []train.RoundEntry
				for k := range tc.violators {
					s := float64(rng.IntN(tc.scoreLevels))
					if tc.nan && k%4 == 0 {
						s = math.NaN()
					}
					entries = append(entries, train.RoundEntry{Class: int32(perm[k]), Kind: kindViolator, Score: s})
				}
				for k := range tc.untouched {
					entries = append(entries, train.RoundEntry{Class: int32(perm[tc.violators+k]), Kind: kindUntouched})
				}
				entries = append(entries, train.RoundEntry{Class: int32(perm[classes-1]), Kind: kindScore, Score: 9})
				rng.Shuffle(len(entries), func(i, j int) { entries[i], entries[j] = entries[j], entries[i] })

				got := tr.newActive(&stepper{}, entries)
				want := sortedActive(entries, tc.maxSelect, fillPos)
				if !slices.EqualFunc(got, want, func(a, b train.RoundEntry) bool { return a.Class == b.Class && a.Kind == b.Kind }) {
					t.Fatalf("round %d: got %v, want %v", round, got, want)
				}
			}
		})
	}
}

// sortedActive is newActive by sorting: the violators by score, high
// first, then class; the untouched by fill order.
func sortedActive(entries []train.RoundEntry, maxSelect int, fillPos []int32) []train.RoundEntry {
	var add, fill []train.RoundEntry
	for _, e := range entries {
		switch e.Kind {
		case kindViolator:
			add = append(add, e)
		case kindUntouched:
			fill = append(fill, e)
		}
	}
	slices.SortFunc(add, func(a, b train.RoundEntry) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.Class, b.Class)
	})
	add = add[:min(len(add), maxSelect)]
	slices.SortFunc(fill, func(a, b train.RoundEntry) int { return cmp.Compare(fillPos[a.Class], fillPos[b.Class]) })
	return append(add, fill[:min(len(fill), maxSelect-len(add))]...)
}

// TestSolverErrorStopsEveryRank has rank 0, the home of the even rows, fail
// to solve one: its active set names a class that no rank
// reports a score of. Rank 0 must return that error, and rank 1 the error
// that the rank that solved the row failed, both at the first round, with
// no hang in the exchange of the solutions.
func TestSolverErrorStopsEveryRank(t *testing.T) {
	bibtex, _ := traintest.Bibtex(t)
	tr := traintest.Head(bibtex, 500)
	p := DefaultParams()
	p.Epochs = 1
	const ranks = 2
	errs := make([]error, ranks)
	launched := mpi.Launch(ranks, mpi.MaxMessage, func(c mpi.Comm) error {
		rt, err := newRoundTrainer(p.forData(tr, noneSet), tr, c, numatest.Pool(t, 1, 1))
		if err != nil {
			return err
		}
		if err := rt.Start(runner.OwnedUnits(len(rt.blocks), c.Rank(), ranks), 0, nil, nil); err != nil {
			return err
		}
		if c.Rank() == 0 {
			// A class of rank 1's, active for rank 0 alone, in the first
			// row of the first round that rank 0 solves and reports on.
			rows := rt.order.Rows(0)
			i := slices.IndexFunc(rows, func(i int32) bool {
				labels, _ := rt.y.Row(int(i))
				return rt.home(i) == 0 && rt.sq[i] > 0 && len(labels) > 0
			})
			if i < 0 {
				return fmt.Errorf("no row of rank 0's to solve in %v", rows)
			}
			row := rows[i]
			labels, _ := rt.y.Row(int(row))
			l := -1
			for c, lc := range rt.local {
				if lc < 0 && !slices.Contains(labels, int32(c)) {
					l = c
					break
				}
			}
			if l < 0 {
				return fmt.Errorf("no class of rank 1's outside row %d's labels", row)
			}
			rt.act[row] = append(rt.act[row], dualVar{class: int32(l), owner: 1})
		}
		errs[c.Rank()] = runRounds(rt, 0, 1)
		return errs[c.Rank()]
	})
	if launched == nil {
		t.Fatal("the rounds ran without error")
	}
	for r, want := range []string{"no rank reported the score of class", "the rank that solved row"} {
		if errs[r] == nil || !strings.Contains(errs[r].Error(), want) {
			t.Errorf("rank %d: error %v, want one that says %q", r, errs[r], want)
		}
	}
}
