package ppdsparse

import (
	"math"
	"slices"
)

// search returns the inactive rows whose dual gradient is negative by more
// than Tol, that is the negatives with w·x_i > −1 + Tol, with the size of
// the violation. The scores come from the inverted index, visiting only
// the columns where w is non-zero: exactly, or, if sampled, with the
// randomised estimate of w and the column cutoff.
//
// An exact search spares what it can of the scan, with the same answer:
//   - after the first, since the last full scan row i's score has moved by
//     at most ‖Δw‖·‖x_i‖ + |Δb| (Cauchy–Schwarz, Δw over the features, Δb
//     the bias), so only the rows whose slack then was below that bound
//     can violate now; when scoring those rows from their own features
//     costs less than the scan, that is done instead (near convergence w
//     barely moves: the search that confirms a label is done rescores a
//     few rows rather than scanning every column of w);
//   - on data without negative features, the columns of positive weights
//     alone bound every score from above, and only the rows that bound
//     lets violate need the rest: their own features, or the columns of
//     negative weights, whichever costs less.
func (s *labelScratch) search(sampled bool) []candidate {
	if sampled {
		s.gatherWeights(0)
		s.sparsify()
		s.scan(s.p.SearchCutoff)
		return s.collect(false)
	}
	if s.fullDone {
		if cand, ok := s.boundedSearch(); ok {
			return cand
		}
	}
	if !s.d.NonNegative {
		s.gatherWeights(0)
		s.scan(0)
		return s.collect(true)
	}
	s.gatherWeights(1)
	s.scan(0)
	// The positive columns' scores bound the violations from above.
	d, tol, b := s.d, s.p.Tol, s.biasWeight()
	x := &d.X
	negScan := s.columnsLength(-1)
	s.near = s.near[:0]
	var cost int64
	for i, sc := range s.score {
		if sc+b+1 > tol && !s.active[i] {
			s.near = append(s.near, int32(i))
			if cost += x.Indptr[i+1] - x.Indptr[i]; cost > negScan {
				break
			}
		}
	}
	if cost > negScan {
		s.gatherWeights(-1)
		s.scan(0)
		return s.collect(true)
	}
	// Every row's slack is at least what its bound leaves; the rows that
	// may violate are rescored from their features.
	for i, sc := range s.score {
		s.score[i] = 0
		s.slack[i] = tol - (sc + b + 1)
	}
	s.cand = s.rescore(s.cand[:0])
	s.snapshot(b)
	return s.cand
}

// gatherWeights lists in s.wIdx and s.wVal the non-zero feature weights
// (the bias left out) of the given sign: 1 positive, −1 negative, 0 both.
func (s *labelScratch) gatherWeights(sign float64) {
	s.wIdx, s.wVal = s.wIdx[:0], s.wVal[:0]
	for _, j := range s.cols {
		if wj := s.w[j]; wj != 0 && j != s.bias && wj*sign >= 0 {
			s.wIdx = append(s.wIdx, j)
			s.wVal = append(s.wVal, wj)
		}
	}
}

// columnsLength returns the number of index entries in the columns whose
// weight has the given sign (1 or −1).
func (s *labelScratch) columnsLength(sign float64) int64 {
	xt := &s.d.XT
	var n int64
	for _, j := range s.cols {
		if s.w[j]*sign > 0 && j != s.bias {
			n += xt.Indptr[j+1] - xt.Indptr[j]
		}
	}
	return n
}

// scan adds w_j·x_ij to s.score[i] for the weights listed in s.wIdx and
// s.wVal; with cutoff > 0 it skips the entries whose |w_j·x_ij| falls
// below it.
func (s *labelScratch) scan(cutoff float64) {
	xt := &s.d.XT
	score := s.score
	var scanned int64
	for q, j := range s.wIdx {
		wj := s.wVal[q]
		lo, hi := xt.Indptr[j], xt.Indptr[j+1]
		rows, val := xt.Indices[lo:hi], xt.Values[lo:hi]
		if cutoff > 0 {
			// Entries are by decreasing |x_ij|: stop at the first that
			// cannot matter.
			limit := cutoff / math.Abs(wj)
			k := 0
			for k < len(val) && math.Abs(float64(val[k])) >= limit {
				k++
			}
			rows, val = rows[:k], val[:k]
		}
		scanned += int64(len(rows))
		val = val[:len(rows)]
		for k, i := range rows {
			score[i] += wj * float64(val[k])
		}
	}
	s.stats.Scanned += scanned
}

// collect returns the violators by s.score and clears it; if exact, it
// also keeps every row's slack for the bounded searches that follow. One
// pass over the rows: cheaper than tracking which rows were scored, as a
// scan visits far more entries than there are rows.
func (s *labelScratch) collect(exact bool) []candidate {
	tol, b := s.p.Tol, s.biasWeight()
	s.cand = s.cand[:0]
	for i, sc := range s.score {
		s.score[i] = 0
		// y = −1 and α = 0: the gradient is −(w·x_i) − 1.
		viol := sc + b + 1
		if exact {
			s.slack[i] = tol - viol
		}
		if viol > tol && !s.active[i] {
			s.cand = append(s.cand, candidate{row: int32(i), viol: viol})
		}
	}
	if exact {
		s.snapshot(b)
	}
	return s.cand
}

// snapshot records the weights the slacks of the last full search were
// measured with; b is the bias weight.
func (s *labelScratch) snapshot(b float64) {
	for _, j := range s.cols {
		s.wFull[j] = s.w[j]
	}
	if s.bias >= 0 {
		s.wFull[s.bias] = b
	}
	s.fullDone = true
}

// rescore appends to cand the rows of s.near that violate, each scored
// from its own features, and records their slack. The bias, the last
// entry of every row when there is one, adds its weight w[bias] in turn.
func (s *labelScratch) rescore(cand []candidate) []candidate {
	s.stats.Rescored += int64(len(s.near))
	for _, i := range s.near {
		viol := s.rowScore(i) + 1
		s.slack[i] = s.p.Tol - viol
		if viol > s.p.Tol {
			cand = append(cand, candidate{row: i, viol: viol})
		}
	}
	return cand
}

// boundedSearch is search's answer from the rows that the move of w since
// the last full scan can have brought to violate, each scored from its own
// features; ok is false, and nothing is searched, when that would cost
// more than scanning the index.
func (s *labelScratch) boundedSearch() (cand []candidate, ok bool) {
	d := s.d
	var dw2 float64
	var scan int64
	for _, j := range s.cols {
		if j == s.bias {
			continue
		}
		dw := s.w[j] - s.wFull[j]
		dw2 += dw * dw
		if s.w[j] != 0 {
			scan += d.XT.Indptr[j+1] - d.XT.Indptr[j]
		}
	}
	b := s.biasWeight()
	db := 0.0
	if s.bias >= 0 {
		db = math.Abs(b - s.wFull[s.bias])
	}
	// A margin for rounding: the scores compared were summed in other
	// orders.
	const eps = 1e-9
	dw := math.Sqrt(dw2)
	x := &d.X
	s.near = s.near[:0]
	var cost int64
	for i, sl := range s.slack {
		if sl <= dw*d.FeatureNorm[i]+db+eps && !s.active[i] {
			s.near = append(s.near, int32(i))
			if cost += x.Indptr[i+1] - x.Indptr[i]; cost > scan {
				return nil, false
			}
		}
	}
	s.cand = s.rescore(s.cand[:0])
	return s.cand, true
}

// rowScore returns w·x_i from row i's own features, the bias entry (the
// last, when there is one) included.
func (s *labelScratch) rowScore(i int32) float64 {
	idx, val := s.d.X.Row(int(i))
	val = val[:len(idx)]
	w := s.w
	m := 0.0
	for k, j := range idx {
		m += w[j] * float64(val[k])
	}
	return m
}

// biasWeight returns the bias weight, 0 without a bias feature.
func (s *labelScratch) biasWeight() float64 {
	if s.bias >= 0 {
		return s.w[s.bias]
	}
	return 0
}

// verify keeps the candidates whose exact violation, from their own
// rows, exceeds Tol, with that violation.
func (s *labelScratch) verify(cand []candidate) []candidate {
	kept := cand[:0]
	for _, c := range cand {
		if viol := s.rowScore(c.row) + 1; viol > s.p.Tol {
			kept = append(kept, candidate{row: c.row, viol: viol})
		}
	}
	return kept
}

// sparsify replaces the search's weights (s.wIdx, s.wVal) by the unbiased
// estimate of the paper's Algorithm 3: nnz(w)/Sparsify coordinates drawn
// with probability |w_j|/‖w‖₁, each draw worth sign(w_j)·‖w‖₁/draws. Large
// weights are kept almost surely, small ones mostly dropped, so the scan
// visits far fewer columns while scores stay right on average.
func (s *labelScratch) sparsify() {
	nnz := len(s.wIdx)
	draws := int(math.Ceil(float64(nnz) / s.p.Sparsify))
	if draws >= nnz {
		return
	}
	s.cum = s.cum[:0]
	total := 0.0
	for _, v := range s.wVal {
		total += math.Abs(v)
		s.cum = append(s.cum, total)
	}
	counts := s.counts[:nnz]
	for range draws {
		q, _ := slices.BinarySearch(s.cum, s.rng.Float64()*total)
		counts[min(q, nnz-1)]++
	}
	unit := total / float64(draws)
	k := 0
	for q := range nnz {
		if c := counts[q]; c > 0 {
			counts[q] = 0
			s.wIdx[k] = s.wIdx[q]
			s.wVal[k] = math.Copysign(float64(c)*unit, s.wVal[q])
			k++
		}
	}
	s.wIdx, s.wVal = s.wIdx[:k], s.wVal[:k]
}

// worse orders candidates by decreasing violation, then by row, a total
// order so that the selection is reproducible.
func worse(a, b candidate) bool {
	return a.viol > b.viol || (a.viol == b.viol && a.row < b.row)
}

// selectWorst reorders c so that its first k elements are the k most
// violating (in no particular order), by quickselect: linear time, where
// sorting every violator cost a third of the training time.
func selectWorst(c []candidate, k int) {
	lo, hi := 0, len(c)-1
	for lo < hi {
		// Median of three as the pivot, moved to hi.
		mid := lo + (hi-lo)/2
		if worse(c[mid], c[lo]) {
			c[mid], c[lo] = c[lo], c[mid]
		}
		if worse(c[hi], c[lo]) {
			c[hi], c[lo] = c[lo], c[hi]
		}
		if worse(c[mid], c[hi]) {
			c[mid], c[hi] = c[hi], c[mid]
		}
		pivot := c[hi]
		store := lo
		for q := lo; q < hi; q++ {
			if worse(c[q], pivot) {
				c[q], c[store] = c[store], c[q]
				store++
			}
		}
		c[store], c[hi] = c[hi], c[store]
		switch {
		case store == k || store == k-1:
			return
		case store < k:
			lo = store + 1
		default:
			hi = store - 1
		}
	}
}
