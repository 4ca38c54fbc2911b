package train

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"xmc/model"
)

// LabelRange is --label-range: which of the labels a one-vs-all trainer
// trains, so that one training can be spread over several jobs (a Slurm
// job array) and its range models joined by xmc merge. The labels are
// counted in the order the trainers take them, most frequent first (ties
// by label id; see LabelBlocks), over the labels with a positive row.
// Either From and To give the half-open range [From, To) itself, or Parts
// is set and the range is part Part of Parts contiguous parts of about
// equal cost: measured, by Costs, or else estimated by the trainer. The
// zero value selects every label.
type LabelRange struct {
	From, To    int
	Part, Parts int
	Costs       *LabelCosts
}

// All reports whether r selects every label: no --label-range.
func (r LabelRange) All() bool { return r == LabelRange{} }

// String returns r as ParseLabelRange reads it ("" for every label).
func (r LabelRange) String() string {
	switch {
	case r.All():
		return ""
	case r.Parts > 0:
		return fmt.Sprintf("%d/%d", r.Part, r.Parts)
	case r.To == math.MaxInt:
		return fmt.Sprintf("%d:", r.From)
	}
	return fmt.Sprintf("%d:%d", r.From, r.To)
}

// Set parses s as ParseLabelRange does, for use as a flag.Value; r's
// Costs stay.
func (r *LabelRange) Set(s string) error {
	v, err := ParseLabelRange(s)
	if err != nil {
		return err
	}
	v.Costs = r.Costs
	*r = v
	return nil
}

// ParseLabelRange reads a label range: "FROM:TO" (TO may be left out, for
// every label from FROM on) or "PART/PARTS" (PART from 0).
func ParseLabelRange(s string) (LabelRange, error) {
	if a, b, ok := strings.Cut(s, "/"); ok {
		part, err1 := strconv.Atoi(a)
		parts, err2 := strconv.Atoi(b)
		if err1 != nil || err2 != nil || parts < 1 || part < 0 || part >= parts {
			return LabelRange{}, fmt.Errorf("label range %q: want PART/PARTS with 0 ≤ PART < PARTS, e.g. 0/4", s)
		}
		return LabelRange{Part: part, Parts: parts}, nil
	}
	a, b, ok := strings.Cut(s, ":")
	from, err := strconv.Atoi(a)
	if !ok || err != nil || from < 0 {
		return LabelRange{}, fmt.Errorf("label range %q: want FROM:TO (labels by frequency, most frequent first, from 0; TO excluded and may be left out) or PART/PARTS", s)
	}
	to := math.MaxInt
	if b != "" {
		if to, err = strconv.Atoi(b); err != nil || to <= from {
			return LabelRange{}, fmt.Errorf("label range %q: TO must be a number above FROM", s)
		}
	}
	return LabelRange{From: from, To: to}, nil
}

// SelectLabels returns the part of a one-vs-all training's label blocks
// (the whole run's, most frequent labels first) that r selects, and its
// description for the model header. A block that the range cuts is kept in
// part; the description's FirstUnit says which of the whole run's blocks
// the first selected one is, so that xmc merge can rebuild the whole
// run's blocks. cost estimates a label's training cost, for r.Parts
// without r.Costs. For every label (r.All()) it returns blocks and nil.
func SelectLabels(blocks [][]int32, cost func(label int32) float64, r LabelRange) ([][]int32, *model.LabelRange, error) {
	if r.All() {
		return blocks, nil, nil
	}
	labels := 0
	for _, b := range blocks {
		labels += len(b)
	}
	from, to := r.From, min(r.To, labels)
	switch {
	case r.Costs != nil && r.Parts == 0:
		return nil, nil, fmt.Errorf("label costs %s cut the labels into parts: give --label-range PART/PARTS with them, not a range FROM:TO or none", r.Costs.Path)
	case r.Costs != nil && r.Costs.Labels() != labels:
		return nil, nil, fmt.Errorf("label costs %s: they are of %d labels with a positive row, the data has %d: they were measured on other data",
			r.Costs.Path, r.Costs.Labels(), labels)
	case r.Costs != nil:
		from, to = costParts(blocks, func(rank int, _ int32) float64 { return r.Costs.PerLabel(rank) }, labels, r.Part, r.Parts)
	case r.Parts > 0:
		from, to = costParts(blocks, func(_ int, l int32) float64 { return cost(l) }, labels, r.Part, r.Parts)
	}
	if from >= to {
		return nil, nil, fmt.Errorf("--label-range %s selects no label: the data has %d labels with a positive row", r, labels)
	}
	sel := &model.LabelRange{From: from, To: to, Labels: labels, Units: len(blocks)}
	var out [][]int32
	at := 0 // the first label of block u, in the order
	for u, b := range blocks {
		lo, hi := max(from-at, 0), min(to-at, len(b))
		if lo < hi {
			if out == nil {
				sel.FirstUnit = u
			}
			out = append(out, b[lo:hi:hi])
		}
		at += len(b)
	}
	return out, sel, nil
}

// costParts returns the bounds [from, to) of part part of parts: the
// ordered labels cut where their summed cost crosses each multiple of the
// total's parts-th, moved where needed so that no part is empty (unless
// there are fewer labels than parts). cost is that of label l at place
// rank of the order.
func costParts(blocks [][]int32, cost func(rank int, l int32) float64, labels, part, parts int) (from, to int) {
	var prefix []float64 // the cost of the labels before label i
	total := 0.0
	for _, b := range blocks {
		for _, l := range b {
			prefix = append(prefix, total)
			total += cost(len(prefix)-1, l)
		}
	}
	// Part p starts at the first label whose preceding cost reaches p
	// parts-ths of the total, and at least one label after part p−1's
	// start, leaving a label to each part after it.
	start := 0
	for p := 1; p <= part+1; p++ {
		if p == parts {
			return start, labels
		}
		i := sort.Search(labels, func(i int) bool { return float64(parts)*prefix[i] >= float64(p)*total })
		next := min(max(i, start+1), labels-(parts-p))
		if p == part+1 {
			return start, next
		}
		start = next
	}
	return start, labels
}
