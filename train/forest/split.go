package forest

import (
	"slices"

	"xmc/data"
	forestmodel "xmc/model/forest"
)

// split tries to split the node's instances, node id's. It returns nil for
// a leaf, or the boundaries of the children's ranges in b.ids (len =
// children + 1), after appending the node's classifier to b.out.
func (b *treeBuilder) split(id int, sp span) []int32 {
	p := b.p
	ids := b.ids[sp.lo:sp.hi]
	if len(ids) <= p.LeafSize || (p.MaxDepth > 0 && sp.depth >= p.MaxDepth) ||
		allEqual(&b.d.Y, b.d.yHash, ids) || allEqual(&b.d.X, b.d.xHash, ids) {
		return nil
	}
	for attempt := 0; attempt <= p.SplitRetries; attempt++ {
		if bounds := b.trySplit(id, attempt, sp); bounds != nil {
			return bounds
		}
	}
	return nil
}

// trySplit is one attempt at splitting node id: it returns nil, having
// appended nothing to the tree, when k-means finds a single cluster or the
// classifier sends every instance to one child.
func (b *treeBuilder) trySplit(id, attempt int, sp span) []int32 {
	s := b.s
	ids := b.ids[sp.lo:sp.hi]
	sample := b.drawSample(ids)
	k := b.kmeans(sample, b.labelProjection(id, attempt))
	if k < 2 {
		return nil
	}
	firstDim, firstEntry := len(b.out.SplitDim), len(b.out.SplitChild)
	kept := b.classifier(sample, k)
	// Route every instance of the node with the classifier just appended,
	// exactly as prediction will: the kept rows of s.w hold the stored
	// weights, every other row is zero.
	stride := forestmodel.DotStride(k)
	w := s.w[:b.p.DimX*stride]
	counts := s.counts[:k+1]
	clear(counts)
	b.route(ids, w, stride, k)
	for _, c := range s.child[:len(ids)] {
		counts[c+1]++
	}
	for _, d := range kept {
		clear(w[int(d)*stride : int(d)*stride+k])
	}
	// Drop children that received no instance: no test instance can be
	// better served by them than by a child with training data.
	live := int32(0)
	newID := s.newID[:k]
	for c := range k {
		if counts[c+1] > 0 {
			newID[c] = live
			live++
		} else {
			newID[c] = -1
		}
	}
	if live < 2 {
		b.truncateSplit(firstDim, firstEntry)
		return nil
	}
	if int(live) < k {
		b.dropChildren(firstDim, firstEntry, newID)
	}
	// Counting sort of the node's instances by child, stable in id order.
	bounds := s.bounds[:live+1]
	clear(bounds)
	for c := range k {
		if newID[c] >= 0 {
			bounds[newID[c]+1] = counts[c+1]
		}
	}
	for c := range live {
		bounds[c+1] += bounds[c]
	}
	pos := append(s.pos[:0], bounds[:live]...)
	tmp := s.tmp[:len(ids)]
	for i, id := range ids {
		c := newID[s.child[i]]
		tmp[pos[c]] = id
		pos[c]++
	}
	copy(ids, tmp)
	for c := range bounds {
		bounds[c] += sp.lo
	}
	return bounds
}

// dropChildren renumbers the children of the node whose classifier starts
// at firstDim and firstEntry by newID, dropping the entries of children
// mapped to -1 and the dimensions left without entries.
func (b *treeBuilder) dropChildren(firstDim, firstEntry int, newID []int32) {
	t := &b.out
	wd, we, e := firstDim, firstEntry, firstEntry
	for q := firstDim; q < len(t.SplitDim); q++ {
		count := uint8(0)
		for end := e + int(t.SplitCount[q]); e < end; e++ {
			if c := newID[t.SplitChild[e]]; c >= 0 {
				t.SplitChild[we], t.SplitWeight[we] = uint8(c), t.SplitWeight[e]
				we++
				count++
			}
		}
		if count > 0 {
			t.SplitDim[wd], t.SplitCount[wd] = t.SplitDim[q], count
			wd++
		}
	}
	b.truncateSplit(wd, we)
}

func (b *treeBuilder) truncateSplit(dims, entries int) {
	t := &b.out
	t.SplitDim, t.SplitCount = t.SplitDim[:dims], t.SplitCount[:dims]
	t.SplitChild, t.SplitWeight = t.SplitChild[:entries], t.SplitWeight[:entries]
}

// routeChunk is the number of instances a helper of a crew takes at a
// time (teamCrew's piece).
const routeChunk = 4096

// shared reports whether b splits its node with helpers, in pieces, for a
// loop over n rows: there must be helpers, and rows for two pieces.
func (b *treeBuilder) shared(n int) bool {
	return b.helpers != nil && n >= 2*b.helpers.piece() && b.helpers.workers() > 1
}

// route sets s.child[i] to the child of highest score for instance ids[i]
// under the node weights w, with the help of b.helpers if set.
func (b *treeBuilder) route(ids []int32, w []float32, stride, k int) {
	child := b.s.child
	b.inPieces(len(ids), func(h *treeBuilder, lo, hi int) {
		route(&h.rows.px, ids[lo:hi], w, stride, h.s.scores[:k], child[lo:hi])
	})
}

// inPieces calls fn(h, lo, hi) over consecutive pieces [lo, hi) covering
// [0, n): on b.helpers, each helper h with its own scratch, if b has helpers
// and n is large enough to share, else on b itself in one piece. The pieces
// must be independent: each writes only its own range of results.
//
// The pieces are of equal size, at most the helpers' piece, and as many as
// a multiple of the helpers, so that each helper gets the same share:
// pieces of routeChunk and a short last one left the root's k-means passes
// of Delicious (12,920 rows: 4,096 × 3 + 632) at 8,192 rows against 4,728
// on two workers.
func (b *treeBuilder) inPieces(n int, fn func(h *treeBuilder, lo, hi int)) {
	if !b.shared(n) {
		fn(b, 0, n)
		return
	}
	w, piece := b.helpers.workers(), b.helpers.piece()
	pieces := ((n+piece-1)/piece + w - 1) / w * w
	size := (n + pieces - 1) / pieces
	err := b.helpers.each(pieces, func(h *treeBuilder, i int) {
		if lo := i * size; lo < n {
			fn(h, lo, min(lo+size, n))
		}
	})
	if err != nil && b.err == nil {
		b.err = err
	}
}

// route sets child[i] to the child of highest score for instance ids[i],
// whose projected features are in x, for the node weights w (see
// forestmodel.BestDot).
func route(x *projectedRows, ids []int32, w []float32, stride int, scores []float32, child []int32) {
	child = child[:len(ids)]
	for i, id := range ids {
		bk, sg := x.row(int(id))
		child[i] = forestmodel.BestDot(w, stride, bk, sg, scores)
	}
}

// allEqual reports whether rows ids of m are all identical, using the row
// hashes to answer "no" quickly and comparing the rows to confirm "yes".
func allEqual(m *data.CSR, hash []uint64, ids []int32) bool {
	h := hash[ids[0]]
	for _, id := range ids[1:] {
		if hash[id] != h {
			return false
		}
	}
	i0, v0 := m.Row(int(ids[0]))
	for _, id := range ids[1:] {
		i1, v1 := m.Row(int(id))
		if !slices.Equal(i0, i1) || !slices.Equal(v0, v1) {
			return false
		}
	}
	return true
}

// drawSample returns at most p.Sample of ids, drawn without replacement.
func (b *treeBuilder) drawSample(ids []int32) []int32 {
	s := b.s
	s.sample = append(s.sample[:0], ids...)
	if len(ids) <= b.p.Sample {
		return s.sample
	}
	for i := range b.p.Sample {
		j := i + b.rng.IntN(len(ids)-i)
		s.sample[i], s.sample[j] = s.sample[j], s.sample[i]
	}
	return s.sample[:b.p.Sample]
}
