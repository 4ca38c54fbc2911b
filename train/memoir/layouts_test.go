package memoir

import (
	"bytes"
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

// TestMEMOIRProjectedOnEveryLayout trains with a λ large enough for the ℓ2
// projection to act and the scale to be folded into the vectors every few
// rounds: the same bytes on 1 and 3 ranks, and the same bytes when
// stopped mid-epoch, a round's projection waiting for the next round's
// reports, and resumed on another layout.
func TestMEMOIRProjectedOnEveryLayout(t *testing.T) {
	tr, _ := traintest.Bibtex(t)
	ds := traintest.Head(tr, 1000)
	a := New().(*Trainer)
	a.p.Epochs, a.p.Lambda = 2, 0.8
	want := traintest.TrainRounds(t, a, ds, 5, traintest.Layout{Ranks: 1, Threads: 1})
	for _, tc := range []struct{ saved, resumed traintest.Layout }{
		{traintest.Layout{Ranks: 3, Threads: 2}, traintest.Layout{}}, // uninterrupted
		{traintest.Layout{Ranks: 2, Threads: 1}, traintest.Layout{Ranks: 3, Threads: 1}},
		{traintest.Layout{Ranks: 1, Threads: 1}, traintest.Layout{Ranks: 2, Threads: 3}},
		{traintest.Layout{Ranks: 3, Threads: 2}, traintest.Layout{Ranks: 1, Threads: 1}},
	} {
		var got [][]byte
		if tc.resumed.Ranks == 0 {
			got = traintest.TrainRounds(t, a, ds, 5, tc.saved)
		} else {
			got = traintest.ResumedRounds(t, a, ds, 5, tc.saved, tc.resumed, 21)
		}
		for u := range want {
			if !bytes.Equal(got[u], want[u]) {
				t.Errorf("run on %v, resumed on %v: unit %d differs from 1 rank × 1 thread's", tc.saved, tc.resumed, u)
			}
		}
	}
}
