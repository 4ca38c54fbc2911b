package pdsparse

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"xmc/model/linear"
	"xmc/numa"
	"xmc/runner"
	"xmc/train"
)

// Save returns each owned unit's dual sums, as (feature, class, v)
// records, and the active sets.
func (t *roundTrainer) Save() ([][]byte, []byte, error) {
	unitOf := make(map[int32]int, len(t.owned))
	for q, u := range t.owned {
		for _, l := range t.blocks[u] {
			unitOf[l] = q
		}
	}
	state := make([][]byte, len(t.owned))
	put := func(q int, j uint32, l int32, v float64) {
		state[q] = binary.LittleEndian.AppendUint32(state[q], j)
		state[q] = binary.LittleEndian.AppendUint32(state[q], uint32(l))
		state[q] = binary.LittleEndian.AppendUint64(state[q], math.Float64bits(v))
	}
	for j := range t.places {
		for e, p := range t.places[j] {
			c, v, best := p.class, p.v, t.bestWeight(j, e)
			if v == 0 && best == 0 {
				continue
			}
			l := t.global[c]
			put(unitOf[l], uint32(j), l, v)
			if best != 0 {
				put(unitOf[l], uint32(j)|bestRecord, l, best)
			}
		}
	}
	shared := binary.LittleEndian.AppendUint64(nil, uint64(t.epochs))
	shared = binary.LittleEndian.AppendUint64(shared, math.Float64bits(t.bestAcc))
	shared = binary.LittleEndian.AppendUint64(shared, uint64(t.sinceBest))
	for _, active := range t.act {
		shared = binary.LittleEndian.AppendUint32(shared, uint32(len(active)))
		for _, a := range active {
			shared = binary.LittleEndian.AppendUint32(shared, uint32(a.class))
			shared = binary.LittleEndian.AppendUint64(shared, math.Float64bits(a.alpha))
		}
	}
	return state, shared, nil
}

// loadShared restores the active sets saved by Save.
func (t *roundTrainer) loadShared(b []byte) error {
	bad := errors.New("pdsparse: shared state truncated")
	if len(b) < 24 {
		return bad
	}
	t.epochs = int(binary.LittleEndian.Uint64(b))
	t.bestAcc = math.Float64frombits(binary.LittleEndian.Uint64(b[8:]))
	t.sinceBest = int(binary.LittleEndian.Uint64(b[16:]))
	b = b[24:]
	for i := range t.act {
		if len(b) < 4 {
			return bad
		}
		n := int(binary.LittleEndian.Uint32(b))
		b = b[4:]
		if len(b) < 12*n {
			return bad
		}
		t.act[i] = t.act[i][:0]
		for range n {
			l := int32(binary.LittleEndian.Uint32(b))
			if l < 0 || int(l) >= t.y.Cols {
				return fmt.Errorf("pdsparse: shared state names class %d", l)
			}
			t.act[i] = append(t.act[i], dualVar{class: l, alpha: math.Float64frombits(binary.LittleEndian.Uint64(b[4:]))})
			b = b[12:]
		}
	}
	if len(b) != 0 {
		return errors.New("pdsparse: shared state has trailing bytes")
	}
	return nil
}

// Finish encodes every owned unit as a linear.Block of w = prox_λ(v), the
// units on the team's workers.
func (t *roundTrainer) Finish(team *numa.Team) ([]runner.Result, error) {
	cw, err := t.classWeights()
	if err != nil {
		return nil, err
	}
	// first[q] is the local id of owned unit q's first class: local ids
	// number the owned units' classes in order (own).
	first := make([]int, len(t.owned))
	for q := 1; q < len(t.owned); q++ {
		first[q] = first[q-1] + len(t.blocks[t.owned[q-1]])
	}
	dense := numa.NewPerWorker(t.pool, func(numa.Worker) []float64 { return make([]float64, t.x.Cols) })
	return train.EncodeUnits(team, t.owned, func(w numa.Worker, q int) ([]byte, error) {
		d := dense.Get(w)
		var b linear.Block
		for k, l := range t.blocks[t.owned[q]] {
			feats, weights := cw.of(first[q] + k)
			for e, j := range feats {
				d[j] = weights[e]
			}
			b.AppendSparse(l, feats, d, t.p.Prune)
			for _, j := range feats {
				d[j] = 0
			}
		}
		return b.MarshalBinary()
	})
}

// classWeights holds every local class's non-zero weights with their
// features, in increasing feature order, one class after another in flat
// arrays: class c's lie in [start[c], end[c]).
type classWeights struct {
	start, end []int
	feature    []int32
	weight     []float64
}

// of returns local class c's features and weights.
func (cw *classWeights) of(c int) ([]int32, []float64) {
	return cw.feature[cw.start[c]:cw.end[c]], cw.weight[cw.start[c]:cw.end[c]]
}

// classWeights gathers the weights (the best epoch's with --heldout) from
// the places, which hold them by feature, by class: a count of each class's
// places, then one pass that puts each non-zero weight at its class's next
// slot, with no list that grows. It fails on a weight that is not finite.
func (t *roundTrainer) classWeights() (*classWeights, error) {
	n := len(t.global)
	cw := &classWeights{start: make([]int, n+1)}
	for j := range t.places {
		for _, p := range t.places[j] {
			cw.start[p.class+1]++
		}
	}
	for c := range n {
		cw.start[c+1] += cw.start[c]
	}
	cw.end = slices.Clone(cw.start[:n])
	cw.feature, cw.weight = make([]int32, cw.start[n]), make([]float64, cw.start[n])
	for j := range t.places {
		for e := range t.places[j] {
			p := &t.places[j][e]
			w := t.weight(p)
			if t.bestWt != nil {
				w = t.bestWeight(j, e)
			}
			if math.IsNaN(w) || math.IsInf(w, 0) {
				return nil, fmt.Errorf("class %d: training diverged: non-finite weight", t.global[p.class])
			}
			if w != 0 {
				at := cw.end[p.class]
				cw.feature[at], cw.weight[at] = int32(j), w
				cw.end[p.class]++
			}
		}
	}
	return cw, nil
}

// meanActive is the mean size of the rows' active sets.
func (t *roundTrainer) meanActive() float64 {
	s := 0
	for _, a := range t.act {
		s += len(a)
	}
	return float64(s) / float64(max(1, len(t.act)))
}

// nnz is the number of non-zero weights of this rank's classes.
func (t *roundTrainer) nnz() int {
	n := 0
	for j := range t.places {
		for e := range t.places[j] {
			if t.weight(&t.places[j][e]) != 0 {
				n++
			}
		}
	}
	return n
}
