package pdsparse

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
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
