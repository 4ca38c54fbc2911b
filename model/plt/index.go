package plt

import "slices"

// byColumn is a tree's weights regrouped for prediction. The search always
// scores a node's children together, so each node's children's weights are
// held by column: a row's margins for all the children come from the row's
// own columns (tens, in text data) rather than from every child's weights
// (thousands each, near the root). Node p's columns are
// cols[colStart[p]:colStart[p+1]], increasing, and column i's entries
// child[e:f] (the child's offset from p's first child, increasing) and
// weight[e:f], from e = entBase[p] + entEnd[i-1] (entBase[p] for p's
// first column) to f = entBase[p] + entEnd[i]: ends within a node take 4
// bytes a column. A child's margin adds the row's columns in increasing
// order, as a sum over its own weights would.
type byColumn struct {
	colStart []int64
	cols     []int32
	entBase  []int64
	entEnd   []int32
	child    []int32
	weight   []float32
}

// index builds t's byColumn from its weights (WIdx and WVal, or a decoded
// tree's encoding) and drops those, which prediction does not read: the
// weights are held once. A node's entries are laid out by counting, column
// by column, its children in order.
func (t *Tree) index() {
	n := t.Nodes()
	b := byColumn{colStart: make([]int64, n+1), entBase: make([]int64, n),
		child: make([]int32, t.NNZ()), weight: make([]float32, t.NNZ())}
	count, next := make([]int64, t.Cols), make([]int64, t.Cols)
	var used []int32
	var filled int64
	for p := range n {
		lo, hi := t.Children(int32(p))
		used = used[:0]
		for e := t.WStart[lo]; e < t.WStart[hi]; e++ {
			j, _ := t.weight(e)
			if count[j] == 0 {
				used = append(used, j)
			}
			count[j]++
		}
		slices.Sort(used)
		b.entBase[p] = filled
		for _, j := range used {
			next[j] = filled
			filled += count[j]
			count[j] = 0
			b.cols = append(b.cols, j)
			b.entEnd = append(b.entEnd, int32(filled-b.entBase[p]))
		}
		for c := lo; c < hi; c++ {
			for e := t.WStart[c]; e < t.WStart[c+1]; e++ {
				j, x := t.weight(e)
				b.child[next[j]], b.weight[next[j]] = c-lo, x
				next[j]++
			}
		}
		b.colStart[p+1] = int64(len(b.cols))
	}
	t.byCol = b
	t.WIdx, t.WVal, t.raw.idx, t.raw.val = nil, nil, nil, nil
}

// margins sets s.margin[0:hi-lo] to the margins of node p's children lo
// to hi-1 for the row in s.idx, s.val.
func (t *Tree) margins(p, lo, hi int32, s *scratch) []float64 {
	m := slices.Grow(s.margin[:0], int(hi-lo))[:hi-lo]
	clear(m)
	b := &t.byCol
	cols := b.cols[b.colStart[p]:b.colStart[p+1]]
	ends := b.entEnd[b.colStart[p]:b.colStart[p+1]]
	base := b.entBase[p]
	// Both column lists increase: each search starts where the last ended.
	from := 0
	for q, j := range s.idx {
		i, found := slices.BinarySearch(cols[from:], j)
		from += i
		if !found {
			continue
		}
		x := s.val[q]
		e0, e1 := base, base+int64(ends[from])
		if from > 0 {
			e0 += int64(ends[from-1])
		}
		for e := e0; e < e1; e++ {
			m[b.child[e]] += float64(b.weight[e]) * x
		}
		from++
	}
	s.margin = m
	return m
}
