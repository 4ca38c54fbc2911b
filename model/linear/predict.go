package linear

import (
	"fmt"
	"io"
	"slices"
	"sync/atomic"

	"xmc/data"
	"xmc/model"
	"xmc/numa"
)

// Model is a one-vs-all linear model, or the part of one held by a rank:
// the score of label l on an instance x is w_l·x, with x preprocessed as the
// training rows were (see [Preprocess]). The weights are kept
// feature-major (for each feature, the labels using it and their weights),
// so that scoring a sparse row touches only the weights of its features;
// the bias column is kept apart as a per-label base score.
type Model struct {
	// D is the number of features of the data (without the bias column)
	// and L the number of labels of the whole model.
	D, L int
	// Prep is the preprocessing applied to rows before scoring.
	Prep Preprocess

	labels    []int32   // global id of each local label, increasing
	colStart  []int64   // D+1 offsets into colLabel/colWeight
	colLabel  []int32   // local label of each weight, increasing per feature
	colWeight []float32 // the weights
	base      []float64 // per local label: its bias weight, 0 without bias
	byBase    []int32   // local labels in rank order of their base score
	nnz       int64
}

// New builds the scoring index of a linear model over D features and
// L labels from its label blocks (one or several units, each label in at
// most one block). It checks every label against [0, L) and every column
// against [0, prep.Cols(D)).
func New(D, L int, prep Preprocess, blocks []*Block) (*Model, error) {
	if D < 0 || L < 0 {
		return nil, fmt.Errorf("linear model: negative dimensions D=%d L=%d", D, L)
	}
	cols := prep.Cols(D)
	type ref struct {
		label    int32
		block, r int32
	}
	var refs []ref
	for bi, b := range blocks {
		if err := b.Check(L, cols); err != nil {
			return nil, err
		}
		for r, l := range b.Labels {
			refs = append(refs, ref{l, int32(bi), int32(r)})
		}
	}
	slices.SortFunc(refs, func(a, b ref) int { return int(a.label) - int(b.label) })
	m := &Model{D: D, L: L, Prep: prep, labels: make([]int32, len(refs)),
		colStart: make([]int64, D+1), base: make([]float64, len(refs))}
	for i, rf := range refs {
		if i > 0 && rf.label == refs[i-1].label {
			return nil, fmt.Errorf("%w: label %d appears in two blocks", errLinearCorrupt, rf.label)
		}
		m.labels[i] = rf.label
	}
	// Count the weights of every feature, then fill the columns in local
	// label order so that each column lists its labels in increasing order.
	for _, rf := range refs {
		feat, _ := blocks[rf.block].Row(int(rf.r))
		for _, j := range feat {
			if int(j) < D {
				m.colStart[j+1]++
			}
		}
	}
	for j := range D {
		m.colStart[j+1] += m.colStart[j]
	}
	m.nnz = m.colStart[D]
	m.colLabel = make([]int32, m.nnz)
	m.colWeight = make([]float32, m.nnz)
	next := slices.Clone(m.colStart[:D])
	for i, rf := range refs {
		feat, w := blocks[rf.block].Row(int(rf.r))
		for q, j := range feat {
			if int(j) == D { // only with prep.Bias: the bias column
				m.base[i] = float64(w[q])
				m.nnz++
				continue
			}
			m.colLabel[next[j]] = int32(i)
			m.colWeight[next[j]] = w[q]
			next[j]++
		}
	}
	// Labels that no feature of a row touches score their base alone; the
	// best of them are found by walking this order.
	m.byBase = make([]int32, len(refs))
	for i := range m.byBase {
		m.byBase[i] = int32(i)
	}
	slices.SortFunc(m.byBase, func(a, b int32) int {
		return model.CompareRank(model.Scored{Label: m.labels[a], Score: float32(m.base[a])}, model.Scored{Label: m.labels[b], Score: float32(m.base[b])})
	})
	return m, nil
}

// Decode decodes encoded label blocks (nil entries, units not held,
// are skipped) and builds the model they form, as a rank does with the
// units it trained before scoring a test set.
func Decode(D, L int, prep Preprocess, units [][]byte) (*Model, error) {
	var blocks []*Block
	for u, b := range units {
		if b == nil {
			continue
		}
		blk := new(Block)
		if err := blk.UnmarshalBinary(b); err != nil {
			return nil, fmt.Errorf("unit %d: %w", u, err)
		}
		blocks = append(blocks, blk)
	}
	return New(D, L, prep, blocks)
}

// Labels returns the labels this model (or shard) holds, in increasing
// order. The slice must not be modified.
func (m *Model) Labels() []int32 { return m.labels }

// NNZ returns the number of stored weights, bias weights included.
func (m *Model) NNZ() int64 { return m.nnz }

// linearScratch is one goroutine's prediction memory.
type linearScratch struct {
	acc  []float64 // per local label, zero between rows
	mark []uint8   // per local label: 1 if touched by the current row
	// touched lists the labels the row touches, in order of first touch;
	// it holds every label and one more slot, which topRow writes before
	// it knows whether the label is new.
	touched []int32
	top     model.Top
}

// newLinearScratch returns a worker's scratch for a model of l labels.
func newLinearScratch(l int) *linearScratch {
	return &linearScratch{acc: make([]float64, l), mark: make([]uint8, l), touched: make([]int32, l+1)}
}

// linearBlockRows is the number of rows a worker takes at a time.
const linearBlockRows = 256

// topRow returns the top k of row (idx, val) among this model's labels, in
// rank order, in s.top's buffer: the best of every label the row's features
// touch and of the k best of the others, which score their base alone.
func (m *Model) topRow(idx []int32, val []float32, k int, s *linearScratch) []model.Scored {
	scale := m.Prep.Scale(val)
	// Without a branch on whether a label was touched before, which the
	// processor mispredicts: every label is written at the end of
	// touched, which only grows if the label is new.
	touched, mark, acc := s.touched[:cap(s.touched)], s.mark, s.acc
	nt := 0
	for q, j := range idx {
		// Scaled and rounded as Preprocess.Apply scaled training rows.
		v := float64(data.ScaleValue(val[q], scale))
		lo, hi := m.colStart[j], m.colStart[j+1]
		labels, weights := m.colLabel[lo:hi], m.colWeight[lo:hi]
		weights = weights[:len(labels)]
		for e, l := range labels {
			touched[nt] = l
			nt += int(1 - mark[l])
			mark[l] = 1
			acc[l] += v * float64(weights[e])
		}
	}
	s.touched = touched[:nt]
	s.top.Reset(k)
	for _, l := range s.touched {
		s.top.Push(model.Scored{Label: m.labels[l], Score: float32(s.acc[l] + m.base[l])})
		s.acc[l] = 0
	}
	added := 0
	for _, l := range m.byBase {
		if added == k {
			break
		}
		if s.mark[l] == 0 {
			s.top.Push(model.Scored{Label: m.labels[l], Score: float32(m.base[l])})
			added++
		}
	}
	for _, l := range s.touched {
		s.mark[l] = 0
	}
	return s.top.Sorted()
}

// forRows calls row(i, top) for every row i of x, with the row's top k,
// on the pool's workers, blocks of rows at a time, each worker with
// scratch it allocates itself; top is valid during the call only.
func (m *Model) forRows(x *data.CSR, k int, pool *numa.Pool, row func(i int, top []model.Scored)) error {
	if err := model.CheckInput(x, m.D, k); err != nil {
		return err
	}
	var next atomic.Int64
	return pool.Run(func(numa.Worker) error {
		s := newLinearScratch(len(m.labels))
		for {
			lo := int(next.Add(linearBlockRows)) - linearBlockRows
			if lo >= x.Rows {
				return nil
			}
			for i := lo; i < min(lo+linearBlockRows, x.Rows); i++ {
				idx, val := x.Row(i)
				row(i, m.topRow(idx, val, k, s))
			}
		}
	})
}

// Predict returns the k best labels of every row of x among this model's
// labels, with their scores, computed by the pool's workers. Rows are
// preprocessed as the model's training rows were.
func (m *Model) Predict(x *data.CSR, k int, pool *numa.Pool) ([][]model.Scored, error) {
	out := make([][]model.Scored, x.Rows)
	err := m.forRows(x, k, pool, func(i int, top []model.Scored) { out[i] = slices.Clone(top) })
	return out, err
}

// PartialTopK returns, for every row of x, the k best labels among this
// model's labels, as sparse rows whose Sums are the scores. Ranks holding
// disjoint label shards of a model compute these, and [MergeTopK] combines
// them into exactly the result of Predict on the whole model: the global
// top k is contained in the union of the shards' top k, and each label's
// score is computed the same way whichever shard holds it.
func (m *Model) PartialTopK(x *data.CSR, k int, pool *numa.Pool) ([]model.Sparse, error) {
	out := make([]model.Sparse, x.Rows)
	err := m.forRows(x, k, pool, func(i int, top []model.Scored) {
		row := model.Sparse{Labels: make([]int32, len(top)), Sums: make([]float64, len(top))}
		for q, c := range top {
			row.Labels[q], row.Sums[q] = c.Label, float64(c.Score)
		}
		out[i] = row
	})
	return out, err
}

// Partial is PartialTopK.
func (m *Model) Partial(x *data.CSR, k int, pool *numa.Pool) ([]model.Sparse, error) {
	return m.PartialTopK(x, k, pool)
}

// Merge is MergeTopK.
func (m *Model) Merge(parts [][]byte, rows, k int) ([][]model.Scored, error) {
	return MergeTopK(parts, rows, m.L, k)
}

// Summary counts the labels and weights held.
func (m *Model) Summary() string {
	return fmt.Sprintf("%d labels, %d weights (%.1f per label)", len(m.labels), m.nnz, float64(m.nnz)/float64(max(1, len(m.labels))))
}

// Describe writes nothing more: a linear model's Summary says it all.
func (m *Model) Describe(io.Writer) error { return nil }

// MergeTopK merges the encoded ([EncodeSums]) results of PartialTopK of
// ranks holding disjoint label shards and returns each row's k best labels.
// As every label comes from one shard, merging is [MergeSums] with one
// "tree": scores pass through float64 unchanged.
func MergeTopK(parts [][]byte, rows, L, k int) ([][]model.Scored, error) {
	return model.MergeSums(parts, rows, L, k, 1)
}
