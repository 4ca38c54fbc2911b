package train

import "math/bits"

// placeTable maps a (feature, class) pair to its place in the feature's
// lists of PD-Sparse's weights. When features × classes is small (at most
// placeDenseLimit) it is a dense array indexed by the pair; otherwise an
// open-addressing hash table. Go's map took 34% of the trainer's CPU time
// on Bibtex and 12% on wordnet-mc (CPU profiles, in hashing and probing);
// this table is written by hand because the pairs pack into one uint64,
// entries are never deleted, and one flat array of keys and one of places,
// probed linearly, read fewer cache lines a lookup.
type placeTable struct {
	// dense, if not nil, holds the place plus one of pair (j, c) at
	// j·classes + c (0: none).
	dense   []int32
	classes int

	keys   []uint64 // a pair's key plus one; 0 marks an empty slot
	places []int32
	n      int  // entries
	shift  uint // 64 − log₂(len(keys))
}

// placeDenseLimit is the most pairs a dense placeTable indexes: 16 MiB of
// places. On Bibtex (1,836 features, 80 classes a rank) the dense table
// took the lookups from 20% of the CPU profile to 6%, and training from
// 2.26-2.41 s to 1.82-2.10 s on 2 ranks.
const placeDenseLimit = 1 << 22

// newPlaceTable returns an empty table for pairs of features below
// features and classes below classes.
func newPlaceTable(features, classes int) placeTable {
	if features*classes <= placeDenseLimit {
		return placeTable{dense: make([]int32, features*classes), classes: classes}
	}
	return placeTable{}
}

// placeKey packs feature j and class c into a key.
func placeKey(j, c int32) uint64 { return uint64(uint32(j))<<32 | uint64(uint32(c)) }

// get returns the place of pair (j, c) and whether the table holds it.
func (t *placeTable) get(j, c int32) (int32, bool) {
	if t.dense != nil {
		p := t.dense[int(j)*t.classes+int(c)]
		return p - 1, p != 0
	}
	if t.n == 0 {
		return 0, false
	}
	key := placeKey(j, c)
	mask := uint64(len(t.keys) - 1)
	for h := (key * 0x9E3779B97F4A7C15) >> t.shift; ; h = (h + 1) & mask {
		switch t.keys[h] {
		case key + 1:
			return t.places[h], true
		case 0:
			return 0, false
		}
	}
}

// put records the place of pair (j, c), which the table does not hold.
func (t *placeTable) put(j, c, place int32) {
	if t.dense != nil {
		t.dense[int(j)*t.classes+int(c)] = place + 1
		t.n++
		return
	}
	t.putKey(placeKey(j, c), place)
}

// putKey records the place of key, growing the hash table to keep it at
// most 3/4 full (so that probe runs stay short).
func (t *placeTable) putKey(key uint64, place int32) {
	if 4*(t.n+1) > 3*len(t.keys) {
		t.grow()
	}
	mask := uint64(len(t.keys) - 1)
	h := (key * 0x9E3779B97F4A7C15) >> t.shift
	for t.keys[h] != 0 {
		h = (h + 1) & mask
	}
	t.keys[h], t.places[h] = key+1, place
	t.n++
}

// grow doubles the hash table (to 16 slots at first) and reinserts its
// entries.
func (t *placeTable) grow() {
	old, oldPlaces := t.keys, t.places
	size := max(16, 2*len(old))
	t.keys, t.places = make([]uint64, size), make([]int32, size)
	t.shift = 64 - uint(bits.TrailingZeros(uint(size)))
	t.n = 0
	for s, k := range old {
		if k != 0 {
			t.putKey(k-1, oldPlaces[s])
		}
	}
}
