package train

import (
	"slices"
	"strings"
	"testing"
)

func TestMEMOIRParamsValidate(t *testing.T) {
	tests := []struct {
		edit func(*MEMOIRParams)
		want string // substring of the error, "" for none
	}{
		{func(p *MEMOIRParams) {}, ""},
		{func(p *MEMOIRParams) { p.Regularizer = "l1"; p.Lambda = 0 }, ""},
		{func(p *MEMOIRParams) { p.Index = "exact" }, ""},
		{func(p *MEMOIRParams) { p.Regularizer = "l3" }, "--regularizer"},
		{func(p *MEMOIRParams) { p.Index = "tree" }, "--index"},
		{func(p *MEMOIRParams) { p.Index = "graph" }, ""},
		{func(p *MEMOIRParams) { p.Ef = 0 }, "--ef"},
		{func(p *MEMOIRParams) { p.Lambda = 0 }, "--lambda"},
		{func(p *MEMOIRParams) { p.Lambda = 1; p.Eta0 = 1 }, "below 1"},
		{func(p *MEMOIRParams) { p.Eta0 = 0 }, "--eta0"},
		{func(p *MEMOIRParams) { p.EtaStep = -1 }, "--eta-step"},
		{func(p *MEMOIRParams) { p.Tables = 0 }, "--tables"},
		{func(p *MEMOIRParams) { p.Bits = 17 }, "--bits"},
		{func(p *MEMOIRParams) { p.Probes = -1 }, "--probes"},
		{func(p *MEMOIRParams) { p.Epochs = 0 }, "--epochs"},
		{func(p *MEMOIRParams) { p.BatchSize = 0 }, "--batch-size"},
		{func(p *MEMOIRParams) { p.ClassBlocks = 0 }, "--class-blocks"},
		{func(p *MEMOIRParams) { p.Heldout = 1 }, "--heldout"},
		{func(p *MEMOIRParams) { p.Heldout = 0.1; p.HeldoutFile = "f" }, "not both"},
		{func(p *MEMOIRParams) { p.Patience = 0 }, "--patience"},
	}
	for i, tc := range tests {
		p := DefaultMEMOIRParams()
		tc.edit(&p)
		err := p.Validate()
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("case %d: %v, want an error about %q", i, err, tc.want)
		}
	}
}

// TestMEMOIRBlocks checks that the classes with a training row are dealt
// into blocks of like sizes and like frequencies, each sorted, and that the
// blocks do not exceed the classes.
func TestMEMOIRBlocks(t *testing.T) {
	counts := []int64{5, 0, 9, 1, 1, 7, 0, 3}
	got := memoirBlocks(counts, 3)
	want := [][]int32{{2, 7}, {3, 5}, {0, 4}} // by frequency 2,5,0,7,3,4, dealt in turn
	if len(got) != len(want) {
		t.Fatalf("blocks %v, want %v", got, want)
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("blocks %v, want %v", got, want)
		}
	}
	if got := memoirBlocks(counts, 100); len(got) != 6 {
		t.Errorf("100 blocks of 6 classes: %d blocks, want 6", len(got))
	}
}
