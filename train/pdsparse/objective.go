package pdsparse

import (
	"fmt"
	"slices"

	"xmc/mpi"
	"xmc/numa"
	"xmc/train"
)

// The rounds minimise the dual of ½Σ_k‖w_k‖² + λΣ_k‖w_k‖₁ + C Σ_i loss_i,
//
//	D(α) = ½ Σ_k ‖prox_λ(v_k)‖² + Σ_i Σ_{negatives k of row i} α_ik,
//
// v_k being class k's dual sum Σ_i α_ik x_i, so w_k = prox_λ(v_k), and the
// negatives' α_ik ≤ 0 (the linear term of a negative's subproblem, the 1 of
// its margin; see solution). D falls with every round whose steps the
// curvature bounds cover, and its fall tells how far the training has come:
// on a set where the loss's optimum ranks poorly (Delicious: see
// docs/algorithms/pdsparse.md), a faster fall is a lower P@1, and held-out
// rows are what stops it in time.

// objectiveBlock is the features, or the rows, a worker sums at a time for
// the dual objective: each block's sum has its own slot, added in block
// order, so that the sum does not depend on the workers.
const objectiveBlock = 1024

// dualObjective returns D at the current variables: every rank sums its own
// classes' weights and the negatives' variables of the rows it is the
// home of, in blocks over its workers, and the ranks add their sums.
func (t *roundTrainer) dualObjective(loop train.Looper) (float64, error) {
	features := len(t.places)
	fBlocks := (features + objectiveBlock - 1) / objectiveBlock
	rBlocks := (len(t.act) + objectiveBlock - 1) / objectiveBlock
	t.blockSums = slices.Grow(t.blockSums[:0], fBlocks+rBlocks)[:fBlocks+rBlocks]
	sums := t.blockSums
	me := t.comm.Rank()
	err := loop.For(fBlocks+rBlocks, 1, func(_ numa.Worker, lo, hi int) {
		for b := lo; b < hi; b++ {
			s := 0.0
			if b < fBlocks {
				for j := b * objectiveBlock; j < min(features, (b+1)*objectiveBlock); j++ {
					for e := range t.places[j] {
						w := t.weight(&t.places[j][e])
						s += w * w / 2
					}
				}
			} else {
				first := (b - fBlocks) * objectiveBlock
				for i := first; i < min(len(t.act), first+objectiveBlock); i++ {
					if t.home(int32(i)) != me {
						continue
					}
					// The labels come first in an active set; a row
					// without features keeps its labels alone.
					labels, _ := t.y.Row(i)
					for _, a := range t.act[i][min(len(labels), len(t.act[i])):] {
						s += a.alpha
					}
				}
			}
			sums[b] = s
		}
	})
	if err != nil {
		return 0, err
	}
	total := []float64{0}
	for _, s := range sums {
		total[0] += s
	}
	if err := t.comm.AllreduceFloat64(total, mpi.Sum); err != nil {
		return 0, fmt.Errorf("pdsparse: the dual objective: %w", err)
	}
	return total[0], nil
}

// stats returns the trainer's figures: the round phases (roundPhases.stats)
// and the dual objective at the end of each epoch of this run
// (dual_objective_epoch_E, counted from the start of training where the run
// resumed one) and the last (dual_objective).
func (t *roundTrainer) stats() map[string]float64 {
	stats := t.phases.stats(t.rounds)
	first := t.epochs - len(t.duals) + 1
	for e, d := range t.duals {
		stats[fmt.Sprintf("dual_objective_epoch_%d", first+e)] = d
	}
	if len(t.duals) > 0 {
		stats["dual_objective"] = t.duals[len(t.duals)-1]
	}
	return stats
}
