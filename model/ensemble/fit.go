package ensemble

import (
	"math"
	"math/rand/v2"
	"slices"

	"xmc/data"
	"xmc/model"
	"xmc/numa"
)

// Fitted is what Fit chose: a calibration and a weight per member, and
// the held-out objective they reach (the mean of P@1, P@3 and P@5, in
// percent, over the held-out rows).
type Fitted struct {
	Calibrations []Calibration
	Weights      []float64
	Objective    float64
	// Searched is the number of the fitBags resamples whose searched
	// weights gained on their out-of-bag rows and entered the mean (the
	// others entered as equal weights).
	Searched int
}

// weightStep is the grid of the weight search: weights are multiples of
// 1/20 before the others are rescaled.
const weightStep = 0.05

// fitBags is the number of bootstrap resamples of the held-out rows whose
// searched weights Fit averages, and fitStream the random stream their
// draws start from.
const (
	fitBags   = 10
	fitStream = 0x656e73656d626c65 // "ensemble"
)

// Fit chooses the members' calibrations and weights on held-out rows that
// no member trained on: lists[m][i] is member m's prediction of
// Candidates(kinds[m], k) labels for held-out row i, truth the rows' true
// labels, and kinds[m] member m's model kind.
//
// Each member's calibration is Platt scaling, σ(A·s + B) fitted by logistic
// regression to whether each proposed label is true (with Platt's smoothed
// targets), or the kind's default if a member proposes no true label or
// only true ones. The weights are then the mean of those that maximise the
// mean of P@1, P@3 and P@5 of the fused prediction on each of fitBags
// bootstrap resamples of the held-out rows (bagging, Breiman 1996: the
// weights that are best on a few hundred rows are best on those rows
// alone), each found by a coordinate search from equal weights over a grid
// of 1/20 and kept only if it beats equal weights on the rows its resample
// left out (else equal weights enter the mean in its place: on held-out
// rows of a few hundred to a few thousand, most searched weights do not
// gain out of bag). Every step of a search scores all the grid's
// weights of one member in one pass over the rows, shared out on the pool's
// workers, and counts hits as integers, so that Fit is deterministic: the
// same lists give the same weights on any number of ranks and workers.
func Fit(lists [][][]model.Scored, truth *data.CSR, kinds []string, k int, pool *numa.Pool) (Fitted, error) {
	f := Fitted{Calibrations: make([]Calibration, len(lists)), Weights: make([]float64, len(lists))}
	positive := truthSets(truth)
	if len(lists) == 1 {
		// One member: its own scores, unchanged.
		f.Calibrations[0], f.Weights[0] = Identity, 1
	} else {
		// The members' calibrations, one a worker.
		err := pool.For(len(lists), 1, func(_ numa.Worker, m, _ int) {
			c, ok := platt(lists[m], positive)
			if !ok {
				c = DefaultCalibration(kinds[m])
			}
			f.Calibrations[m] = c
		})
		if err != nil {
			return Fitted{}, err
		}
	}
	t, err := newTable(lists, f.Calibrations, wants(kinds, k), k, positive, pool)
	if err != nil {
		return Fitted{}, err
	}
	all := everyRow(len(positive))
	if len(lists) > 1 {
		if f.Weights, f.Searched, err = t.bagged(all, pool); err != nil {
			return Fitted{}, err
		}
	}
	hits, err := t.hits(all, [][]float64{f.Weights}, pool)
	if err != nil {
		return Fitted{}, err
	}
	f.Objective = t.percent(hits[0], all)
	return f, nil
}

// sample is held-out rows that an objective counts, each as often as its
// count: every row once, or a bootstrap resample.
type sample struct {
	rows   []int32
	counts []int32
	total  int64 // Σ counts
}

// everyRow returns the sample of rows 0 to n−1, each once.
func everyRow(n int) sample {
	s := sample{rows: make([]int32, n), counts: make([]int32, n), total: int64(n)}
	for i := range n {
		s.rows[i], s.counts[i] = int32(i), 1
	}
	return s
}

// resample returns a bootstrap resample of s's rows (drawn len(s.rows)
// times with replacement, by rng): the rows drawn, in s's order, with how
// often each was, and the rows of s not drawn (out of bag), each once.
func resample(s sample, rng *rand.Rand) (in, out sample) {
	drawn := make([]int32, len(s.rows))
	for range s.rows {
		drawn[rng.IntN(len(s.rows))]++
	}
	for q, c := range drawn {
		if c > 0 {
			in.rows, in.counts = append(in.rows, s.rows[q]), append(in.counts, c)
			in.total += int64(c)
		} else {
			out.rows, out.counts = append(out.rows, s.rows[q]), append(out.counts, 1)
			out.total++
		}
	}
	return in, out
}

// bagged returns the mean over fitBags bootstrap resamples of s (each
// drawn from its own random stream) of the weights search finds on the
// resample where they beat equal weights on its out-of-bag rows, and of
// equal weights where they do not, added up in the resamples' order; and
// how many resamples kept their searched weights. Without rows, equal
// weights.
func (t *table) bagged(s sample, pool *numa.Pool) ([]float64, int, error) {
	equal := equalWeights(t.members)
	if len(s.rows) == 0 {
		return equal, 0, nil
	}
	w := make([]float64, t.members)
	searched := 0
	for b := range fitBags {
		in, out := resample(s, rand.New(rand.NewPCG(fitStream, uint64(b))))
		found, err := t.search(in, pool)
		if err != nil {
			return nil, 0, err
		}
		h, err := t.hits(out, [][]float64{found, equal}, pool)
		if err != nil {
			return nil, 0, err
		}
		if h[0] > h[1] {
			searched++
		} else {
			found = equal
		}
		for m, v := range found {
			w[m] += v / fitBags
		}
	}
	return w, searched, nil
}

// search returns the weights that maximise the objective over s: a
// coordinate search from equal weights over a grid of weightStep. Each
// step scores every grid weight of one member (the others scaled to add up
// to the rest) and moves to the first best of them if it gains.
func (t *table) search(s sample, pool *numa.Pool) ([]float64, error) {
	w := equalWeights(t.members)
	start, err := t.hits(s, [][]float64{w}, pool)
	if err != nil {
		return nil, err
	}
	best := start[0]
	trials := make([][]float64, int(math.Round(1/weightStep))+1)
	for g := range trials {
		trials[g] = make([]float64, t.members)
	}
	for pass := 0; pass < 20; pass++ {
		improved := false
		for m := range w {
			for g, trial := range trials {
				reweigh(trial, w, m, float64(g)*weightStep)
			}
			hits, err := t.hits(s, trials, pool)
			if err != nil {
				return nil, err
			}
			at := -1
			for g, h := range hits {
				if h > best {
					best, at = h, g
				}
			}
			if at >= 0 {
				copy(w, trials[at])
				improved = true
			}
		}
		if !improved {
			break
		}
	}
	return w, nil
}

// equalWeights returns members weights of 1/members each.
func equalWeights(members int) []float64 {
	w := make([]float64, members)
	for m := range w {
		w[m] = 1 / float64(members)
	}
	return w
}

// reweigh sets dst to w with member m's weight g and the others scaled to
// add up to 1 − g (equal shares if they were all 0).
func reweigh(dst, w []float64, m int, g float64) {
	rest := 0.0
	for j, v := range w {
		if j != m {
			rest += v
		}
	}
	for j, v := range w {
		switch {
		case j == m:
			dst[j] = g
		case rest > 0:
			dst[j] = v / rest * (1 - g)
		default:
			dst[j] = (1 - g) / float64(len(w)-1)
		}
	}
}

// truthSets returns every row's true labels, sorted, for lookups.
func truthSets(y *data.CSR) [][]int32 {
	out := make([][]int32, y.Rows)
	for i := range y.Rows {
		labels, _ := y.Row(i)
		out[i] = slices.Sorted(slices.Values(labels))
	}
	return out
}

// isTrue reports whether label is among the sorted true labels.
func isTrue(truth []int32, label int32) bool {
	_, ok := slices.BinarySearch(truth, label)
	return ok
}

// platt fits σ(A·s + B) to whether each of a member's proposed labels is
// true by Newton's method on the logistic loss, with Platt's targets
// (N₊+1)/(N₊+2) and 1/(N₋+2), and a backtracking line search (Lin, Lin and
// Weng, "A note on Platt's probabilistic outputs", 2007). It returns false
// if the labels are all true or all false.
func platt(rows [][]model.Scored, truth [][]int32) (Calibration, bool) {
	var s []float64
	var y []bool
	pos := 0
	for i, row := range rows {
		for _, c := range row {
			t := isTrue(truth[i], c.Label)
			s, y = append(s, float64(c.Score)), append(y, t)
			if t {
				pos++
			}
		}
	}
	neg := len(s) - pos
	if pos == 0 || neg == 0 {
		return Calibration{}, false
	}
	hi, lo := (float64(pos)+1)/(float64(pos)+2), 1/(float64(neg)+2)
	target := func(q int) float64 {
		if y[q] {
			return hi
		}
		return lo
	}
	loss := func(a, b float64) float64 {
		l := 0.0
		for q := range s {
			z := a*s[q] + b
			// −t·log σ(z) − (1−t)·log(1−σ(z)) = log(1+e^z) − t·z, computed
			// without overflow.
			l += softplus(z) - target(q)*z
		}
		return l
	}
	a, b := 0.0, math.Log((float64(pos)+1)/(float64(neg)+1))
	cur := loss(a, b)
	for iter := 0; iter < 100; iter++ {
		var ga, gb, haa, hab, hbb float64
		for q := range s {
			p := sigmoid(a*s[q] + b)
			d := p - target(q)
			ga, gb = ga+d*s[q], gb+d
			w := p * (1 - p)
			haa, hab, hbb = haa+w*s[q]*s[q], hab+w*s[q], hbb+w
		}
		if math.Abs(ga) < 1e-7*float64(len(s)) && math.Abs(gb) < 1e-7*float64(len(s)) {
			break
		}
		haa, hbb = haa+1e-12, hbb+1e-12
		det := haa*hbb - hab*hab
		da, db := -(hbb*ga-hab*gb)/det, -(haa*gb-hab*ga)/det
		step, moved := 1.0, false
		for step >= 1e-10 {
			na, nb := a+step*da, b+step*db
			if l := loss(na, nb); l < cur+1e-4*step*(ga*da+gb*db) {
				a, b, cur, moved = na, nb, l, true
				break
			}
			step /= 2
		}
		if !moved {
			break
		}
	}
	return Calibration{Scale: a, Shift: b, Sigmoid: true}, true
}

func sigmoid(z float64) float64 { return 1 / (1 + math.Exp(-z)) }

// softplus returns log(1 + e^z) without overflow.
func softplus(z float64) float64 {
	if z > 0 {
		return z + math.Log1p(math.Exp(-z))
	}
	return math.Log1p(math.Exp(z))
}

// table holds the held-out rows' candidates, so that the weight search
// computes a row's fused scores as dot products.
type table struct {
	members int
	ks      []int // the objective's precisions: P@1, P@3 and P@5, those up to the prediction's k
	rows    []candidates
}

// candidates are a held-out row's candidate labels with every member's
// calibrated score for each (a member's floor where it did not propose
// the label) and whether the label is true.
type candidates struct {
	labels []int32
	isTrue []bool
	scores []float64 // candidate × members
}

// hitScale makes a row's hits an integer: it is divisible by every k of
// the objective (1, 3 and 5), and a row adds hitScale/k for each of its
// first k labels that is true.
const hitScale = 15

// fitRows is the rows a worker takes at a time in the fit.
const fitRows = 64

// newTable builds the table of the members' lists, calibrated by cals,
// grouped by label as fuser.row groups them (want[m]: member m's
// Candidates), with the rows' sorted true labels, on the pool's workers.
func newTable(lists [][][]model.Scored, cals []Calibration, want []int, k int, positive [][]int32, pool *numa.Pool) (*table, error) {
	t := &table{members: len(lists), ks: []int{1, 3, 5}, rows: make([]candidates, len(lists[0]))}
	for len(t.ks) > 1 && t.ks[len(t.ks)-1] > k {
		t.ks = t.ks[:len(t.ks)-1]
	}
	fusers := numa.NewPerWorker(pool, func(numa.Worker) *fuser { return new(fuser) })
	err := pool.For(len(t.rows), fitRows, func(w numa.Worker, lo, hi int) {
		f := fusers.Get(w)
		for i := lo; i < hi; i++ {
			f.group(lists, i, want)
			c := candidates{labels: slices.Clone(f.labels), isTrue: make([]bool, len(f.labels)), scores: make([]float64, len(f.raw))}
			for q, label := range c.labels {
				c.isTrue[q] = isTrue(positive[i], label)
			}
			for q, s := range f.raw {
				c.scores[q] = cals[q%t.members].Apply(s)
			}
			t.rows[i] = c
		}
	})
	return t, err
}

// hits returns, for each weight vector of trials, the hits over s of the
// prediction fused with it: Σ over its rows of count × hitScale × (the
// mean of P@k over the objective's k). The rows are scored fitRows at a
// time on the pool's workers, each row under every trial in turn while its
// candidates are in cache; integer sums make the result independent of the
// workers.
func (t *table) hits(s sample, trials [][]float64, pool *numa.Pool) ([]int64, error) {
	type scratch struct {
		sums []int64
		best []rankedLabel
	}
	perWorker := numa.NewPerWorker(pool, func(numa.Worker) *scratch {
		return &scratch{sums: make([]int64, len(trials)), best: make([]rankedLabel, 0, t.ks[len(t.ks)-1])}
	})
	err := pool.For(len(s.rows), fitRows, func(w numa.Worker, lo, hi int) {
		sc := perWorker.Get(w)
		for q := lo; q < hi; q++ {
			for g, weights := range trials {
				sc.sums[g] += int64(s.counts[q]) * t.rowHits(int(s.rows[q]), weights, &sc.best)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	total := make([]int64, len(trials))
	perWorker.Each(func(sc *scratch) {
		for g, v := range sc.sums {
			total[g] += v
		}
	})
	return total, nil
}

// rankedLabel is a fused candidate with whether it is true.
type rankedLabel struct {
	model.Scored
	isTrue bool
}

// rowHits returns row i's hitScale × Σ over the objective's k of (its true
// labels among the first k)/k, fused with weights w; best is scratch for the
// row's best candidates. The fused scores are computed as the ensemble's
// prediction computes them (fuser.row: float64 sums in member order,
// ranked as float32), so that the search ranks as prediction does.
func (t *table) rowHits(i int, w []float64, best *[]rankedLabel) int64 {
	depth := t.ks[len(t.ks)-1]
	b := (*best)[:0]
	row := &t.rows[i]
	for q, label := range row.labels {
		v := 0.0
		for m, wm := range w {
			v += wm * row.scores[q*t.members+m]
		}
		c := rankedLabel{model.Scored{Label: label, Score: float32(v)}, row.isTrue[q]}
		if len(b) == depth && !model.RanksBefore(c.Scored, b[depth-1].Scored) {
			continue
		}
		// Insert c in rank order, dropping the last if b is full.
		if len(b) < depth {
			b = append(b, c)
		}
		at := len(b) - 1
		for ; at > 0 && model.RanksBefore(c.Scored, b[at-1].Scored); at-- {
			b[at] = b[at-1]
		}
		b[at] = c
	}
	*best = b
	var h int64
	for _, k := range t.ks {
		for _, c := range b[:min(k, len(b))] {
			if c.isTrue {
				h += hitScale / int64(k)
			}
		}
	}
	return h
}

// percent returns the objective of hits over s: the mean of P@k over the
// objective's k, in percent.
func (t *table) percent(hits int64, s sample) float64 {
	return 100 * float64(hits) / float64(hitScale*int64(len(t.ks))*max(1, s.total))
}
