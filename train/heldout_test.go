package train

import (
	"testing"

	"xmc/train/traintest"
)

// TestHeldoutSplit checks that the held-out rows are a fraction of the
// rows drawn by the seed alone, and none with a fraction of 0.
func TestHeldoutSplit(t *testing.T) {
	tr, _ := traintest.Bibtex(t)
	train, held := heldoutSplit(tr, 0.1, 3)
	if held == nil || train.N()+held.N() != tr.N() || held.N() < tr.N()/20 || held.N() > tr.N()/5 {
		t.Fatalf("0.1 of %d rows: %d held out", tr.N(), held.N())
	}
	again, _ := heldoutSplit(tr, 0.1, 3)
	if again.N() != train.N() {
		t.Error("the same seed held out other rows")
	}
	if all, none := heldoutSplit(tr, 0, 3); none != nil || all != tr {
		t.Error("a fraction of 0 held rows out")
	}
}
