// Package metrics computes the evaluation metrics of extreme
// classification as the Extreme Classification Repository's programs and
// pyxclib define them: P@k, nDCG@k, their propensity-scored variants
// (PSP@k, PSnDCG@k, under the propensity model of Jain et al. 2016), R@k,
// and accuracy and macro-F1 for multi-class data; and writes them as a
// table of runs side by side.
package metrics

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"xmc/data"
	"xmc/model"
)

// Parameters of the label propensity model of Jain et al. (2016) that the
// Extreme Classification Repository uses for most datasets. The repository
// lists other values for some: A=0.5, B=0.4 for WikiLSHTC-325K and
// Wikipedia-500K; A=0.6, B=2.6 for Amazon-670K and Amazon-3M.
const (
	PropensityA = 0.55
	PropensityB = 1.5
)

// InversePropensity returns the inverse propensity 1/p_l of every label
// under the model of Jain et al. (2016), "Extreme Multi-label Loss Functions
// for Recommendation, Tagging, Ranking & Other Missing Label Applications":
//
//	p_l = 1 / (1 + C·exp(−A·ln(N_l + B))),  C = (ln N − 1)·(B + 1)^A
//
// so 1/p_l = 1 + C·(N_l + B)^(−A). labelCounts[l] is N_l, the number of
// training instances with label l (see [data.LabelCounts]), and n is N, the
// number of training instances. Rare labels get large weights, which is
// what the propensity-scored metrics reward. Use [PropensityA] and
// [PropensityB] unless the dataset calls for others.
func InversePropensity(labelCounts []int64, n int, a, b float64) []float64 {
	c := (math.Log(float64(n)) - 1) * math.Pow(b+1, a)
	w := make([]float64, len(labelCounts))
	for l, nl := range labelCounts {
		w[l] = 1 + c*math.Pow(float64(nl)+b, -a)
	}
	return w
}

// Metrics maps a metric name, as users write it ("P@1", "nDCG@3", "PSP@5",
// "PSnDCG@5", "R@5"), to its value in percent, as papers and the Extreme
// Classification Repository's programs report them.
type Metrics map[string]float64

// Evaluate scores predictions against the true labels for every k in ks
// (nil means 1, 3, 5). pred[i] holds the predictions for row i of truth,
// best first by score (ties by lower label); rows not in that order are
// ranked on a copy, and only the first k entries count, so a row with fewer
// than k predictions simply scores no hits at the missing ranks. invProp
// holds the inverse propensity of each label ([InversePropensity]); nil
// leaves out the propensity-scored metrics.
//
// The definitions are those of the Extreme Classification Repository's
// evaluation code and pyxclib (xclib/evaluation/xc_metrics.py), with y_i
// the true labels of row i, N the number of rows, rank r = 1..k of the
// predictions and hit(r) whether the label at rank r is true:
//
//	P@k      = 1/N Σ_i |top-k ∩ y_i| / k
//	nDCG@k   = 1/N Σ_i DCG@k / IDCG@k,  DCG@k = Σ_r hit(r) / log2(r+1),
//	           IDCG@k = Σ_{r=1}^{min(k, |y_i|)} 1 / log2(r+1)
//	R@k      = 1/N Σ_i |top-k ∩ y_i| / |y_i|
//	PSP@k    = Σ_i Σ_r hit(r)·w(r) / Σ_i (the same for the best ranking)
//	PSnDCG@k = Σ_i Σ_r hit(r)·w(r) / log2(r+1) / Σ_i (the same for the best)
//
// where w(r) is the inverse propensity of the label at rank r and the best
// ranking of a row puts its true labels in decreasing inverse propensity,
// so a perfect ranking scores 100. pyxclib's PSnDCG divides each row by its
// IDCG@k before summing numerator and denominator; the repository's MATLAB
// and C++ code, followed here, do not, so the two can differ slightly.
//
// On multi-class data, where every row has exactly one true label, it also
// returns the metrics of the multi-class papers (MEMOIR, PD-Sparse) over
// the top-ranked label ŷ_i of each row:
//
//	accuracy = 100/N Σ_i [ŷ_i = y_i]                       (P@1 there)
//	macro-P  = 100/|C| Σ_{c∈C} TP_c / (TP_c + FP_c)
//	macro-R  = 100/|C| Σ_{c∈C} TP_c / (TP_c + FN_c)
//	macro-F1 = 2 · macro-P · macro-R / (macro-P + macro-R)
//
// with C the classes that occur among the rows' true labels or their
// top-ranked labels (as LSHTC's evaluation, Partalas et al. 2015): a class
// never predicted has precision 0, a class predicted but absent from the
// truth recall 0. A row without predictions counts as a miss. They are
// left out as soon as one row has no true label or several.
//
// A row with no true labels counts in N with zero hits: it lowers P@k,
// nDCG@k and R@k and adds nothing to either side of PSP@k and PSnDCG@k, as
// in pyxclib without remove_invalid. If no row has a true label the
// propensity-scored metrics are 0.
//
// The labels of each truth row must be sorted, as [data.CSR] requires.
// It is an error if the row counts differ, a predicted label is outside
// [0, truth.Cols), a row's top k lists a label twice, or invProp does not
// have one entry per label.
func Evaluate(truth *data.CSR, pred [][]model.Scored, invProp []float64, ks []int) (Metrics, error) {
	e, err := NewEvaluator(truth.Cols, invProp, ks)
	if err != nil {
		return nil, err
	}
	if err := e.Add(truth, pred); err != nil {
		return nil, err
	}
	return e.Metrics()
}

// Evaluator computes the metrics of Evaluate over rows added a batch at a
// time, so that predictions need not be held for every row at once; added
// in row order, batches give exactly Evaluate's figures.
type Evaluator struct {
	cols    int
	invProp []float64
	ks      []int
	ranks   int
	rows    int
	// discount[r] is the DCG weight of rank r+1; idcg[m] the DCG of m
	// hits at the top.
	discount, idcg []float64
	// Per-rank sums over rows of the cumulative per-row quantities.
	hitSum    []float64 // Σ_i hits in top r+1
	ndcgSum   []float64 // Σ_i nDCG@(r+1)
	recallSum []float64 // Σ_i recall@(r+1)
	psSum     []float64 // Σ_i propensity-weighted hits
	psBest    []float64 // Σ_i the same for the best ranking
	psdcgSum  []float64
	psdcgBest []float64
	top       model.Top // selects the top of a row not in rank order
	best      []float64 // a row's largest true inverse propensities
	labels    []int32   // scratch for model.DuplicateLabel
	// Per class, for multi-class data (while single is true): rows whose
	// top label is the class, rows of the class, and both.
	single                bool
	predicted, actual, tp []int64
}

// NewEvaluator returns an evaluator of predictions over cols labels for
// every k in ks (nil means 1, 3, 5), with the inverse propensities invProp
// (nil: no propensity-scored metrics), as Evaluate.
func NewEvaluator(cols int, invProp []float64, ks []int) (*Evaluator, error) {
	if ks == nil {
		ks = []int{1, 3, 5}
	}
	if len(ks) == 0 {
		return nil, errors.New("evaluate: no k given")
	}
	kmax := 0
	for _, k := range ks {
		if k < 1 {
			return nil, fmt.Errorf("evaluate: k = %d, must be at least 1", k)
		}
		kmax = max(kmax, k)
	}
	if invProp != nil && len(invProp) != cols {
		return nil, fmt.Errorf("evaluate: %d inverse propensities for %d labels", len(invProp), cols)
	}
	// Only the first cols ranks can hold distinct labels, so per-rank work
	// stops there: k may exceed L (P@k still divides by k) without
	// allocating k-sized arrays.
	ranks := min(kmax, max(cols, 1))
	e := &Evaluator{cols: cols, invProp: invProp, ks: ks, ranks: ranks,
		discount: make([]float64, ranks), idcg: make([]float64, ranks+1),
		hitSum: make([]float64, ranks), ndcgSum: make([]float64, ranks), recallSum: make([]float64, ranks),
		psSum: make([]float64, ranks), psBest: make([]float64, ranks),
		psdcgSum: make([]float64, ranks), psdcgBest: make([]float64, ranks),
		best: make([]float64, 0, ranks), single: true}
	for r := range ranks {
		e.discount[r] = 1 / math.Log2(float64(r)+2)
		e.idcg[r+1] = e.idcg[r] + e.discount[r]
	}
	return e, nil
}

// Add adds the rows of truth, predicted as pred.
func (e *Evaluator) Add(truth *data.CSR, pred [][]model.Scored) error {
	if len(pred) != truth.Rows {
		return fmt.Errorf("evaluate: %d prediction rows for %d rows of true labels", len(pred), truth.Rows)
	}
	if truth.Cols != e.cols {
		return fmt.Errorf("evaluate: rows of %d labels, evaluator of %d", truth.Cols, e.cols)
	}
	ranks, invProp := e.ranks, e.invProp
	for i := range truth.Rows {
		y, _ := truth.Row(i)
		top, err := rankedPrefix(pred[i], ranks, truth.Cols, &e.top)
		if err != nil {
			return fmt.Errorf("evaluate: prediction row %d: %w", e.rows+i, err)
		}
		if l, dup := model.DuplicateLabel(top, &e.labels); dup {
			return fmt.Errorf("evaluate: prediction row %d: label %d listed twice", e.rows+i, l)
		}
		e.addClass(y, top)
		var hits, dcg, ps, psdcg float64
		for r := range ranks {
			if r < len(top) {
				if _, ok := slices.BinarySearch(y, top[r].Label); ok {
					hits++
					dcg += e.discount[r]
					if invProp != nil {
						w := invProp[top[r].Label]
						ps += w
						psdcg += w * e.discount[r]
					}
				}
			}
			e.hitSum[r] += hits
			if len(y) > 0 {
				e.ndcgSum[r] += dcg / e.idcg[min(r+1, len(y))]
				e.recallSum[r] += hits / float64(len(y))
			}
			e.psSum[r] += ps
			e.psdcgSum[r] += psdcg
		}
		if invProp == nil {
			continue
		}
		e.best = largest(e.best[:0], y, invProp, ranks)
		var bps, bpsdcg float64
		for r := range ranks {
			if r < len(e.best) {
				bps += e.best[r]
				bpsdcg += e.best[r] * e.discount[r]
			}
			e.psBest[r] += bps
			e.psdcgBest[r] += bpsdcg
		}
	}
	e.rows += truth.Rows
	return nil
}

// addClass counts a row of true labels y and ranked predictions top for
// the multi-class metrics, or stops counting at the first row that does
// not have exactly one true label. The per-class counts, O(L), are made at
// the first row: multi-label data never allocates more than that once.
func (e *Evaluator) addClass(y []int32, top []model.Scored) {
	if !e.single {
		return
	}
	if len(y) != 1 {
		e.single, e.predicted, e.actual, e.tp = false, nil, nil, nil
		return
	}
	if e.actual == nil {
		e.predicted, e.actual, e.tp = make([]int64, e.cols), make([]int64, e.cols), make([]int64, e.cols)
	}
	e.actual[y[0]]++
	if len(top) > 0 {
		p := top[0].Label
		e.predicted[p]++
		if p == y[0] {
			e.tp[p]++
		}
	}
}

// Metrics returns the metrics of the rows added so far.
func (e *Evaluator) Metrics() (Metrics, error) {
	if e.rows == 0 {
		return nil, errors.New("evaluate: no rows")
	}
	n := float64(e.rows)
	m := make(Metrics, 5*len(e.ks))
	for _, k := range e.ks {
		r := min(k, e.ranks) - 1
		m[fmt.Sprintf("P@%d", k)] = 100 * e.hitSum[r] / (float64(k) * n)
		m[fmt.Sprintf("nDCG@%d", k)] = 100 * e.ndcgSum[r] / n
		m[fmt.Sprintf("R@%d", k)] = 100 * e.recallSum[r] / n
		if e.invProp != nil {
			m[fmt.Sprintf("PSP@%d", k)] = 100 * ratio(e.psSum[r], e.psBest[r])
			m[fmt.Sprintf("PSnDCG@%d", k)] = 100 * ratio(e.psdcgSum[r], e.psdcgBest[r])
		}
	}
	if e.single {
		var hits int64
		var classes, precision, recall float64
		for c, a := range e.actual {
			p, tp := e.predicted[c], e.tp[c]
			if a == 0 && p == 0 {
				continue
			}
			hits += tp
			classes++
			precision += ratio(float64(tp), float64(p))
			recall += ratio(float64(tp), float64(a))
		}
		m[MetricAccuracy] = 100 * float64(hits) / n
		m[MetricMacroP] = 100 * precision / classes
		m[MetricMacroR] = 100 * recall / classes
		m[MetricMacroF1] = 2 * m[MetricMacroP] * m[MetricMacroR] / max(m[MetricMacroP]+m[MetricMacroR], math.SmallestNonzeroFloat64)
	}
	return m, nil
}

// Names of the multi-class metrics in Metrics (see Evaluate).
const (
	MetricAccuracy = "accuracy"
	MetricMacroP   = "macro-P"
	MetricMacroR   = "macro-R"
	MetricMacroF1  = "macro-F1"
)

// ratio is a/b, or 0 when b is 0 (no row has a true label), as the
// repository's C++ evaluation code does.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// rankedPrefix returns the first min(k, len(row)) entries of row in rank
// order and checks every label of row against [0, cols). A row already in
// rank order (the usual case: rows from ReadScores or a predictor) is
// returned as a subslice without copying; otherwise the top k are selected
// with top, into its buffer.
func rankedPrefix(row []model.Scored, k, cols int, top *model.Top) ([]model.Scored, error) {
	m := min(k, len(row))
	ranked := true
	for j, s := range row {
		if s.Label < 0 || int(s.Label) >= cols {
			return nil, fmt.Errorf("label %d outside [0, %d)", s.Label, cols)
		}
		switch {
		case j == 0:
		case j < m:
			ranked = ranked && !model.RanksBefore(s, row[j-1])
		default:
			ranked = ranked && !model.RanksBefore(s, row[m-1])
		}
	}
	if ranked {
		return row[:m], nil
	}
	top.Reset(k)
	for _, s := range row {
		top.Push(s)
	}
	return top.Sorted(), nil
}

// largest appends to dst, in decreasing order, the at most k largest
// invProp values of the labels y: the weights of the best possible ranking.
// Insertion into the short sorted dst is cheaper than sorting all of y.
func largest(dst []float64, y []int32, invProp []float64, k int) []float64 {
	for _, l := range y {
		w := invProp[l]
		if len(dst) == k && w <= dst[k-1] {
			continue
		}
		if len(dst) < k {
			dst = append(dst, w)
		} else {
			dst[k-1] = w
		}
		for j := len(dst) - 1; j > 0 && dst[j] > dst[j-1]; j-- {
			dst[j], dst[j-1] = dst[j-1], dst[j]
		}
	}
	return dst
}

// WriteTable writes a plain-text table comparing runs side by side: one
// row per metric (P, nDCG, PSP, PSnDCG, R, each for every k in ks, nil
// meaning 1, 3, 5; then the multi-class metrics), one column per run, named by names. Values are percent
// with two decimals, "-" where a run lacks the metric; with several runs
// the best value of each row is marked with '*'. Metrics no run has are
// left out.
func WriteTable(w io.Writer, names []string, ms []Metrics, ks []int) error {
	if len(names) != len(ms) {
		return fmt.Errorf("write table: %d names for %d runs", len(names), len(ms))
	}
	if ks == nil {
		ks = []int{1, 3, 5}
	}
	ks = slices.Compact(slices.Sorted(slices.Values(ks)))

	// A cell is right-aligned text followed by a one-character mark column,
	// so that marked and unmarked values keep their decimals aligned.
	type cell struct{ text, mark string }
	header := []cell{{text: "metric"}}
	for _, n := range names {
		header = append(header, cell{text: n})
	}
	table := [][]cell{header}
	var keys []string
	for _, fam := range [...]string{"P", "nDCG", "PSP", "PSnDCG", "R"} {
		for _, k := range ks {
			keys = append(keys, fmt.Sprintf("%s@%d", fam, k))
		}
	}
	keys = append(keys, MetricAccuracy, MetricMacroP, MetricMacroR, MetricMacroF1)
	for _, key := range keys {
		best, have := math.Inf(-1), 0
		for _, m := range ms {
			if v, ok := m[key]; ok {
				best = max(best, v)
				have++
			}
		}
		if have == 0 {
			continue
		}
		bestText := fmt.Sprintf("%.2f", best)
		row := []cell{{text: key}}
		for _, m := range ms {
			v, ok := m[key]
			c := cell{text: "-"}
			if ok {
				c.text = fmt.Sprintf("%.2f", v)
			}
			if ok && len(ms) > 1 && c.text == bestText {
				c.mark = "*"
			}
			row = append(row, c)
		}
		table = append(table, row)
	}
	width := make([]int, len(header))
	for _, row := range table {
		for j, c := range row {
			width[j] = max(width[j], len(c.text))
		}
	}
	var b strings.Builder
	for _, row := range table {
		var line strings.Builder
		fmt.Fprintf(&line, "%-*s", width[0], row[0].text)
		for j, c := range row[1:] {
			fmt.Fprintf(&line, "  %*s%1s", width[j+1], c.text, c.mark)
		}
		b.WriteString(strings.TrimRight(line.String(), " "))
		b.WriteByte('\n')
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	return nil
}
