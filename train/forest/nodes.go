package forest

import (
	"math"

	"xmc/data"
	forestmodel "xmc/model/forest"
)

// span is a node waiting in the breadth-first queue: its instances are
// ids[lo:hi].
type span struct {
	lo, hi int32
	depth  int
}

// nodeOut locates a node's classifier or leaf in the out buffer of the
// builder that split it; children are the boundaries of its children's
// ranges in the tree's instance ids (none for a leaf).
type nodeOut struct {
	b                        *treeBuilder
	dim, dimEnd, ent, entEnd int
	leaf, leafEnd            int
	children                 []int32
}

// entries is the number of entries the node adds to the tree's arrays.
func (o nodeOut) entries() int { return o.dimEnd - o.dim + o.entEnd - o.ent + o.leafEnd - o.leaf }

// grow grows t over n instances with crew c. Its nodes are numbered
// breadth-first and split as soon as they are numbered, each by whichever
// builder of the crew is free, into its own buffer; their classifiers and
// leaves are then appended to t in id order, so that t does not depend on
// the crew (see frontier).
func grow(t *forestmodel.Tree, n int32, c crew, flushAt int) error {
	return newFrontier(t, n, c.workers(), c.lead() != nil, flushAt).grow(c)
}

// appendNodes appends to t the classifiers and leaves of nodes outs, the
// next ones in id order: their places first, then the copies, which the
// crew makes at once. Copied one node after another as they were
// appended, the nodes took 7 of the 55 ms of a Delicious tree grown by two
// workers, all on the lead (first touches of the arrays' fresh memory, and
// append's growth by a quarter, which copied the arrays about four times
// over); 3.6-4.1 ms so.
func appendNodes(t *forestmodel.Tree, outs []nodeOut, c crew) error {
	first := len(t.SplitStart)
	dim, ent, leaf := len(t.SplitDim), len(t.SplitChild), len(t.LeafLabel)
	for _, o := range outs {
		t.SplitStart = append(t.SplitStart, int64(dim))
		t.EntryStart = append(t.EntryStart, int64(ent))
		t.LeafStart = append(t.LeafStart, int64(leaf))
		dim += o.dimEnd - o.dim
		ent += o.entEnd - o.ent
		leaf += o.leafEnd - o.leaf
	}
	t.SplitDim, t.SplitCount = extended(t.SplitDim, dim), extended(t.SplitCount, dim)
	t.SplitChild, t.SplitWeight = extended(t.SplitChild, ent), extended(t.SplitWeight, ent)
	t.LeafLabel, t.LeafValue = extended(t.LeafLabel, leaf), extended(t.LeafValue, leaf)
	return c.each(len(outs), func(_ *treeBuilder, i int) {
		o, b := outs[i], &outs[i].b.out
		d, e, l := t.SplitStart[first+i], t.EntryStart[first+i], t.LeafStart[first+i]
		copy(t.SplitDim[d:], b.SplitDim[o.dim:o.dimEnd])
		copy(t.SplitCount[d:], b.SplitCount[o.dim:o.dimEnd])
		copy(t.SplitChild[e:], b.SplitChild[o.ent:o.entEnd])
		copy(t.SplitWeight[e:], b.SplitWeight[o.ent:o.entEnd])
		copy(t.LeafLabel[l:], b.LeafLabel[o.leaf:o.leafEnd])
		copy(t.LeafValue[l:], b.LeafValue[o.leaf:o.leafEnd])
	})
}

// extended returns s lengthened to n elements; when it must grow, its
// capacity at least doubles.
func extended[S ~[]E, E any](s S, n int) S {
	if n > cap(s) {
		g := make(S, len(s), max(n, 2*cap(s)))
		copy(g, s)
		s = g
	}
	return s[:n]
}

// node splits node id, whose instances are sp, or makes it a leaf, into
// b's buffer.
func (b *treeBuilder) node(id int, sp span) nodeOut {
	t := &b.out
	o := nodeOut{b: b, dim: len(t.SplitDim), ent: len(t.SplitChild), leaf: len(t.LeafLabel)}
	b.pcg.Seed(nodeSeed(b.seed, id))
	if children := b.split(id, sp); children != nil {
		// The children's bounds are kept in b.bounds, which later nodes
		// only append to, and read from there once the frontier
		// numbers them.
		start := len(b.bounds)
		b.bounds = append(b.bounds, children...)
		o.children = b.bounds[start:len(b.bounds):len(b.bounds)]
	} else {
		b.leaf(b.ids[sp.lo:sp.hi])
	}
	o.dimEnd, o.entEnd, o.leafEnd = len(t.SplitDim), len(t.SplitChild), len(t.LeafLabel)
	return o
}

func fillTable(p forestmodel.Projection, buckets []int32, signs []float32) ([]int32, []float32) {
	for j := range buckets {
		buckets[j], signs[j] = p.Map(int32(j))
	}
	return buckets, signs
}

// newNode adds to t a node of size instances, a leaf until its split
// says otherwise.
func newNode(t *forestmodel.Tree, size int32) {
	t.FirstChild = append(t.FirstChild, 0)
	t.NumChildren = append(t.NumChildren, 0)
	t.Size = append(t.Size, size)
}

// projectedRows are the rows of a data matrix under one tree's
// projection, entry by entry: the entry of column j and value v becomes
// one of the bucket of j and value sign(j)·v, in the same place, so the
// data's row pointers serve. A tree projects its data once, rather than
// every node looking up the tables again for each of its instances.
type projectedRows struct {
	indptr []int64
	bucket []int32
	value  []float32
	// identity says bucket is the data's own column indices: an identity
	// projection only flips signs, so its buckets need no copy (half the
	// memory and first touches of a tree's projected rows).
	identity bool
	buckets  []int32 // memory of bucket for other projections, made when first needed
}

// newProjectedRows allocates projected rows for the shape of m.
func newProjectedRows(m *data.CSR) projectedRows {
	return projectedRows{indptr: m.Indptr, value: make([]float32, len(m.Values))}
}

// useColumns makes p's buckets m's columns, for an identity projection, or
// memory of its own.
func (p *projectedRows) useColumns(m *data.CSR, identity bool) {
	p.identity = identity
	if identity {
		p.bucket = m.Indices
		return
	}
	if p.buckets == nil {
		p.buckets = make([]int32, len(m.Indices))
	}
	p.bucket = p.buckets
}

// project sets rows lo to hi-1 of p to those of m under the projection
// given by tables (after useColumns).
func (p *projectedRows) project(m *data.CSR, buckets []int32, signs []float32, lo, hi int) {
	a, e := m.Indptr[lo], m.Indptr[hi]
	val, value := m.Values[a:e], p.value[a:e]
	if p.identity {
		for q, j := range m.Indices[a:e] {
			value[q] = signs[j] * val[q]
		}
		return
	}
	bucket := p.bucket[a:e]
	for q, j := range m.Indices[a:e] {
		bucket[q], value[q] = buckets[j], signs[j]*val[q]
	}
}

// row returns the projected entries of row i: buckets (with repeats when
// columns collide) and values.
func (p *projectedRows) row(i int) ([]int32, []float32) {
	lo, hi := p.indptr[i], p.indptr[i+1]
	return p.bucket[lo:hi], p.value[lo:hi]
}

// inverseNorms sets inv[i] to 1/‖P m_i‖ for rows lo to hi-1 of the
// projected rows p (0 for a row whose projection vanishes). dense and mark
// are zeroed scratch of the projected dimension and are left zeroed.
func (b *treeBuilder) inverseNorms(p *projectedRows, inv []float32, dense []float32, mark []bool, lo, hi int) {
	touched := b.s.touchX[:0]
	for i := lo; i < hi; i++ {
		bucket, value := p.row(i)
		value = value[:len(bucket)]
		touched = touched[:0]
		for k, q := range bucket {
			if !mark[q] {
				mark[q] = true
				touched = append(touched, q)
			}
			dense[q] += value[k]
		}
		var ss float64
		for _, q := range touched {
			ss += float64(dense[q]) * float64(dense[q])
			dense[q], mark[q] = 0, false
		}
		inv[i] = 0
		if ss > 0 {
			inv[i] = float32(1 / math.Sqrt(ss))
		}
	}
	b.s.touchX = touched
}
