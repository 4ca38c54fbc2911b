package plt

import (
	"fmt"

	"xmc/model"
	"xmc/model/linear"
)

// Kind is the label tree kind of model: "plt", a tree per unit.
type Kind struct{}

// Name returns "plt".
func (Kind) Name() string { return "plt" }

// Unit returns "tree".
func (Kind) Unit() string { return "tree" }

// Axis returns "trees".
func (Kind) Axis() string { return "trees" }

// Section returns "tree/NNNNNN".
func (Kind) Section(u int) string { return model.UnitSection("tree/", u) }

// ParseSection reverses Section.
func (Kind) ParseSection(name string) (int, bool) { return model.ParseUnitSection("tree/", name) }

// Counts counts the trees held, "trees", after checking that h records
// the preprocessing of the rows.
func (Kind) Counts(h model.Header, units [][]byte) (map[string]int64, error) {
	if _, err := linear.ParsePreprocess(h.Params); err != nil {
		return nil, err
	}
	if _, err := ParseLoss(h.Params); err != nil {
		return nil, err
	}
	return map[string]int64{"trees": int64(model.CountHeld(units))}, nil
}

// ManifestCounts counts the trees of the whole model.
func (Kind) ManifestCounts(_ model.Header, units int) map[string]int64 {
	return map[string]int64{"trees": int64(units)}
}

// Decode returns the model of the encoded trees, part of a model of total
// trees.
func (Kind) Decode(h model.Header, units [][]byte, total int) (model.Model, error) {
	prep, err := linear.ParsePreprocess(h.Params)
	if err != nil {
		return nil, err
	}
	loss, err := ParseLoss(h.Params)
	if err != nil {
		return nil, err
	}
	m := &Model{D: h.D, L: h.L, Prep: prep, Loss: loss, TotalTrees: total}
	for u, b := range units {
		if b == nil {
			continue
		}
		if err := m.AddTree(b); err != nil {
			return nil, fmt.Errorf("tree %d: %w", u, err)
		}
	}
	return m, nil
}

// Load is the package function Load, for model.Kind.
func (Kind) Load(path string, keep func(unit int) bool) (model.Model, model.Header, error) {
	return Load(path, keep)
}

// Load reads a label tree model from a model file or from the manifest of
// a sharded one, keeping the trees for which keep returns true (all if keep
// is nil), so that each rank loads only the trees it predicts with.
func Load(path string, keep func(tree int) bool) (*Model, model.Header, error) {
	var m *Model
	h, err := model.LoadUnits(Kind{}, path, keep, func(f *model.File, whole model.Header) error {
		prep, err := linear.ParsePreprocess(f.Header.Params)
		if err != nil {
			return fmt.Errorf("%s: %w", f.Path, err)
		}
		loss, err := ParseLoss(f.Header.Params)
		if err != nil {
			return fmt.Errorf("%s: %w", f.Path, err)
		}
		if m == nil {
			m = &Model{D: whole.D, L: whole.L, Prep: prep, Loss: loss, TotalTrees: int(whole.Counts["trees"])}
		} else if prep != m.Prep || loss != m.Loss {
			return fmt.Errorf("%s: shard preprocessing or loss differs from the model's", f.Path)
		}
		return nil
	}, func(_ *model.File, s model.Section, t int) error {
		if keep != nil && !keep(t) {
			return nil
		}
		return m.AddTree(s.Data)
	})
	if err != nil {
		return nil, model.Header{}, err
	}
	if m.TotalTrees < 1 {
		return nil, model.Header{}, fmt.Errorf("%s: header counts no trees", path)
	}
	if keep == nil && len(m.Trees) != m.TotalTrees {
		return nil, model.Header{}, fmt.Errorf("%s: holds %d trees but its header counts %d", path, len(m.Trees), m.TotalTrees)
	}
	return m, h, nil
}
