package linear

import (
	"encoding/binary"
	"fmt"

	"xmc/model"
)

// Kind is the kind of a linear model, one weight vector per label,
// a block of labels per unit (Block): Model. One-vs-all trainers
// produce it, and so do multi-class trainers, whose classes are its labels.
type Kind struct{}

// Name returns "linear".
func (Kind) Name() string { return "linear" }

// Unit returns "label block".
func (Kind) Unit() string { return "label block" }

// Axis returns "labels".
func (Kind) Axis() string { return "labels" }

// Section returns "labels/NNNNNN".
func (Kind) Section(u int) string { return model.UnitSection("labels/", u) }

// ParseSection reverses Section.
func (Kind) ParseSection(name string) (int, bool) { return model.ParseUnitSection("labels/", name) }

// Counts is Counts, after checking that h.Params records the
// preprocessing prediction must apply.
func (Kind) Counts(h model.Header, units [][]byte) (map[string]int64, error) {
	if _, err := ParsePreprocess(h.Params); err != nil {
		return nil, err
	}
	return Counts(units)
}

// ManifestCounts counts the labels of the model, h.L: every label is in
// one block.
func (Kind) ManifestCounts(h model.Header, _ int) map[string]int64 {
	return map[string]int64{"labels": int64(h.L)}
}

// Decode returns the linear model of the encoded label blocks, with the
// preprocessing h.Params records; total does not matter, as every label's
// score comes from one block.
func (Kind) Decode(h model.Header, units [][]byte, _ int) (model.Model, error) {
	prep, err := ParsePreprocess(h.Params)
	if err != nil {
		return nil, err
	}
	return Decode(h.D, h.L, prep, units)
}

// Load is Load.
func (Kind) Load(path string, keep func(unit int) bool) (model.Model, model.Header, error) {
	return Load(path, keep)
}

// Counts returns the sizes a linear model's header records in
// Counts, computed from its encoded blocks (nil entries, units not held,
// are skipped): "units", "labels" (labels trained) and "nnz" (weights
// stored). It reads only the blocks' leading counts.
func Counts(units [][]byte) (map[string]int64, error) {
	c := map[string]int64{"units": 0, "labels": 0, "nnz": 0}
	for u, b := range units {
		if b == nil {
			continue
		}
		if len(b) < 20 || binary.LittleEndian.Uint32(b) != linearMagic {
			return nil, fmt.Errorf("unit %d: %w: bad magic", u, errLinearCorrupt)
		}
		c["units"]++
		c["labels"] += int64(binary.LittleEndian.Uint64(b[4:]))
		c["nnz"] += int64(binary.LittleEndian.Uint64(b[12:]))
	}
	return c, nil
}

// Load reads a linear model from a model file or from the manifest
// of a sharded one, keeping the units (label blocks) for which keep returns
// true (all if keep is nil), so that each rank can load only the labels it
// scores. The header's Counts["labels"] is the number of labels the whole
// model holds; without keep, the blocks read must add up to it.
func Load(path string, keep func(unit int) bool) (*Model, model.Header, error) {
	var blocks []*Block
	var prep Preprocess
	first := true
	h, err := model.LoadUnits(Kind{}, path, keep, func(file *model.File, h model.Header) error {
		if first {
			var err error
			if prep, err = ParsePreprocess(h.Params); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			first = false
		}
		if sp, err := ParsePreprocess(file.Header.Params); err != nil || sp != prep {
			return fmt.Errorf("%s: shard preprocessing differs from the model's", file.Path)
		}
		return nil
	}, func(_ *model.File, s model.Section, u int) error {
		if keep != nil && !keep(u) {
			return nil
		}
		b := new(Block)
		if err := b.UnmarshalBinary(s.Data); err != nil {
			return err
		}
		blocks = append(blocks, b)
		return nil
	})
	if err != nil {
		return nil, model.Header{}, err
	}
	m, err := New(h.D, h.L, prep, blocks)
	if err != nil {
		return nil, model.Header{}, fmt.Errorf("%s: %w", path, err)
	}
	if total := h.Counts["labels"]; keep == nil && int64(len(m.labels)) != total {
		return nil, model.Header{}, fmt.Errorf("%s: holds %d labels but its header counts %d", path, len(m.labels), total)
	}
	return m, h, nil
}
