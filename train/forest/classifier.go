package forest

import (
	"math"
	"math/bits"
	"slices"

	forestmodel "xmc/model/forest"
)

// classifier appends to the tree the node's classifier: per cluster, the
// normalised sum of its members' projected normalised feature vectors,
// reduced to its CentroidKeep largest-magnitude entries, stored
// feature-major (see forestmodel.Tree). It returns the dimensions of the stored
// entries, whose rows of s.w (dimension-major, forestmodel.DotStride(k) weights
// per row) then hold the stored weights for routing; every other row of s.w
// is zero, and the caller clears these.
//
// Each cluster is accumulated on its own, its members in sample order, so
// that its accumulator stays in cache and is visited only where its own
// members have features, never over the union of all. The entries kept
// are then sorted by dimension, stably, so by child within a dimension.
func (b *treeBuilder) classifier(sample []int32, k int) []int32 {
	s := b.s
	// Group the sample by cluster, stably.
	cluster := s.cluster[:len(sample)]
	ends := s.counts[:k+1]
	clear(ends)
	for _, c := range cluster {
		ends[c+1]++
	}
	for c := range k {
		ends[c+1] += ends[c]
	}
	order := s.order[:len(sample)]
	for i, c := range cluster {
		order[ends[c]] = sample[i]
		ends[c]++
	}
	ents, kept := s.ents[:0], s.touchX[:0]
	// The k centroids are independent: with helpers, each computes some
	// into a part of its own, appended below in cluster order.
	var parts [][]entry
	if b.shared(len(sample)) {
		s.parts = slices.Grow(s.parts[:0], k)[:k]
		parts = s.parts
		err := b.helpers.each(k, func(h *treeBuilder, c int) {
			parts[c] = h.centroid(order[ends[c]-clusterSize(ends, c):ends[c]], uint8(c), parts[c][:0])
		})
		if err != nil && b.err == nil {
			b.err = err
		}
	}
	for c := range k {
		n := len(ents)
		if parts != nil {
			ents = append(ents, parts[c]...)
		} else {
			ents = b.centroid(order[ends[c]-clusterSize(ends, c):ends[c]], uint8(c), ents)
		}
		for _, e := range ents[n:] {
			if s.perDim[e.dim] == 0 {
				kept = append(kept, e.dim)
			}
			s.perDim[e.dim]++
		}
	}
	kept = sortDims(kept, s.bits)
	s.ents, s.touchX = ents, kept
	b.appendEntries(kept, k)
	return kept
}

// clusterSize returns the size of cluster c, whose members end at ends[c] and
// begin where cluster c-1's end.
func clusterSize(ends []int32, c int) int32 {
	if c == 0 {
		return ends[0]
	}
	return ends[c] - ends[c-1]
}

// centroid appends to ents child c's entries of the node's classifier: the
// sum of the members' projected normalised feature vectors, reduced to its
// CentroidKeep largest-magnitude entries less its lightest (CentroidDrop),
// and normalised (see keep).
func (b *treeBuilder) centroid(members []int32, c uint8, ents []entry) []entry {
	s, dimX := b.s, b.p.DimX
	acc, mark := s.accX[:dimX], s.markC[:dimX]
	n := accumulate(&b.rows.px, members, b.rows.xInv, acc, mark, s.touched[:dimX+1])
	touched := s.touched[:n]
	thresh, ties := b.threshold(acc, touched, len(members))
	return keep(acc, mark, touched, thresh, ties, c, b.p.CompactWeights, ents)
}

// accumulate adds the projected normalised feature vectors of the members
// into acc, and writes to touched, in order of first appearance, the
// dimensions it adds to, returning their number. mark flags (1) the
// dimensions listed; touched needs room for one more than the dimension.
func accumulate(x *projectedRows, members []int32, xInv []float32, acc []float32, mark []uint8, touched []int32) int {
	n := 0
	for _, id := range members {
		bucket, value := x.row(int(id))
		value = value[:len(bucket)]
		inv := xInv[id]
		for q, d := range bucket {
			// touched[n] is always written and kept by counting it when
			// the dimension is new: no branch to mispredict.
			touched[n] = d
			n += int(mark[d] ^ 1)
			mark[d] = 1
			acc[d] += value[q] * inv
		}
	}
	return n
}

// threshold returns the magnitude of the smallest entry the centroid acc of
// a child of the given sampled rows keeps over its touched dimensions (0
// when it keeps every entry), and how many entries of exactly that
// magnitude are kept: its CentroidKeep largest, less, with CentroidDrop in
// a child of at most CentroidDropRows rows, its lightest (see dropLight).
func (b *treeBuilder) threshold(acc []float32, touched []int32, rows int) (thresh float32, ties int) {
	keep, drop := b.p.CentroidKeep, b.p.CentroidDrop
	if rows > b.p.CentroidDropRows {
		drop = 0
	}
	if len(touched) <= keep && drop == 0 {
		return 0, len(touched)
	}
	mags := b.s.mags[:0]
	for _, d := range touched {
		mags = append(mags, abs32(acc[d]))
	}
	b.s.mags = mags
	cut := len(mags) - keep // the index of the smallest kept, sorted
	if cut <= 0 {
		thresh, ties = 0, len(mags)
	} else {
		var below, equal int
		thresh, below, equal = selectMagnitude(mags, cut, &b.s.selection)
		// The keep largest are the len-below-equal above thresh and,
		// of those at it, the rest.
		ties = below + equal - cut
	}
	if drop > 0 {
		kept := mags
		if cut > 0 {
			kept = b.s.kept[:0]
			for _, m := range mags {
				if m > thresh {
					kept = append(kept, m)
				}
			}
			for range ties {
				kept = append(kept, thresh)
			}
			b.s.kept = kept
		}
		if t, n, ok := dropLight(kept, drop); ok {
			thresh, ties = t, n
		}
	}
	return thresh, ties
}

// dropLight sorts the magnitudes of a centroid's kept entries and finds the
// lightest ones that together carry at most drop of their squared norm,
// whole groups of equal magnitude at a time, so that which entries go does
// not depend on their order. It returns the smallest magnitude left and how
// many entries have it, or false when nothing goes.
func dropLight(mags []float32, drop float64) (thresh float32, ties int, ok bool) {
	slices.Sort(mags)
	var total float64
	for _, m := range mags {
		total += float64(m) * float64(m)
	}
	budget, i := drop*total, 0
	for i < len(mags) {
		j, group := i, 0.0
		for j < len(mags) && mags[j] == mags[i] {
			group += float64(mags[j]) * float64(mags[j])
			j++
		}
		if group > budget || j == len(mags) {
			break
		}
		budget -= group
		i = j
	}
	if i == 0 {
		return 0, 0, false
	}
	n := 0
	for _, m := range mags[i:] {
		if m != mags[i] {
			break
		}
		n++
	}
	return mags[i], n, true
}

// selection is the scratch of selectMagnitude: the counts of a digit's
// values, and the values left to select from.
type selection struct {
	count [256]int32
	left  []uint32
}

// selectMagnitude returns the value that sorting mags would put at index
// n, and how many of mags are below it and equal to it. mags are
// magnitudes: neither negative nor NaN, so that they order as their bits
// do. It selects by the exponent, then by the mantissa's first 8 bits,
// each time counting the digits' values and keeping only the values of
// the digit that holds index n, and sorts the few left: passes without a
// branch on the data, where a quickselect branches on every comparison
// (docs/algorithms/forest.md).
func selectMagnitude(mags []float32, n int, s *selection) (v float32, below, equal int) {
	left := slices.Grow(s.left[:0], len(mags))[:len(mags)]
	for i, m := range mags {
		left[i] = math.Float32bits(m)
	}
	for _, shift := range [...]uint32{23, 15} {
		count := &s.count
		clear(count[:])
		for _, u := range left {
			count[u>>shift&0xff]++
		}
		digit := pick(count, n, &below)
		// Each value is written, and counted if it has the digit.
		k := 0
		for _, u := range left {
			left[k] = u
			k += zeroBit(u>>shift&0xff ^ digit)
		}
		left = left[:k]
	}
	slices.Sort(left)
	u := left[n-below]
	first, _ := slices.BinarySearch(left, u)
	last, _ := slices.BinarySearch(left, u+1)
	s.left = left[:0]
	return math.Float32frombits(u), below + first, last - first
}

// zeroBit returns 1 if x, below 2³¹, is 0, and 0 otherwise, without a
// branch.
func zeroBit(x uint32) int { return int((x - 1) >> 31) }

// pick returns the digit whose count holds the value at index n of the
// values counted, all of them past *below values, and adds to *below the
// counts of the smaller digits.
func pick(count *[256]int32, n int, below *int) uint32 {
	d := 0
	for *below+int(count[d]) <= n {
		*below += int(count[d])
		d++
	}
	return uint32(d)
}

// keptEntry reports whether an entry of magnitude m of a centroid is kept at
// threshold thresh, with ties entries of that magnitude still to keep.
func keptEntry(m, thresh float32, ties int) bool {
	return m != 0 && m >= thresh && (m != thresh || ties > 0)
}

// keep appends to ents child's entries of the centroid acc above thresh
// (and the first ties at it, in order of first appearance, which is
// deterministic), normalised to unit norm over the kept entries and
// rounded to the weights a tree stores, but for those that round to zero:
// bfloat16, or with compact the 1-byte codes of the encoding
// (forestmodel.RoundToCode), dropping too the weights too small beside the
// child's largest for a code (forestmodel.InCodeRange). It zeroes acc and
// mark.
func keep(acc []float32, mark []uint8, touched []int32, thresh float32, ties int, child uint8, compact bool, ents []entry) []entry {
	first := len(ents)
	var ss float64 // in the order of touched
	for _, d := range touched {
		v := acc[d]
		acc[d], mark[d] = 0, 0
		m := abs32(v)
		if !keptEntry(m, thresh, ties) {
			continue
		}
		if m == thresh {
			ties--
		}
		ss += float64(m) * float64(m)
		ents = append(ents, entry{dim: d, child: child, weight: v})
	}
	scale := float32(1)
	if ss != 0 {
		scale = float32(1 / math.Sqrt(ss))
	}
	top, zeros := float32(0), 0
	for i := first; i < len(ents); i++ {
		w := &ents[i].weight
		if compact {
			*w = forestmodel.RoundToCode(*w * scale)
		} else {
			*w = forestmodel.ToBFloat16(*w * scale).Float32()
		}
		top = max(top, abs32(*w))
		zeros += zeroBit(math.Float32bits(*w) &^ (1 << 31))
	}
	if zeros == 0 && !compact {
		return ents
	}
	// Drop the weights too small to store, and with compact those too
	// small for a code.
	kept := ents[:first]
	for _, e := range ents[first:] {
		if e.weight != 0 && (!compact || forestmodel.InCodeRange(e.weight, top)) {
			kept = append(kept, e)
		}
	}
	return kept
}

// appendEntries appends the node's entries s.ents, bfloat16 values, to the
// tree feature-major: kept lists their dimensions sorted (and maybe
// dimensions without entries), s.perDim has their counts. It writes the
// stored weights to s.w for routing and zeroes s.perDim.
func (b *treeBuilder) appendEntries(kept []int32, k int) {
	s, t := b.s, &b.out
	perDim, ents := s.perDim, s.ents
	// Counting sort of the entries by dimension, into the tree: perDim
	// becomes each dimension's next position after base.
	base, n := len(t.SplitChild), int32(0)
	for _, d := range kept {
		if c := perDim[d]; c > 0 {
			t.SplitDim = append(t.SplitDim, d)
			t.SplitCount = append(t.SplitCount, uint8(c))
			perDim[d], n = n, n+c
		}
	}
	child := slices.Grow(t.SplitChild, len(ents))[:base+len(ents)]
	weight := slices.Grow(t.SplitWeight, len(ents))[:base+len(ents)]
	stride := forestmodel.DotStride(k)
	w := s.w[:b.p.DimX*stride]
	for _, e := range ents {
		q := base + int(perDim[e.dim])
		perDim[e.dim]++
		v := forestmodel.ToBFloat16(e.weight)
		child[q], weight[q] = e.child, v
		w[int(e.dim)*stride+int(e.child)] = v.Float32()
	}
	t.SplitChild, t.SplitWeight = child, weight
	for _, d := range kept {
		perDim[d] = 0
	}
}

// entry is one weight of a node's classifier: child's weight for the
// projected dimension dim.
type entry struct {
	dim    int32
	child  uint8
	weight float32
}

// sortDims sorts the distinct dimensions dims, using set, a zeroed bit set
// over the dimensions, and leaving it zeroed: by a comparison sort when they
// are few, by setting their bits and reading them back in order when they
// are many.
func sortDims(dims []int32, set []uint64) []int32 {
	if len(dims) < len(set)/4 {
		slices.Sort(dims)
		return dims
	}
	for _, d := range dims {
		set[d>>6] |= 1 << (d & 63)
	}
	dims = dims[:0]
	for i, word := range set {
		for word != 0 {
			dims = append(dims, int32(i<<6+bits.TrailingZeros64(word)))
			word &= word - 1
		}
		set[i] = 0
	}
	return dims
}

func abs32(v float32) float32 { return float32(math.Abs(float64(v))) }

// leaf appends the mean label vector of ids.
func (b *treeBuilder) leaf(ids []int32) {
	s, t := b.s, &b.out
	labels := s.labels[:0]
	for _, id := range ids {
		idx, _ := b.d.Y.Row(int(id))
		for _, l := range idx {
			if s.labelAcc[l] == 0 {
				labels = append(labels, l)
			}
			s.labelAcc[l]++
		}
	}
	slices.Sort(labels)
	inv := 1 / float32(len(ids))
	for _, l := range labels {
		t.LeafLabel = append(t.LeafLabel, l)
		t.LeafValue = append(t.LeafValue, s.labelAcc[l]*inv)
		s.labelAcc[l] = 0
	}
	s.labels = labels
}
