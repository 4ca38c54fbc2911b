package train

import (
	"errors"
	"flag"
	"fmt"
	"strconv"

	"xmc/data"
)

// EarlyStop is early stopping on held-out rows for trainers of epochs:
// Heldout is the fraction of the training rows, drawn by the seed, kept out
// of training, or HeldoutFile a data file of such rows; after every epoch
// the ranks measure the trainer's metric on them, training ends once
// Patience epochs in a row have not improved the best, and the model is
// the best epoch's. 0 and "" train every epoch on every row.
type EarlyStop struct {
	Heldout     float64 `json:"heldout"`
	HeldoutFile string  `json:"heldout_file,omitempty"`
	Patience    int     `json:"patience"`
}

// Validate reports the first field out of its range.
func (e EarlyStop) Validate() error {
	switch {
	case !(e.Heldout >= 0 && e.Heldout < 1):
		return fmt.Errorf("--heldout must be a fraction in [0, 1) or a file, got %v", e.Heldout)
	case e.Heldout > 0 && e.HeldoutFile != "":
		return errors.New("--heldout is a fraction or a file, not both")
	case e.Patience < 1:
		return fmt.Errorf("--patience must be at least 1, got %d", e.Patience)
	}
	return nil
}

// Flags registers --heldout FRAC|FILE and --patience, for a trainer that
// stops on metric.
func (e *EarlyStop) Flags(fs *flag.FlagSet, metric string) {
	fs.Func("heldout", "`FRAC|FILE`: a fraction of the training rows held out (drawn by --seed), or a data file of held-out rows, to stop early on their "+metric+" and keep the best epoch's model (default none)",
		func(v string) error {
			e.Heldout, e.HeldoutFile = 0, ""
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				e.Heldout = f
				return nil
			}
			e.HeldoutFile = v
			return nil
		})
	fs.IntVar(&e.Patience, "patience", e.Patience, "with --heldout, stop after this many epochs without a better held-out "+metric)
}

// Rows returns the training Rows and the held-out Rows (nil without
// --heldout).
func (e EarlyStop) Rows(env Env, ds *data.Dataset, seed uint64) (train, held *data.Dataset, err error) {
	return heldoutRows(env, ds, e.Heldout, e.HeldoutFile, seed)
}

// heldoutRows returns the training rows and the held-out rows of
// --heldout: a fraction frac of ds drawn by the seed, or the rows of a data
// file (nil held-out rows for neither).
func heldoutRows(env Env, ds *data.Dataset, frac float64, file string, seed uint64) (train, held *data.Dataset, err error) {
	train, held = HeldoutSplit(ds, frac, seed)
	if file == "" {
		return train, held, nil
	}
	if env.Load == nil {
		return nil, nil, fmt.Errorf("--heldout %s: no way to read a data file here", file)
	}
	if held, err = env.Load(file); err != nil {
		return nil, nil, fmt.Errorf("--heldout: %w", err)
	}
	if held.N() == 0 {
		return nil, nil, fmt.Errorf("--heldout %s: no rows", file)
	}
	if held.D() > ds.D() || held.L() > ds.L() {
		return nil, nil, fmt.Errorf("--heldout %s has D=%d L=%d but the training data D=%d L=%d", file, held.D(), held.L(), ds.D(), ds.L())
	}
	return train, held, nil
}

// HeldoutSplit returns ds without the rows held out, and those rows: a
// fraction frac of them drawn by the seed alone (nil when frac is 0).
func HeldoutSplit(ds *data.Dataset, frac float64, seed uint64) (*data.Dataset, *data.Dataset) {
	if frac <= 0 {
		return ds, nil
	}
	var train, held []int
	for i := range ds.N() {
		// The row's number is hashed before the seed joins it, so that
		// seeds draw apart: hashing seed^i would give seed s the rows of
		// seed 0 renumbered (row i where seed 0 has row i^s).
		if float64(data.SplitMix64(seed^data.SplitMix64(uint64(i)+0x2545f4914f6cdd1d))>>11)/(1<<53) < frac {
			held = append(held, i)
		} else {
			train = append(train, i)
		}
	}
	if len(held) == 0 || len(train) == 0 {
		return ds, nil
	}
	return ds.Subset(train), ds.Subset(held)
}
