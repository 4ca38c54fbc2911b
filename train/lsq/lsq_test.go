package lsq

import (
	"testing"

	"xmc/train/traintest"
)

// TestLSQSameOnEveryLayout trains three epochs of Bibtex's first 1,000
// rows on 1, 2 and 5 ranks × 1 and 3 threads: the same bytes on every
// layout.
func TestLSQSameOnEveryLayout(t *testing.T) {
	tr, _ := traintest.Bibtex(t)
	a := New().(*Trainer)
	a.p.Epochs = 3
	traintest.SameRounds(t, a, traintest.Head(tr, 1000), 5)
}
