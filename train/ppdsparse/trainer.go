package ppdsparse

import (
	"flag"
	"fmt"

	"xmc/data"
	"xmc/model"
	"xmc/model/linear"
	"xmc/numa"
	"xmc/train"
	"xmc/train/onevsall"
)

// Trainer is the Trainer of --algo ppdsparse.
type Trainer struct{ p Params }

// New returns the Trainer of --algo ppdsparse, with the default hyper-parameters.
func New() train.Trainer { return &Trainer{p: DefaultParams()} }

// Flags registers PPDSparse's hyper-parameters.
func (a *Trainer) Flags(fs *flag.FlagSet) {
	p := &a.p
	p.Params.Flags(fs)
	// Their defaults depend on the data (see forData).
	cost, normalize := fs.Lookup("cost"), fs.Lookup("normalize")
	cost.DefValue = fmt.Sprintf("%v for binary features, 1 for real-valued ones", p.Cost)
	normalize.DefValue = fmt.Sprintf("%v for binary features, true for real-valued ones", p.Normalize)
	fs.StringVar(&p.Loss, "loss", p.Loss, "loss: sqhinge or hinge")
	fs.Float64Var(&p.Lambda, "lambda", p.Lambda, "weight of the L1 regulariser")
	fs.Float64Var(&p.Tol, "tol", p.Tol, "largest dual violation (projected gradient) left at the end")
	fs.IntVar(&p.MaxIters, "max-iters", p.MaxIters, "active-set rounds per label at most")
	fs.IntVar(&p.InnerPasses, "inner-passes", p.InnerPasses, "coordinate-descent passes per round at most")
	fs.Float64Var(&p.Sparsify, "sparsify", p.Sparsify, "search violating rows with nnz(w)/r sampled weights (r = 1: exact search)")
	fs.Float64Var(&p.SearchCutoff, "search-cutoff", p.SearchCutoff, "in sampled searches, skip index entries contributing less than this")
}

// Prepare checks the parameters and builds the replicas: a block of labels
// per unit.
func (a *Trainer) Prepare(env train.Env, ds *data.Dataset) (*train.Work, error) {
	p := a.p.forData(&ds.X, env.Set)
	p.Seed = env.Seed
	if err := p.Validate(); err != nil {
		return nil, err
	}
	replicas, err := numa.NewReplicas(env.Pool, func(int) (*trainingData, error) { return newTrainingData(ds, p) })
	if err != nil {
		return nil, err
	}
	t := newBlockTrainer(p, replicas, env.Pool)
	counts := replicas.Get(0).LabelCounts()
	if err := train.LogUntrained(env.Log, counts); err != nil {
		return nil, err
	}
	var selected *model.LabelRange
	cost := func(l int32) float64 { return onevsall.LabelCost(counts[l]) }
	if t.blocks, selected, err = train.SelectLabels(t.blocks, cost, env.Labels); err != nil {
		return nil, err
	}
	return &train.Work{Kind: linear.Kind{}, Params: p, Units: t.Units(), Unit: t.Work, Help: t.labels.Help, Schedule: onevsall.Schedule,
		Weight: func(u int) int { return len(t.Block(u)) }, Cost: t.Cost, Range: selected,
		Stats: func() map[string]float64 {
			st := t.Stats()
			return map[string]float64{"labels": float64(st.Labels), "rounds": float64(st.Rounds), "cd_passes": float64(st.Passes),
				"dual_updates": float64(st.Updates), "index_entries_scanned": float64(st.Scanned), "rows_rescored": float64(st.Rescored),
				"active_rows": float64(st.ActiveRows), "unconverged": float64(st.Unconverged),
				"labels_trained_helping": float64(t.labels.Helped())}
		}}, nil
}
