package train

import (
	"xmc/numa"
	"xmc/runner"
)

// EncodeUnits encodes a rank's owned units when its training ends, on the
// team's workers, a unit at a time: result i is units[i] with the bytes
// encode(w, i) returns. Encoding grows with the model, and on the rank's
// lead alone it was the largest serial part of a round trainer's run. The
// error returned is the first unit's, in the order of units, whose
// encoding failed: the same however the units fell to the workers.
func EncodeUnits(team *numa.Team, units []int, encode func(w numa.Worker, i int) ([]byte, error)) ([]runner.Result, error) {
	out := make([]runner.Result, len(units))
	errs := make([]error, len(units))
	err := team.For(len(units), 1, func(w numa.Worker, lo, hi int) {
		for i := lo; i < hi; i++ {
			out[i].Unit = units[i]
			out[i].Data, errs[i] = encode(w, i)
		}
	})
	if err != nil {
		return nil, err
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
