package plt

import (
	"encoding/json"
	"fmt"
	"math"
)

// Loss is the loss a tree's node classifiers were trained with. It sets how
// a node's margin v becomes the probability of its event.
type Loss string

const (
	// Logistic is the logistic loss log(1 + exp(−y v)), napkinXC's
	// default: probability σ(v).
	Logistic Loss = "log"
	// SquaredHinge is the squared hinge loss max(0, 1 − y v)², Parabel's:
	// probability exp(−max(0, 1 − v)²), as Parabel and napkinXC convert it.
	SquaredHinge Loss = "sqhinge"
)

// Check reports a loss that is neither Logistic nor SquaredHinge.
func (l Loss) Check() error {
	if l == Logistic || l == SquaredHinge {
		return nil
	}
	return fmt.Errorf("unknown loss %q (want %q or %q)", l, Logistic, SquaredHinge)
}

// probability returns the probability of a node's margin v: at most 1 and
// not increasing as v falls, so that a path's product bounds its
// descendants' in the best-first search.
func (l Loss) probability(v float64) float64 {
	if l == SquaredHinge {
		h := max(0, 1-v)
		return math.Exp(-h * h)
	}
	return 1 / (1 + math.Exp(-v))
}

// ParseLoss reads the loss from a header's Params. A header without one is
// of a model written before the squared hinge loss existed: logistic.
func ParseLoss(params json.RawMessage) (Loss, error) {
	var p struct {
		Loss *Loss `json:"loss"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return "", fmt.Errorf("header params: %w", err)
	}
	if p.Loss == nil {
		return Logistic, nil
	}
	if err := p.Loss.Check(); err != nil {
		return "", fmt.Errorf("header params: %w", err)
	}
	return *p.Loss, nil
}
