// Package dismec trains DiSMEC (Babbar and Schölkopf, WSDM 2017):
// one-vs-all linear classifiers, each minimising the squared hinge loss
// with L2 regularisation by a truncated Newton method (conjugate gradients)
// from the mean-separating initialisation of Schultheis and Babbar
// (Machine Learning, 2022), as DiSMEC++ does, and pruned
// of small weights; blocks of labels are the units of work.
package dismec

import (
	"flag"
	"fmt"
	"math"
	"sync"

	"xmc/data"
	"xmc/model"
	"xmc/model/linear"
	"xmc/numa"
	"xmc/train"
	"xmc/train/onevsall"
)

// Weight initialisations of DiSMEC (Params.Init).
const (
	// initZero starts every label from w = 0, as the original DiSMEC.
	initZero = "zero"
	// initBias starts from w = 0 but for the bias weight, set to the
	// constant that minimises the loss when every other weight is 0 (it
	// is initZero without a bias feature).
	initBias = "bias"
	// initMSI is the mean-separating initialisation of Schultheis &
	// Babbar (2022): w0 = u·p̄ + v·x̄ with p̄ the mean of the label's
	// positives and x̄ the mean of all rows, scaled so that w0 maps p̄ to
	// msiPositive and the mean of the negatives to msiNegative. Training
	// then needs far fewer Newton iterations than from zero.
	initMSI = "msi"
)

// Targets of the mean-separating initialisation, the values of DiSMEC++:
// <w0, p̄> = msiPositive and <w0, n̄> = msiNegative.
const (
	msiPositive = 1.0
	msiNegative = -2.0
)

// Params are the hyper-parameters of DiSMEC, one-vs-all
// L2-regularised squared-hinge linear classifiers trained label by label
// in the primal by a truncated Newton method (Babbar & Schölkopf 2017).
type Params struct {
	// Params: C weighs the loss against the regulariser ½‖w‖²;
	// Prune is DiSMEC's Δ, 0.01.
	onevsall.Params
	// Init is the weight initialisation: zero, bias or msi.
	Init string `json:"init"`
	// Eps is the relative gradient tolerance: a label's Newton iterations
	// stop when ‖∇f(w)‖ ≤ Eps·max(1, min(|P|, |N|))/n·‖∇f(0)‖, with P and N
	// its positives and negatives among n rows (LIBLINEAR's scaling).
	Eps float64 `json:"eps"`
	// MaxNewtonIters bounds the Newton iterations per label.
	MaxNewtonIters int `json:"max_newton_iters"`
}

// DefaultParams returns the defaults of DiSMEC and DiSMEC++: C = 1,
// MSI initialisation, pruning at 0.01, eps 0.01, rows normalised and a bias
// feature.
func DefaultParams() Params {
	return Params{Params: onevsall.Params{Cost: 1, Prune: 0.01, LabelsPerUnit: 16, Preprocess: linear.Preprocess{Normalize: true, Bias: true}},
		Init: initMSI, Eps: 0.01, MaxNewtonIters: 1000}
}

// Validate reports the first parameter out of its range.
func (p Params) Validate() error {
	switch {
	case p.Init != initZero && p.Init != initBias && p.Init != initMSI:
		return fmt.Errorf("--init %q: want %s, %s or %s", p.Init, initZero, initBias, initMSI)
	case !(p.Eps > 0) || p.Eps >= 1:
		return fmt.Errorf("--eps must lie in (0, 1), got %v", p.Eps)
	case p.MaxNewtonIters < 1:
		return fmt.Errorf("--max-newton-iters must be at least 1, got %d", p.MaxNewtonIters)
	}
	return p.Params.Validate()
}

// labelStats sum up the optimisation of the labels trained so far.
type labelStats struct {
	Labels int64 // labels trained
	Newton int64 // Newton iterations
	CG     int64 // conjugate-gradient iterations (Hessian-vector products)
	// Unconverged counts labels whose iterations stopped before reaching
	// the gradient tolerance: the iteration limit, a stalled objective or
	// a failed line search. Their weights are the last point reached.
	Unconverged int64
	// WorkingSet counts labels trained on a working set of rows (see
	// sqHinge.solve).
	WorkingSet int64
}

// blockTrainer trains the labels of a DiSMEC model, a block of labels per
// work unit (see LabelBlocks). Work is safe for concurrent use by different
// workers.
type blockTrainer struct {
	Params  Params
	Data    *numa.Replicas[*onevsall.Data]
	blocks  [][]int32
	scratch *numa.PerWorker[*labelScratch]
	// The rows of each domain's data in the solver's order, built by the
	// domain's first worker to need them.
	rows     []*sortedRows
	rowsOnce []sync.Once
	// labels deals the labels of the units being trained to their workers
	// and to the workers that help them.
	labels *onevsall.Labels
}

// newBlockTrainer prepares a trainer for params (resolved) over the data
// replicas, built with params.Preprocess, for the workers of pool.
func newBlockTrainer(p Params, data *numa.Replicas[*onevsall.Data], pool *numa.Pool) *blockTrainer {
	t := &blockTrainer{Params: p, Data: data, blocks: onevsall.Blocks(data.Get(0).LabelCounts(), p.LabelsPerUnit, onevsall.EqualCost),
		rows: make([]*sortedRows, data.Len()), rowsOnce: make([]sync.Once, data.Len())}
	t.scratch = numa.NewPerWorker(pool, func(w numa.Worker) *labelScratch {
		d := data.Get(w.Domain)
		t.rowsOnce[w.Domain].Do(func() { t.rows[w.Domain] = newSortedRows(&d.X, biasColumn(d)) })
		return t.newScratch(d, t.rows[w.Domain])
	})
	t.labels = onevsall.NewLabels(pool, t.trainInto)
	return t
}

// Units returns the number of work units, label blocks.
func (t *blockTrainer) Units() int { return len(t.blocks) }

// Block returns the labels of unit u. The slice must not be modified.
func (t *blockTrainer) Block(u int) []int32 { return t.blocks[u] }

// Stats returns the optimisation statistics summed over every worker. Call
// it after training, not while workers run.
func (t *blockTrainer) Stats() labelStats {
	var s labelStats
	t.scratch.Each(func(sc *labelScratch) {
		s.Labels += sc.stats.Labels
		s.Newton += sc.stats.Newton
		s.CG += sc.stats.CG
		s.Unconverged += sc.stats.Unconverged
		s.WorkingSet += sc.stats.WorkingSet
	})
	return s
}

// labelScratch is one worker's memory, reused for every label it trains.
type labelScratch struct {
	solver *sqHinge
	w      []float64 // the label's weights, dense over the columns
	posSum []float64 // sum of the label's positive rows
	block  linear.Block
	stats  labelStats
}

// Work is the WorkFunc of DiSMEC: it trains the labels of unit, with the
// help of workers that have no unit left (t.labels), and encodes their
// pruned weights as a linear.Block.
func (t *blockTrainer) Work(w numa.Worker, unit int) ([]byte, error) {
	if err := t.Params.CheckUnit(t.Data.Get(w.Domain), t.blocks, unit); err != nil {
		return nil, err
	}
	s := t.scratch.Get(w)
	if err := t.labels.Train(w, t.blocks[unit], &s.block); err != nil {
		return nil, err
	}
	return s.block.MarshalBinary()
}

// trainInto is DiSMEC's onevsall.TrainFunc: it trains label l on worker w
// and appends its pruned weights to into.
func (t *blockTrainer) trainInto(w numa.Worker, l int32, into *linear.Block) error {
	s := t.scratch.Get(w)
	if err := t.trainLabel(t.Data.Get(w.Domain), s, l); err != nil {
		return err
	}
	into.Append(l, s.w, t.Params.Prune)
	return nil
}

// biasColumn returns the column of d's bias feature, or -1 if it has none.
func biasColumn(d *onevsall.Data) int {
	if d.Prep.Bias {
		return d.D
	}
	return -1
}

// newScratch allocates a worker's memory for training on d, whose rows in
// the solver's order are rows.
func (t *blockTrainer) newScratch(d *onevsall.Data, rows *sortedRows) *labelScratch {
	return &labelScratch{
		solver: newSqHinge(rows, t.Params.Cost, biasColumn(d)),
		w:      make([]float64, d.X.Cols),
		posSum: make([]float64, d.X.Cols),
	}
}

// trainLabel leaves the trained weights of label l in s.w.
func (t *blockTrainer) trainLabel(d *onevsall.Data, s *labelScratch, l int32) error {
	p := t.Params
	pos := d.Positives(l)
	n := d.X.Rows
	h := s.solver
	h.setLabel(pos)
	posSum := s.posSum
	clear(posSum)
	for _, i := range pos {
		idx, val := d.X.Row(int(i))
		for k, j := range idx {
			posSum[j] += float64(val[k])
		}
	}
	// ∇f(0) = −2C Σ_i y_i x_i = −2C (2·Σ_pos x_i − n·x̄): no pass over the data.
	var g0 float64
	for j, m := range d.Mean {
		v := 2*posSum[j] - float64(n)*m
		g0 += v * v
	}
	g0 = 2 * p.Cost * math.Sqrt(g0)
	tol := p.Eps * max(1, float64(min(len(pos), n-len(pos)))) / float64(n) * g0

	init := p.Init
	if init == initMSI && !msiWeights(d, len(pos), posSum, s.w) {
		init = initBias // the 2×2 system is singular: see msiWeights
	}
	switch init {
	case initMSI:
		h.margins(s.w)
	case initZero, initBias:
		clear(s.w)
		b := 0.0
		if init == initBias && d.Prep.Bias {
			b = biasInit(len(pos), n)
			s.w[d.D] = b
		}
		for i := range h.wx {
			h.wx[i] = b
		}
	}
	res := h.solve(s.w, len(pos), tol, p.MaxNewtonIters)
	for _, v := range s.w {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("training diverged: non-finite weight after %d Newton iterations", res.newton)
		}
	}
	s.stats.Labels++
	s.stats.Newton += int64(res.newton)
	s.stats.CG += int64(res.cg)
	if res.rounds > 0 {
		s.stats.WorkingSet++
	}
	if !res.converged {
		s.stats.Unconverged++
	}
	return nil
}

// biasInit returns the bias b minimising the loss of the weights that are
// zero but for the unregularised bias: Σ_i max(0, 1 − y_i b)² over P
// positives among n rows, minimised at b = (P − N)/n, which lies in [−1, 1].
func biasInit(P, n int) float64 {
	return float64(2*P-n) / float64(n)
}

// msiWeights sets w to the mean-separating initialisation u·p̄ + v·x̄ of a
// label with P positives whose rows sum to posSum, solving
//
//	u·‖p̄‖² + v·p̄·x̄ = s
//	u·p̄·x̄ + v·‖x̄‖² = p·s + (1−p)·t,  p = P/n
//
// (the second equation is <w, n̄> = t rewritten with x̄ = p·p̄ + (1−p)·n̄,
// which avoids forming n̄). It returns false, leaving w alone, when the
// system is singular: no positives, no negatives, or p̄ parallel to x̄ (all
// within rounding); the caller then falls back to the bias initialisation.
func msiWeights(d *onevsall.Data, P int, posSum, w []float64) bool {
	n := d.X.Rows
	if P == 0 || P == n {
		return false
	}
	invP := 1 / float64(P)
	var pp, pa, aa float64
	for j, m := range d.Mean {
		pj := posSum[j] * invP
		pp += pj * pj
		pa += pj * m
		aa += m * m
	}
	det := pp*aa - pa*pa // ≥ 0 by Cauchy–Schwarz, 0 iff p̄ ∥ x̄
	if !(det > 1e-12*pp*aa) {
		return false
	}
	frac := float64(P) / float64(n)
	f := frac*msiPositive + (1-frac)*msiNegative
	u := (msiPositive*aa - pa*f) / det
	v := (pp*f - pa*msiPositive) / det
	for j, m := range d.Mean {
		w[j] = u*posSum[j]*invP + v*m
	}
	return true
}

// Trainer is the Trainer of --algo dismec.
type Trainer struct{ p Params }

// New returns the Trainer of --algo dismec, with the default hyper-parameters.
func New() train.Trainer { return &Trainer{p: DefaultParams()} }

// Flags registers DiSMEC's hyper-parameters.
func (a *Trainer) Flags(fs *flag.FlagSet) {
	p := &a.p
	p.Params.Flags(fs)
	fs.StringVar(&p.Init, "init", p.Init, "weight initialisation: zero, bias or msi (mean-separating)")
	fs.Float64Var(&p.Eps, "eps", p.Eps, "relative gradient tolerance of the Newton iterations")
}

// Prepare checks the parameters and builds the replicas: a block of labels
// per unit.
func (a *Trainer) Prepare(env train.Env, ds *data.Dataset) (*train.Work, error) {
	p := a.p
	if err := p.Validate(); err != nil {
		return nil, err
	}
	replicas, err := numa.NewReplicas(env.Pool, func(int) (*onevsall.Data, error) { return onevsall.NewData(ds, p.Preprocess) })
	if err != nil {
		return nil, err
	}
	t := newBlockTrainer(p, replicas, env.Pool)
	if err := train.LogUntrained(env.Log, replicas.Get(0).LabelCounts()); err != nil {
		return nil, err
	}
	var selected *model.LabelRange
	if t.blocks, selected, err = train.SelectLabels(t.blocks, func(int32) float64 { return 1 }, env.Labels); err != nil {
		return nil, err
	}
	return &train.Work{Kind: linear.Kind{}, Params: p, Units: t.Units(), Unit: t.Work, Help: t.labels.Help, Schedule: onevsall.Schedule,
		Weight: func(u int) int { return len(t.Block(u)) }, Range: selected,
		// Every rank reports its own labels (rank 0 alone logs unless -v).
		Stats: func() map[string]float64 {
			st := t.Stats()
			return map[string]float64{"labels": float64(st.Labels), "newton_iters": float64(st.Newton), "cg_iters": float64(st.CG),
				"unconverged": float64(st.Unconverged), "working_set_labels": float64(st.WorkingSet),
				"labels_trained_helping": float64(t.labels.Helped())}
		}}, nil
}
