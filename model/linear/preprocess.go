package linear

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"xmc/data"
)

// Preprocess is how a linear model's training rows were transformed before
// training. It is part of the model header's Params (as the JSON fields
// "normalize" and "bias"), so that prediction applies the same transform
// to test rows: a model trained on normalised rows scores raw rows wrongly.
type Preprocess struct {
	// Normalize scales every row's features to unit L2 norm (see
	// data.NormalizeRows); the bias feature is left out of the norm.
	Normalize bool `json:"normalize"`
	// Bias appends a constant feature of value 1 with column index D, the
	// number of features of the data (see data.AppendBias): its weight is
	// the label's bias.
	Bias bool `json:"bias"`
}

// Cols returns the number of weight columns of a model over D features:
// D, plus one for the bias feature.
func (p Preprocess) Cols(D int) int {
	if p.Bias {
		return D + 1
	}
	return D
}

// ParsePreprocess reads the preprocessing from a header's Params. Both
// fields must be present: a header that does not say how its rows were
// transformed is an error rather than a silent guess.
func ParsePreprocess(params json.RawMessage) (Preprocess, error) {
	var p struct {
		Normalize *bool `json:"normalize"`
		Bias      *bool `json:"bias"`
	}
	if len(params) == 0 {
		return Preprocess{}, errors.New("header has no params: cannot tell the preprocessing (normalize, bias) of a linear model")
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return Preprocess{}, fmt.Errorf("header params: %w", err)
	}
	if p.Normalize == nil || p.Bias == nil {
		return Preprocess{}, fmt.Errorf("header params %s lack \"normalize\" or \"bias\"", bytes.TrimSpace(params))
	}
	return Preprocess{Normalize: *p.Normalize, Bias: *p.Bias}, nil
}

// Scale returns the factor by which the values of a row with values val
// are multiplied, through data.ScaleValue: 1/‖val‖ with Normalize, else 1.
func (p Preprocess) Scale(val []float32) float64 {
	if !p.Normalize {
		return 1
	}
	return data.UnitScale(val)
}

// Apply returns x preprocessed, in new memory allocated by the calling
// goroutine (on a pinned worker, in its NUMA domain): every row scaled as
// Scale says and, with Bias, a last entry of value 1 in column x.Cols. It
// is how trainers prepare their rows; prediction scales each test row the
// same way as it scores it. x is not modified.
func (p Preprocess) Apply(x *data.CSR) data.CSR {
	if p.Bias && x.Cols >= math.MaxInt32 {
		panic(fmt.Sprintf("model.Preprocess.Apply: %d columns leave no room for a bias column", x.Cols))
	}
	nnz := x.NNZ()
	if p.Bias {
		nnz += int64(x.Rows)
	}
	out := data.CSR{Rows: x.Rows, Cols: p.Cols(x.Cols), Indptr: make([]int64, x.Rows+1),
		Indices: make([]int32, 0, nnz), Values: make([]float32, 0, nnz)}
	for i := range x.Rows {
		idx, val := x.Row(i)
		s := p.Scale(val)
		out.Indices = append(out.Indices, idx...)
		for _, v := range val {
			out.Values = append(out.Values, data.ScaleValue(v, s))
		}
		if p.Bias {
			out.Indices = append(out.Indices, int32(x.Cols))
			out.Values = append(out.Values, 1)
		}
		out.Indptr[i+1] = int64(len(out.Indices))
	}
	return out
}
