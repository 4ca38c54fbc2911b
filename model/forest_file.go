package model

import (
	"fmt"
	"strconv"
	"strings"
)

// AlgorithmForest names CRAFTML forests in model headers.
const AlgorithmForest = "forest"

// ForestKind is the kind of a forest of trees (CRAFTML), one tree per unit:
// Forest.
type ForestKind struct{}

// Name returns "forest".
func (ForestKind) Name() string { return "forest" }

// Unit returns "tree".
func (ForestKind) Unit() string { return "tree" }

// Axis returns "trees".
func (ForestKind) Axis() string { return "trees" }

// Create writes the encoded trees with h.Counts["trees"] their number.
func (ForestKind) Create(path string, h Header, units [][]byte) (*Writer, error) {
	h.Counts = map[string]int64{"trees": int64(countHeld(units))}
	return CreateForest(path, h, units)
}

// ManifestCounts counts the trees of the whole forest.
func (ForestKind) ManifestCounts(_ Header, units int) map[string]int64 {
	return map[string]int64{"trees": int64(units)}
}

// Decode returns the forest of the encoded trees, part of a forest of
// total trees: its scores are leaf sums over the whole forest's size, so
// that the parts' partial sums add up to the forest's average.
func (ForestKind) Decode(h Header, units [][]byte, total int) (Model, error) {
	f := &Forest{D: h.D, L: h.L, TotalTrees: total}
	for i, b := range units {
		if b == nil {
			continue
		}
		if err := f.AddTree(b); err != nil {
			return nil, fmt.Errorf("tree %d: %w", i, err)
		}
	}
	return f, nil
}

// Load is LoadForest.
func (ForestKind) Load(path string, keep func(unit int) bool) (Model, Header, error) {
	return LoadForest(path, keep)
}

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
		if err := checkKind(file, ForestKind{}); err != nil {
			return err
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
