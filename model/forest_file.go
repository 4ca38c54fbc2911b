package model

import (
	"fmt"
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

// Section returns "tree/NNNNNN".
func (ForestKind) Section(u int) string { return unitSection("tree/", u) }

// ParseSection reverses Section.
func (ForestKind) ParseSection(name string) (int, bool) { return parseUnitSection("tree/", name) }

// Counts counts the trees held: "trees".
func (ForestKind) Counts(_ Header, units [][]byte) (map[string]int64, error) {
	return map[string]int64{"trees": int64(countHeld(units))}, nil
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

// LoadForest reads a forest from a model file or from the manifest of a
// sharded one, keeping the trees for which keep returns true (all trees if
// keep is nil), so that each rank can load only the trees it predicts with.
// The header's Counts["trees"] is the number of trees the model holds; their
// ids need not be contiguous (a run interrupted by its time limit writes the
// trees it finished).
func LoadForest(path string, keep func(tree int) bool) (*Forest, Header, error) {
	var f *Forest
	h, err := loadUnits(ForestKind{}, path, keep, func(_ *File, h Header) error {
		if f == nil {
			f = &Forest{D: h.D, L: h.L, TotalTrees: int(h.Counts["trees"])}
		}
		return nil
	}, func(_ *File, s Section, t int) error {
		if keep != nil && !keep(t) {
			return nil
		}
		return f.AddTree(s.Data)
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
