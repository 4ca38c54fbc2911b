// Package pipeline runs xmc's commands on every rank of a job: training
// (load the data, prepare the algorithm, run its work on the runner,
// assemble the model from the ranks' units, evaluate it) and distributed
// prediction. Package main parses the command line into a TrainConfig or a
// PredictConfig and calls Train or Predict; nothing here knows which
// algorithm it runs beyond what the trainer registry and the model kind
// say.
package pipeline

import (
	"xmc/data"
	"xmc/metrics"
)

// Input says how dataset files are read: a file in the XMC or LIBSVM
// format, a pair of NumPy files (features and labels), or the rows of a
// DXML split-format data file chosen by a split file.
type Input struct {
	Format data.Format
	// SplitCol is the column of the split files to use (1-based), for
	// the DXML split format.
	SplitCol int
}

// Load reads path or, when splitPath is set, the rows of path that the
// split file lists; D and L widen the matrices (0 keeps the file's). For
// the NumPy format, labels is the file of the labels of path (see
// data.ReadOptions.Labels); other formats ignore it.
func (in Input) Load(path, labels, splitPath string, D, L int) (*data.Dataset, error) {
	opt := data.ReadOptions{Format: in.Format, D: D, L: L, Labels: labels}
	if splitPath != "" {
		return data.ReadSplit(path, splitPath, in.SplitCol, opt)
	}
	return data.ReadFile(path, opt)
}

// EvalOptions choose the metrics computed after prediction.
type EvalOptions struct {
	// TopK is the number of labels predicted per row.
	TopK int
	// PropA and PropB are the parameters of the propensity model of the
	// propensity-scored metrics (Jain et al. 2016).
	PropA, PropB float64
}

// DefaultEvalOptions returns top 5 and the propensity parameters of the
// standard XMC evaluation code.
func DefaultEvalOptions() EvalOptions {
	return EvalOptions{TopK: 5, PropA: metrics.PropensityA, PropB: metrics.PropensityB}
}

// Ks returns the k of P@k and the other metrics: 1, 3, 5 up to TopK.
func (e EvalOptions) Ks() []int {
	var ks []int
	for _, k := range []int{1, 3, 5} {
		if k <= e.TopK {
			ks = append(ks, k)
		}
	}
	return ks
}
