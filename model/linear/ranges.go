package linear

import (
	"bytes"
	"cmp"
	"fmt"
	"path/filepath"
	"slices"

	"xmc/model"
)

// rangeModel is one label-range model to merge: its path and header.
type rangeModel struct {
	path string
	h    model.Header
}

// MergeRanges joins the label-range models at paths (models or manifests
// written by xmc train --label-range, in any order) into the model of
// every label at out, byte for byte the model one training of every label
// writes: their label blocks, a block cut between two ranges made whole
// again, under the whole training's header. The ranges must come from the
// same algorithm, parameters, seed and training data, and cover the labels
// once each, without a gap. It reads one range model at a time.
func MergeRanges(paths []string, out string) (model.Header, error) {
	ranges, err := readRanges(paths)
	if err != nil {
		return model.Header{}, err
	}
	h, whole, err := mergedHeader(ranges)
	if err != nil {
		return model.Header{}, err
	}
	w, err := model.Create(out, h)
	if err != nil {
		return model.Header{}, err
	}
	defer w.Abort()
	j := joiner{w: w, next: 0}
	for _, r := range ranges {
		if err := j.add(r); err != nil {
			return model.Header{}, err
		}
	}
	if err := j.flush(); err != nil {
		return model.Header{}, err
	}
	if j.next != whole.Units || j.labels != h.Counts["labels"] || j.nnz != h.Counts["nnz"] {
		return model.Header{}, fmt.Errorf("the ranges hold %d blocks, %d labels and %d weights, but their headers %d, %d and %d",
			j.next, j.labels, j.nnz, whole.Units, h.Counts["labels"], h.Counts["nnz"])
	}
	if err := w.Commit(); err != nil {
		return model.Header{}, err
	}
	return h, nil
}

// readRanges reads the headers of the range models at paths and returns
// them ordered by their first label, after checking that each is a linear
// range model.
func readRanges(paths []string) ([]rangeModel, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("no range model given")
	}
	var ranges []rangeModel
	for _, p := range paths {
		h, err := model.ReadHeader(p)
		if err != nil {
			return nil, err
		}
		switch {
		case model.KindName(h) != (Kind{}).Name():
			return nil, fmt.Errorf("%s is a %s model; only label-range models (linear) are merged", p, h.Algorithm)
		case h.Range == nil:
			return nil, fmt.Errorf("%s holds every label (trained without --label-range): nothing to merge it with", p)
		}
		ranges = append(ranges, rangeModel{p, h})
	}
	slices.SortStableFunc(ranges, func(a, b rangeModel) int { return cmp.Compare(a.h.Range.From, b.h.Range.From) })
	return ranges, nil
}

// mergedHeader checks that ranges (ordered by first label) are parts of
// one training that cover its labels once each, and returns the header of
// the whole model, its Counts the sums of the ranges', and the whole
// training's blocks and labels.
func mergedHeader(ranges []rangeModel) (model.Header, model.LabelRange, error) {
	first := ranges[0]
	h := first.h
	h.Shard, h.Counts = nil, map[string]int64{"units": int64(h.Range.Units)}
	whole := *h.Range
	at := 0
	for _, r := range ranges {
		rr := r.h.Range
		switch {
		case r.h.Algorithm != h.Algorithm || r.h.D != h.D || r.h.L != h.L || r.h.Seed != h.Seed:
			return model.Header{}, model.LabelRange{}, fmt.Errorf("%s is %s D=%d L=%d seed %d but %s is %s D=%d L=%d seed %d",
				r.path, r.h.Algorithm, r.h.D, r.h.L, r.h.Seed, first.path, h.Algorithm, h.D, h.L, h.Seed)
		case !bytes.Equal(r.h.Params, h.Params):
			return model.Header{}, model.LabelRange{}, fmt.Errorf("%s and %s were trained with other parameters: %s against %s", r.path, first.path, r.h.Params, h.Params)
		case rr.DataCRC != whole.DataCRC || rr.Labels != whole.Labels || rr.Units != whole.Units:
			return model.Header{}, model.LabelRange{}, fmt.Errorf("%s and %s were trained on other data (data CRC %08x against %08x, %d labels and %d blocks against %d and %d)",
				r.path, first.path, rr.DataCRC, whole.DataCRC, rr.Labels, rr.Units, whole.Labels, whole.Units)
		case rr.From > at:
			return model.Header{}, model.LabelRange{}, fmt.Errorf("labels %d:%d (by frequency) are in no range: %s starts at %d", at, rr.From, r.path, rr.From)
		case rr.From < at:
			return model.Header{}, model.LabelRange{}, fmt.Errorf("the ranges overlap: %s holds labels %d:%d, of which %d:%d are in another range", r.path, rr.From, rr.To, rr.From, min(at, rr.To))
		}
		nnz, err := rangeNNZ(r)
		if err != nil {
			return model.Header{}, model.LabelRange{}, err
		}
		h.Counts["labels"] += int64(rr.To - rr.From)
		h.Counts["nnz"] += nnz
		at = rr.To
	}
	if at != whole.Labels {
		return model.Header{}, model.LabelRange{}, fmt.Errorf("labels %d:%d (by frequency) are in no range", at, whole.Labels)
	}
	h.Range = nil
	return h, whole, nil
}

// rangeNNZ returns the weights the range model r holds, from its header
// or, for a sharded one, its shards' headers.
func rangeNNZ(r rangeModel) (int64, error) {
	manifest, err := model.IsManifest(r.path)
	if err != nil || !manifest {
		return r.h.Counts["nnz"], err
	}
	m, err := model.ReadManifest(r.path)
	if err != nil {
		return 0, err
	}
	var nnz int64
	for _, s := range m.Shards {
		h, err := model.ReadHeader(filepath.Join(filepath.Dir(r.path), s.Path))
		if err != nil {
			return 0, err
		}
		nnz += h.Counts["nnz"]
	}
	return nnz, nil
}

// joiner writes the blocks of the range models, given in label order, as
// the whole model's blocks: a block is written as it was stored, but the
// last block of a range waits for the next range, whose first block may
// be its other part.
type joiner struct {
	w           *model.Writer
	next        int    // the whole model's next block to write
	pending     []byte // the last block of the ranges added so far
	pendingUnit int    // its block in the whole model
	labels, nnz int64  // written so far
}

// add adds the blocks of the range model r.
func (j *joiner) add(r rangeModel) error {
	var units [][]byte
	_, err := model.LoadUnits(Kind{}, r.path, nil, nil, func(_ *model.File, s model.Section, u int) error {
		if u >= r.h.Range.Units {
			return fmt.Errorf("block %d, but the range's training had %d", u, r.h.Range.Units)
		}
		if u >= len(units) {
			units = append(units, make([][]byte, u+1-len(units))...)
		}
		if units[u] != nil {
			return fmt.Errorf("block %d held twice", u)
		}
		units[u] = s.Data
		return nil
	})
	if err != nil {
		return err
	}
	for u, data := range units {
		if data == nil {
			return fmt.Errorf("%s lacks its block %d: it is not a finished range model", r.path, u)
		}
		whole := r.h.Range.FirstUnit + u
		if j.pending != nil && j.pendingUnit == whole {
			if j.pending, err = joinBlocks(j.pending, data); err != nil {
				return fmt.Errorf("%s: block %d: %w", r.path, u, err)
			}
			continue
		}
		if err := j.flush(); err != nil {
			return err
		}
		if whole != j.next {
			return fmt.Errorf("%s starts at block %d of the whole model, but the ranges before it end before block %d", r.path, whole, j.next)
		}
		j.pending, j.pendingUnit = data, whole
	}
	return nil
}

// flush writes the pending block.
func (j *joiner) flush() error {
	if j.pending == nil {
		return nil
	}
	c, err := Counts([][]byte{j.pending})
	if err != nil {
		return err
	}
	if err := j.w.AddSection(Kind{}.Section(j.pendingUnit), j.pending); err != nil {
		return err
	}
	j.labels += c["labels"]
	j.nnz += c["nnz"]
	j.pending = nil
	j.next++
	return nil
}

// joinBlocks returns the encoded block of the labels of the encoded blocks
// a and then b.
func joinBlocks(a, b []byte) ([]byte, error) {
	var x, y Block
	if err := x.UnmarshalBinary(a); err != nil {
		return nil, err
	}
	if err := y.UnmarshalBinary(b); err != nil {
		return nil, err
	}
	base := x.Start[len(x.Labels)]
	x.Labels = append(x.Labels, y.Labels...)
	for _, s := range y.Start[1:] {
		x.Start = append(x.Start, base+s)
	}
	x.Feature = append(x.Feature, y.Feature...)
	x.Weight = append(x.Weight, y.Weight...)
	return x.MarshalBinary()
}
