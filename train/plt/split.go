package plt

import (
	"math"
	"math/rand/v2"
	"slices"

	"xmc/numa"
	"xmc/train/onevsall"
)

// labelVectors holds every label's mean row, normalised to unit length,
// over the features (not the bias column): Parabel's and napkinXC's
// representation of a label, which the splits cluster. Labels without a
// training row are left out of the trees: Seen lists the others,
// increasing.
type labelVectors struct {
	Seen []int32
	idx  [][]int32
	val  [][]float32
	cols int // the features: columns [0, cols) of the vectors
}

// newLabelVectors computes the labels' mean rows on the pool's workers.
func newLabelVectors(d *onevsall.Data, pool *numa.Pool) (*labelVectors, error) {
	v := &labelVectors{idx: make([][]int32, d.L), val: make([][]float32, d.L), cols: d.D}
	for l := range d.L {
		if len(d.Positives(int32(l))) > 0 {
			v.Seen = append(v.Seen, int32(l))
		}
	}
	type scratch struct {
		acc     []float64
		touched []int32
	}
	scratches := numa.NewPerWorker(pool, func(numa.Worker) *scratch { return &scratch{acc: make([]float64, d.D)} })
	err := pool.For(len(v.Seen), 64, func(w numa.Worker, lo, hi int) {
		s := scratches.Get(w)
		for _, l := range v.Seen[lo:hi] {
			s.touched = s.touched[:0]
			for _, r := range d.Positives(l) {
				idx, val := d.X.Row(int(r))
				if n := len(idx); n > 0 && int(idx[n-1]) >= d.D { // the bias column, last
					idx, val = idx[:n-1], val[:n-1]
				}
				s.touched = addSparse(s.acc, s.touched, idx, val)
			}
			slices.Sort(s.touched)
			var ss float64
			for _, j := range s.touched {
				ss += s.acc[j] * s.acc[j]
			}
			inv := 1 / math.Sqrt(ss)
			idx, val := make([]int32, 0, len(s.touched)), make([]float32, 0, len(s.touched))
			for _, j := range s.touched {
				// Sums that cancelled out leave ss = 0 and no entry.
				if f := float32(s.acc[j] * inv); ss > 0 && f != 0 {
					idx, val = append(idx, j), append(val, f)
				}
				s.acc[j] = 0
			}
			v.idx[l], v.val[l] = idx, val
		}
	})
	return v, err
}

// addSparse adds the sparse vector (idx, val) to the dense acc and returns
// touched with every column it made non-zero appended: the one way a label
// vector, a centre and a block's partial sum are summed. A sum that cancels
// out is kept as the smallest non-zero value, so that its column stays
// listed once.
func addSparse(acc []float64, touched []int32, idx []int32, val []float32) []int32 {
	val = val[:len(idx)]
	for q, j := range idx {
		if acc[j] == 0 {
			touched = append(touched, j)
		}
		acc[j] += float64(val[q])
		if acc[j] == 0 {
			acc[j] = math.SmallestNonzeroFloat64
		}
	}
	return touched
}

// bigSplit is the smallest set of labels whose k-means passes are shared
// among the workers; smaller sets are split a set per worker.
const bigSplit = 4096

// Blocks of a large set's centres: centreLabels labels summed by one worker
// into a sparse partial sum, and centreCols columns of the centres
// gathered from the partial sums, in block order, by one worker. Fixed
// sizes, so that a centre is the same bits for any number of workers.
const (
	centreLabels = 1024
	centreCols   = 4096
)

// splitScratch is a worker's memory for splitting sets of labels: two dense
// centres (zero outside the columns touched lists), per label of the set
// its similarities to them and its rank, and for a large set's centres the
// blocks' partial sums and the worker's dense accumulator.
type splitScratch struct {
	centre  [2][]float64
	touched [2][]int32
	sim     [2][]float64
	order   []int32
	first   []bool
	spare   []int32
	// blockIdx, blockVal hold block b's partial sum; colSS each column
	// block's squared norm.
	blockIdx [][]int32
	blockVal [][]float64
	colSS    []float64
	acc      []float64
	accCols  []int32
}

func newSplitScratch(cols int) *splitScratch {
	return &splitScratch{centre: [2][]float64{make([]float64, cols), make([]float64, cols)}}
}

// setCentre makes centre c the normalised sum of the vectors of labels, on
// one worker.
func (v *labelVectors) setCentre(s *splitScratch, c int, labels []int32) {
	centre := s.centre[c]
	for _, j := range s.touched[c] {
		centre[j] = 0
	}
	s.touched[c] = s.touched[c][:0]
	for _, l := range labels {
		s.touched[c] = addSparse(centre, s.touched[c], v.idx[l], v.val[l])
	}
	var ss float64
	for _, j := range s.touched[c] {
		ss += centre[j] * centre[j]
	}
	if ss > 0 {
		inv := 1 / math.Sqrt(ss)
		for _, j := range s.touched[c] {
			centre[j] *= inv
		}
	}
}

// setCentreShared makes centre c of the lead's scratch s the normalised
// sum of the vectors of labels with the team: blocks of labels summed into
// sparse partial sums (in each worker's scratch of scratches), then blocks
// of columns gathered from them in block order. It leaves the centre
// dense, with no touched list: clearShared clears it.
func (v *labelVectors) setCentreShared(team *numa.Team, scratches *numa.PerWorker[*splitScratch], s *splitScratch, c int, labels []int32) error {
	blocks := (len(labels) + centreLabels - 1) / centreLabels
	for len(s.blockIdx) < blocks {
		s.blockIdx, s.blockVal = append(s.blockIdx, nil), append(s.blockVal, nil)
	}
	err := team.For(blocks, 1, func(w numa.Worker, b, _ int) {
		ws := scratches.Get(w)
		if ws.acc == nil {
			ws.acc = make([]float64, v.cols)
		}
		ws.accCols = ws.accCols[:0]
		for _, l := range labels[b*centreLabels : min((b+1)*centreLabels, len(labels))] {
			ws.accCols = addSparse(ws.acc, ws.accCols, v.idx[l], v.val[l])
		}
		slices.Sort(ws.accCols)
		idx, val := s.blockIdx[b][:0], s.blockVal[b][:0]
		for _, j := range ws.accCols {
			idx, val = append(idx, j), append(val, ws.acc[j])
			ws.acc[j] = 0
		}
		s.blockIdx[b], s.blockVal[b] = idx, val
	})
	if err != nil {
		return err
	}
	colBlocks := (v.cols + centreCols - 1) / centreCols
	s.colSS = slices.Grow(s.colSS[:0], colBlocks)[:colBlocks]
	centre := s.centre[c]
	err = team.For(colBlocks, 1, func(_ numa.Worker, cb, _ int) {
		lo, hi := cb*centreCols, min((cb+1)*centreCols, v.cols)
		clear(centre[lo:hi])
		for b := range blocks {
			idx, val := s.blockIdx[b], s.blockVal[b]
			q, _ := slices.BinarySearch(idx, int32(lo))
			for ; q < len(idx) && int(idx[q]) < hi; q++ {
				centre[idx[q]] += val[q]
			}
		}
		var ss float64
		for _, x := range centre[lo:hi] {
			ss += x * x
		}
		s.colSS[cb] = ss
	})
	if err != nil {
		return err
	}
	var ss float64
	for _, x := range s.colSS {
		ss += x
	}
	if ss == 0 {
		return nil
	}
	inv := 1 / math.Sqrt(ss)
	return team.For(v.cols, centreCols, func(_ numa.Worker, lo, hi int) {
		for j := lo; j < hi; j++ {
			centre[j] *= inv
		}
	})
}

// clearShared zeroes both centres of s after a shared split, so that the
// scratch serves small splits again.
func (v *labelVectors) clearShared(team *numa.Team, s *splitScratch) error {
	s.touched[0], s.touched[1] = s.touched[0][:0], s.touched[1][:0]
	return team.For(v.cols, centreCols, func(_ numa.Worker, lo, hi int) {
		clear(s.centre[0][lo:hi])
		clear(s.centre[1][lo:hi])
	})
}

// similarities sets, for the labels set[lo:hi], their similarity to both
// centres.
func (v *labelVectors) similarities(s *splitScratch, set []int32, lo, hi int) {
	for i := lo; i < hi; i++ {
		l := set[i]
		var a, b float64
		for q, j := range v.idx[l] {
			x := float64(v.val[l][q])
			a += x * s.centre[0][j]
			b += x * s.centre[1][j]
		}
		s.sim[0][i], s.sim[1][i] = a, b
	}
}

// splitter is how a set of labels is split: by one worker (team nil), or
// by the team, each pass's similarities and centres shared out.
type splitter struct {
	v         *labelVectors
	team      *numa.Team
	scratches *numa.PerWorker[*splitScratch]
}

// centre sets centre c of s to the normalised sum of labels' vectors.
func (sp splitter) centre(s *splitScratch, c int, labels []int32) error {
	if sp.team == nil {
		sp.v.setCentre(s, c, labels)
		return nil
	}
	return sp.v.setCentreShared(sp.team, sp.scratches, s, c, labels)
}

// split divides set (increasing labels) in two halves by balanced
// spherical two-means, as napkinXC's hierarchical k-means does: centres
// seeded with two labels drawn by rng, then at each pass the half of the
// labels that are the most closer to the first centre than to the second
// (ties: the smaller label) assigned to it, and the centres recomputed,
// until the mean similarity grows by less than eps or after iters passes.
// It reorders set into the first half then the second, each increasing.
func (sp splitter) split(s *splitScratch, set []int32, rng *rand.Rand, eps float64, iters int) error {
	n := len(set)
	for c := range s.sim {
		s.sim[c] = slices.Grow(s.sim[c][:0], n)[:n]
	}
	a := rng.IntN(n)
	b := rng.IntN(n - 1)
	if b >= a {
		b++
	}
	// A single label's normalised vector, on one worker: cheap.
	sp.v.setCentre(s, 0, set[a:a+1])
	sp.v.setCentre(s, 1, set[b:b+1])
	s.order = slices.Grow(s.order[:0], n)[:n]
	s.first = slices.Grow(s.first[:0], n)[:n]
	s.spare = slices.Grow(s.spare[:0], n)[:n]
	half := (n + 1) / 2
	old := math.Inf(-1)
	for range iters {
		if sp.team == nil {
			sp.v.similarities(s, set, 0, n)
		} else if err := sp.team.For(n, 256, func(_ numa.Worker, lo, hi int) { sp.v.similarities(s, set, lo, hi) }); err != nil {
			return err
		}
		for i := range s.order {
			s.order[i] = int32(i)
		}
		closer := func(x, y int32) bool { // x before y: more closer to the first centre
			dx, dy := s.sim[0][x]-s.sim[1][x], s.sim[0][y]-s.sim[1][y]
			return dx > dy || (dx == dy && set[x] < set[y])
		}
		selectFirst(s.order, half, closer)
		clear(s.first)
		for _, i := range s.order[:half] {
			s.first[i] = true
		}
		var total float64
		for i := range n {
			total += s.sim[btoi(!s.first[i])][i]
		}
		f, r := 0, half
		for i, l := range set {
			if s.first[i] {
				s.spare[f], f = l, f+1
			} else {
				s.spare[r], r = l, r+1
			}
		}
		copy(set, s.spare)
		slices.Sort(set[:half])
		slices.Sort(set[half:])
		mean := total / float64(n)
		if mean-old < eps {
			break
		}
		old = mean
		if err := sp.centre(s, 0, set[:half]); err != nil {
			return err
		}
		if err := sp.centre(s, 1, set[half:]); err != nil {
			return err
		}
	}
	if sp.team != nil {
		return sp.v.clearShared(sp.team, s)
	}
	return nil
}

// selectFirst reorders order so that its first k entries are the k first
// under before (a strict total order), in no particular order: Hoare's
// quickselect, with the middle entry as pivot, in time linear on average.
// Written here because the standard library sorts but does not select.
func selectFirst(order []int32, k int, before func(x, y int32) bool) {
	lo, hi := 0, len(order) // the k-th first lies in order[lo:hi]
	for hi-lo > 1 {
		pivot := order[lo+(hi-lo)/2]
		// Three-way partition: before pivot, pivot, after it.
		i, j, p := lo, hi, lo
		for p < j {
			switch {
			case before(order[p], pivot):
				order[i], order[p] = order[p], order[i]
				i, p = i+1, p+1
			case before(pivot, order[p]):
				j--
				order[p], order[j] = order[j], order[p]
			default:
				p++
			}
		}
		switch {
		case k <= i:
			hi = i
		case k >= j:
			lo = j
		default:
			return
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
