package ppdsparse

import (
	"fmt"
	"math"

	"xmc/data"
	"xmc/model/linear"
	"xmc/train/onevsall"
)

// Losses of PPDSparse (Params.Loss).
const (
	// lossSquaredHinge is C·max(0, 1 − y·w·x)², the default.
	lossSquaredHinge = "sqhinge"
	// lossHinge is C·max(0, 1 − y·w·x).
	lossHinge = "hinge"
)

// Params are the hyper-parameters of PPDSparse (Yen et al., KDD
// 2017): one-vs-all linear classifiers, each minimising
//
//	λ·Σ_{j≠bias} |w_j| + ½‖w‖² + C·Σ_i loss(y_i·w·x_i)
//
// in the dual by a greedy active-set method, so that a label's work grows
// with its positives and the few negatives near its margin, not with the
// number of rows.
type Params struct {
	onevsall.Params
	// Loss is sqhinge (squared hinge) or hinge.
	Loss string `json:"loss"`
	// Lambda is λ, the weight of the L1 term, which makes w sparse while
	// training (the bias weight is exempt).
	Lambda float64 `json:"lambda"`
	// Tol is the optimality tolerance: a label is done when no dual
	// variable's projected gradient exceeds Tol in magnitude, among the
	// active rows and among all others.
	Tol float64 `json:"tol"`
	// MaxIters bounds the active-set rounds (coordinate descent on the
	// active set, then a search for violating rows) per label.
	MaxIters int `json:"max_iters"`
	// InnerPasses bounds the coordinate-descent passes over the active set
	// per round.
	InnerPasses int `json:"inner_passes"`
	// Sparsify is the speed-up rate r of the randomised search (the
	// paper's Algorithm 3): while searching for violating rows, w is
	// replaced by an unbiased estimate drawn from nnz(w)/r samples of its
	// coordinates, with probability proportional to |w_j|. 1 searches with
	// the exact w. A label is only declared done after an exact search.
	Sparsify float64 `json:"sparsify"`
	// SearchCutoff skips, during the randomised search, the entries x_ij of
	// a sampled column whose contribution |ŵ_j·x_ij| falls below it: the
	// inverted index keeps each column's entries by decreasing |x_ij|, so
	// the scan of a column stops at the first such entry (the two-level
	// search of the paper's §5.3). 0 scans whole columns.
	SearchCutoff float64 `json:"search_cutoff"`
	// Seed seeds the random choices of every label (initial negatives,
	// coordinate order, sparsification) through the label's id, so that
	// the model does not depend on which worker trains which label.
	Seed uint64 `json:"seed"`
}

// DefaultParams returns the defaults for binary features:
// squared hinge with the authors' settings for Bibtex and Delicious
// (C = 0.01, λ = 0.01), their tolerance 0.1, pruning at 0.01, raw rows with
// a bias feature. forData changes them for real-valued features.
//
// Unlike DiSMEC, PPDSparse does not normalise binary rows by default: at
// these C and λ raw rows are what reaches the authors' accuracy, and
// normalised rows stayed a point of P@1 below it on Bibtex over a grid of C
// and λ (see TestPPDSparseBibtexAccuracy).
func DefaultParams() Params {
	return Params{Params: onevsall.Params{Cost: 0.01, Prune: 0.01, LabelsPerUnit: 8, Preprocess: linear.Preprocess{Normalize: false, Bias: true}},
		Loss: lossSquaredHinge, Lambda: 0.01, Tol: 0.1, MaxIters: 100, InnerPasses: 20, Sparsify: 1, SearchCutoff: 0, Seed: 1}
}

// forData returns p with the defaults that depend on the data x filled:
// for real-valued (TF-IDF) features, the authors' setting for their large
// sets, C = 1 and normalised rows (with C = 0.01 PPDSparse stayed 2 to 13
// points of P@1 below DiSMEC on real text sets); for binary features
// (data.CSR.Binary), the defaults stay. A parameter for which set reports
// that the user set its flag ("cost", "normalize") keeps its value.
func (p Params) forData(x *data.CSR, set func(flag string) bool) Params {
	if x.Binary() {
		return p
	}
	if !set("cost") {
		p.Cost = 1
	}
	if !set("normalize") {
		p.Normalize = true
	}
	return p
}

// Validate reports the first parameter out of its range.
func (p Params) Validate() error {
	switch {
	case p.Loss != lossSquaredHinge && p.Loss != lossHinge:
		return fmt.Errorf("--loss %q: want %s or %s", p.Loss, lossSquaredHinge, lossHinge)
	case !(p.Lambda >= 0) || math.IsInf(p.Lambda, 0):
		return fmt.Errorf("--lambda must be 0 or more, got %v", p.Lambda)
	case !(p.Tol > 0) || math.IsInf(p.Tol, 0):
		return fmt.Errorf("--tol must be a positive number, got %v", p.Tol)
	case p.MaxIters < 1:
		return fmt.Errorf("--max-iters must be at least 1, got %d", p.MaxIters)
	case p.InnerPasses < 1:
		return fmt.Errorf("--inner-passes must be at least 1, got %d", p.InnerPasses)
	case !(p.Sparsify >= 1) || math.IsInf(p.Sparsify, 0):
		return fmt.Errorf("--sparsify must be 1 (exact search) or more, got %v", p.Sparsify)
	case !(p.SearchCutoff >= 0) || math.IsInf(p.SearchCutoff, 0):
		return fmt.Errorf("--search-cutoff must be 0 or more, got %v", p.SearchCutoff)
	}
	return p.Params.Validate()
}
