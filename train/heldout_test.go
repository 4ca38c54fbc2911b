package train_test

import (
	"testing"

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
