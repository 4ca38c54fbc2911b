package train_test

import (
	"testing"

	"xmc/data"
	"xmc/train"
	"xmc/train/traintest"
)

// TestHeldoutRows checks that the held-out rows are a fraction of the
// rows drawn by the seed alone, and none with a fraction of 0.
func TestHeldoutRows(t *testing.T) {
	tr, _ := traintest.Bibtex(t)
	split := func(frac float64) (kept, held int, err error) {
		k, h, err := train.EarlyStop{Heldout: frac, Patience: 1}.Rows(train.Env{}, tr, 3)
		if h != nil {
			held = h.N()
		}
		if k != nil {
			kept = k.N()
		}
		return kept, held, err
	}
	kept, held, err := split(0.1)
	if err != nil || kept+held != tr.N() || held < tr.N()/20 || held > tr.N()/5 {
		t.Fatalf("0.1 of %d rows: %d held out, %d kept (%v)", tr.N(), held, kept, err)
	}
	if again, _, _ := split(0.1); again != kept {
		t.Error("the same seed held out other rows")
	}
	if all, none, err := split(0); err != nil || none != 0 || all != tr.N() {
		t.Error("a fraction of 0 held rows out")
	}
}

// TestHeldoutSeedsDrawApart checks that seeds draw their held-out rows
// apart: two seeds' draws of 10% share about 1% of the rows, as two
// independent draws do, and no seed's rows are another's renumbered
// (before, seed s held out row i where seed 0 held out row i^s).
func TestHeldoutSeedsDrawApart(t *testing.T) {
	// Row i's one feature is i, so a held-out row tells where it was.
	const n = 4880
	x := data.CSR{Rows: n, Cols: n, Indptr: make([]int64, n+1), Indices: make([]int32, n), Values: make([]float32, n)}
	for i := range n {
		x.Indptr[i+1], x.Indices[i], x.Values[i] = int64(i+1), int32(i), 1
	}
	tr := &data.Dataset{X: x, Y: x}
	held := func(seed uint64) map[int]bool {
		_, h := train.HeldoutSplit(tr, 0.1, seed)
		rows := make(map[int]bool)
		for i := range h.N() {
			idx, _ := h.X.Row(i)
			rows[int(idx[0])] = true
		}
		return rows
	}
	base := held(0)
	for _, seed := range []uint64{1, 2, 3} {
		rows, shared, swapped := held(seed), 0, 0
		for i := range rows {
			if base[i] {
				shared++
			}
			if base[i^int(seed)] {
				swapped++
			}
		}
		// Independent draws share 49 rows on average, sd about 7.
		if lo, hi := n/200, n/50; shared < lo || shared > hi || swapped > hi {
			t.Errorf("seeds 0 and %d: %d and %d held-out rows, %d shared (want %d to %d), %d renumbered",
				seed, len(base), len(rows), shared, lo, hi, swapped)
		}
	}
}
