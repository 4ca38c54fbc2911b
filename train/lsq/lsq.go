// Package lsq trains one-vs-all least squares by mini-batch gradient
// descent in synchronous rounds: the reference trainer of the runner's
// round mode, and a baseline.
package lsq

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"math"

	"xmc/data"
	"xmc/model/linear"
	"xmc/mpi"
	"xmc/numa"
	"xmc/runner"
	"xmc/train"
	"xmc/train/onevsall"
)

// Params are the hyper-parameters of one-vs-all least squares: for
// every label l, the weights minimising
//
//	(1/n)·Σ_i ½(w·x_i − y_il)² + (λ/2)·‖w‖²,  y_il ∈ {0, 1},
//
// found by mini-batch gradient descent in synchronous rounds, a batch per
// round. It is the reference trainer of the runner's round mode: label
// blocks are owned by ranks, and at the end of every epoch the ranks
// combine their blocks' losses (an Allreduce) into the step size and the
// stopping rule they all follow. Its accuracy is that of a linear
// regression baseline. Its weights are dense over the features while it
// trains (8 bytes × columns × labels per rank): a method for small label
// and feature counts.
type Params struct {
	// L2 is λ.
	L2 float64 `json:"l2"`
	// Prune drops trained weights of smaller magnitude from the model.
	Prune float64 `json:"prune"`
	// LabelsPerUnit is the number of labels per unit, a block of labels
	// whose weights one rank owns.
	LabelsPerUnit int `json:"labels_per_unit"`
	// Epochs bounds the passes over the data, BatchSize is the rows per
	// round, and Step the first step size, halved after every epoch whose
	// loss grew.
	Epochs    int     `json:"epochs"`
	BatchSize int     `json:"batch_size"`
	Step      float64 `json:"step"`
	// Tol stops training after an epoch whose loss changed by at most
	// Tol relative to it.
	Tol float64 `json:"tol"`
	// Seed orders the rows of every epoch.
	Seed uint64 `json:"seed"`
	linear.Preprocess
}

// DefaultParams returns the defaults: at most 30 epochs of batches of
// 256 rows, λ = 1e-5, normalised rows and a bias feature, and step 1, which
// is stable for such rows: the batch loss's curvature is at most
// max ‖x‖² = 2.
func DefaultParams() Params {
	return Params{L2: 1e-5, Prune: 1e-3, LabelsPerUnit: 16, Epochs: 30, BatchSize: 256, Step: 1, Tol: 1e-4,
		Preprocess: linear.Preprocess{Normalize: true, Bias: true}}
}

// Validate reports the first parameter out of its range.
func (p Params) Validate() error {
	switch {
	case !(p.L2 >= 0) || math.IsInf(p.L2, 0):
		return fmt.Errorf("--l2 must be 0 or more, got %v", p.L2)
	case !(p.Prune >= 0) || math.IsInf(p.Prune, 0):
		return fmt.Errorf("--prune must be 0 or more, got %v", p.Prune)
	case p.LabelsPerUnit < 1:
		return fmt.Errorf("--labels-per-unit must be at least 1, got %d", p.LabelsPerUnit)
	case p.Epochs < 1:
		return fmt.Errorf("--epochs must be at least 1, got %d", p.Epochs)
	case p.BatchSize < 1:
		return fmt.Errorf("--batch-size must be at least 1, got %d", p.BatchSize)
	case !(p.Step > 0) || math.IsInf(p.Step, 0):
		return fmt.Errorf("--step must be a positive number, got %v", p.Step)
	case !(p.Tol >= 0) || math.IsInf(p.Tol, 0):
		return fmt.Errorf("--tol must be 0 or more, got %v", p.Tol)
	}
	return nil
}

// maxBytes bounds the dense weights one rank of lsq may hold.
const maxBytes = 4 << 30

// Trainer is the Trainer of --algo lsq.
type Trainer struct{ p Params }

// New returns the Trainer of --algo lsq, with the default hyper-parameters.
func New() train.Trainer { return &Trainer{p: DefaultParams()} }

// Flags registers the least-squares hyper-parameters.
func (a *Trainer) Flags(fs *flag.FlagSet) {
	p := &a.p
	fs.Float64Var(&p.L2, "l2", p.L2, "weight λ of the L2 regulariser")
	fs.Float64Var(&p.Prune, "prune", p.Prune, "drop trained weights of smaller magnitude")
	fs.IntVar(&p.LabelsPerUnit, "labels-per-unit", p.LabelsPerUnit, "labels per unit (a block of labels one rank owns)")
	fs.IntVar(&p.Epochs, "epochs", p.Epochs, "passes over the data at most")
	fs.IntVar(&p.BatchSize, "batch-size", p.BatchSize, "rows per round (mini-batch)")
	fs.Float64Var(&p.Step, "step", p.Step, "first step size; halved after an epoch whose loss grew")
	fs.Float64Var(&p.Tol, "tol", p.Tol, "stop after an epoch whose loss changed by at most this, relative")
	train.PreprocessFlags(fs, &p.Preprocess, true)
}

// Prepare checks the parameters and builds the replicas and the round
// trainer.
func (a *Trainer) Prepare(env train.Env, ds *data.Dataset) (*train.Work, error) {
	p := a.p
	p.Seed = env.Seed
	if err := p.Validate(); err != nil {
		return nil, err
	}
	// The weights are dense while training: refuse what would not fit
	// rather than fail later.
	perRank := (ds.L() + env.Comm.Size() - 1) / env.Comm.Size()
	if bytes := 8 * float64(p.Cols(ds.D())) * float64(perRank); bytes > maxBytes {
		return nil, fmt.Errorf("lsq keeps its weights dense: %.1f GiB per rank for D=%d and %d labels per rank (at most %d GiB); it is a method for small problems: use dismec or ppdsparse",
			bytes/(1<<30), ds.D(), perRank, maxBytes>>30)
	}
	replicas, err := numa.NewReplicas(env.Pool, func(int) (*rowData, error) {
		d, err := onevsall.NewData(ds, p.Preprocess)
		if err != nil {
			return nil, err
		}
		return &rowData{Data: d, Y: ds.Y.Clone()}, nil
	})
	if err != nil {
		return nil, err
	}
	t := newRoundTrainer(p, replicas, env.Pool, env.Comm)
	if err := train.LogUntrained(env.Log, replicas.Get(0).LabelCounts()); err != nil {
		return nil, err
	}
	return &train.Work{Kind: linear.Kind{}, Params: p, Units: len(t.blocks), Rounds: t,
		MaxRounds: p.Epochs * t.order.Batches, RoundName: "round",
		Done: func(log *slog.Logger) {
			log.Info("lsq", "epochs", t.epochs, "loss", fmt.Sprintf("%.6g", t.loss), "step", t.step)
		}}, nil
}

// rowData is a NUMA domain's copy of the training data: the one-vs-all
// rows, and the labels by row.
type rowData struct {
	*onevsall.Data
	Y data.CSR
}

// roundTrainer is the runner.RoundTrainer of Params.
type roundTrainer struct {
	p       Params
	data    *numa.Replicas[*rowData]
	pool    *numa.Pool
	comm    mpi.Comm
	blocks  [][]int32
	n, cols int

	owned   []int
	units   []*unitState // per owned unit
	scratch *numa.PerWorker[*batchScratch]
	order   *train.EpochBatches // the rows of every round

	// The shared state, the same on every rank.
	step   float64 // step size
	loss   float64 // mean loss of the last epoch (+Inf before the first)
	epochs int     // epochs completed
}

// unitState is one block of labels: weights scale·v, v dense feature-major
// (v[j·k + c] is label c's weight on column j), and the loss summed over
// the epoch's batches so far.
type unitState struct {
	labels []int32
	scale  float64
	v      []float64
	loss   float64
}

// batchScratch is a worker's memory: per label of the block, its column,
// and the residuals of the batch's rows.
type batchScratch struct {
	col []int32   // per label of the data: its column in the block, or -1
	res []float64 // batch rows × block labels
}

func newRoundTrainer(p Params, data *numa.Replicas[*rowData], pool *numa.Pool, comm mpi.Comm) *roundTrainer {
	d := data.Get(0)
	t := &roundTrainer{p: p, data: data, pool: pool, comm: comm, blocks: train.LabelBlocks(d.LabelCounts(), p.LabelsPerUnit),
		n: d.X.Rows, cols: d.X.Cols}
	t.order = train.NewEpochBatches(t.n, p.BatchSize, p.Seed)
	t.scratch = numa.NewPerWorker(pool, func(numa.Worker) *batchScratch {
		s := &batchScratch{col: make([]int32, d.L), res: make([]float64, p.BatchSize*p.LabelsPerUnit)}
		for l := range s.col {
			s.col[l] = -1
		}
		return s
	})
	return t
}

// Start sets up the owned units, fresh or from their saved state.
func (t *roundTrainer) Start(units []int, _ int, state [][]byte, shared []byte) error {
	t.owned = units
	t.units = make([]*unitState, len(units))
	t.step, t.loss, t.epochs = t.p.Step, math.Inf(1), 0
	for i, u := range units {
		b := t.blocks[u]
		lu := &unitState{labels: b, scale: 1, v: make([]float64, t.cols*len(b))}
		if state != nil {
			f, err := float64s(state[i], 2+len(lu.v))
			if err != nil {
				return fmt.Errorf("unit %d: %w", u, err)
			}
			lu.scale, lu.loss = f[0], f[1]
			copy(lu.v, f[2:])
		}
		t.units[i] = lu
	}
	if shared != nil {
		var s sharedState
		if err := json.Unmarshal(shared, &s); err != nil {
			return fmt.Errorf("shared state: %w", err)
		}
		t.step, t.loss, t.epochs = s.Step, s.Loss, s.Epochs
		if s.Loss < 0 {
			t.loss = math.Inf(1)
		}
	}
	return nil
}

// sharedState is the shared state as saved; a Loss below 0 stands for +Inf,
// which JSON cannot hold. Floats round-trip exactly through JSON.
type sharedState struct {
	Step   float64 `json:"step"`
	Loss   float64 `json:"loss"`
	Epochs int     `json:"epochs"`
}

// float64s decodes n little-endian float64s.
func float64s(b []byte, n int) ([]float64, error) {
	if len(b) != 8*n {
		return nil, fmt.Errorf("state of %d bytes, want %d", len(b), 8*n)
	}
	f := make([]float64, n)
	for i := range f {
		f[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return f, nil
}

// Round takes one gradient step of every owned block on round r's batch,
// the blocks spread over the rank's workers. After the epoch's last batch
// the ranks sum the blocks' losses and all take the same decision.
func (t *roundTrainer) Round(ctx context.Context, r int, team *numa.Team) (bool, error) {
	rows := t.order.Rows(r)
	err := team.For(len(t.units), 1, func(w numa.Worker, i, _ int) {
		d, s := t.data.Get(w.Domain), t.scratch.Get(w)
		t.step1(d, s, t.units[i], rows)
	})
	if err != nil || !t.order.LastOfEpoch(r) {
		return false, err
	}
	return t.endEpoch()
}

// step1 takes one step of unit lu on the batch rows: the residuals at the
// current weights first, then w ← (1 − ηλ)·w − η·g with g the batch mean
// of residual × row, the decay applied to the scale alone.
func (t *roundTrainer) step1(d *rowData, s *batchScratch, lu *unitState, rows []int32) {
	k := len(lu.labels)
	for c, l := range lu.labels {
		s.col[l] = int32(c)
	}
	res := s.res[:len(rows)*k]
	for q, i := range rows {
		r := res[q*k : (q+1)*k]
		clear(r)
		idx, val := d.X.Row(int(i))
		for e, j := range idx {
			x := float64(val[e]) * lu.scale
			w := lu.v[int(j)*k : (int(j)+1)*k]
			for c := range r {
				r[c] += x * w[c]
			}
		}
		labels, _ := d.Y.Row(int(i))
		for _, l := range labels {
			if c := s.col[l]; c >= 0 {
				r[c]--
			}
		}
		for _, e := range r {
			lu.loss += e * e / 2
		}
	}
	for _, l := range lu.labels {
		s.col[l] = -1
	}
	lu.scale *= 1 - t.step*t.p.L2
	eta := t.step / (float64(len(rows)) * lu.scale)
	for q, i := range rows {
		r := res[q*k : (q+1)*k]
		idx, val := d.X.Row(int(i))
		for e, j := range idx {
			x := eta * float64(val[e])
			w := lu.v[int(j)*k : (int(j)+1)*k]
			for c := range w {
				w[c] -= x * r[c]
			}
		}
	}
	if lu.scale < 1e-6 { // fold the scale back before it underflows the steps
		for j := range lu.v {
			lu.v[j] *= lu.scale
		}
		lu.scale = 1
	}
}

// endEpoch sums the blocks' epoch losses over the ranks, each block's slot
// set by its owner alone so that the sum is exact on any number of ranks,
// halves the step if the loss grew, and decides whether to stop.
func (t *roundTrainer) endEpoch() (bool, error) {
	losses := make([]float64, len(t.blocks))
	for i, u := range t.owned {
		losses[u] = t.units[i].loss
		t.units[i].loss = 0
	}
	if err := t.comm.AllreduceFloat64(losses, mpi.Sum); err != nil {
		return false, err
	}
	total := 0.0
	for _, l := range losses {
		total += l
	}
	total /= float64(t.n)
	if total > t.loss {
		t.step /= 2
	}
	done := math.Abs(t.loss-total) <= t.p.Tol*total
	t.loss = total
	t.epochs++
	return done, nil
}

// Save returns each owned unit's scale, loss and weights, and the shared
// state.
func (t *roundTrainer) Save() ([][]byte, []byte, error) {
	state := make([][]byte, len(t.units))
	for i, lu := range t.units {
		b := make([]byte, 0, 8*(2+len(lu.v)))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(lu.scale))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(lu.loss))
		for _, f := range lu.v {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
		}
		state[i] = b
	}
	s := sharedState{Step: t.step, Loss: t.loss, Epochs: t.epochs}
	if math.IsInf(s.Loss, 1) {
		s.Loss = -1
	}
	shared, err := json.Marshal(s)
	return state, shared, err
}

// Finish encodes every owned unit as a linear.Block, the units on the
// team's workers.
func (t *roundTrainer) Finish(team *numa.Team) ([]runner.Result, error) {
	weights := numa.NewPerWorker(t.pool, func(numa.Worker) []float64 { return make([]float64, t.cols) })
	return train.EncodeUnits(team, t.owned, func(wk numa.Worker, i int) ([]byte, error) {
		w := weights.Get(wk)
		lu := t.units[i]
		var b linear.Block
		k := len(lu.labels)
		for c, l := range lu.labels {
			for j := range w {
				w[j] = lu.scale * lu.v[j*k+c]
				if math.IsNaN(w[j]) || math.IsInf(w[j], 0) {
					return nil, fmt.Errorf("label %d: training diverged: non-finite weight (lower --step)", l)
				}
			}
			b.Append(l, w, t.p.Prune)
		}
		return b.MarshalBinary()
	})
}
