package plt

import (
	"math/bits"
	"slices"
)

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
//
// A node of many columns (see denseColumns) also holds them as a bitmap
// over every column, with the count of set bits before each word: a row's
// column is then found among the node's by a bit test and a count of ones
// rather than by a binary search. Node p's bitmap is words[wordStart[p]:][:wordsPerNode] and
// its counts before[wordStart[p]:][:wordsPerNode]; wordStart[p] is −1 for
// a node without one.
type byColumn struct {
	colStart []int64
	cols     []int32
	entBase  []int64
	entEnd   []int32
	child    []int32
	weight   []float32

	wordsPerNode int
	wordStart    []int64
	words        []uint64
	before       []int32
}

// denseColumns reports whether a node of n of a tree's cols columns gets a
// bitmap: when it takes no more memory than the node's list of columns
// (12 bytes a word of 64 columns against 4 bytes a column), so that the
// bitmaps at most double the lists' share of the index.
func denseColumns(n, cols int) bool { return 64*n >= 3*cols }

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
	b.bitmaps(t.Cols)
	t.byCol = b
	t.WIdx, t.WVal, t.raw.idx, t.raw.val = nil, nil, nil, nil
}

// bitmaps gives every node of many columns (denseColumns) its bitmap.
func (b *byColumn) bitmaps(cols int) {
	n := len(b.entBase)
	b.wordsPerNode = (cols + 63) / 64
	b.wordStart = make([]int64, n)
	var words int64
	for p := range n {
		b.wordStart[p] = -1
		if denseColumns(int(b.colStart[p+1]-b.colStart[p]), cols) {
			b.wordStart[p] = words
			words += int64(b.wordsPerNode)
		}
	}
	b.words, b.before = make([]uint64, words), make([]int32, words)
	for p, w := range b.wordStart {
		if w < 0 {
			continue
		}
		words, before := b.words[w:][:b.wordsPerNode], b.before[w:][:b.wordsPerNode]
		for _, j := range b.cols[b.colStart[p]:b.colStart[p+1]] {
			words[j>>6] |= 1 << (j & 63)
		}
		count := 0
		for i, word := range words {
			before[i] = int32(count)
			count += bits.OnesCount64(word)
		}
	}
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
	if w := b.wordStart[p]; w >= 0 {
		words, before := b.words[w:][:b.wordsPerNode], b.before[w:][:b.wordsPerNode]
		for q, j := range s.idx {
			word, bit := words[j>>6], uint64(1)<<(j&63)
			if word&bit != 0 {
				b.add(m, base, ends, int(before[j>>6])+bits.OnesCount64(word&(bit-1)), s.val[q])
			}
		}
		s.margin = m
		return m
	}
	// Both column lists increase: each search starts where the last ended.
	from := 0
	for q, j := range s.idx {
		i, found := slices.BinarySearch(cols[from:], j)
		from += i
		if !found {
			continue
		}
		b.add(m, base, ends, from, s.val[q])
		from++
	}
	s.margin = m
	return m
}

// add adds x times the weights of a node's column i (the node's entries
// from base, ends its columns' ends) to the children's margins m.
func (b *byColumn) add(m []float64, base int64, ends []int32, i int, x float64) {
	e0, e1 := base, base+int64(ends[i])
	if i > 0 {
		e0 += int64(ends[i-1])
	}
	for e := e0; e < e1; e++ {
		m[b.child[e]] += float64(b.weight[e]) * x
	}
}
