package memoir

import (
	"testing"

	"xmc/train/traintest"
)

// TestMEMOIRSameOnEveryLayout trains two epochs of Bibtex's first 1,000
// rows with each index on 1, 2 and 5 ranks × 1 and 3 threads: the same
// bytes on every layout.
func TestMEMOIRSameOnEveryLayout(t *testing.T) {
	tr, _ := traintest.Bibtex(t)
	for _, index := range []string{"lsh", "graph"} {
		t.Run(index, func(t *testing.T) {
			a := New().(*Trainer)
			a.p.Epochs, a.p.Index = 2, index
			traintest.SameRounds(t, a, traintest.Head(tr, 1000), 5)
		})
	}
}
