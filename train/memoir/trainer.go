package memoir

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"math"

	"xmc/data"
	"xmc/mips"
	"xmc/mpi"
	"xmc/numa"
	"xmc/train"
)

// classBlock is a class block a rank owns: its classes' vectors v (the
// weights are s·v, s the trainer's shared scale), their index, and the sum
// of their squared norms.
type classBlock struct {
	unit    int
	classes []int32
	vec     *mips.Vectors
	lsh     *mips.LSH   // with --index lsh
	graph   *mips.Graph // with --index graph
	sq      float64
	// paid is, per class, the cumulative ℓ1 penalty it has paid (see
	// Regularizer).
	paid []float64
	// zeroFrom is the lowest class that may still have a zero vector:
	// zero vectors score 0, and the lowest one not a label of the row is
	// the rival when no vector scores more.
	zeroFrom int
	// best is, with --heldout, the vectors of the best epoch (weights
	// bestScale·v).
	best *mips.Vectors
}

// Entry kinds of MEMOIR's reports.
const (
	kindRival = iota // the rank's best class that is not a label of the row
	kindLabel        // the score of a label of the row
	kindNorm         // a block's squared norm (see normRow)
)

// roundTrainer is the runner.RoundTrainer of Params.
type roundTrainer struct {
	p      Params
	comm   mpi.Comm
	pool   *numa.Pool
	log    *slog.Logger
	x, y   data.CSR // the preprocessed rows and their labels
	blocks [][]int32
	order  *train.EpochBatches
	hasher *mips.Hasher

	mine    []*classBlock // the owned blocks, in unit order
	blockOf []int32       // per class: its place in mine, or −1
	slot    []int32       // per class: its place in its block

	// The shared state, the same on every rank.
	scale float64 // s: the weights are s·v
	// projectDue is set while a round's ℓ2 projection waits for its
	// blocks' norms, which the next round's reports bring (see project).
	projectDue bool
	owed       float64 // the cumulative ℓ1 penalty Σ λη_t
	epochs     int
	bestF1     float64 // the best held-out macro-F1 (−1 before the first)
	bestScale  float64
	sinceBest  int

	held, heldY data.CSR

	// Counters for the log and the summary; recalls holds the index's
	// recall@1 at the end of each epoch of this run.
	recalls            []epochRecall
	rounds, violations int
	// The bytes of the reports and of the steps this rank received.
	reportBytes, stepBytes int64

	// team runs the loops of the round in progress (see Round).
	team *numa.Team

	// keys holds, for an LSH index, every training row's LSH keys
	// (QueryKeyCount a row, row after row), computed at the run's first
	// round (computeKeys); nil before, and for the other indexes.
	keys []int32

	// Scratch.
	searchers *numa.PerWorker[*searcher]
	// proj holds, for an LSH index, the projections of the round's rows
	// with a step on this rank's classes, at their places (projectSteps);
	// stepRows lists those places.
	proj     []float64
	stepRows []int32
	msg      []byte
	// Per round (see search): the scores of the labels this rank owns,
	// those of row q from labelAt[q]; the rows' places in the order they
	// are dealt; and the best class of each (row, owned block) pair.
	labelAt    []int32
	labelScore []float64
	dealt      train.RowOrder
	best       []blockFind
	toDeciders train.RowShares // the reports of each rank's share of a round's rows, or of an epoch's end
	stepGather train.AllGather // a round's steps
	gather     train.AllGather // the held-out rows' predictions
	stepMsg    []byte          // the steps, or the held-out predictions, this rank decided
	entries    []train.RoundEntry
	steps      []classStep
	norms      []float64 // every block's squared norm, by unit
	normMsg    []byte    // the owned blocks' norms, as report entries
}

// epochRecall is the recall@1 of the index at the end of an epoch.
type epochRecall struct {
	epoch  int
	recall float64
}

// classStep is a class's change of a round: v_class += coef · x_row.
type classStep struct {
	q     int32
	class int32
	coef  float64
}

// searcher is a worker's scratch.
type searcher struct {
	// scored and searched count the classes the index scored and its
	// searches, for the log.
	scored, searched int64
	lsh              mips.Scratch
	graph            mips.GraphScratch
	exact            mips.InvertedScratch
	skip             []int
	dproj            []float64
	keys             []int // the LSH buckets of the row searched
	di               []int32
	dv               []float64
	shrinkDP         []float64
}

// Start makes the owned blocks, fresh or from their saved state.
func (t *roundTrainer) Start(units []int, _ int, state [][]byte, shared []byte) error {
	t.blockOf = make([]int32, t.y.Cols)
	t.slot = make([]int32, t.y.Cols)
	for l := range t.blockOf {
		t.blockOf[l] = -1
	}
	t.mine = t.mine[:0]
	for q, u := range units {
		b := &classBlock{unit: u, classes: t.blocks[u], paid: make([]float64, len(t.blocks[u]))}
		for s, l := range b.classes {
			t.blockOf[l], t.slot[l] = int32(q), int32(s)
		}
		if state == nil {
			b.vec = mips.NewVectors(len(b.classes))
			switch t.p.Index {
			case "lsh":
				b.lsh = mips.NewLSH(t.hasher, b.vec)
			case "graph":
				b.graph = mips.NewGraph(b.vec, t.p.Degree, t.p.Ef)
			}
		} else if err := t.decodeBlock(b, state[q]); err != nil {
			return fmt.Errorf("unit %d: %w", u, err)
		}
		t.mine = append(t.mine, b)
	}
	t.scale, t.owed, t.epochs, t.bestF1, t.bestScale, t.sinceBest = 1, 0, 0, -1, 1, 0
	t.searchers = numa.NewPerWorker(t.pool, func(numa.Worker) *searcher {
		return &searcher{dproj: make([]float64, t.hasher.Projections()), shrinkDP: make([]float64, t.hasher.Projections())}
	})
	if shared != nil {
		if len(shared) != 48 {
			return fmt.Errorf("memoir: shared state of %d bytes, want 48", len(shared))
		}
		f := func(i int) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(shared[8*i:])) }
		n := func(i int) int { return int(binary.LittleEndian.Uint64(shared[8*i:])) }
		t.scale, t.owed, t.epochs, t.bestF1, t.bestScale, t.sinceBest = f(0), f(1), n(2), f(3), f(4), n(5)
	}
	return nil
}

// eta is the step of round r.
func (t *roundTrainer) eta(r int) float64 { return t.p.Eta0 / (1 + t.p.EtaStep*float64(r)) }
