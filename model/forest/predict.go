package forest

import (
	"fmt"
	"io"
	"sync"
	"text/tabwriter"

	"xmc/data"
	"xmc/model"
	"xmc/numa"
)

// Model is a CRAFTML forest, or the part of one held by a rank. Its score
// for label l on an instance is the sum over its trees of the mean label
// vector of the leaf the instance reaches, divided by TotalTrees (the size of
// the whole forest, so that shards' partial sums add up to the average).
type Model struct {
	D, L       int
	TotalTrees int
	Trees      []*PackedTree

	// tables, built by the first prediction, serve the later ones: a
	// test set scored in batches builds them once.
	tablesMu   sync.Mutex
	tables     *projectionTables
	tablesCols int
}

// AddTree checks the encoded tree b (see Tree.MarshalBinary) and adds it to
// the forest, which keeps b: it must not change afterwards.
func (f *Model) AddTree(b []byte) error {
	t, err := PackTree(b)
	if err != nil {
		return err
	}
	if err := t.CheckLabels(f.L); err != nil {
		return err
	}
	f.Trees = append(f.Trees, t)
	f.tablesMu.Lock()
	f.tables = nil // a table per tree
	f.tablesMu.Unlock()
	return nil
}

// forestScratch is one goroutine's prediction memory, reused across blocks
// of rows.
type forestScratch struct {
	// acc is dense over labels and zero between rows. It is float64 because
	// a sum of float32 leaf values (counts over leaf sizes below 2^23) is
	// then exact whatever the order, so scores do not depend on how trees
	// were spread over ranks.
	acc     []float64
	touched []int32
	top     model.Top
	index   *SplitIndex
	buckets []int32   // projected non-zeros of the block's rows, row after row
	signed  []float32 // their signed values
	rowOff  []int     // start of each block row in buckets; one more at the end
	order   []int32   // block rows, partitioned by node during routing
	tmp     []int32
	child   []int32 // routed child of each block row at the current node
	counts  []int32
	scores  []float32
	tables  *projectionTables
}

// projectionTables hold every tree's feature projection as lookup tables,
// shared read-only by the workers of one prediction, so that a non-zero is
// projected by two loads instead of two hashes.
type projectionTables struct {
	buckets [][]int32
	signs   [][]float32
}

// maxTableEntries bounds the size of projection tables (trees × D entries
// of 8 bytes): beyond it prediction hashes each non-zero instead.
const maxTableEntries = 32 << 20

// tablesFor returns the projection tables of d columns, made on first use
// (nil when they would be too large).
func (f *Model) tablesFor(d int) *projectionTables {
	f.tablesMu.Lock()
	defer f.tablesMu.Unlock()
	if f.tables == nil || f.tablesCols != d {
		f.tables, f.tablesCols = f.newTables(d), d
	}
	return f.tables
}

func (f *Model) newTables(d int) *projectionTables {
	if d*len(f.Trees) > maxTableEntries {
		return nil
	}
	tab := &projectionTables{buckets: make([][]int32, len(f.Trees)), signs: make([][]float32, len(f.Trees))}
	for i, t := range f.Trees {
		tab.buckets[i], tab.signs[i] = t.X.Table(d)
	}
	return tab
}

// maxPartNonzeros and maxPartRows bound the rows a worker routes together
// through a tree: their projected non-zeros (8 bytes each) and their
// bookkeeping (20 bytes a row) are its scratch, about 32 MiB (rows of the
// mean length) and at most 5 MiB; but a part may hold minPartRows rows
// whatever their non-zeros, as blocks did before parts. maxBlockLeaves
// bounds the leaves a block records, one per row and tree (4 bytes each,
// 64 MiB), shared by the workers. Loading a node's classifier costs about
// as much as routing tens of rows through it, so parts are as large as this
// allows.
const (
	maxPartNonzeros = 1 << 22
	maxPartRows     = 1 << 18
	minPartRows     = 1 << 14
	maxBlockLeaves  = 1 << 24
)

// blocking is how prediction splits the rows: blocks of parts rows × part,
// each block routed as units of one tree and one part of its rows (see
// forRows).
type blocking struct {
	part, parts int
}

// blockingFor returns the blocking of rows rows of nonzeros non-zeros in
// all over trees trees and workers workers: as many parts per block as make
// one unit per worker at least, each as large as the rows and the scratch's
// bounds allow (for rows of the mean length), so that a node is loaded once
// per part whatever the number of workers.
func blockingFor(rows int, nonzeros int64, trees, workers int) blocking {
	parts := max((workers+trees-1)/max(trees, 1), 1)
	limit := min(maxPartRows, max(maxBlockLeaves/(max(trees, 1)*parts), 1))
	if nonzeros > 0 {
		limit = min(limit, max(int(int64(rows)*maxPartNonzeros/nonzeros), minPartRows))
	}
	return blocking{part: min(max((rows+parts-1)/parts, 1), limit), parts: parts}
}

func (f *Model) newScratch(x *data.CSR, b blocking) *forestScratch {
	branch, dim := 1, 1
	for _, t := range f.Trees {
		dim = max(dim, int(t.X.Dim))
		branch = max(branch, t.maxBranch)
	}
	maxNNZ := int64(0)
	for lo := 0; lo < x.Rows; lo += b.part {
		hi := min(lo+b.part, x.Rows)
		maxNNZ = max(maxNNZ, x.Indptr[hi]-x.Indptr[lo])
	}
	return &forestScratch{
		acc: make([]float64, f.L), index: NewSplitIndex(dim),
		buckets: make([]int32, maxNNZ), signed: make([]float32, maxNNZ),
		rowOff: make([]int, b.part+1), order: make([]int32, b.part),
		tmp: make([]int32, b.part), child: make([]int32, b.part),
		counts: make([]int32, branch+1), scores: make([]float32, branch),
	}
}

// routeBlock records in leafOf[r*trees+ti] the leaf of tree ti reached by
// row lo+r of x, for every row of x[lo:hi], routing the rows together node
// by node.
func (f *Model) routeBlock(ti int, x *data.CSR, lo, hi int, s *forestScratch, leafOf []int32) {
	t := f.Trees[ti]
	n := hi - lo
	off := 0
	for r := range n {
		idx, val := x.Row(lo + r)
		s.rowOff[r] = off
		if tab := s.tables; tab != nil {
			buckets, signs := tab.buckets[ti], tab.signs[ti]
			for q, j := range idx {
				s.buckets[off+q], s.signed[off+q] = buckets[j], signs[j]*val[q]
			}
		} else {
			t.X.Project(idx, val, s.buckets[off:], s.signed[off:])
		}
		off += len(idx)
		s.order[r] = int32(r)
	}
	s.rowOff[n] = off
	type pending struct {
		node   int32
		lo, hi int
	}
	stack := []pending{{0, 0, n}}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		rows := s.order[p.lo:p.hi]
		k := t.numChildren[p.node]
		if k == 0 {
			for _, r := range rows {
				leafOf[int(r)*len(f.Trees)+ti] = p.node
			}
			continue
		}
		s.index.Load(t, p.node)
		counts := s.counts[:k+1]
		clear(counts)
		for i, r := range rows {
			c := s.index.Best(s.buckets[s.rowOff[r]:s.rowOff[r+1]], s.signed[s.rowOff[r]:s.rowOff[r+1]], s.scores)
			s.child[i] = c
			counts[c+1]++
		}
		for c := range k {
			counts[c+1] += counts[c]
		}
		for c := range k {
			if counts[c+1] > counts[c] {
				stack = append(stack, pending{t.firstChild[p.node] + c, p.lo + int(counts[c]), p.lo + int(counts[c+1])})
			}
		}
		tmp := s.tmp[:len(rows)]
		for i, r := range rows {
			tmp[counts[s.child[i]]] = r
			counts[s.child[i]]++
		}
		copy(rows, tmp)
	}
	s.index.Unload()
}

// Predict returns the k best labels of every row of x with their scores,
// computed by the pool's workers over blocks of rows.
func (f *Model) Predict(x *data.CSR, k int, pool *numa.Pool) ([][]model.Scored, error) {
	if err := f.checkInput(x); err != nil {
		return nil, err
	}
	out := make([][]model.Scored, x.Rows)
	err := f.forRows(x, pool, f.blocking(x, pool), func(s *forestScratch, i int) {
		out[i] = model.TopOfSums(&s.top, s.acc, s.touched, f.TotalTrees, k)
	})
	return out, err
}

// PartialSums returns, for every row of x, the sparse sums of the leaf
// vectors over this forest's trees. Ranks holding parts of a forest compute
// these and MergeSums adds them: exact, and the traffic is proportional to
// the labels reached, never dense in L.
func (f *Model) PartialSums(x *data.CSR, pool *numa.Pool) ([]model.Sparse, error) {
	out := make([]model.Sparse, x.Rows)
	if len(f.Trees) == 0 { // a rank that holds no tree adds nothing
		return out, nil
	}
	if err := f.checkInput(x); err != nil {
		return nil, err
	}
	err := f.forRows(x, pool, f.blocking(x, pool), func(s *forestScratch, i int) {
		out[i] = model.SparseOfSums(s.acc, s.touched)
	})
	return out, err
}

func (f *Model) checkInput(x *data.CSR) error {
	if x.Cols > f.D {
		return fmt.Errorf("data has %d features but the model was trained on %d", x.Cols, f.D)
	}
	if len(f.Trees) == 0 {
		return fmt.Errorf("forest has no trees")
	}
	return nil
}

// blocking returns the blocking of x's rows over the forest's trees and the
// pool's workers.
func (f *Model) blocking(x *data.CSR, pool *numa.Pool) blocking {
	return blockingFor(x.Rows, x.Indptr[x.Rows], len(f.Trees), len(pool.Workers()))
}

// forRows calls emit(s, i) for every row i of x, on the pool's workers,
// with the row's leaf vectors summed over the trees in s.acc (the labels
// listed in s.touched); emit must zero the entries of s.acc it read. Each
// worker has scratch it allocates itself (so the memory is local to its
// NUMA domain).
//
// The rows go in blocks, as b says. A block's leaves are found by units of
// one tree and one part of the block's rows, dealt to the workers, so that each
// node's classifier is loaded once per part: were the workers to take
// blocks of rows through every tree, each would load every node, and the
// loads, most of predicting a large forest, would grow with the workers.
// Then the workers sum the leaves of the block's rows, tree after tree.
func (f *Model) forRows(x *data.CSR, pool *numa.Pool, b blocking, emit func(s *forestScratch, i int)) error {
	tables := f.tablesFor(x.Cols)
	trees := len(f.Trees)
	scratch := numa.NewPerWorker(pool, func(numa.Worker) *forestScratch {
		s := f.newScratch(x, b)
		s.tables = tables
		return s
	})
	block := b.part * b.parts
	leafOf := make([]int32, min(block, x.Rows)*trees)
	for lo := 0; lo < x.Rows; lo += block {
		hi := min(lo+block, x.Rows)
		parts := (hi - lo + b.part - 1) / b.part
		err := pool.For(trees*parts, 1, func(w numa.Worker, u, _ int) {
			ti, a := u/parts, lo+u%parts*b.part
			f.routeBlock(ti, x, a, min(a+b.part, hi), scratch.Get(w), leafOf[(a-lo)*trees:])
		})
		if err != nil {
			return err
		}
		err = pool.For(hi-lo, sumChunk, func(w numa.Worker, r0, r1 int) {
			s := scratch.Get(w)
			for r := r0; r < r1; r++ {
				s.touched = s.touched[:0]
				for ti, t := range f.Trees {
					s.touched = t.AddLeaf(leafOf[r*trees+ti], s.acc, s.touched)
				}
				emit(s, lo+r)
			}
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// sumChunk is the rows a worker sums the leaves of at a time.
const sumChunk = 64

// Partial is PartialSums: a forest's partial results are the leaf sums of
// its trees, whatever k.
func (f *Model) Partial(x *data.CSR, _ int, pool *numa.Pool) ([]model.Sparse, error) {
	return f.PartialSums(x, pool)
}

// Merge is MergeSums over the whole forest's TotalTrees.
func (f *Model) Merge(parts [][]byte, rows, k int) ([][]model.Scored, error) {
	return model.MergeSums(parts, rows, f.L, k, f.TotalTrees)
}

// Summary counts the trees held.
func (f *Model) Summary() string { return fmt.Sprintf("%d trees", len(f.Trees)) }

// Describe writes a table of the trees' shapes: nodes, leaves, depths,
// training instances per leaf, and the entries of their classifiers and
// leaves, with totals.
func (f *Model) Describe(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "tree\tnodes\tleaves\tdepth min\tmean\tmax\tinst/leaf mean\tmax\tsplit entries\tleaf nnz\t")
	var tot TreeStats
	for i, t := range f.Trees {
		s := t.Stats()
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%.1f\t%d\t%.1f\t%d\t%d\t%d\t\n", i, s.Nodes, s.Leaves, s.MinDepth, s.MeanDepth, s.MaxDepth,
			s.MeanLeafSize, s.MaxLeafSize, s.SplitEntries, s.LeafEntries)
		tot.Nodes += s.Nodes
		tot.Leaves += s.Leaves
		tot.SplitEntries += s.SplitEntries
		tot.LeafEntries += s.LeafEntries
	}
	fmt.Fprintf(tw, "all\t%d\t%d\t\t\t\t\t\t%d\t%d\t\n", tot.Nodes, tot.Leaves, tot.SplitEntries, tot.LeafEntries)
	return tw.Flush()
}
