package pdsparse

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"xmc/numa"
	"xmc/train"
)

// Kinds of the entries a rank reports for a row of the batch. An entry's
// Kind holds its kind in its low kindBits bits and, above them, the rank
// that reported it (see reportedKind), which owns the class: the row's
// home sends the class's new variable there without looking it up.
const (
	kindScore     = iota // the score of an active class
	kindViolator         // a class outside the active set, of positive score
	kindUntouched        // a class outside the active set, of score 0
	kindCurvature        // the row's curvature bound over the rank's classes (class −1; see curvatures)
)

// kindBits is the low bits of an entry's Kind that hold its kind.
const kindBits = 2

// reportedKind returns the Kind of an entry of kind kind that rank reports.
func reportedKind(kind int32, rank int) int32 { return kind | int32(rank)<<kindBits }

// entryKind returns the kind of entry e.
func entryKind(e train.RoundEntry) int32 { return e.Kind & (1<<kindBits - 1) }

// entryRank returns the rank that reported entry e.
func entryRank(e train.RoundEntry) int32 { return e.Kind >> kindBits }

// Round runs one batch: every rank scores the batch's rows against its
// classes and reports the scores of their active classes and its best
// candidates to each row's home (see home); every rank receives the
// reports of the rows it is the home of and solves their subproblems; each
// home sends every rank the new variables of its classes, and each rank
// takes them and applies the steps of its own classes, in the loop that
// takes them where its team holds more than one worker (takeThenApply). A
// rank alone solves each row where its worker searched it, from the report
// the worker just wrote, and takes its step there: no exchange, no decoding
// of the round's reports on the rank's goroutine and no loop of solutions
// or of their taking.
func (t *roundTrainer) Round(_ context.Context, r int, team *numa.Team) (bool, error) {
	t.team = team
	t.rounds++
	rows := t.order.Rows(r)
	lap := time.Now()
	if err := t.boundCurvatures(t.team, rows); err != nil {
		return false, err
	}
	lap = t.phases.add(&t.phases.curvature, lap)
	if t.comm.Size() == 1 {
		solve := t.solveReported(rows)
		if t.applyingWhenTaken() {
			err := t.takeThenApply(rows, func(loop train.Looper) error {
				return t.search(loop, rows, func(w numa.Worker, q int, report []byte) {
					solve(w, q, report)
					t.tookStep(q)
				})
			})
			if err != nil {
				return false, err
			}
			t.phases.add(&t.phases.search, lap)
		} else {
			if err := t.search(t.team, rows, solve); err != nil {
				return false, err
			}
			lap = t.phases.add(&t.phases.search, lap)
			if err := t.applySteps(rows); err != nil {
				return false, err
			}
			t.phases.add(&t.phases.apply, lap)
		}
		t.reportBytes += int64(t.batch.Bytes())
	} else {
		if err := t.search(t.team, rows, nil); err != nil {
			return false, err
		}
		lap = t.phases.add(&t.phases.search, lap)
		if err := t.roundEntries(rows); err != nil {
			return false, err
		}
		lap = t.phases.add(&t.phases.exchange, lap)
		msg, err := t.solveRows(rows)
		if err != nil {
			return false, err
		}
		lap = t.phases.add(&t.phases.solve, lap)
		if err := t.shareSolutions(rows, msg, t.ownerCounts); err != nil {
			return false, err
		}
		lap = t.phases.add(&t.phases.share, lap)
		if err := t.takeSolutions(rows); err != nil {
			return false, err
		}
		t.phases.add(&t.phases.apply, lap)
	}
	if !t.order.LastOfEpoch(r) {
		return false, nil
	}
	t.epochs++
	lap = time.Now()
	dual, err := t.dualObjective(t.team)
	if err != nil {
		return false, err
	}
	t.duals = append(t.duals, dual)
	lap = t.phases.add(&t.phases.objective, lap)
	if t.held.Rows == 0 {
		if t.log != nil {
			t.log.Info("pdsparse epoch", "epoch", t.epochs, "dual_objective", fmt.Sprintf("%.6g", dual))
		}
		return false, nil
	}
	acc, err := t.heldoutAccuracy()
	if err != nil {
		return false, err
	}
	t.phases.add(&t.phases.heldout, lap)
	if acc > t.bestAcc {
		t.bestAcc, t.sinceBest = acc, 0
		t.keepBest()
	} else {
		t.sinceBest++
	}
	if t.log != nil {
		t.log.Info("pdsparse epoch", "epoch", t.epochs, "dual_objective", fmt.Sprintf("%.6g", dual),
			"heldout_accuracy", fmt.Sprintf("%.2f", acc), "best", fmt.Sprintf("%.2f", t.bestAcc),
			"epochs_without_gain", t.sinceBest)
	}
	return t.sinceBest >= t.p.Patience, nil
}

// roundEntries sets t.entries to every rank's entries for the round's
// rows that this rank is the home of, ordered by row and, within a row, by
// rank: each rank sends each other rank the entries of its rows.
func (t *roundTrainer) roundEntries(rows []int32) error {
	t.homeCounts = slices.Grow(t.homeCounts[:0], t.comm.Size())[:t.comm.Size()]
	t.msg = t.batch.JoinTo(t.msg, t.homeCounts, func(q int) int { return t.home(rows[q]) })
	mine, err := t.toHomes.Exchange(t.comm, t.msg, t.homeCounts)
	if err != nil {
		return fmt.Errorf("pdsparse: %w", err)
	}
	t.reportBytes += int64(len(mine))
	if t.entries, err = train.DecodeEntries(mine, t.entries); err != nil {
		return fmt.Errorf("pdsparse: %w", err)
	}
	return nil
}

// shareSolutions sends every rank the new variables of its classes in the
// rows this rank solved, msg holding them for each rank in turn, counts[r]
// bytes for rank r, and lists in t.rowSteps the rows with a step to take
// (see decodeSolutions). A rank whose solutions failed returns its own
// error after the exchange, the other ranks the error that it failed, so
// that every rank stops at the same round.
func (t *roundTrainer) shareSolutions(rows []int32, msg []byte, counts []int) error {
	mine, err := t.solutions.Exchange(t.comm, msg, counts)
	if err != nil {
		return err
	}
	t.solutionBytes += int64(len(mine))
	for _, rs := range t.solving {
		if rs.err != nil {
			return rs.err
		}
	}
	return t.decodeSolutions(mine, len(rows))
}

// heldoutAccuracy returns the percentage of held-out rows whose top class
// is one of their labels: every rank reports its best class and score per
// row; each rank takes the best of all, ties to the lower class, for its
// share of the rows (train.RowShares), and the ranks sum their hits.
func (t *roundTrainer) heldoutAccuracy() (float64, error) {
	n := t.held.Rows
	t.msg = slices.Grow(t.msg[:0], n*train.RoundEntryBytes)[:n*train.RoundEntryBytes]
	err := t.team.For(n, 64, func(w numa.Worker, lo, hi int) {
		s := t.searchers.Get(w)
		for i := lo; i < hi; i++ {
			t.heldoutBest(s, i)
		}
	})
	if err != nil {
		return 0, err
	}
	mine, err := t.toSolvers.Exchange(t.comm, t.msg, n)
	if err != nil {
		return 0, fmt.Errorf("pdsparse: %w", err)
	}
	lo, hi := train.RowShare(n, t.comm.Rank(), t.comm.Size())
	if t.entries, err = train.DecodeEntriesOf(mine, lo, hi, t.entries); err != nil {
		return 0, fmt.Errorf("pdsparse: %w", err)
	}
	hits, err := train.CountRows(t.comm, t.entries, func(i int32, entries []train.RoundEntry) bool {
		best := train.RoundEntry{Class: -1, Score: math.Inf(-1)}
		for _, e := range entries {
			if train.Outranks(e, best) {
				best = e
			}
		}
		labels, _ := t.heldY.Row(int(i))
		_, ok := slices.BinarySearch(labels, best.Class)
		return ok
	})
	return 100 * float64(hits) / float64(max(n, 1)), err
}

// heldoutBest writes into t.msg, at row i's place, this rank's entry for
// held-out row i: its best class and its score (class −1 if the rank owns
// none).
func (t *roundTrainer) heldoutBest(s *searcher, i int) {
	idx, val := t.held.Row(i)
	t.scoreRow(s, idx, val)
	best, score := int32(-1), math.Inf(-1)
	for _, c := range s.touched {
		if l := t.global[c]; s.score[c] > score || (s.score[c] == score && l < best) {
			best, score = l, s.score[c]
		}
	}
	// Untouched classes score 0: the best of them is the lowest one
	// this rank owns.
	if score <= 0 {
		for _, l := range t.ownSorted {
			if s.seen[t.local[l]] == 0 {
				if score < 0 || l < best {
					best, score = l, 0
				}
				break
			}
		}
	}
	for _, c := range s.touched {
		s.score[c], s.seen[c] = 0, 0
	}
	train.AppendEntry(t.msg[i*train.RoundEntryBytes:][:0], train.RoundEntry{Row: int32(i), Class: best, Score: score})
}

// bestRecord flags, in the feature of a unit state's record, a weight of
// the best epoch's model rather than a dual sum.
const bestRecord = 1 << 31

// keepBest copies the current weights as the best epoch's.
func (t *roundTrainer) keepBest() {
	if t.bestWt == nil {
		t.bestWt = make([][]float64, t.x.Cols)
	}
	for j := range t.places {
		t.bestWt[j] = t.bestWt[j][:0]
		for e := range t.places[j] {
			t.bestWt[j] = append(t.bestWt[j], t.weight(&t.places[j][e]))
		}
	}
}

// bestWeight returns the best epoch's weight at place e of feature j.
func (t *roundTrainer) bestWeight(j, e int) float64 {
	if t.bestWt == nil || e >= len(t.bestWt[j]) {
		return 0
	}
	return t.bestWt[j][e]
}

// roundPhases is the wall time of a rank's goroutine in each part of its
// rounds, summed over the rounds, for the trainer's figures: where a
// round's time goes as workers and ranks are added (the job's profile says
// only how much of it is in loops).
type roundPhases struct {
	curvature time.Duration // the rows' curvature bounds (a loop)
	search    time.Duration // scoring the batch's rows (a loop; a rank alone solves them and applies their steps there too)
	exchange  time.Duration // the all-to-all of the reports and their decoding
	solve     time.Duration // the rank's share of the rows' subproblems (a loop, or the lead alone; in search for a rank alone)
	share     time.Duration // the all-to-all of the rows' solutions and their decoding (none for a rank alone)
	apply     time.Duration // the solutions' taking and the steps' additions to the weights (in search for a rank alone that applies them there)
	objective time.Duration // the dual objective at the ends of epochs
	heldout   time.Duration // the held-out accuracy at the ends of epochs
}

// add adds the time from lap to now to *d and returns now.
func (p *roundPhases) add(d *time.Duration, lap time.Time) time.Time {
	now := time.Now()
	*d += now.Sub(lap)
	return now
}

// stats returns the phases in milliseconds per round of rounds rounds, to
// the microsecond (the epochs' ends in seconds, in all).
func (p *roundPhases) stats(rounds int) map[string]float64 {
	per := func(d time.Duration) float64 {
		return math.Round(d.Seconds()*1e6/float64(max(rounds, 1))) / 1e3
	}
	return map[string]float64{"curvature_ms_per_round": per(p.curvature), "search_ms_per_round": per(p.search),
		"exchange_ms_per_round": per(p.exchange), "solve_ms_per_round": per(p.solve), "share_ms_per_round": per(p.share), "apply_ms_per_round": per(p.apply),
		"objective_s": math.Round(p.objective.Seconds()*1e3) / 1e3, "heldout_s": math.Round(p.heldout.Seconds()*1e3) / 1e3}
}
