package forest

import (
	"fmt"

	"xmc/model"
)

// Kind is the kind of a forest of trees (CRAFTML), one tree per unit:
// Model.
type Kind struct{}

// Name returns "forest".
func (Kind) Name() string { return "forest" }

// Unit returns "tree".
func (Kind) Unit() string { return "tree" }

// Axis returns "trees".
func (Kind) Axis() string { return "trees" }

// Section returns "tree/NNNNNN".
func (Kind) Section(u int) string { return model.UnitSection("tree/", u) }

// ParseSection reverses Section.
func (Kind) ParseSection(name string) (int, bool) { return model.ParseUnitSection("tree/", name) }

// Counts counts the trees held: "trees".
func (Kind) Counts(_ model.Header, units [][]byte) (map[string]int64, error) {
	return map[string]int64{"trees": int64(model.CountHeld(units))}, nil
}

// ManifestCounts counts the trees of the whole forest.
func (Kind) ManifestCounts(_ model.Header, units int) map[string]int64 {
	return map[string]int64{"trees": int64(units)}
}

// Decode returns the forest of the encoded trees, part of a forest of
// total trees: its scores are leaf sums over the whole forest's size, so
// that the parts' partial sums add up to the forest's average.
func (Kind) Decode(h model.Header, units [][]byte, total int) (model.Model, error) {
	f := &Model{D: h.D, L: h.L, TotalTrees: total}
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

// Load is the package function Load, for model.Kind.
func (Kind) Load(path string, keep func(unit int) bool) (model.Model, model.Header, error) {
	return Load(path, keep)
}

// Load reads a forest from a model file or from the manifest of a
// sharded one, keeping the trees for which keep returns true (all trees if
// keep is nil), so that each rank can load only the trees it predicts with.
// The header's Counts["trees"] is the number of trees the model holds; their
// ids need not be contiguous (a run interrupted by its time limit writes the
// trees it finished).
func Load(path string, keep func(tree int) bool) (*Model, model.Header, error) {
	var f *Model
	h, err := model.LoadUnits(Kind{}, path, keep, func(_ *model.File, h model.Header) error {
		if f == nil {
			f = &Model{D: h.D, L: h.L, TotalTrees: int(h.Counts["trees"])}
		}
		return nil
	}, func(_ *model.File, s model.Section, t int) error {
		if keep != nil && !keep(t) {
			return nil
		}
		return f.AddTree(s.Data)
	})
	if err != nil {
		return nil, model.Header{}, err
	}
	if f.TotalTrees < 1 {
		return nil, model.Header{}, fmt.Errorf("%s: header counts no trees", path)
	}
	if keep == nil && len(f.Trees) != f.TotalTrees {
		return nil, model.Header{}, fmt.Errorf("%s: holds %d trees but its header counts %d", path, len(f.Trees), f.TotalTrees)
	}
	return f, h, nil
}
