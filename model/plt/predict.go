package plt

import (
	"fmt"
	"io"
	"math"
	"sync/atomic"

	"xmc/data"
	"xmc/model"
	"xmc/model/linear"
	"xmc/numa"
)

// Model is a label tree model, or the trees of one that a rank holds.
type Model struct {
	// D and L are the data's features and labels.
	D, L int
	// Prep is the preprocessing training applied to rows (normalised, a
	// bias column at D): prediction applies it to every test row.
	Prep linear.Preprocess
	// Loss is the loss the nodes were trained with, which turns their
	// margins into probabilities.
	Loss Loss
	// Trees are the trees held and TotalTrees the whole model's count: a
	// label's score is its probabilities' sum over the trees held divided
	// by TotalTrees, so that the parts' partial sums add up to the mean.
	Trees      []*Tree
	TotalTrees int
}

// AddTree decodes an encoded tree, checks it against the model's labels
// and columns, and adds it.
func (m *Model) AddTree(b []byte) error {
	t := new(Tree)
	if err := t.decode(b, m.L); err != nil {
		return err
	}
	if t.Cols != m.Prep.Cols(m.D) {
		return fmt.Errorf("%w: %d weight columns, want %d", errCorrupt, t.Cols, m.Prep.Cols(m.D))
	}
	t.index()
	m.Trees = append(m.Trees, t)
	return nil
}

// probabilityStep is the grid to which a tree's label probabilities are
// rounded before they are added up: sums of multiples of 2^-30 below 2^23
// are exact in float64 in any order, so that a model's scores are the same
// bits whichever ranks hold which trees. A probability below half a step
// counts as 0.
const probabilityStep = 1.0 / (1 << 30)

// searchRows is the number of rows a worker takes at a time.
const searchRows = 64

// candidate is a node reached by the search with the product of the
// probabilities along its path.
type candidate struct {
	p    float64
	node int32
}

// frontier is the search's max-heap of candidates, ties broken by node.
// It is written here rather than with container/heap, whose interface
// boxes every candidate pushed into an allocation.
type frontier []candidate

// before reports whether a leaves the frontier before b.
func before(a, b candidate) bool { return a.p > b.p || (a.p == b.p && a.node < b.node) }

func (f *frontier) push(c candidate) {
	h := append(*f, c)
	for i := len(h) - 1; i > 0; {
		up := (i - 1) / 2
		if !before(h[i], h[up]) {
			break
		}
		h[i], h[up] = h[up], h[i]
		i = up
	}
	*f = h
}

func (f *frontier) pop() candidate {
	h := *f
	top, n := h[0], len(h)-1
	h[0] = h[n]
	h = h[:n]
	for i := 0; ; {
		best, l, r := i, 2*i+1, 2*i+2
		if l < n && before(h[l], h[best]) {
			best = l
		}
		if r < n && before(h[r], h[best]) {
			best = r
		}
		if best == i {
			break
		}
		h[i], h[best] = h[best], h[i]
		i = best
	}
	*f = h
	return top
}

// scratch is one worker's prediction memory.
type scratch struct {
	idx     []int32 // the row's columns, increasing, and their values
	val     []float64
	margin  []float64 // the margins of a node's children
	queue   frontier
	acc     []float64 // per label, the row's sum of probabilities; zero between rows
	touched []int32
	top     model.Top
}

func (m *Model) newScratch() *scratch {
	return &scratch{acc: make([]float64, m.L)}
}

// search adds to s.acc the probabilities of the tree's k most probable
// labels for the row in s.idx, s.val, found best first: a node leaves the
// frontier in decreasing order of its path's probability, which no
// descendant exceeds, so the first k leaves to leave it are the k most
// probable. loss turns the nodes' margins into probabilities.
func (t *Tree) search(k int, loss Loss, s *scratch) {
	q := s.queue[:0]
	push := func(v int32, p float64) {
		lo, hi := t.Children(v)
		for c, m := range t.margins(v, lo, hi, s) {
			q.push(candidate{p: p * loss.probability(m), node: lo + int32(c)})
		}
	}
	push(0, 1)
	for found := 0; found < k && len(q) > 0; {
		c := q.pop()
		if l := t.Label[c.node]; l >= 0 {
			p := math.Round(c.p/probabilityStep) * probabilityStep
			if p == 0 {
				break
			}
			if s.acc[l] == 0 {
				s.touched = append(s.touched, l)
			}
			s.acc[l] += p
			found++
			continue
		}
		push(c.node, c.p)
	}
	s.queue = q[:0]
}

// row searches every tree held for the row (idx, val), leaving the sums in
// s.acc and the labels found in s.touched.
func (m *Model) row(idx []int32, val []float32, k int, s *scratch) {
	scale := m.Prep.Scale(val)
	s.idx, s.val = s.idx[:0], s.val[:0]
	for q, j := range idx {
		s.idx, s.val = append(s.idx, j), append(s.val, float64(data.ScaleValue(val[q], scale)))
	}
	if m.Prep.Bias {
		s.idx, s.val = append(s.idx, int32(m.D)), append(s.val, 1)
	}
	s.touched = s.touched[:0]
	for _, t := range m.Trees {
		t.search(k, m.Loss, s)
	}
}

// forRows calls emit(i, s) for every row i of x once the trees held were
// searched for it, on the pool's workers, each with scratch it allocates
// itself; emit must zero the sums of s.touched in s.acc.
func (m *Model) forRows(x *data.CSR, k int, pool *numa.Pool, emit func(i int, s *scratch)) error {
	if err := model.CheckInput(x, m.D, k); err != nil {
		return err
	}
	var next atomic.Int64
	return pool.Run(func(numa.Worker) error {
		s := m.newScratch()
		for {
			lo := int(next.Add(searchRows)) - searchRows
			if lo >= x.Rows {
				return nil
			}
			for i := lo; i < min(lo+searchRows, x.Rows); i++ {
				idx, val := x.Row(i)
				m.row(idx, val, k, s)
				emit(i, s)
			}
		}
	})
}

// Predict returns every row's k best labels, by their mean probability
// over the trees of the k most probable labels of each tree.
func (m *Model) Predict(x *data.CSR, k int, pool *numa.Pool) ([][]model.Scored, error) {
	out := make([][]model.Scored, x.Rows)
	err := m.forRows(x, k, pool, func(i int, s *scratch) {
		out[i] = model.TopOfSums(&s.top, s.acc, s.touched, m.TotalTrees, k)
	})
	return out, err
}

// Partial returns every row's sums of probabilities over the trees held,
// for the k most probable labels of each tree: sparse, at most k labels a
// tree.
func (m *Model) Partial(x *data.CSR, k int, pool *numa.Pool) ([]model.Sparse, error) {
	out := make([]model.Sparse, x.Rows)
	err := m.forRows(x, k, pool, func(i int, s *scratch) { out[i] = model.SparseOfSums(s.acc, s.touched) })
	return out, err
}

// Merge adds the parts' sums and returns each row's k best labels: the
// same scores, bit for bit, as Predict on the whole model.
func (m *Model) Merge(parts [][]byte, rows, k int) ([][]model.Scored, error) {
	return model.MergeSums(parts, rows, m.L, k, m.TotalTrees)
}

// Summary gives the trees, nodes and weights held.
func (m *Model) Summary() string {
	nodes, nnz := 0, int64(0)
	for _, t := range m.Trees {
		nodes += t.Nodes()
		nnz += t.NNZ()
	}
	return fmt.Sprintf("%d trees, %d nodes, %d weights", len(m.Trees), nodes, nnz)
}

// Describe writes a line per tree: its nodes, leaves, depth and weights.
func (m *Model) Describe(w io.Writer) error {
	for i, t := range m.Trees {
		leaves, depth := 0, 0
		level := make([]int32, t.Nodes())
		for v := range t.Nodes() {
			lo, hi := t.Children(int32(v))
			if lo == hi {
				leaves++
			}
			for c := lo; c < hi; c++ {
				level[c] = level[v] + 1
				depth = max(depth, int(level[c]))
			}
		}
		if _, err := fmt.Fprintf(w, "tree %d: %d nodes, %d leaves, depth %d, %d weights\n", i, t.Nodes(), leaves, depth, t.NNZ()); err != nil {
			return err
		}
	}
	return nil
}
