package ensemble

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync/atomic"

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
// Each member's calibration is Platt scaling, σ(A·s + B) fitted by
// logistic regression to whether each proposed label is true (with
// Platt's smoothed targets), or the kind's default if a member proposes no
// true label or only true ones. The weights are then the mean of those
// that maximise the mean of P@1, P@3 and P@5 of the fused prediction on
// each of fitBags bootstrap resamples of the held-out rows (bagging,
// Breiman 1996: the weights that are best on a few hundred rows are best
// on those rows alone), each found by a coordinate search from equal
// weights over a grid of 1/20, a move kept only if it gains. The
// resamples are searched on the pool's workers. Fit is deterministic: the
// same lists give the same weights on any number of ranks and workers.
func Fit(lists [][][]model.Scored, truth *data.CSR, kinds []string, k int, pool *numa.Pool) (Fitted, error) {
	f := Fitted{Calibrations: make([]Calibration, len(lists)), Weights: make([]float64, len(lists))}
	positive := truthSets(truth)
	all := make([]int32, len(positive))
	for i := range all {
		all[i] = int32(i)
	}
	if len(lists) == 1 {
		// One member: its own scores, unchanged.
		f.Calibrations[0], f.Weights[0] = Identity, 1
		f.Objective = newTable(lists, f.Calibrations, wants(kinds, k), k).objective(f.Weights, positive, all, &model.Top{})
		return f, nil
	}
	for m := range lists {
		c, ok := platt(lists[m], positive)
		if !ok {
			c = DefaultCalibration(kinds[m])
		}
		f.Calibrations[m] = c
	}
	t := newTable(lists, f.Calibrations, wants(kinds, k), k)
	w, err := t.bagged(positive, all, pool)
	if err != nil {
		return Fitted{}, err
	}
	f.Weights = w
	f.Objective = t.objective(f.Weights, positive, all, &model.Top{})
	return f, nil
}

// bagged returns the mean of the weights search finds on fitBags bootstrap
// resamples of the rows (each drawn from its own random stream), searched
// on the pool's workers and added up in the resamples' order, so that the
// mean does not depend on the workers. Without rows, equal weights.
func (t *table) bagged(positive [][]int32, rows []int32, pool *numa.Pool) ([]float64, error) {
	if len(rows) == 0 {
		return equalWeights(t.members), nil
	}
	found := make([][]float64, fitBags)
	var next atomic.Int64
	err := pool.Run(func(numa.Worker) error {
		var top model.Top
		var sample []int32 // allocated by the workers that take a resample
		for b := int(next.Add(1)) - 1; b < fitBags; b = int(next.Add(1)) - 1 {
			if sample == nil {
				sample = make([]int32, len(rows))
			}
			rng := rand.New(rand.NewPCG(fitStream, uint64(b)))
			for i := range sample {
				sample[i] = rows[rng.IntN(len(rows))]
			}
			found[b] = t.search(positive, sample, &top)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	w := make([]float64, t.members)
	for _, fb := range found {
		for m, v := range fb {
			w[m] += v / fitBags
		}
	}
	return w, nil
}

// search returns the weights that maximise the objective over the rows
// given (a row as often as it is given): a coordinate search from equal
// weights over a grid of weightStep, each move kept only if it gains.
func (t *table) search(positive [][]int32, rows []int32, top *model.Top) []float64 {
	w := equalWeights(t.members)
	best := t.objective(w, positive, rows, top)
	trial := make([]float64, len(w))
	for pass := 0; pass < 20; pass++ {
		improved := false
		for m := range w {
			for g := 0; g <= int(math.Round(1/weightStep)); g++ {
				reweigh(trial, w, m, float64(g)*weightStep)
				if v := t.objective(trial, positive, rows, top); v > best+1e-9 {
					copy(w, trial)
					best, improved = v, true
				}
			}
		}
		if !improved {
			break
		}
	}
	return w
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

// table holds the held-out rows' candidate labels with every member's
// calibrated score for each (a member's floor where it did not propose
// the label), so that the weight search computes a row's fused scores as
// dot products.
type table struct {
	members int
	k       int
	labels  [][]int32   // row, candidate
	scores  [][]float64 // row, candidate × members
}

// newTable builds the table of the members' lists, calibrated by cals,
// grouped by label as fuser.row groups them (want[m]: member m's
// Candidates).
func newTable(lists [][][]model.Scored, cals []Calibration, want []int, k int) *table {
	rows := len(lists[0])
	t := &table{members: len(lists), k: k, labels: make([][]int32, rows), scores: make([][]float64, rows)}
	var f fuser
	for i := range rows {
		f.group(lists, i, want)
		t.labels[i] = slices.Clone(f.labels)
		t.scores[i] = make([]float64, len(f.raw))
		for q, s := range f.raw {
			t.scores[i][q] = cals[q%len(lists)].Apply(s)
		}
	}
	return t
}

// objective returns the mean of P@1, P@3 and P@5 (those up to the table's
// k), in percent, of the prediction fused with weights w, over the rows
// given (a row as often as it is given).
func (t *table) objective(w []float64, truth [][]int32, rows []int32, top *model.Top) float64 {
	ks := []int{1, 3, 5}
	for len(ks) > 1 && ks[len(ks)-1] > t.k {
		ks = ks[:len(ks)-1]
	}
	sum := 0.0
	for _, i := range rows {
		labels := t.labels[i]
		top.Reset(ks[len(ks)-1])
		for q, l := range labels {
			v := 0.0
			for m, wm := range w {
				v += wm * t.scores[i][q*t.members+m]
			}
			top.Push(model.Scored{Label: l, Score: float32(v)})
		}
		best := top.Sorted()
		for _, k := range ks {
			hits := 0
			for _, s := range best[:min(k, len(best))] {
				if isTrue(truth[i], s.Label) {
					hits++
				}
			}
			sum += float64(hits) / float64(k)
		}
	}
	return 100 * sum / float64(len(ks)*max(1, len(rows)))
}
