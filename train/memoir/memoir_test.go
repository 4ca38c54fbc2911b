package memoir

import (
	"context"
	"log/slog"
	"math"
	"strings"
	"testing"

	"xmc/mips"
	"xmc/mpi"
	"xmc/numa"
	"xmc/numa/numatest"
	"xmc/runner"
	"xmc/train"
	"xmc/train/traintest"
)

func TestMEMOIRParamsValidate(t *testing.T) {
	tests := []struct {
		edit func(*Params)
		want string // substring of the error, "" for none
	}{
		{func(p *Params) {}, ""},
		{func(p *Params) { p.Regularizer = "l1"; p.Lambda = 0 }, ""},
		{func(p *Params) { p.Index = "exact" }, ""},
		{func(p *Params) { p.Regularizer = "l3" }, "--regularizer"},
		{func(p *Params) { p.Index = "tree" }, "--index"},
		{func(p *Params) { p.Index = "graph" }, ""},
		{func(p *Params) { p.Ef = 0 }, "--ef"},
		{func(p *Params) { p.Lambda = 0 }, "--lambda"},
		{func(p *Params) { p.Lambda = 1; p.Eta0 = 1 }, "below 1"},
		{func(p *Params) { p.Eta0 = 0 }, "--eta0"},
		{func(p *Params) { p.EtaStep = -1 }, "--eta-step"},
		{func(p *Params) { p.Tables = 0 }, "--tables"},
		{func(p *Params) { p.Bits = 17 }, "--bits"},
		{func(p *Params) { p.Bits = 0 }, "--bits"},
		{func(p *Params) { p.Probes = -1 }, "--probes"},
		{func(p *Params) { p.Epochs = 0 }, "--epochs"},
		{func(p *Params) { p.BatchSize = 0 }, "--batch-size"},
		{func(p *Params) { p.ClassBlocks = 0 }, "--class-blocks"},
		{func(p *Params) { p.Heldout = 1 }, "--heldout"},
		{func(p *Params) { p.Heldout = 0.1; p.HeldoutFile = "f" }, "not both"},
		{func(p *Params) { p.Patience = 0 }, "--patience"},
	}
	for i, tc := range tests {
		p := DefaultParams().withDefaults(100, func(string) bool { return false })
		tc.edit(&p)
		err := p.Validate()
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("case %d: %v, want an error about %q", i, err, tc.want)
		}
	}
}

// TestMEMOIRDefaults checks the defaults that depend on the data and on
// the regulariser, and that a flag the user set keeps its value.
func TestMEMOIRDefaults(t *testing.T) {
	none := func(string) bool { return false }
	all := func(string) bool { return true }
	p := DefaultParams().withDefaults(100, none)
	if p.Lambda != DefaultParams().Lambda || p.Bits != mips.BitsFor(100) {
		t.Errorf("l2, 100 classes a block: lambda %v, bits %d", p.Lambda, p.Bits)
	}
	l1 := DefaultParams()
	l1.Regularizer = "l1"
	if p := l1.withDefaults(1000, none); p.Lambda != l1Lambda || p.Bits != mips.BitsFor(1000) {
		t.Errorf("l1, 1000 classes a block: lambda %v, bits %d", p.Lambda, p.Bits)
	}
	l1.Lambda, l1.Bits = 0.5, 3
	if p := l1.withDefaults(1000, all); p.Lambda != 0.5 || p.Bits != 3 {
		t.Errorf("flags set: lambda %v, bits %d, want the values given", p.Lambda, p.Bits)
	}
}

// trainMEMOIR trains MEMOIR on Bibtex on one in-process rank of two
// workers and returns the trainer after its last round, calling after (if
// not nil) while the rank still runs.
func trainMEMOIR(t *testing.T, edit func(*Params), after func(*roundTrainer) error) *roundTrainer {
	t.Helper()
	tr, _ := traintest.Bibtex(t)
	a := &Trainer{p: DefaultParams()}
	edit(&a.p)
	var got *roundTrainer
	err := mpi.Launch(1, mpi.MaxMessage, func(c mpi.Comm) error {
		env := train.Env{Pool: numatest.Pool(t, 2, 1), Comm: c, Log: slog.New(slog.DiscardHandler), Seed: 5}
		w, err := a.Prepare(env, tr)
		if err != nil {
			return err
		}
		rounds := runner.Rounds{Units: w.Units, Rounds: w.MaxRounds, Kind: w.RoundName, Comm: c, Pool: env.Pool, Log: env.Log}
		if _, _, err := rounds.Run(context.Background(), w.Rounds); err != nil {
			return err
		}
		got = w.Rounds.(*roundTrainer)
		if after != nil {
			return after(got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestMEMOIRL2Projection checks Pegasos's projection: with a λ large enough
// for it to act, the weights s·v end inside the ball ‖W‖ ≤ 1/√λ, and the
// shared scale has shrunk.
func TestMEMOIRL2Projection(t *testing.T) {
	const lambda = 0.01
	tr := trainMEMOIR(t, func(p *Params) { p.Lambda, p.Epochs = lambda, 2 }, nil)
	sq := 0.0
	for _, b := range tr.mine {
		for k := range b.vec.Len() {
			sq += b.vec.SquaredNorm(k)
		}
	}
	norm := tr.scale * math.Sqrt(sq)
	if norm > 1/math.Sqrt(lambda)*(1+1e-9) || tr.scale >= 1 || norm == 0 {
		t.Errorf("‖W‖ = %v with scale %v, want in (0, %v] and a scale below 1", norm, tr.scale, 1/math.Sqrt(lambda))
	}
}

// TestMEMOIRExactIndexRecall checks the recall measurement against its
// baseline: exact search finds the exact best class, recall 1, and an
// index of one table of many bits finds less of it.
func TestMEMOIRExactIndexRecall(t *testing.T) {
	var r float64
	trainMEMOIR(t, func(p *Params) { p.Index, p.Epochs = "exact", 1 }, func(tr *roundTrainer) (err error) {
		return tr.pool.Together(func(team *numa.Team) error {
			tr.team = team
			r, err = tr.recall(tr.snapshot())
			return err
		})
	})
	if r != 1 {
		t.Errorf("exact index: recall %v, want 1", r)
	}
	lsh := trainMEMOIR(t, func(p *Params) { p.Tables, p.Bits, p.Probes, p.ClassBlocks, p.Epochs = 1, 8, 0, 1, 1 }, nil)
	if len(lsh.recalls) != 1 || lsh.recalls[0].recall >= 1 || lsh.recalls[0].recall <= 0 {
		t.Errorf("one 8-bit table over 159 classes: recall %v, want in (0, 1)", lsh.recalls)
	}
}
