package model

import (
	"fmt"
	"strconv"
	"strings"
)

// AlgorithmForest names CRAFTML forests in model headers.
const AlgorithmForest = "forest"

// treeSection is the section name of tree t: the id makes a shard's
// contents self-describing.
func treeSection(t int) string { return fmt.Sprintf("tree/%06d", t) }

func parseTreeSection(name string) (int, bool) {
	s, ok := strings.CutPrefix(name, "tree/")
	if !ok {
		return 0, false
	}
	t, err := strconv.Atoi(s)
	return t, err == nil && t >= 0
}

// WriteForest writes encoded trees (index = tree id; nil entries, trees not
// held, are skipped) into one model file at path, atomically, and returns
// its size.
func WriteForest(path string, h Header, trees [][]byte) (int64, error) {
	return commitCreated(CreateForest(path, h, trees))
}

// CreateForest is WriteForest up to the Commit of the returned Writer: the
// file is written and flushed (the trees may be freed), but not yet durable
// nor at path.
func CreateForest(path string, h Header, trees [][]byte) (*Writer, error) {
	w, err := Create(path, h)
	if err != nil {
		return nil, err
	}
	for t, b := range trees {
		if b == nil {
			continue
		}
		if err := w.AddSection(treeSection(t), b); err != nil {
			w.Abort()
			return nil, err
		}
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	return w, nil
}

// LoadForest reads a forest from a model file or from the manifest of a
// sharded one, keeping the trees for which keep returns true (all trees if
// keep is nil), so that each rank can load only the trees it predicts with.
// The header's Counts["trees"] is the number of trees the model holds; their
// ids need not be contiguous (a run interrupted by its time limit writes the
// trees it finished).
func LoadForest(path string, keep func(tree int) bool) (*Forest, Header, error) {
	var f *Forest
	h, err := readParts(path, func(file *File, h Header) error {
		p := file.Path
		if file.Header.Algorithm != AlgorithmForest {
			return fmt.Errorf("%s: a %q model, not a forest", p, file.Header.Algorithm)
		}
		if f == nil {
			f = &Forest{D: h.D, L: h.L, TotalTrees: int(h.Counts["trees"])}
		}
		for _, s := range file.Sections {
			t, ok := parseTreeSection(s.Name)
			if !ok {
				return fmt.Errorf("%s: unexpected section %q in a forest", p, s.Name)
			}
			if keep != nil && !keep(t) {
				continue
			}
			if err := f.AddTree(s.Data); err != nil {
				return fmt.Errorf("%s: %s: %w", p, s.Name, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, Header{}, err
	}
	if f.TotalTrees < 1 {
		return nil, Header{}, fmt.Errorf("%s: header counts no trees", path)
	}
	if keep == nil && len(f.Trees) != f.TotalTrees {
		return nil, Header{}, fmt.Errorf("%s: holds %d trees but its header counts %d", path, len(f.Trees), f.TotalTrees)
	}
	return f, h, nil
}
