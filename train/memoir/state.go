package memoir

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"xmc/mips"
	"xmc/model/linear"
	"xmc/numa"
	"xmc/runner"
	"xmc/train"
)

// Save returns each owned block's vectors and index, and the shared scale,
// projected, and early-stopping state.
func (t *roundTrainer) Save() ([][]byte, []byte, error) {
	if err := t.settleProjection(); err != nil {
		return nil, nil, err
	}
	state := make([][]byte, len(t.mine))
	for q, b := range t.mine {
		e := binary.LittleEndian.AppendUint64(nil, math.Float64bits(b.sq))
		for _, v := range b.paid {
			e = binary.LittleEndian.AppendUint64(e, math.Float64bits(v))
		}
		e = b.vec.AppendBinary(e)
		if b.lsh != nil {
			e = b.lsh.AppendBinary(e)
		}
		if b.graph != nil {
			e = b.graph.AppendBinary(e)
		}
		if b.best != nil {
			e = b.best.AppendBinary(append(e, 1))
		} else {
			e = append(e, 0)
		}
		state[q] = e
	}
	shared := binary.LittleEndian.AppendUint64(nil, math.Float64bits(t.scale))
	shared = binary.LittleEndian.AppendUint64(shared, math.Float64bits(t.owed))
	shared = binary.LittleEndian.AppendUint64(shared, uint64(t.epochs))
	shared = binary.LittleEndian.AppendUint64(shared, math.Float64bits(t.bestF1))
	shared = binary.LittleEndian.AppendUint64(shared, math.Float64bits(t.bestScale))
	shared = binary.LittleEndian.AppendUint64(shared, uint64(t.sinceBest))
	return state, shared, nil
}

// decodeBlock restores block b from its saved state.
func (t *roundTrainer) decodeBlock(b *classBlock, e []byte) error {
	if len(e) < 8 {
		return errors.New("memoir: block state truncated")
	}
	b.sq = math.Float64frombits(binary.LittleEndian.Uint64(e))
	e = e[8:]
	if len(e) < 8*len(b.classes) {
		return errors.New("memoir: block state truncated")
	}
	for k := range b.paid {
		b.paid[k] = math.Float64frombits(binary.LittleEndian.Uint64(e[8*k:]))
	}
	var err error
	if b.vec, e, err = mips.DecodeVectors(e[8*len(b.classes):], t.x.Cols); err != nil {
		return err
	}
	if b.vec.Len() != len(b.classes) {
		return fmt.Errorf("memoir: block state of %d classes, want %d", b.vec.Len(), len(b.classes))
	}
	switch t.p.Index {
	case "lsh":
		if b.lsh, e, err = mips.DecodeLSH(t.hasher, b.vec, e); err != nil {
			return err
		}
	case "graph":
		if b.graph, e, err = mips.DecodeGraph(b.vec, t.p.Degree, t.p.Ef, e); err != nil {
			return err
		}
	}
	if len(e) < 1 {
		return errors.New("memoir: block state truncated")
	}
	if e[0] == 1 {
		if b.best, e, err = mips.DecodeVectors(e[1:], t.x.Cols); err != nil {
			return err
		}
	} else {
		e = e[1:]
	}
	if len(e) != 0 {
		return errors.New("memoir: block state has trailing bytes")
	}
	for b.zeroFrom < b.vec.Len() && !b.vec.IsZero(b.zeroFrom) {
		b.zeroFrom++
	}
	return nil
}

// Finish encodes every owned block as a linear.Block of its weights
// s·v (the best epoch's with --heldout), the blocks on the team's workers,
// once the last round's projection is made.
func (t *roundTrainer) Finish(team *numa.Team) ([]runner.Result, error) {
	if err := t.settleProjection(); err != nil {
		return nil, err
	}
	units := make([]int, len(t.mine))
	for q, b := range t.mine {
		units[q] = b.unit
	}
	return train.EncodeUnits(team, units, func(_ numa.Worker, q int) ([]byte, error) {
		b := t.mine[q]
		vec, scale := b.vec, t.scale
		if b.best != nil {
			vec, scale = b.best, t.bestScale
		}
		var lb linear.Block
		var w []float64 // a class's weights, scaled
		for k, l := range b.classes {
			idx, val := vec.Vector(k)
			w = w[:0]
			for _, v := range val {
				v *= scale
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return nil, fmt.Errorf("class %d: training diverged: non-finite weight", l)
				}
				w = append(w, v)
			}
			lb.AppendPairs(l, idx, w, t.p.Prune)
		}
		return lb.MarshalBinary()
	})
}

// stateBytes is the memory of this rank's class blocks: their vectors, the
// best epoch's, and their indexes.
func (t *roundTrainer) stateBytes() int {
	n := 0
	for _, b := range t.mine {
		n += b.vec.Bytes()
		if b.best != nil {
			n += b.best.Bytes()
		}
		if b.lsh != nil {
			n += b.lsh.Bytes()
		}
		if b.graph != nil {
			n += b.graph.Bytes()
		}
	}
	return n
}

// scoredPerSearch is the mean number of classes an index search scored.
func (t *roundTrainer) scoredPerSearch() float64 {
	var scored, searched int64
	t.searchers.Each(func(s *searcher) { scored, searched = scored+s.scored, searched+s.searched })
	return float64(scored) / float64(max(searched, 1))
}

// nnz is the number of stored weights of this rank's classes.
func (t *roundTrainer) nnz() int {
	n := 0
	for _, b := range t.mine {
		n += b.vec.NNZ()
	}
	return n
}
