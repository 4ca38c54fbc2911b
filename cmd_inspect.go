package main

import (
	"errors"
	"fmt"
	"os"
	"text/tabwriter"

	"xmc/model"
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
	h, err := model.ReadHeader(path)
	if err != nil {
		return err
	}
	if model.IsLinear(h.Algorithm) {
		m, h, err := model.LoadLinear(path, nil)
		if err != nil {
			return err
		}
		fmt.Printf("model %s: %s, D=%d L=%d, %d labels, %d weights (%.1f per label), %s on disk\n", path, h.Algorithm, h.D, h.L,
			len(m.Labels()), m.NNZ(), float64(m.NNZ())/float64(max(1, len(m.Labels()))), humanBytes(size))
		fmt.Printf("params: %s\n", h.Params)
		return nil
	}
	f, h, err := model.LoadForest(path, nil)
	if err != nil {
		return err
	}
	fmt.Printf("model %s: %s, D=%d L=%d seed=%d, %d trees, %s on disk\n", path, h.Algorithm, h.D, h.L, h.Seed, len(f.Trees), humanBytes(size))
	fmt.Printf("params: %s\n", h.Params)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "tree\tnodes\tleaves\tdepth min\tmean\tmax\tinst/leaf mean\tmax\tsplit entries\tleaf nnz\t")
	var tot model.TreeStats
	for i, t := range f.Trees {
		s := t.Stats()
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%.1f\t%d\t%.1f\t%d\t%d\t%d\t\n", i, s.Nodes, s.Leaves, s.MinDepth, s.MeanDepth, s.MaxDepth,
			s.MeanLeafSize, s.MaxLeafSize, s.SplitEntries, s.LeafEntries)
		tot.Nodes += s.Nodes
		tot.Leaves += s.Leaves
		tot.SplitEntries += s.SplitEntries
		tot.LeafEntries += s.LeafEntries
	}
	fmt.Fprintf(tw, "all\t%d\t%d\t\t\t\t\t\t%d\t%d\t\n", tot.Nodes, tot.Leaves, tot.SplitEntries, tot.LeafEntries)
	return tw.Flush()
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

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
