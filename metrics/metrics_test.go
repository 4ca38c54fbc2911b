package metrics

import (
	"bufio"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"xmc/data"
	"xmc/model"
)

// labelMatrix builds a label CSR from per-row label lists (sorted here).
func labelMatrix(cols int, rows [][]int32) *data.CSR {
	m := &data.CSR{Rows: len(rows), Cols: cols, Indptr: []int64{0}}
	for _, r := range rows {
		r = slices.Sorted(slices.Values(r))
		m.Indices = append(m.Indices, r...)
		for range r {
			m.Values = append(m.Values, 1)
		}
		m.Indptr = append(m.Indptr, int64(len(m.Indices)))
	}
	return m
}

// readLabels reads the label part of an Extreme Classification Repository
// text file (header "N D L", then "l1,l2,... f:v ..." per row), parsed here
// so the metric tests do not depend on package data's reader.
func readLabels(t testing.TB, path string) *data.CSR {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	sc.Scan()
	var n, d, l int
	if _, err := fmt.Sscan(sc.Text(), &n, &d, &l); err != nil {
		t.Fatalf("%s header: %v", path, err)
	}
	var rows [][]int32
	for sc.Scan() {
		field, _, _ := strings.Cut(sc.Text(), " ")
		var row []int32
		if field != "" {
			for _, s := range strings.Split(field, ",") {
				v, err := strconv.Atoi(s)
				if err != nil {
					t.Fatalf("%s row %d: %v", path, len(rows)+1, err)
				}
				row = append(row, int32(v))
			}
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) != n {
		t.Fatalf("%s: %d rows, header says %d", path, len(rows), n)
	}
	return labelMatrix(l, rows)
}

func TestInversePropensity(t *testing.T) {
	// Expected values computed independently from the propensity form
	// p = 1/(1 + C·exp(−A·ln(N_l + B))), C = (ln N − 1)(B + 1)^A.
	tests := []struct {
		name   string
		counts []int64
		n      int
		a, b   float64
		want   []float64
	}{
		{"defaults N=100", []int64{0, 1, 10, 99, 1000}, 100, PropensityA, PropensityB,
			[]float64{5.774661450557821, 4.605170185988092, 2.557431532775994, 1.4727172404067708, 1.133485702422459}},
		{"defaults N=4880", []int64{0, 1, 10, 99, 1000}, 4880, PropensityA, PropensityB,
			[]float64{10.923543499765682, 8.492900498847192, 4.236928884581689, 1.9824843388043207, 1.27743352870208}},
		{"amazon A=0.6 B=2.6", []int64{0, 1, 10, 99, 1000}, 100000, 0.6, 2.6,
			[]float64{13.779712300945832, 11.512925464970229, 5.957728715885126, 2.4169967724378862, 1.3587801983562169}},
		{"empty", nil, 10, PropensityA, PropensityB, []float64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := InversePropensity(tt.counts, tt.n, tt.a, tt.b)
			if len(got) != len(tt.want) {
				t.Fatalf("len %d, want %d", len(got), len(tt.want))
			}
			for l := range got {
				if math.Abs(got[l]-tt.want[l]) > 1e-12*tt.want[l] {
					t.Errorf("label %d (count %d): %.15g, want %.15g", l, tt.counts[l], got[l], tt.want[l])
				}
				if l > 0 && got[l] >= got[l-1] {
					t.Errorf("label %d: weight %g not below that of the rarer label %d (%g)", l, got[l], l-1, got[l-1])
				}
			}
		})
	}
	// With B = 1 the weight of a label seen once is exactly ln N, since
	// C·(1+B)^−A = ln N − 1.
	if got := InversePropensity([]int64{1}, 7395, 0.7, 1); math.Abs(got[0]-math.Log(7395)) > 1e-12 {
		t.Errorf("count 1, B=1: %g, want ln N = %g", got[0], math.Log(7395))
	}
}

func TestLabelCounts(t *testing.T) {
	y := labelMatrix(5, [][]int32{{0, 2}, {}, {2, 4}, {2}})
	if got, want := data.LabelCounts(y), []int64{1, 0, 3, 0, 1}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	// Real data: counts sum to the number of positives listed in
	// testdata/README.md.
	train := readLabels(t, "../testdata/bibtex/train.txt")
	var sum int64
	for _, c := range data.LabelCounts(train) {
		sum += c
	}
	if sum != 11616 {
		t.Errorf("bibtex train: %d label positives, want 11616", sum)
	}
}

// handTruth and handPred are the hand-computed case of TestEvaluateHand.
func handCase() (*data.CSR, [][]model.Scored, []float64) {
	truth := labelMatrix(6, [][]int32{
		{1, 3},
		{0, 2, 4, 5},
		{},  // no true labels
		{5}, // and no predictions below
	})
	pred := [][]model.Scored{
		{{Label: 3, Score: 0.9}, {Label: 0, Score: 0.8}, {Label: 1, Score: 0.7}}, // hits at ranks 1 and 3; 3 predictions only
		// Not in rank order: the tie at 0.5 puts label 1 (wrong) first.
		{{Label: 5, Score: 0.5}, {Label: 1, Score: 0.5}, {Label: 2, Score: 0.3}, {Label: 3, Score: 0.2}},
		{{Label: 0, Score: 1}, {Label: 1, Score: 0.9}},
		{},
	}
	invProp := []float64{1, 2, 4, 1, 3, 5}
	return truth, pred, invProp
}

func TestEvaluateHand(t *testing.T) {
	truth, pred, invProp := handCase()
	// Worked by hand (see the comments); d_r = 1/log2(r+1).
	want := Metrics{
		// Hits in top 1/3/5: row 0: 1/2/2, row 1: 0/2/2, rows 2, 3: 0.
		"P@1": 100 * 1.0 / 4, "P@3": 100 * 4.0 / 12, "P@5": 100 * 4.0 / 20,
		// Row 0: 1, (1+d3)/(1+d2); row 1: 0, (d2+d3)/(1+d2+d3), (d2+d3)/(1+d2+d3+d4).
		"nDCG@1": 25, "nDCG@3": 36.26105157813577, "nDCG@5": 34.03033007212421,
		// Row 0: 1/2, 1, 1; row 1: 0, 2/4, 2/4.
		"R@1": 12.5, "R@3": 37.5, "R@5": 37.5,
		// Hit weights: row 0: 1 | 1+2; row 1: 0 | 5+4.
		// Best: row 0: 2 | 2+1; row 1: 5 | 5+4+3 | 5+4+3+1; row 3: 5.
		"PSP@1": 100 * 1.0 / 12, "PSP@3": 100 * 12.0 / 20, "PSP@5": 100 * 12.0 / 21,
		"PSnDCG@1": 100 * 1.0 / 12, "PSnDCG@3": 42.95886912767222, "PSnDCG@5": 41.87598790992032,
	}
	got, err := Evaluate(truth, pred, invProp, []int{1, 3, 5})
	if err != nil {
		t.Fatal(err)
	}
	checkMetrics(t, got, want)

	// Without propensities the PS metrics are absent, the rest unchanged.
	got, err = Evaluate(truth, pred, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k := range want {
		if strings.HasPrefix(k, "PS") {
			delete(want, k)
		}
	}
	checkMetrics(t, got, want)
}

func checkMetrics(t *testing.T, got, want Metrics) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("got %d metrics %v, want %d", len(got), got, len(want))
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok || math.Abs(g-w) > 1e-9 {
			t.Errorf("%s = %.12g, want %.12g", k, g, w)
		}
	}
}

func TestEvaluateSmall(t *testing.T) {
	tests := []struct {
		name    string
		truth   [][]int32
		pred    [][]model.Scored
		ks      []int
		invProp []float64
		want    Metrics
	}{
		{
			name:  "all ties ranked by label",
			truth: [][]int32{{2}},
			pred:  [][]model.Scored{{{Label: 3, Score: 1}, {Label: 2, Score: 1}, {Label: 1, Score: 1}}},
			ks:    []int{1, 2},
			// Ranked 1, 2, 3: the hit is at rank 2.
			want: Metrics{"P@1": 0, "P@2": 50, "nDCG@1": 0, "nDCG@2": 100 / math.Log2(3), "R@1": 0, "R@2": 100,
				MetricAccuracy: 0, MetricMacroP: 0, MetricMacroR: 0, MetricMacroF1: 0},
		},
		{
			name:  "k beyond the predictions and the labels",
			truth: [][]int32{{0, 1}},
			pred:  [][]model.Scored{{{Label: 0, Score: 2}, {Label: 1, Score: 1}}},
			ks:    []int{10},
			want:  Metrics{"P@10": 20, "nDCG@10": 100, "R@10": 100},
		},
		{
			name:    "no row has a label",
			truth:   [][]int32{{}, {}},
			pred:    [][]model.Scored{{{Label: 0, Score: 1}}, {}},
			ks:      []int{1},
			invProp: []float64{2, 3, 4, 5, 6},
			want:    Metrics{"P@1": 0, "nDCG@1": 0, "R@1": 0, "PSP@1": 0, "PSnDCG@1": 0},
		},
		{
			name:  "extra predictions past k ignored, duplicate past k allowed",
			truth: [][]int32{{4}},
			pred:  [][]model.Scored{{{Label: 1, Score: 9}, {Label: 4, Score: 1}, {Label: 4, Score: 0.5}}},
			ks:    []int{1},
			want: Metrics{"P@1": 0, "nDCG@1": 0, "R@1": 0,
				MetricAccuracy: 0, MetricMacroP: 0, MetricMacroR: 0, MetricMacroF1: 0},
		},
		{
			name:  "unsorted row beyond k",
			truth: [][]int32{{4}},
			pred:  [][]model.Scored{{{Label: 1, Score: 1}, {Label: 2, Score: 0.5}, {Label: 4, Score: 3}}},
			ks:    []int{1},
			want: Metrics{"P@1": 100, "nDCG@1": 100, "R@1": 100,
				MetricAccuracy: 100, MetricMacroP: 100, MetricMacroR: 100, MetricMacroF1: 100},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Evaluate(labelMatrix(5, tt.truth), tt.pred, tt.invProp, tt.ks)
			if err != nil {
				t.Fatal(err)
			}
			checkMetrics(t, got, tt.want)
		})
	}
}

func TestEvaluateErrors(t *testing.T) {
	truth := labelMatrix(3, [][]int32{{0}, {1}})
	ok := [][]model.Scored{{{Label: 0, Score: 1}}, {{Label: 1, Score: 1}}}
	tests := []struct {
		name    string
		pred    [][]model.Scored
		invProp []float64
		ks      []int
		want    string
	}{
		{"row count", ok[:1], nil, nil, "1 prediction rows for 2 rows"},
		{"label too large", [][]model.Scored{{{Label: 0, Score: 1}}, {{Label: 1, Score: 1}, {Label: 3, Score: 0}}}, nil, nil, "row 1: label 3 outside [0, 3)"},
		{"negative label", [][]model.Scored{{{Label: -1, Score: 1}}, {}}, nil, nil, "row 0: label -1 outside"},
		{"duplicate in top k", [][]model.Scored{{{Label: 0, Score: 1}, {Label: 0, Score: 0.5}}, {}}, nil, []int{2}, "row 0: label 0 listed twice"},
		{"propensity length", ok, []float64{1, 2}, nil, "2 inverse propensities for 3 labels"},
		{"k zero", ok, nil, []int{1, 0}, "k = 0"},
		{"no k", ok, nil, []int{}, "no k"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Evaluate(truth, tt.pred, tt.invProp, tt.ks)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// referenceMetrics computes the metrics straight from their definitions,
// one row and one k at a time, with maps and full sorts: slow but obviously
// right, to check Evaluate's single-pass accumulation against.
func referenceMetrics(truth [][]int32, pred [][]model.Scored, w []float64, ks []int) Metrics {
	m := Metrics{}
	n := float64(len(truth))
	for _, k := range ks {
		var p, nd, r, ps, psBest, psd, psdBest float64
		for i, y := range truth {
			isTrue := map[int32]bool{}
			for _, l := range y {
				isTrue[l] = true
			}
			ranked := slices.Clone(pred[i])
			slices.SortFunc(ranked, func(a, b model.Scored) int {
				if a.Score != b.Score {
					if a.Score > b.Score {
						return -1
					}
					return 1
				}
				return int(a.Label - b.Label)
			})
			var hits, dcg, idcg float64
			for rank := 1; rank <= k && rank <= len(ranked); rank++ {
				if l := ranked[rank-1].Label; isTrue[l] {
					hits++
					dcg += 1 / math.Log2(float64(rank)+1)
					ps += w[l]
					psd += w[l] / math.Log2(float64(rank)+1)
				}
			}
			for rank := 1; rank <= k && rank <= len(y); rank++ {
				idcg += 1 / math.Log2(float64(rank)+1)
			}
			p += hits / float64(k)
			if len(y) > 0 {
				nd += dcg / idcg
				r += hits / float64(len(y))
			}
			ws := make([]float64, len(y))
			for j, l := range y {
				ws[j] = w[l]
			}
			slices.Sort(ws)
			slices.Reverse(ws)
			for rank := 1; rank <= k && rank <= len(ws); rank++ {
				psBest += ws[rank-1]
				psdBest += ws[rank-1] / math.Log2(float64(rank)+1)
			}
		}
		m[fmt.Sprintf("P@%d", k)] = 100 * p / n
		m[fmt.Sprintf("nDCG@%d", k)] = 100 * nd / n
		m[fmt.Sprintf("R@%d", k)] = 100 * r / n
		m[fmt.Sprintf("PSP@%d", k)] = 100 * ps / psBest
		m[fmt.Sprintf("PSnDCG@%d", k)] = 100 * psd / psdBest
	}
	return m
}

// TestEvaluateMultiClass checks accuracy and macro-F1 on a case worked by
// hand, added in one batch and in two, and that a row of two labels drops
// them.
func TestEvaluateMultiClass(t *testing.T) {
	// True classes 0, 0, 1, 2, 1; top predictions 0, 1, 1, 3 and none.
	truth := labelMatrix(4, [][]int32{{0}, {0}, {1}, {2}, {1}})
	pred := [][]model.Scored{{{Label: 0, Score: 1}, {Label: 1, Score: 0.5}}, {{Label: 1, Score: 1}}, {{Label: 1, Score: 2}, {Label: 0, Score: 1}}, {{Label: 3, Score: 1}}, {}}
	// Classes C = {0, 1, 2, 3}. Precision 1/1, 1/2, 0 (never predicted),
	// 0/1; recall 1/2, 1/2, 0/1, 0 (no true row).
	want := Metrics{"P@1": 40, "nDCG@1": 40, "R@1": 40,
		MetricAccuracy: 40, MetricMacroP: 37.5, MetricMacroR: 25, MetricMacroF1: 30}
	got, err := Evaluate(truth, pred, nil, []int{1})
	if err != nil {
		t.Fatal(err)
	}
	checkMetrics(t, got, want)

	e, err := NewEvaluator(4, nil, []int{1})
	if err != nil {
		t.Fatal(err)
	}
	first, second := truth.Slice(0, 2), truth.Slice(2, 5)
	if err := e.Add(&first, pred[:2]); err != nil {
		t.Fatal(err)
	}
	if err := e.Add(&second, pred[2:]); err != nil {
		t.Fatal(err)
	}
	got, err = e.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	checkMetrics(t, got, want)

	multi := labelMatrix(4, [][]int32{{0, 2}})
	if err := e.Add(multi, [][]model.Scored{{{Label: 0, Score: 1}}}); err != nil {
		t.Fatal(err)
	}
	if got, _ = e.Metrics(); got[MetricAccuracy] != 0 || len(got) != 3 {
		t.Errorf("after a row of two labels: %v, want no multi-class metrics", got)
	}
}

func TestEvaluateMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n, L = 500, 40
	truth := make([][]int32, n)
	pred := make([][]model.Scored, n)
	for i := range n {
		perm := rng.Perm(L)
		for _, l := range perm[:rng.IntN(8)] { // some rows empty
			truth[i] = append(truth[i], int32(l))
		}
		slices.Sort(truth[i])
		// Predictions: a random subset, scores from a few levels so ties
		// are frequent; half the rows in rank order, half shuffled.
		for _, l := range rng.Perm(L)[:rng.IntN(12)] {
			pred[i] = append(pred[i], model.Scored{Label: int32(l), Score: float32(rng.IntN(4)) / 4})
		}
		if i%2 == 0 {
			model.SortScored(pred[i])
		}
	}
	w := InversePropensity(data.LabelCounts(labelMatrix(L, truth)), n, PropensityA, PropensityB)
	ks := []int{1, 2, 3, 5, 10}
	got, err := Evaluate(labelMatrix(L, truth), pred, w, ks)
	if err != nil {
		t.Fatal(err)
	}
	checkMetrics(t, got, referenceMetrics(truth, pred, w, ks))
}

// oracle returns, for every row of truth, its true labels ranked by
// decreasing inverse propensity followed by every other label: the best
// possible ranking for every metric at once.
func oracle(truth *data.CSR, w []float64) [][]model.Scored {
	pred := make([][]model.Scored, truth.Rows)
	for i := range truth.Rows {
		y, _ := truth.Row(i)
		row := make([]model.Scored, 0, truth.Cols)
		for _, l := range y {
			row = append(row, model.Scored{Label: l, Score: float32(1 + w[l])})
		}
		for l := range int32(truth.Cols) {
			if _, found := slices.BinarySearch(y, l); !found {
				row = append(row, model.Scored{Label: l, Score: 0})
			}
		}
		model.SortScored(row)
		pred[i] = row
	}
	return pred
}

func TestEvaluateRealData(t *testing.T) {
	for _, name := range []string{"bibtex", "delicious"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("../testdata", name)
			train := readLabels(t, filepath.Join(dir, "train.txt"))
			test := readLabels(t, filepath.Join(dir, "test.txt"))
			w := InversePropensity(data.LabelCounts(train), train.Rows, PropensityA, PropensityB)
			ks := []int{1, 3, 5}

			got, err := Evaluate(test, oracle(test, w), w, ks)
			if err != nil {
				t.Fatal(err)
			}
			// Expected from the label counts alone: the oracle hits
			// min(k, |y|) times; rows without labels (4 in Delicious)
			// score 0 on P, nDCG and R.
			want := Metrics{}
			nr, labelled := float64(test.Rows), 0.0
			for i := range test.Rows {
				if y, _ := test.Row(i); len(y) > 0 {
					labelled++
				}
			}
			for _, k := range ks {
				var p, r float64
				for i := range test.Rows {
					if y, _ := test.Row(i); len(y) > 0 {
						p += float64(min(k, len(y))) / float64(k)
						r += float64(min(k, len(y))) / float64(len(y))
					}
				}
				want[fmt.Sprintf("P@%d", k)] = 100 * p / nr
				want[fmt.Sprintf("R@%d", k)] = 100 * r / nr
				want[fmt.Sprintf("nDCG@%d", k)] = 100 * labelled / nr
				want[fmt.Sprintf("PSP@%d", k)] = 100
				want[fmt.Sprintf("PSnDCG@%d", k)] = 100
			}
			checkMetrics(t, got, want)
			if name == "bibtex" && got["P@1"] != 100 {
				t.Errorf("bibtex oracle P@1 = %v, want 100 (every row has a label)", got["P@1"])
			}

			// Uniformly random predictions score near |y|/L: low.
			rng := rand.New(rand.NewPCG(3, 4))
			random := make([][]model.Scored, test.Rows)
			for i := range random {
				for _, l := range rng.Perm(test.Cols)[:5] {
					random[i] = append(random[i], model.Scored{Label: int32(l), Score: rng.Float32()})
				}
			}
			got, err = Evaluate(test, random, w, ks)
			if err != nil {
				t.Fatal(err)
			}
			for key, v := range got {
				if v > 10 {
					t.Errorf("random predictions: %s = %.2f, want below 10", key, v)
				}
			}
		})
	}
}

func TestWriteTable(t *testing.T) {
	a := Metrics{"P@1": 60.081, "P@3": 36.5, "nDCG@1": 60.081, "PSP@1": 45.25}
	b := Metrics{"P@1": 61.2, "P@3": 36.5, "nDCG@1": 61.2}
	var sb strings.Builder
	if err := WriteTable(&sb, []string{"fast", "dismec-long"}, []Metrics{a, b}, []int{3, 1, 3}); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"metric   fast   dismec-long\n" +
		"P@1     60.08         61.20*\n" +
		"P@3     36.50*        36.50*\n" +
		"nDCG@1  60.08         61.20*\n" +
		"PSP@1   45.25*            -\n"
	if sb.String() != want {
		t.Errorf("got\n%s\nwant\n%s", sb.String(), want)
	}

	sb.Reset()
	if err := WriteTable(&sb, []string{"only"}, []Metrics{a}, []int{1}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(sb.String(), "*") {
		t.Errorf("single run marked a best value:\n%s", sb.String())
	}
	if err := WriteTable(&sb, []string{"x"}, nil, nil); err == nil {
		t.Error("mismatched names and runs: no error")
	}
}

// BenchmarkEvaluate measures Evaluate on one million rows with five true
// labels and ten ranked predictions each, k = 1, 3, 5, with propensities.
func BenchmarkEvaluate(b *testing.B) {
	const n, L = 1_000_000, 100_000
	rng := rand.New(rand.NewPCG(5, 6))
	rows := make([][]int32, n)
	pred := make([][]model.Scored, n)
	flat := make([]model.Scored, 10*n)
	for i := range n {
		// Ten distinct predicted labels (stride 7919, 9·7919 < L), two of
		// them true, plus three other true labels.
		base := rng.IntN(L)
		p := flat[10*i : 10*i+10 : 10*i+10]
		for j := range p {
			p[j] = model.Scored{Label: int32((base + 7919*j) % L), Score: float32(10 - j)}
		}
		pred[i] = p
		y := []int32{p[0].Label, p[3].Label}
		for range 3 {
			y = append(y, int32(rng.IntN(L)))
		}
		rows[i] = slices.Compact(slices.Sorted(slices.Values(y)))
	}
	truth := labelMatrix(L, rows)
	w := InversePropensity(data.LabelCounts(truth), n, PropensityA, PropensityB)
	b.ResetTimer()
	for b.Loop() {
		if _, err := Evaluate(truth, pred, w, []int{1, 3, 5}); err != nil {
			b.Fatal(err)
		}
	}
}
