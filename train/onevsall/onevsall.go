// Package onevsall is what the one-vs-all linear trainers (DiSMEC,
// PPDSparse, least squares) share: their common parameters (Params), their
// training data, a copy per NUMA domain with the label matrix indexed by
// column (Data), and the labels of a unit dealt to its worker and to the
// workers left without a unit (Labels).
package onevsall

import (
	"flag"
	"fmt"
	"math"
	"slices"

	"xmc/data"
	"xmc/model/linear"
	"xmc/runner"
	"xmc/train"
)

// Params are the parameters every one-vs-all trainer has: its
// parameter struct embeds them, so that the flags, checks and preprocessing
// they govern are written once.
type Params struct {
	// Cost is C, the weight of each row's loss against the regulariser.
	Cost float64 `json:"cost"`
	// Prune drops trained weights of magnitude below it: the stored model
	// is sparse.
	Prune float64 `json:"prune"`
	// LabelsPerUnit is the number of labels per work unit.
	LabelsPerUnit int `json:"labels_per_unit"`
	// Preprocess is how rows are transformed before training and
	// prediction: Normalize scales every row to unit L2 norm, and Bias
	// appends a constant feature 1 whose weight, the label's bias, is not
	// regularised. Its JSON fields are part of the model header, which
	// prediction reads them from.
	linear.Preprocess
}

// Flags registers the one-vs-all Flags, with the values of p as defaults.
func (p *Params) Flags(fs *flag.FlagSet) {
	fs.Float64Var(&p.Cost, "cost", p.Cost, "misclassification cost C")
	fs.Float64Var(&p.Prune, "prune", p.Prune, "drop trained weights of smaller magnitude")
	fs.IntVar(&p.LabelsPerUnit, "labels-per-unit", p.LabelsPerUnit, "labels per work unit")
	train.PreprocessFlags(fs, &p.Preprocess, true)
}

// Schedule is the default schedule of the one-vs-all trainers, whose
// label blocks cost very unequal amounts: dealt cyclically they leave some
// ranks idle at the end, dealt on request by cost the ranks finish
// together (docs/design.md, "Work units").
const Schedule = runner.ScheduleDynamic

// Validate reports the first parameter out of its range.
func (p Params) Validate() error {
	switch {
	case !(p.Cost > 0) || math.IsInf(p.Cost, 0):
		return fmt.Errorf("--cost must be a positive number, got %v", p.Cost)
	case !(p.Prune >= 0) || math.IsInf(p.Prune, 0):
		return fmt.Errorf("--prune must be 0 or more, got %v", p.Prune)
	case p.LabelsPerUnit < 1:
		return fmt.Errorf("--labels-per-unit must be at least 1, got %d", p.LabelsPerUnit)
	}
	return nil
}

// CheckUnit reports whether unit is one of blocks and d was preprocessed as
// the parameters ask: the checks of a one-vs-all WorkFunc before training.
func (p Params) CheckUnit(d *Data, blocks [][]int32, unit int) error {
	if unit < 0 || unit >= len(blocks) {
		return fmt.Errorf("unit %d outside [0, %d)", unit, len(blocks))
	}
	if d.Prep != p.Preprocess {
		return fmt.Errorf("training data preprocessed as %+v but the parameters ask for %+v", d.Prep, p.Preprocess)
	}
	return nil
}

// Data is the read-only training data of the one-vs-all linear
// trainers: one copy per NUMA domain, built by NewData on a pinned
// worker of the domain (see numa.NewReplicas).
type Data struct {
	// X holds the preprocessed features, N × Cols: rows normalised and a
	// bias column of ones appended at index D, as Prep says.
	X data.CSR
	// D is the number of features of the raw data (the bias column's index
	// when Prep.Bias) and L the number of labels.
	D, L int
	Prep linear.Preprocess
	// The positives of label l are the rows PosRows[PosStart[l]:PosStart[l+1]],
	// in increasing order: the label matrix by column.
	PosStart []int64
	PosRows  []int32
	// Mean is the mean of the rows of X (dense over its columns), the x̄ of
	// the mean-separating initialisation.
	Mean []float64
}

// NewData copies ds's features, applying the preprocessing prep, and
// indexes its labels by column. Every slice is allocated here, so that a
// replica built on a pinned worker lives in that worker's NUMA domain; ds
// is not modified.
func NewData(ds *data.Dataset, prep linear.Preprocess) (*Data, error) {
	if ds.N() == 0 {
		return nil, fmt.Errorf("linear training data: no instances")
	}
	if ds.Y.Rows != ds.X.Rows {
		return nil, fmt.Errorf("linear training data: %d feature rows but %d label rows", ds.X.Rows, ds.Y.Rows)
	}
	d := &Data{D: ds.D(), L: ds.L(), Prep: prep, X: prep.Apply(&ds.X)}
	d.PosStart, d.PosRows = labelColumns(&ds.Y)
	d.Mean = make([]float64, d.X.Cols)
	for k, j := range d.X.Indices {
		d.Mean[j] += float64(d.X.Values[k])
	}
	inv := 1 / float64(d.X.Rows)
	for j := range d.Mean {
		d.Mean[j] *= inv
	}
	return d, nil
}

// labelColumns transposes the label matrix y: the rows holding label l are
// rows[start[l]:start[l+1]], in increasing order.
func labelColumns(y *data.CSR) (start []int64, rows []int32) {
	start = make([]int64, y.Cols+1)
	for _, l := range y.Indices[:y.NNZ()] {
		start[l+1]++
	}
	for l := range y.Cols {
		start[l+1] += start[l]
	}
	rows = make([]int32, y.NNZ())
	next := slices.Clone(start[:y.Cols])
	for i := range y.Rows {
		labels, _ := y.Row(i)
		for _, l := range labels {
			rows[next[l]] = int32(i)
			next[l]++
		}
	}
	return start, rows
}

// Positives returns the rows in which label l is positive, in increasing
// order. The slice must not be modified.
func (d *Data) Positives(l int32) []int32 {
	return d.PosRows[d.PosStart[l]:d.PosStart[l+1]]
}

// LabelCounts returns the number of positives of every label.
func (d *Data) LabelCounts() []int64 {
	c := make([]int64, d.L)
	for l := range c {
		c[l] = d.PosStart[l+1] - d.PosStart[l]
	}
	return c
}

// LabelCost estimates what a PPDSparse label of positives positive rows
// costs to train, relative to the others: 1 + positives^0.6. A label's
// time grows with its positives, though far slower than they do: trained
// one by one on debian-tags and wordnet-hyper (1 to 27,704 positives),
// labels took 0.9 to 98 ms on average by range of positives, but 0.21-0.56
// ms per unit of this estimate.
func LabelCost(positives int64) float64 { return 1 + math.Pow(float64(positives), 0.6) }

// EqualCost is the estimate of a trainer whose labels are taken to cost
// alike: 1. DiSMEC uses it, though since its rare labels train on a working
// set of rows they cost less than its frequent ones
// (docs/scaling/amazon-670k.md).
func EqualCost(int64) float64 { return 1 }

// costShare is how many units of equal estimated cost the labels would at
// least make: a unit closes once its cost reaches 1/costShare of the
// whole, so that units are short enough for 128 workers to take 4 each
// and finish together.
const costShare = 512

// Blocks groups the labels with at least one positive into work units,
// most frequent labels first (ties by label id), as train.LabelBlocks
// does: units of perUnit labels, but fewer where that would cost, by the
// estimate cost of a label of its positives, more than 1/costShare of all
// labels' cost. The workers take the costliest units first, and no unit is
// long enough to be left running alone at the end; the units do not
// depend on the number of ranks or workers.
func Blocks(labelCounts []int64, perUnit int, cost func(positives int64) float64) [][]int32 {
	order := train.LabelBlocks(labelCounts, len(labelCounts))
	if len(order) == 0 {
		return nil
	}
	total := 0.0
	for _, l := range order[0] {
		total += cost(labelCounts[l])
	}
	limit := total / costShare
	var blocks [][]int32
	lo, sum := 0, 0.0
	for i, l := range order[0] {
		sum += cost(labelCounts[l])
		if i+1-lo == perUnit || sum >= limit || i+1 == len(order[0]) {
			blocks = append(blocks, order[0][lo:i+1:i+1])
			lo, sum = i+1, 0
		}
	}
	return blocks
}
