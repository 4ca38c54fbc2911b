package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/dustin/go-humanize"

	"xmc/model"
	"xmc/model/kinds"
	"xmc/runner"
)

func runInspect(args []string) error {
	fs := newFlagSet("inspect", "inspect --model FILE | --checkpoint DIR")
	var path, checkpoint string
	fs.StringVar(&path, "model", "", "model `FILE` (or the manifest of a sharded model)")
	fs.StringVar(&checkpoint, "checkpoint", "", "checkpoint `DIR` of a stopped training: what a rerun of the same command resumes from")
	if err := parseFlags(fs, args, false); err != nil {
		return err
	}
	if checkpoint != "" {
		return inspectCheckpoint(checkpoint)
	}
	if path == "" {
		return errors.New("give --model or --checkpoint")
	}
	size, err := modelBytes(path)
	if err != nil {
		return err
	}
	m, h, err := kinds.Load(path, nil)
	if err != nil {
		return err
	}
	fmt.Printf("model %s: %s, D=%d L=%d seed=%d, %s, %s on disk\n", path, h.Algorithm, h.D, h.L, h.Seed, m.Summary(), humanize.IBytes(uint64(size)))
	fmt.Printf("params: %s\n", h.Params)
	if r := h.Range; r != nil {
		fmt.Printf("label range %d:%d of %d labels (by frequency), blocks %d.. of %d: join the ranges with xmc merge\n", r.From, r.To, r.Labels, r.FirstUnit, r.Units)
	}
	return m.Describe(os.Stdout)
}

// modelBytes is the size on disk of a model file, or of a manifest and its
// shards.
func modelBytes(path string) (int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	n := st.Size()
	if ok, _ := model.IsManifest(path); ok {
		m, err := model.ReadManifest(path)
		if err != nil {
			return 0, err
		}
		for _, s := range m.Shards {
			n += s.Bytes
		}
	}
	return n, nil
}

// inspectCheckpoint prints what the checkpoint directory dir holds: the
// round a training in rounds resumes from, or the units saved.
func inspectCheckpoint(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "FINGERPRINT")); err != nil {
		return fmt.Errorf("%s is not a checkpoint of xmc train: %w", dir, err)
	}
	round, err := runner.CheckpointRound(dir)
	if err != nil {
		return err
	}
	if round > 0 {
		fmt.Printf("checkpoint %s: training in rounds, saved after round %d: a rerun of the same command resumes from it\n", dir, round)
		return nil
	}
	units, err := runner.CheckpointUnits(dir)
	if err != nil {
		return err
	}
	fmt.Printf("checkpoint %s: %d units saved: a rerun of the same command trains the others only\n", dir, len(units))
	return nil
}
