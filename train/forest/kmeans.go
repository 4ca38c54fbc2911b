package forest

import (
	"math"
	"slices"

	"xmc/data"
	forestmodel "xmc/model/forest"
)

// kmeans runs spherical k-means with k-means++ seeding on the projected,
// normalised label vectors of sample (under proj, or the tree's label
// projection if proj is nil), leaving the assignment in s.cluster
// and returning the number of clusters (fewer than Branch when the sample
// has fewer distinct label vectors).
//
// The sample's label vectors are projected once into (bucket, value) pairs,
// and the centroids are stored bucket-major (row b holds the Branch
// centroids' entries for bucket b, padded to forestmodel.DotStride), so that the
// similarities of one instance to every centroid are one contiguous
// multiply-add per label, as forestmodel.BestDot computes them.
func (b *treeBuilder) kmeans(sample []int32, proj *forestmodel.Projection) int {
	m := &centroids{sample: sample, stride: forestmodel.DotStride(b.p.Branch), C: b.s.accY} // C: dimY × stride, zero outside this call
	m.off, m.bk, m.vl, m.touched = b.sampleLabels(sample, proj)
	defer m.clear()
	k := b.seedCentroids(m)
	if k < 2 {
		return k
	}
	for iter := range b.p.KMeansIters {
		b.inPieces(len(sample), func(h *treeBuilder, lo, hi int) { b.assign(h, m, k, lo, hi) })
		if iter == b.p.KMeansIters-1 {
			break
		}
		b.update(m, k)
	}
	return k
}

// centroids is one k-means run's state: the sample's projected label
// vectors, sample i's as the (bucket, value) pairs bk, vl[off[i]:off[i+1]],
// the buckets they touch, and the centroids, bucket-major: C[b*stride+c] is
// centroid c's entry for bucket b.
type centroids struct {
	sample, off, bk, touched []int32
	vl, C                    []float32
	stride                   int
}

// add adds the label vector of sample i to centroid c.
func (m *centroids) add(c, i int) {
	for q := m.off[i]; q < m.off[i+1]; q++ {
		m.C[int(m.bk[q])*m.stride+c] += m.vl[q]
	}
}

// sim returns the similarity of sample i to centroid c.
func (m *centroids) sim(c, i int) float32 {
	var dot float32
	for q := m.off[i]; q < m.off[i+1]; q++ {
		dot += m.vl[q] * m.C[int(m.bk[q])*m.stride+c]
	}
	return dot
}

// clear zeroes the centroids' rows, which the tree builder reuses.
func (m *centroids) clear() {
	for _, q := range m.touched {
		clear(m.C[int(q)*m.stride : int(q)*m.stride+m.stride])
	}
}

// seedCentroids chooses up to Branch first centroids by k-means++ with the
// distance D = 1 - cosine, drawing by D² as k-means++ and CRAFTML do, and
// returns how many it chose.
func (b *treeBuilder) seedCentroids(m *centroids) int {
	weight := func(d float64) float64 { return d * d }
	n := len(m.sample)
	dist := b.s.dist[:n]
	// nearer lowers dist[i] to the distance of sample i to centroid c,
	// for the sample in [lo, hi): the similarity is computed once per
	// label class, in a pass of h's scratch.
	class := b.d.yClass
	nearer := func(h *treeBuilder, c, lo, hi int) {
		stamp, simOf, pass := h.s.stamp, h.s.simOf, h.s.newPass()
		for i := lo; i < hi; i++ {
			cl := class[m.sample[i]]
			if stamp[cl] != pass {
				stamp[cl], simOf[cl] = pass, m.sim(c, i)
			}
			dist[i] = min(dist[i], max(0, 1-float64(simOf[cl])))
		}
	}
	m.add(0, b.rng.IntN(n))
	k := 1
	for i := range dist {
		dist[i] = math.Inf(1)
	}
	b.inPieces(n, func(h *treeBuilder, lo, hi int) { nearer(h, 0, lo, hi) })
	for k < b.p.Branch && k < n {
		var total float64
		for _, d := range dist {
			total += weight(d)
		}
		if total <= 1e-9 {
			break
		}
		r := b.rng.Float64() * total
		pick := n - 1
		for i, d := range dist {
			if r < weight(d) {
				pick = i
				break
			}
			r -= weight(d)
		}
		m.add(k, pick)
		b.inPieces(n, func(h *treeBuilder, lo, hi int) { nearer(h, k, lo, hi) })
		k++
	}
	return k
}

// assign sets the cluster of the sample in [lo, hi) to the nearest of the
// k centroids, found once per label class in a pass of h's scratch.
func (b *treeBuilder) assign(h *treeBuilder, m *centroids, k, lo, hi int) {
	class, cluster := b.d.yClass, b.s.cluster
	stamp, bestOf, pass, sims := h.s.stamp, h.s.bestOf, h.s.newPass(), h.s.sims[:k]
	for i := lo; i < hi; i++ {
		cl := class[m.sample[i]]
		if stamp[cl] != pass {
			stamp[cl] = pass
			bestOf[cl] = forestmodel.BestDot(m.C, m.stride, m.bk[m.off[i]:m.off[i+1]], m.vl[m.off[i]:m.off[i+1]], sims)
		}
		cluster[i] = bestOf[cl]
	}
}

// update makes each of the k centroids the normalised sum of its members;
// a cluster left empty keeps its centroid.
func (b *treeBuilder) update(m *centroids, k int) {
	s := b.s
	cluster, counts := s.cluster[:len(m.sample)], s.counts[:k]
	clear(counts)
	for _, c := range cluster {
		counts[c]++
	}
	// s.scores is free outside route: keep, then normalizeColumns' scratch.
	keep := s.scores[:k] // 1 for a cluster left empty, else 0
	for c := range keep {
		keep[c] = float32(1 - min(counts[c], 1))
	}
	for _, q := range m.touched {
		row := m.C[int(q)*m.stride:][:k]
		for c := range row {
			row[c] *= keep[c]
		}
	}
	if b.shared(len(cluster)) {
		b.sumClusters(m, counts)
	} else {
		for i, c := range cluster {
			m.add(int(c), i)
		}
	}
	normalizeColumns(m.C, m.stride, m.touched, counts, s.norms[:k], s.scores[:k])
}

// sumClusters adds the sample's label vectors to their clusters' centroids,
// as update's loop over the sample does, with b's helpers: each helper sums
// a cluster's members in sample order in a dense vector of its own, then
// writes the buckets they touched to the cluster's column. Every entry is
// added up in the order the loop over the sample adds it, so the centroids
// are the same bits. counts holds each cluster's size. At the root of a
// Wiki10-31K-shaped tree the loop was 9 of the 12 ms that the lead spent
// outside parallel loops (docs/scaling/16-core.md).
func (b *treeBuilder) sumClusters(m *centroids, counts []int32) {
	s := b.s
	cluster := s.cluster[:len(m.sample)]
	// The sample's indices grouped by cluster, in sample order: cluster
	// c's are members[ends[c]:ends[c+1]].
	ends := s.bounds[:len(counts)+1]
	ends[0] = 0
	for c, n := range counts {
		ends[c+1] = ends[c] + n
	}
	pos := append(s.pos[:0], ends[:len(counts)]...)
	members := s.tmp[:len(cluster)]
	for i, c := range cluster {
		members[pos[c]] = int32(i)
		pos[c]++
	}
	err := b.helpers.each(len(counts), func(h *treeBuilder, c int) {
		acc, mark, touched := h.s.ydense, h.s.ymark, h.s.touchX[:0]
		for _, i := range members[ends[c]:ends[c+1]] {
			for q := m.off[i]; q < m.off[i+1]; q++ {
				bk := m.bk[q]
				if !mark[bk] {
					// Start from the column's entry, as the loop over
					// the sample does (a zero of either sign).
					mark[bk], acc[bk] = true, m.C[int(bk)*m.stride+c]
					touched = append(touched, bk)
				}
				acc[bk] += m.vl[q]
			}
		}
		for _, bk := range touched {
			m.C[int(bk)*m.stride+c] = acc[bk]
			acc[bk], mark[bk] = 0, false
		}
		h.s.touchX = touched
	})
	if err != nil && b.err == nil {
		b.err = err
	}
}

// normalizeColumns scales to unit norm each column c of the rows touched of
// C (rows of stride entries) whose cluster has members (counts[c] > 0),
// leaving a zero column as it is; ss and inv are scratch of one entry per
// column. The rows are read once for all the columns, not once per column
// (k passes of strided loads were the most of k-means' own time); each
// column's sum of squares still runs in the order of touched.
func normalizeColumns(C []float32, stride int, touched, counts []int32, ss []float64, inv []float32) {
	k := len(ss)
	clear(ss)
	for _, q := range touched {
		row := C[int(q)*stride:][:k]
		for c, v := range row {
			ss[c] += float64(v) * float64(v)
		}
	}
	for c := range inv {
		inv[c] = 1
		if counts[c] > 0 && ss[c] > 0 {
			inv[c] = float32(1 / math.Sqrt(ss[c]))
		}
	}
	for _, q := range touched {
		row := C[int(q)*stride:][:k]
		for c := range row {
			row[c] *= inv[c]
		}
	}
}

// labelProjection returns the label projection of attempt attempt at
// splitting node id, as CRAFTML's default mode (SXDY) draws a new one at
// every node: one drawn from the tree's seed, the node and the attempt
// alone; nil (the tree's) where the projection is the identity.
func (b *treeBuilder) labelProjection(id, attempt int) *forestmodel.Projection {
	if b.y.Identity {
		return nil // one projection per node is the same identity
	}
	seed := data.SplitMix64(b.seed ^ data.SplitMix64(uint64(id)<<8|uint64(attempt)))
	return &forestmodel.Projection{Dim: int32(b.p.DimY), BucketSeed: uint32(data.SplitMix64(seed + 3)), SignSeed: uint32(data.SplitMix64(seed + 4))}
}

// sampleLabels projects the label vectors of sample, normalised, under
// proj (the tree's projection if nil), into s.yoff, s.ybk and s.yvl:
// sample i's entries are the buckets ybk[yoff[i]:yoff[i+1]] (repeated
// where labels collide) with values yvl. It returns them with the buckets
// touched, in s.touchY, in order of first appearance.
//
// The entries are sized first and filled in pieces, with b's helpers when
// it has any: at the root of a tree the sample is the largest of any node,
// and growing the entries as they came took 10 ms of a first Delicious
// tree's 100 (against 0.7 ms once the memory was warm), all of it serial.
func (b *treeBuilder) sampleLabels(sample []int32, proj *forestmodel.Projection) (off, bk []int32, vl []float32, touched []int32) {
	s := b.s
	// A row keeps one entry per label under any projection: its length
	// is the data's.
	indptr := b.d.Y.Indptr
	off = append(s.yoff[:0], 0)
	total := int32(0)
	for _, id := range sample {
		total += int32(indptr[id+1] - indptr[id])
		off = append(off, total)
	}
	bk = slices.Grow(s.ybk[:0], int(total))[:total]
	vl = slices.Grow(s.yvl[:0], int(total))[:total]
	b.inPieces(len(sample), func(h *treeBuilder, lo, hi int) {
		h.projectLabels(sample[lo:hi], proj, bk[off[lo]:off[hi]], vl[off[lo]:off[hi]])
	})
	touched = s.touchY[:0]
	for _, q := range bk {
		if !s.markY[q] {
			s.markY[q] = true
			touched = append(touched, q)
		}
	}
	for _, q := range touched {
		s.markY[q] = false
	}
	s.yoff, s.ybk, s.yvl, s.touchY = off, bk, vl, touched
	return off, bk, vl, touched
}

// projectLabels writes to bk and vl the normalised label vectors of rows
// ids under proj (the tree's projection if nil), row after row, as
// sampleLabels lays them out.
func (b *treeBuilder) projectLabels(ids []int32, proj *forestmodel.Projection, bk []int32, vl []float32) {
	s := b.s
	n := 0
	for _, id := range ids {
		start := n
		inv := float32(0)
		if proj == nil {
			buckets, values := b.rows.py.row(int(id))
			n += copy(bk[n:], buckets)
			copy(vl[start:], values[:len(buckets)])
			inv = b.rows.yInv[id]
		} else {
			labels, values := b.d.Y.Row(int(id))
			values = values[:len(labels)]
			dense, rowTouched := s.ydense, s.touchX[:0]
			for k, l := range labels {
				q, sign := proj.Map(l)
				bk[n], vl[n] = q, sign*values[k]
				n++
				if !s.ymark[q] {
					s.ymark[q] = true
					rowTouched = append(rowTouched, q)
				}
				dense[q] += sign * values[k]
			}
			// The norm of the merged vector, where colliding labels add.
			var ss float64
			for _, q := range rowTouched {
				ss += float64(dense[q]) * float64(dense[q])
			}
			for _, q := range rowTouched {
				dense[q], s.ymark[q] = 0, false
			}
			s.touchX = rowTouched
			if ss > 0 {
				inv = float32(1 / math.Sqrt(ss))
			}
		}
		for k := start; k < n; k++ {
			vl[k] *= inv
		}
	}
}
