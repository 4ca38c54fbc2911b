package ppdsparse

import (
	"errors"
	"math"
	"slices"

	"xmc/model/linear"
	"xmc/numa"
	"xmc/train/onevsall"
)

// labelStats sum up the optimisation of the labels trained so far.
type labelStats struct {
	Labels int64 // labels trained
	Rounds int64 // active-set rounds
	Passes int64 // coordinate-descent passes over active sets
	// Updates counts dual coordinate updates, the bulk of the work with
	// the scanned index entries.
	Updates int64
	// Scanned counts inverted-index entries visited by searches.
	Scanned int64
	// Rescored counts rows whose score a bounded search computed from
	// the row itself, in place of a scan of the index.
	Rescored int64
	// ActiveRows sums the active-set size at the end of every label.
	ActiveRows int64
	// Unconverged counts labels stopped by MaxIters before reaching Tol.
	Unconverged int64
}

// blockTrainer trains the labels of a PPDSparse model, a block of labels
// per work unit (see LabelBlocks). Work is safe for concurrent use by
// different workers.
type blockTrainer struct {
	Params  Params
	Data    *numa.Replicas[*trainingData]
	blocks  [][]int32
	scratch *numa.PerWorker[*labelScratch]
	// labels deals the labels of the units being trained to their workers
	// and to the workers that help them.
	labels *onevsall.Labels
}

// newBlockTrainer prepares a trainer for params (validated) over the
// data replicas, built with params.Preprocess, for the workers of pool.
func newBlockTrainer(p Params, data *numa.Replicas[*trainingData], pool *numa.Pool) *blockTrainer {
	t := &blockTrainer{Params: p, Data: data, blocks: onevsall.Blocks(data.Get(0).LabelCounts(), p.LabelsPerUnit, onevsall.LabelCost),
		scratch: numa.NewPerWorker(pool, func(w numa.Worker) *labelScratch { return newLabelScratch(data.Get(w.Domain), p) })}
	t.labels = onevsall.NewLabels(pool, t.trainInto)
	return t
}

// Cost estimates what label block u costs to train, relative to the other
// blocks: the sum of its labels' onevsall.LabelCost.
func (t *blockTrainer) Cost(u int) float64 {
	d := t.Data.Get(0)
	c := 0.0
	for _, l := range t.blocks[u] {
		c += onevsall.LabelCost(d.PosStart[l+1] - d.PosStart[l])
	}
	return c
}

// Units returns the number of work units, label blocks.
func (t *blockTrainer) Units() int { return len(t.blocks) }

// Block returns the labels of unit u. The slice must not be modified.
func (t *blockTrainer) Block(u int) []int32 { return t.blocks[u] }

// Stats returns the optimisation statistics summed over every worker. Call
// it after training, not while workers run.
func (t *blockTrainer) Stats() labelStats {
	var s labelStats
	t.scratch.Each(func(sc *labelScratch) {
		st := sc.stats
		s.Labels += st.Labels
		s.Rounds += st.Rounds
		s.Passes += st.Passes
		s.Updates += st.Updates
		s.Scanned += st.Scanned
		s.Rescored += st.Rescored
		s.ActiveRows += st.ActiveRows
		s.Unconverged += st.Unconverged
	})
	return s
}

// Work is the WorkFunc of PPDSparse: it trains the labels of unit, with the
// help of workers that have no unit left (t.labels), and encodes their
// pruned weights as a linear.Block.
func (t *blockTrainer) Work(w numa.Worker, unit int) ([]byte, error) {
	if err := t.Params.CheckUnit(t.Data.Get(w.Domain).Data, t.blocks, unit); err != nil {
		return nil, err
	}
	s := t.scratch.Get(w)
	if err := t.labels.Train(w, t.blocks[unit], &s.block); err != nil {
		return nil, err
	}
	return s.block.MarshalBinary()
}

// trainInto is PPDSparse's onevsall.TrainFunc: it trains label l on worker
// w and appends its pruned weights to into.
func (t *blockTrainer) trainInto(w numa.Worker, l int32, into *linear.Block) error {
	s := t.scratch.Get(w)
	defer s.clearWeights()
	s.train(l, t.Params.Seed)
	// Only the columns listed in s.cols can be non-zero: visiting them
	// alone keeps a rare label's cost off D. Those the pruning keeps, far
	// fewer, are sorted for the model.
	s.kept = s.kept[:0]
	for _, j := range s.cols {
		v := s.w[j]
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return errors.New("training diverged: non-finite weight")
		}
		if v != 0 && math.Abs(v) >= t.Params.Prune {
			s.kept = append(s.kept, j)
		}
	}
	slices.Sort(s.kept)
	into.AppendSparse(l, s.kept, s.w, t.Params.Prune)
	return nil
}
