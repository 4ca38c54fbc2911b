// Package ensemble combines trained models of one label space into one
// model: every member scores a row, each member's scores are put on one
// scale by its calibration, and a label's score is the weighted sum of its
// calibrated member scores. A forest's scores (means of leaf label vectors,
// in [0, 1]) and a linear model's margins differ in scale and in shape, so
// they are combined only after calibration (see Calibration and Fit).
//
// An ensemble file is a model file of kind "ensemble" whose one section
// names the member model files (relative to its directory), with each
// member's header as it was when the ensemble was made, its weight and its
// calibration. Loading it loads every member, or, for a rank of a job, the
// part of every member that the rank owns: prediction of an ensemble is
// distributed as that of its members.
package ensemble

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"xmc/data"
	"xmc/model"
	"xmc/numa"
)

// KindName is the kind an ensemble file's header records.
const KindName = "ensemble"

// Algorithm is the algorithm an ensemble file's header records.
const Algorithm = "ensemble"

// Calibration maps a member's score s to the common scale:
// Scale·s + Shift, through the logistic sigmoid when Sigmoid is set (Platt
// scaling, fitted by Fit on held-out rows).
type Calibration struct {
	Scale   float64 `json:"scale"`
	Shift   float64 `json:"shift"`
	Sigmoid bool    `json:"sigmoid"`
}

// Identity is the calibration that leaves scores as they are.
var Identity = Calibration{Scale: 1}

// Apply returns the calibrated score of s.
func (c Calibration) Apply(s float64) float64 {
	v := c.Scale*s + c.Shift
	if c.Sigmoid {
		return 1 / (1 + math.Exp(-v))
	}
	return v
}

// DefaultCalibration is the calibration of a member of kind kind when
// none was fitted: a forest's and a label tree's scores are already in
// [0, 1]; any other model's (a margin) goes through the sigmoid.
func DefaultCalibration(kind string) Calibration {
	if kind == "forest" || kind == "plt" {
		return Identity
	}
	return Calibration{Scale: 1, Sigmoid: true}
}

// Member is one model of an ensemble as the ensemble file records it.
type Member struct {
	// Path is the member's model file or manifest, relative to the
	// ensemble file's directory (or absolute).
	Path string `json:"path"`
	// Header is the member's header when the ensemble was made: a member
	// file trained again (other parameters, data or seed) no longer
	// matches it and is refused.
	Header      model.Header `json:"header"`
	Weight      float64      `json:"weight"`
	Calibration Calibration  `json:"calibration"`
}

// Candidates returns how many labels a member of kind kind proposes for a
// row when the ensemble predicts k: 6k, as a label that no member ranks
// among its first 6k does not reach the ensemble's first k in practice,
// and the bound keeps a row's work and messages independent of the number
// of labels (with 10k the ensembles of four sets over six seeds were no
// more accurate and predicted more slowly). A label tree proposes k: its
// best-first search expands more nodes the more labels it lists, whereas a
// forest's or a linear model's lists come from scores it computes anyway;
// with 6k from the tree the ensembles were barely more accurate and much
// slower than their members (docs/algorithms/ensemble.md).
func Candidates(kind string, k int) int {
	if kind == "plt" {
		return max(k, 1)
	}
	return 6 * max(k, 1)
}

// wants returns every member's Candidates, from the members' kinds.
func wants(kinds []string, k int) []int {
	w := make([]int, len(kinds))
	for m, kind := range kinds {
		w[m] = Candidates(kind, k)
	}
	return w
}

// Model is an ensemble, or the part of one that a rank holds (the part of
// every member it owns), ready to score rows.
type Model struct {
	members []model.Model
	spec    []Member
	kinds   []string // the members' kinds, for Candidates
	// L is the members' number of labels.
	L int
}

// New returns the ensemble of the loaded members, described by spec (one
// entry each, in the same order), over L labels.
func New(members []model.Model, spec []Member, L int) (*Model, error) {
	switch {
	case len(members) == 0:
		return nil, fmt.Errorf("an ensemble needs at least one member")
	case len(members) != len(spec):
		return nil, fmt.Errorf("%d members loaded for %d described", len(members), len(spec))
	case int64(len(members))*int64(L) > math.MaxInt32:
		// Partial numbers member m's label l as m·L + l in an int32.
		return nil, fmt.Errorf("%d members of %d labels: more than 2^31 labels in all", len(members), L)
	}
	kinds := make([]string, len(spec))
	for m, s := range spec {
		kinds[m] = model.KindName(s.Header)
	}
	return &Model{members: members, spec: spec, kinds: kinds, L: L}, nil
}

// Predict returns the k best labels of every row of x by the ensemble's
// score, computed from each member's Candidates best.
func (e *Model) Predict(x *data.CSR, k int, pool *numa.Pool) ([][]model.Scored, error) {
	lists := make([][][]model.Scored, len(e.members))
	want := wants(e.kinds, k)
	for m, mm := range e.members {
		var err error
		if lists[m], err = mm.Predict(x, want[m], pool); err != nil {
			return nil, fmt.Errorf("member %d (%s): %w", m, e.spec[m].Path, err)
		}
	}
	return e.fuse(lists, x.Rows, k, pool)
}

// Partial returns every member's partial result for its Candidates, its
// labels numbered m·L + label for member m so that one sparse row carries
// them all; Merge parts them again.
func (e *Model) Partial(x *data.CSR, k int, pool *numa.Pool) ([]model.Sparse, error) {
	out := make([]model.Sparse, x.Rows)
	want := wants(e.kinds, k)
	for m, mm := range e.members {
		part, err := mm.Partial(x, want[m], pool)
		if err != nil {
			return nil, fmt.Errorf("member %d (%s): %w", m, e.spec[m].Path, err)
		}
		if len(part) != x.Rows {
			return nil, fmt.Errorf("member %d (%s): %d partial rows for %d", m, e.spec[m].Path, len(part), x.Rows)
		}
		offset := int32(m * e.L)
		for i, r := range part {
			for q, l := range r.Labels {
				out[i].Labels = append(out[i].Labels, offset+l)
				out[i].Sums = append(out[i].Sums, r.Sums[q])
			}
		}
	}
	return out, nil
}

// Merge splits every part's rows by member, merges each member's parts
// as the member does (exactly its Predict of its Candidates), and fuses
// them: the same result as Predict on the whole ensemble.
func (e *Model) Merge(parts [][]byte, rows, k int) ([][]model.Scored, error) {
	byMember := make([][][]byte, len(e.members)) // member, part
	for m := range byMember {
		byMember[m] = make([][]byte, len(parts))
	}
	for p, b := range parts {
		split, err := splitSums(b, rows, e.L, len(e.members))
		if err != nil {
			return nil, fmt.Errorf("merge: part %d: %w", p, err)
		}
		for m := range split {
			byMember[m][p] = split[m]
		}
	}
	lists := make([][][]model.Scored, len(e.members))
	want := wants(e.kinds, k)
	for m, mm := range e.members {
		var err error
		if lists[m], err = mm.Merge(byMember[m], rows, want[m]); err != nil {
			return nil, fmt.Errorf("member %d (%s): %w", m, e.spec[m].Path, err)
		}
	}
	return e.fuse(lists, rows, k, nil)
}

// fuse returns every row's k best labels by the weighted calibrated sum
// of the members' lists (member, row, labels), on the pool's workers, or on
// the caller with a nil pool. The rows are independent: fused on one
// goroutine while the members predict on every worker, they were the part
// of an ensemble's prediction that more workers do not shorten.
func (e *Model) fuse(lists [][][]model.Scored, rows, k int, pool *numa.Pool) ([][]model.Scored, error) {
	weights := make([]float64, len(e.spec))
	cals := make([]Calibration, len(e.spec))
	for m, s := range e.spec {
		weights[m], cals[m] = s.Weight, s.Calibration
	}
	out := make([][]model.Scored, rows)
	want := wants(e.kinds, k)
	if pool == nil {
		var f fuser
		for i := range rows {
			out[i] = f.row(lists, i, weights, cals, want, k)
		}
		return out, nil
	}
	fusers := numa.NewPerWorker(pool, func(numa.Worker) *fuser { return new(fuser) })
	err := pool.For(rows, fuseRows, func(w numa.Worker, lo, hi int) {
		f := fusers.Get(w)
		for i := lo; i < hi; i++ {
			out[i] = f.row(lists, i, weights, cals, want, k)
		}
	})
	return out, err
}

// fuseRows is the rows a worker fuses at a time.
const fuseRows = 256

// Summary names the members with their weights.
func (e *Model) Summary() string {
	var parts []string
	for _, s := range e.spec {
		parts = append(parts, fmt.Sprintf("%s %.2f", s.Header.Algorithm, s.Weight))
	}
	return fmt.Sprintf("%d members (%s)", len(e.spec), strings.Join(parts, ", "))
}

// Describe writes a table of the members: file, algorithm, what it holds,
// weight and calibration.
func (e *Model) Describe(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "member\talgorithm\tholds\tweight\tcalibration\t")
	for m, s := range e.spec {
		c := s.Calibration
		cal := fmt.Sprintf("%.4g·s%+.4g", c.Scale, c.Shift)
		if c.Sigmoid {
			cal = "sigmoid(" + cal + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.4f\t%s\t\n", s.Path, s.Header.Algorithm, e.members[m].Summary(), s.Weight, cal)
	}
	return tw.Flush()
}

// fuser combines one row's member lists, reusing its buffers from row to
// row.
type fuser struct {
	// labels are the row's candidate labels, in the order the members
	// propose them, and raw their scores by member (label-major:
	// raw[q·members + m]).
	labels []int32
	raw    []float64
	floors []float64
	// slot is, per label, its place q in labels during a row and −1
	// between rows: dense, as the members' own prediction scratch is, so
	// that grouping costs one lookup a candidate (sorting the row's
	// candidates by label cost most of the fusion).
	slot []int32
	top  model.Top
}

// group collects row i's candidates: every label that some member lists,
// with each member's score for it. A label missing from member m's list
// gets m's floor: the last score of a full list of want entries (a bound
// on every score it left out), and 0 for a shorter one (a forest lists
// every label of non-zero score).
func (f *fuser) group(lists [][][]model.Scored, i int, want []int) {
	members := len(lists)
	if cap(f.floors) < members {
		f.floors = make([]float64, members)
	}
	floors := f.floors[:members]
	clear(floors)
	for m := range lists {
		if l := lists[m][i]; len(l) >= want[m] {
			floors[m] = float64(l[len(l)-1].Score)
		}
	}
	f.labels, f.raw = f.labels[:0], f.raw[:0]
	for m := range lists {
		for _, s := range lists[m][i] {
			if int(s.Label) >= len(f.slot) {
				n := len(f.slot)
				f.slot = slices.Grow(f.slot, int(s.Label)+1-n)[:int(s.Label)+1]
				for l := n; l < len(f.slot); l++ {
					f.slot[l] = -1
				}
			}
			q := f.slot[s.Label]
			if q < 0 {
				q = int32(len(f.labels))
				f.slot[s.Label] = q
				f.labels = append(f.labels, s.Label)
				f.raw = append(f.raw, floors...)
			}
			f.raw[int(q)*members+m] = float64(s.Score)
		}
	}
	for _, l := range f.labels {
		f.slot[l] = -1
	}
}

// row returns row i's k best labels by the weighted sum of the members'
// calibrated scores.
func (f *fuser) row(lists [][][]model.Scored, i int, weights []float64, cals []Calibration, want []int, k int) []model.Scored {
	f.group(lists, i, want)
	f.top.Reset(k)
	members := len(lists)
	for q, label := range f.labels {
		sum := 0.0
		for m := range members {
			sum += weights[m] * cals[m].Apply(f.raw[q*members+m])
		}
		f.top.Push(model.Scored{Label: label, Score: float32(sum)})
	}
	return slices.Clone(f.top.Sorted())
}
