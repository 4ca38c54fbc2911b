package runner

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"

	"xmc/mpi"
	"xmc/numa"
)

// TestRunnerProgressWeights checks that progress counts units by weight
// (labels per label block) across ranks, including units resumed from a
// checkpoint.
func TestRunnerProgressWeights(t *testing.T) {
	for _, schedule := range schedules {
		dir := filepath.Join(t.TempDir(), "ckpt")
		// Units 0 and 7 are already done: a checkpoint of the same run.
		if err := SaveUnits(dir, "test", 0, [][]byte{0: unitBytes(0), 7: unitBytes(7)}); err != nil {
			t.Fatal(err)
		}
		prog := &countingProgress{}
		pools := rankPools(t, 3, 2)
		err := mpi.Launch(3, mpi.MaxMessage, func(c mpi.Comm) error {
			pool := pools[c.Rank()]
			p := Plan{Units: 10, Kind: "unit", Comm: c, Schedule: schedule, Pool: pool, Log: slog.New(slog.DiscardHandler),
				Checkpoint: dir, Fingerprint: "test", Weight: func(u int) int { return u + 1 }}
			if c.Rank() == 0 {
				p.Progress = prog
			}
			_, _, err := p.Run(context.Background(), func(w numa.Worker, u int) ([]byte, error) { return unitBytes(u), nil })
			return err
		})
		if err != nil {
			t.Fatalf("%s: %v", schedule, err)
		}
		if prog.done != 55 || !prog.finished {
			t.Errorf("%s: progress reported %d of weight 55 (finished %v)", schedule, prog.done, prog.finished)
		}
	}
}
