package pdsparse

import (
	"math/bits"

	"gonum.org/v1/gonum/floats"
)

// placeTable maps a (feature, class) pair to its place in the feature's
// lists of PD-Sparse's weights. When features × classes is small (at most
// placeDenseLimit) it is a dense array indexed by the pair; otherwise each
// feature has its own open-addressing hash table of classes, so that the
// lookups of a frequent feature, made for most rows, stay together in
// cache (one table hashed by the pair scattered them over 48 MiB on
// wordnet-mc; per feature, training took 13.4-13.9 s against 14.1-15.9 s,
// 3 interleaved pairs of runs). Go's map took 34% of the trainer's CPU
// time on Bibtex and 12% on wordnet-mc (CPU profiles, in hashing and
// probing); this table is written by hand because entries are never
// deleted and a (class, place) pair packs into one uint64.
type placeTable struct {
	// dense, if not nil, holds the place plus one of pair (j, c) at
	// j·classes + c (0: none).
	dense   []int32
	classes int
	// byFeature[j] is feature j's hash table: slots of (class+1)<<32 |
	// place, 0 when empty; count[j] its entries.
	byFeature [][]uint64
	count     []int32
}

// placeDenseLimit is the most pairs a dense placeTable indexes: 64 MiB of
// places a rank at most, a bound that does not grow with the data. Where
// it holds, a lookup is one read rather than a probe of a feature's hash
// table, which were most of a round's steps on debian-tags
// (docs/algorithms/pdsparse.md, "Where a round's time goes").
const placeDenseLimit = 1 << 24

// newPlaceTable returns an empty table for pairs of features below
// features and classes below classes, dense if they are at most
// denseLimit pairs (placeDenseLimit but in tests).
func newPlaceTable(features, classes, denseLimit int) placeTable {
	if features*classes <= denseLimit {
		return placeTable{dense: make([]int32, features*classes), classes: classes}
	}
	return placeTable{byFeature: make([][]uint64, features), count: make([]int32, features)}
}

// slotOf returns the first slot of class c's probe run in a table of size
// slots (a power of two).
func slotOf(c int32, size int) uint32 {
	return (uint32(c) * 0x9E3779B1) >> (32 - uint(bits.TrailingZeros(uint(size))))
}

// get returns the place of pair (j, c) and whether the table holds it.
func (t *placeTable) get(j, c int32) (int32, bool) {
	if t.dense != nil {
		p := t.dense[int(j)*t.classes+int(c)]
		return p - 1, p != 0
	}
	tab := t.byFeature[j]
	if len(tab) == 0 {
		return 0, false
	}
	mask := uint32(len(tab) - 1)
	want := uint64(uint32(c)+1) << 32
	for h := slotOf(c, len(tab)); ; h = (h + 1) & mask {
		switch s := tab[h]; {
		case s&^0xffffffff == want:
			return int32(uint32(s)), true
		case s == 0:
			return 0, false
		}
	}
}

// first returns the slot where a lookup of pair (j, c) starts, or 0: read
// ahead of the lookups, so that their memory reads overlap.
func (t *placeTable) first(j, c int32) uint64 {
	if t.dense != nil {
		return uint64(t.dense[int(j)*t.classes+int(c)])
	}
	tab := t.byFeature[j]
	if len(tab) == 0 {
		return 0
	}
	return tab[slotOf(c, len(tab))]
}

// put records the place of pair (j, c), which the table does not hold.
func (t *placeTable) put(j, c, place int32) {
	if t.dense != nil {
		t.dense[int(j)*t.classes+int(c)] = place + 1
		return
	}
	// At most 3/4 full, so that probe runs stay short.
	if tab := t.byFeature[j]; 4*(int(t.count[j])+1) > 3*len(tab) {
		grown := make([]uint64, max(4, 2*len(tab)))
		for _, s := range tab {
			if s != 0 {
				insertSlot(grown, s)
			}
		}
		t.byFeature[j] = grown
	}
	insertSlot(t.byFeature[j], uint64(uint32(c)+1)<<32|uint64(uint32(place)))
	t.count[j]++
}

// insertSlot puts slot s into the first empty slot of its probe run in tab.
func insertSlot(tab []uint64, s uint64) {
	mask := uint32(len(tab) - 1)
	h := slotOf(int32(uint32(s>>32)-1), len(tab))
	for tab[h] != 0 {
		h = (h + 1) & mask
	}
	tab[h] = s
}

// denseWeights holds the PD-Sparse weights of a rank as a features ×
// classes array, with a bit per weight telling whether it is non-zero, for
// ranks whose pairs are few (at most denseWeightLimit). A weight's place is
// then its class (places[j][c]) and needs no table; a step's additions to
// the weights of a feature fall in one row of the array; and the search
// adds a feature's row of weights to the scores in one pass when many of
// them are non-zero, or visits its non-zero bits otherwise. On Bibtex (59%
// of W non-zero) the per-feature lists made the search visit a weight at
// about 1.7 ns and a step's addition cost about 18 ns (list and table
// upkeep); see roundTrainer.scoreRow for the sums, which are the lists'.
type denseWeights struct {
	classes, words int
	w              []float64 // w[j·classes + c], the weight of class c on feature j
	nonzero        []uint64  // bit c of nonzero[j·words:], set when w[j·classes + c] ≠ 0
	count          []int32   // per feature, its non-zero weights
}

// denseWeightLimit is the most features × classes of a rank whose weights
// are held dense: 2M pairs take 48 MiB with their places (16 bytes a pair
// and 8 of weight) and bits. Bibtex on one rank has 292,000 pairs, Delicious 491,000;
// debian-tags (15 million) and the larger sets keep the lists.
const denseWeightLimit = 1 << 21

// denseRowShare decides how the search reads a feature's weights: by the
// whole row when at least 1/denseRowShare of them are non-zero, by its
// non-zero bits otherwise.
const denseRowShare = 4

// newDenseWeights returns the weights, all zero, of features × classes
// pairs.
func newDenseWeights(features, classes int) *denseWeights {
	words := (classes + 63) / 64
	return &denseWeights{classes: classes, words: words, w: make([]float64, features*classes),
		nonzero: make([]uint64, features*words), count: make([]int32, features)}
}

// set makes w the weight of class c on feature j.
func (d *denseWeights) set(j, c int32, w float64) { d.setIn(d.row(j), j, c, w) }

// row returns feature j's weights, one per class.
func (d *denseWeights) row(j int32) []float64 {
	return d.w[int(j)*d.classes : (int(j)+1)*d.classes]
}

// setIn is set with feature j's row of weights at hand (row(j)), for
// loops that make many of its weights.
func (d *denseWeights) setIn(row []float64, j, c int32, w float64) {
	if (row[c] != 0) != (w != 0) {
		d.flip(j, c, w != 0)
	}
	row[c] = w
}

// flip records that the weight of class c on feature j became non-zero
// (or zero).
func (d *denseWeights) flip(j, c int32, nonzero bool) {
	d.nonzero[int(j)*d.words+int(c>>6)] ^= 1 << (uint(c) & 63)
	if nonzero {
		d.count[j]++
	} else {
		d.count[j]--
	}
}

// addRow adds xv times feature j's weights to score (one per class), and
// ors the feature's non-zero bits into marks.
func (d *denseWeights) addRow(j int32, xv float64, score []float64, marks []uint64) {
	if d.count[j] == 0 {
		return
	}
	row := d.row(j)
	bitsOf := d.nonzero[int(j)*d.words : (int(j)+1)*d.words]
	if int(d.count[j])*denseRowShare >= d.classes {
		// A zero weight adds ±0, which leaves every score as it was
		// (a score starts at +0, and no sum of it gives −0).
		// gonum's assembly multiplies, then adds (no fused
		// multiply-add): the bits of the loop
		//	score[c] += float64(row[c] * xv)
		// two or more classes at a time.
		floats.AddScaled(score[:len(row)], xv, row)
	} else {
		for k, m := range bitsOf {
			for m != 0 {
				c := k<<6 | bits.TrailingZeros64(m)
				score[c] += float64(row[c] * xv)
				m &= m - 1
			}
		}
	}
	marks = marks[:len(bitsOf)]
	for k, m := range bitsOf {
		marks[k] |= m
	}
}
