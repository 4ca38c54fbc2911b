package pdsparse

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Save returns each owned unit's dual sums, as (feature, class, v)
// records, and, on rank 0, the active sets (savedActive).
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
	shared, err := t.savedActive()
	if err != nil {
		return nil, nil, err
	}
	return state, shared, nil
}

// savedActive returns, on rank 0, the state that Save shares: the epochs,
// the best held-out accuracy and the epochs since, then every row's active
// set whole, in row order, as (classes, then each class and α); the other
// ranks return nil. Each row's home holds its whole set: the homes gather
// their rows' to rank 0 (one Gatherv), which takes the rows in turn from
// each rank's part.
func (t *roundTrainer) savedActive() ([]byte, error) {
	mine := []byte(nil)
	for i := range t.act {
		if t.home(int32(i)) == t.comm.Rank() {
			mine = appendActive(mine, t.act[i])
		}
	}
	parts := [][]byte{mine}
	if t.comm.Size() > 1 {
		var err error
		if parts, err = t.comm.Gatherv(mine, 0, nil); err != nil {
			return nil, fmt.Errorf("pdsparse: gather the active sets: %w", err)
		}
		if t.comm.Rank() != 0 {
			return nil, nil
		}
	}
	shared := binary.LittleEndian.AppendUint64(nil, uint64(t.epochs))
	shared = binary.LittleEndian.AppendUint64(shared, math.Float64bits(t.bestAcc))
	shared = binary.LittleEndian.AppendUint64(shared, uint64(t.sinceBest))
	for i := range t.act {
		part := parts[t.home(int32(i))]
		if len(part) < 4 {
			return nil, fmt.Errorf("pdsparse: rank %d sent no active set of row %d", t.home(int32(i)), i)
		}
		n := 4 + activeVarBytes*int(binary.LittleEndian.Uint32(part))
		if len(part) < n {
			return nil, fmt.Errorf("pdsparse: rank %d sent a truncated active set of row %d", t.home(int32(i)), i)
		}
		shared = append(shared, part[:n]...)
		parts[t.home(int32(i))] = part[n:]
	}
	return shared, nil
}

// activeVarBytes is the bytes of a variable of a saved active set: its
// class and α.
const activeVarBytes = 12

// appendActive appends to b the saved form of an active set: its length,
// then each variable's class and α.
func appendActive(b []byte, active []dualVar) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(active)))
	for _, a := range active {
		b = binary.LittleEndian.AppendUint32(b, uint32(a.class))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(a.alpha))
	}
	return b
}

// loadShared restores the active sets saved by Save, each row's whole on
// its home and the variables of the rank's own classes elsewhere.
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
		if len(b) < activeVarBytes*n {
			return bad
		}
		t.act[i] = t.act[i][:0]
		for range n {
			l := int32(binary.LittleEndian.Uint32(b))
			if l < 0 || int(l) >= t.y.Cols {
				return fmt.Errorf("pdsparse: shared state names class %d", l)
			}
			t.act[i] = t.keepVar(int32(i), t.act[i], l, math.Float64frombits(binary.LittleEndian.Uint64(b[4:])))
			b = b[activeVarBytes:]
		}
	}
	if len(b) != 0 {
		return errors.New("pdsparse: shared state has trailing bytes")
	}
	return nil
}

// meanActive is the mean size of the active sets of the rows whose home
// this rank is (every row, for a rank alone).
func (t *roundTrainer) meanActive() float64 {
	s, n := 0, 0
	for i := range t.act {
		if t.home(int32(i)) == t.comm.Rank() {
			s, n = s+len(t.act[i]), n+1
		}
	}
	return float64(s) / float64(max(1, n))
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
