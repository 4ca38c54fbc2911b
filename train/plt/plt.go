// Package plt trains probabilistic label trees (Jasinska et al., ICML
// 2016; Parabel, Prabhu et al., WWW 2018; napkinXC, Jasinska-Kobus et al.
// 2020): a tree over the labels, built by balanced two-way k-means of the
// labels' mean rows, and at every node but the root an L2-regularised
// logistic regression (or, as Parabel's, a squared hinge loss SVM),
// trained by LIBLINEAR's dual coordinate descent on the rows relevant to
// its parent, of whether a label below the node is relevant. A model of
// several trees averages them. A tree is a unit of work, which a rank's
// workers train together: the splits of a level and the nodes'
// classifiers are shared out among them.
package plt

import (
	"flag"
	"fmt"
	"math"
	"sync/atomic"

	"xmc/data"
	"xmc/model/linear"
	pltmodel "xmc/model/plt"
	"xmc/numa"
	"xmc/runner"
	"xmc/train"
	"xmc/train/onevsall"
)

// Params are the hyper-parameters of a label tree model. The defaults are
// napkinXC's (v0.7.2).
type Params struct {
	// Trees is the number of trees, each from its own k-means seeds.
	Trees int `json:"trees"`
	// MaxLeaves is the largest set of labels that is not split further: a
	// node of at most MaxLeaves labels has them as its children.
	MaxLeaves int `json:"max_leaves"`
	// KMeansEps ends a two-way k-means once its mean similarity grows by
	// less; KMeansIters bounds its passes.
	KMeansEps   float64 `json:"kmeans_eps"`
	KMeansIters int     `json:"kmeans_iters"`
	// Loss is the loss of every node's classifier: logistic (napkinXC's
	// default) or squared hinge (Parabel's).
	Loss pltmodel.Loss `json:"loss"`
	// Cost is C of every node's classifier, Eps the tolerance of its dual
	// coordinate descent (LIBLINEAR's stopping rule) and MaxIter the bound
	// on its passes over the rows.
	Cost    float64 `json:"cost"`
	Eps     float64 `json:"eps"`
	MaxIter int     `json:"max_iter"`
	// Prune drops trained weights of smaller magnitude, but the bias.
	Prune float64 `json:"prune"`
	// Preprocess: rows scaled to unit norm, and a bias feature of value 1
	// (regularised, as LIBLINEAR's); recorded for prediction.
	linear.Preprocess
}

// DefaultParams returns napkinXC's defaults: one tree, sets of at most 100
// labels, logistic loss, C = 10, tolerance 0.1, weights under 0.1 dropped.
func DefaultParams() Params {
	return Params{Trees: 1, MaxLeaves: 100, KMeansEps: 1e-4, KMeansIters: 100, Loss: pltmodel.Logistic, Cost: 10, Eps: 0.1, MaxIter: 100, Prune: 0.1,
		Preprocess: linear.Preprocess{Normalize: true, Bias: true}}
}

// Validate reports the first parameter out of its range.
func (p Params) Validate() error {
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case p.Trees < 1:
		return fmt.Errorf("--trees must be at least 1, got %d", p.Trees)
	case p.MaxLeaves < 2:
		return fmt.Errorf("--max-leaves must be at least 2, got %d", p.MaxLeaves)
	case !(p.KMeansEps >= 0) || !finite(p.KMeansEps):
		return fmt.Errorf("--kmeans-eps must be 0 or more, got %v", p.KMeansEps)
	case p.KMeansIters < 1:
		return fmt.Errorf("--kmeans-iters must be at least 1, got %d", p.KMeansIters)
	case p.Loss.Check() != nil:
		return fmt.Errorf("--loss: %w", p.Loss.Check())
	case !(p.Cost > 0) || !finite(p.Cost):
		return fmt.Errorf("--cost must be a positive number, got %v", p.Cost)
	case !(p.Eps > 0) || !finite(p.Eps):
		return fmt.Errorf("--eps must be a positive number, got %v", p.Eps)
	case p.MaxIter < 1:
		return fmt.Errorf("--max-iter must be at least 1, got %d", p.MaxIter)
	case !(p.Prune >= 0) || !finite(p.Prune):
		return fmt.Errorf("--prune must be 0 or more, got %v", p.Prune)
	}
	return nil
}

// Trainer is the label tree trainer of --algo plt.
type Trainer struct{ p Params }

// New returns the Trainer of --algo plt, with the default hyper-parameters.
func New() train.Trainer { return &Trainer{p: DefaultParams()} }

// Flags registers the hyper-parameters.
func (a *Trainer) Flags(fs *flag.FlagSet) {
	p := &a.p
	fs.IntVar(&p.Trees, "trees", p.Trees, "number of trees, averaged")
	fs.IntVar(&p.MaxLeaves, "max-leaves", p.MaxLeaves, "a set of at most this many labels becomes a node with the labels as its children; larger ones are split in two")
	fs.Float64Var(&p.KMeansEps, "kmeans-eps", p.KMeansEps, "end a split's k-means when its mean similarity grows by less")
	fs.IntVar(&p.KMeansIters, "kmeans-iters", p.KMeansIters, "passes of a split's k-means at most")
	fs.Func("loss", "loss of every node's classifier: "+string(pltmodel.Logistic)+" (logistic regression, napkinXC's default) or "+
		string(pltmodel.SquaredHinge)+" (an SVM's squared hinge, Parabel's; with --cost 1) (default "+string(p.Loss)+")",
		func(v string) error { p.Loss = pltmodel.Loss(v); return p.Loss.Check() })
	fs.Float64Var(&p.Cost, "cost", p.Cost, "C of every node's classifier")
	fs.Float64Var(&p.Eps, "eps", p.Eps, "tolerance of a node's dual coordinate descent")
	fs.IntVar(&p.MaxIter, "max-iter", p.MaxIter, "passes of a node's dual coordinate descent at most")
	fs.Float64Var(&p.Prune, "prune", p.Prune, "drop trained weights of smaller magnitude (the bias is kept)")
	train.PreprocessFlags(fs, &p.Preprocess, true)
}

// Prepare checks the parameters, copies the rows (one copy per NUMA
// domain) and computes the labels' mean rows, which every tree splits.
func (a *Trainer) Prepare(env train.Env, ds *data.Dataset) (*train.Work, error) {
	p := a.p
	if err := p.Validate(); err != nil {
		return nil, err
	}
	replicas, err := numa.NewReplicas(env.Pool, func(int) (*onevsall.Data, error) { return onevsall.NewData(ds, p.Preprocess) })
	if err != nil {
		return nil, err
	}
	d := replicas.Get(0)
	if err := train.LogUntrained(env.Log, d.LabelCounts()); err != nil {
		return nil, err
	}
	t := &trainer{p: p, seed: env.Seed, data: replicas, pool: env.Pool}
	if t.labels, err = newLabelVectors(d, env.Pool); err != nil {
		return nil, err
	}
	return &train.Work{Kind: pltmodel.Kind{}, Params: p, Units: p.Trees, Team: t.tree, Schedule: runner.ScheduleStatic,
		Stats: func() map[string]float64 {
			return map[string]float64{"nodes": float64(t.nodes.Load()), "weights": float64(t.weights.Load()),
				"cd_passes": float64(t.passes.Load()), "unconverged": float64(t.unconverged.Load())}
		}}, nil
}

// trainer trains the trees of a rank.
type trainer struct {
	p      Params
	seed   uint64
	data   *numa.Replicas[*onevsall.Data]
	labels *labelVectors
	pool   *numa.Pool
	// Figures of the rank's training, for Work.Stats.
	nodes, weights, passes, unconverged atomic.Int64
}

// tree builds and trains tree u with every worker of the rank and returns
// it encoded.
func (t *trainer) tree(u int) ([]byte, error) {
	var enc []byte
	err := t.pool.Together(func(team *numa.Team) error {
		s, err := t.split(team, u)
		if err != nil {
			return err
		}
		tree, err := t.train(team, u, s)
		if err != nil {
			return err
		}
		enc, err = tree.MarshalBinary()
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("tree %d: %w", u, err)
	}
	return enc, nil
}

// stream returns the id of the random stream of what tree u draws for
// item i (a split's path, a node), so that every draw depends on the seed
// and on what is drawn alone, never on the worker that draws it.
func stream(kind, u int, i uint64) uint64 {
	h := uint64(kind)<<56 ^ uint64(u)<<40 ^ i
	// splitmix64's finaliser spreads nearby ids over the whole range.
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	return h ^ h>>31
}
