package main

import (
	"errors"
	"fmt"
	"os"

	"xmc/model"
	"xmc/model/kinds"

	"github.com/dustin/go-humanize"
)

func runInspect(args []string) error {
	fs := newFlagSet("inspect", "inspect --model FILE")
	var path string
	fs.StringVar(&path, "model", "", "model `FILE` (or the manifest of a sharded model)")
	if err := parseFlags(fs, args, false); err != nil {
		return err
	}
	if path == "" {
		return errors.New("--model is required")
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
