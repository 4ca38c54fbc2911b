package model

import (
	"encoding/binary"
	"fmt"
)

// LinearKind is the kind of a linear model, one weight vector per label,
// a block of labels per unit (LinearBlock): Linear. One-vs-all trainers
// produce it, and so do multi-class trainers, whose classes are its labels.
type LinearKind struct{}

// Name returns "linear".
func (LinearKind) Name() string { return "linear" }

// Unit returns "label block".
func (LinearKind) Unit() string { return "label block" }

// Axis returns "labels".
func (LinearKind) Axis() string { return "labels" }

// Section returns "labels/NNNNNN".
func (LinearKind) Section(u int) string { return unitSection("labels/", u) }

// ParseSection reverses Section.
func (LinearKind) ParseSection(name string) (int, bool) { return parseUnitSection("labels/", name) }

// Counts is LinearCounts, after checking that h.Params records the
// preprocessing prediction must apply.
func (LinearKind) Counts(h Header, units [][]byte) (map[string]int64, error) {
	if _, err := ParsePreprocess(h.Params); err != nil {
		return nil, err
	}
	return LinearCounts(units)
}

// ManifestCounts counts the labels of the model, h.L: every label is in
// one block.
func (LinearKind) ManifestCounts(h Header, _ int) map[string]int64 {
	return map[string]int64{"labels": int64(h.L)}
}

// Decode returns the linear model of the encoded label blocks, with the
// preprocessing h.Params records; total does not matter, as every label's
// score comes from one block.
func (LinearKind) Decode(h Header, units [][]byte, _ int) (Model, error) {
	prep, err := ParsePreprocess(h.Params)
	if err != nil {
		return nil, err
	}
	return DecodeLinear(h.D, h.L, prep, units)
}

// Load is LoadLinear.
func (LinearKind) Load(path string, keep func(unit int) bool) (Model, Header, error) {
	return LoadLinear(path, keep)
}

// LinearCounts returns the sizes a linear model's header records in
// Counts, computed from its encoded blocks (nil entries, units not held,
// are skipped): "units", "labels" (labels trained) and "nnz" (weights
// stored). It reads only the blocks' leading counts.
func LinearCounts(units [][]byte) (map[string]int64, error) {
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

// LoadLinear reads a linear model from a model file or from the manifest
// of a sharded one, keeping the units (label blocks) for which keep returns
// true (all if keep is nil), so that each rank can load only the labels it
// scores. The header's Counts["labels"] is the number of labels the whole
// model holds; without keep, the blocks read must add up to it.
func LoadLinear(path string, keep func(unit int) bool) (*Linear, Header, error) {
	var blocks []*LinearBlock
	var prep Preprocess
	first := true
	h, err := loadUnits(LinearKind{}, path, keep, func(file *File, h Header) error {
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
	}, func(_ *File, s Section, u int) error {
		if keep != nil && !keep(u) {
			return nil
		}
		b := new(LinearBlock)
		if err := b.UnmarshalBinary(s.Data); err != nil {
			return err
		}
		blocks = append(blocks, b)
		return nil
	})
	if err != nil {
		return nil, Header{}, err
	}
	m, err := NewLinear(h.D, h.L, prep, blocks)
	if err != nil {
		return nil, Header{}, fmt.Errorf("%s: %w", path, err)
	}
	if total := h.Counts["labels"]; keep == nil && int64(len(m.labels)) != total {
		return nil, Header{}, fmt.Errorf("%s: holds %d labels but its header counts %d", path, len(m.labels), total)
	}
	return m, h, nil
}
