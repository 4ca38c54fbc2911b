package bench

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"xmc/data"
)

func TestExpand(t *testing.T) {
	v := Vars{Train: "data/my train.txt", Test: "test.txt", Trees: 50, Ranks: 2,
		MPIRun: []string{"mpirun", "--bind-to", "none"}, PeakRSS: []string{"/opt/xmc-bench", "peakrss", "--"}, Scores: "out/s'1.txt"}
	tests := []struct {
		template, want, err string
	}{
		{"{mpirun} -np {ranks} {peakrss} ./dxml {train} {test} {trees_per_rank}",
			"mpirun --bind-to none -np 2 /opt/xmc-bench peakrss -- ./dxml 'data/my train.txt' test.txt 25", ""},
		{"prog --trees {trees} --out {scores}", `prog --trees 50 --out 'out/s'\''1.txt'`, ""},
		{"cd ${dir} && prog {test}", "cd ${dir} && prog test.txt", ""},
		{"prog {trian}", "", "unknown placeholder {trian}"},
		{"no placeholders", "no placeholders", ""},
	}
	for _, tc := range tests {
		got, err := Expand(tc.template, v)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Expand(%q) error %v, want %q", tc.template, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Expand(%q) = %q, %v; want %q", tc.template, got, err, tc.want)
		}
	}

	odd := v
	odd.Trees = 5
	if _, err := Expand("prog {trees_per_rank}", odd); err == nil || !strings.Contains(err.Error(), "do not divide") {
		t.Errorf("5 trees on 2 ranks: error %v, want one saying they do not divide", err)
	}
	if got, err := Expand("prog {trees}", odd); err != nil || got != "prog 5" {
		t.Errorf("{trees} with 5 trees = %q, %v", got, err)
	}
	noScores := v
	noScores.Scores = ""
	if _, err := Expand("prog {scores}", noScores); err == nil {
		t.Error("{scores} without a score file expanded without error")
	}
}

func TestShellJoinRoundTrip(t *testing.T) {
	// The shell must see the words ShellJoin was given.
	argv := []string{"printf", `%s\n`, "plain", "two words", "it's", "", "$HOME", "a;b"}
	out, err := runShell(ShellJoin(argv))
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Join(argv[2:], "\n") + "\n"; out != want {
		t.Errorf("shell printed %q, want %q", out, want)
	}
}

// dxmlOutput is what DXML prints, as described by its users: one training
// time per rank and the precision lines of rank 0, among other lines.
const dxmlOutput = `reading data
rank 0: total duration of training :9.09
rank 1: total duration of training :10.5
psp@1 : 11.11
p@1 : 60.08
p@3 : 35.87
P@5: 25.5
`

func TestParseOutput(t *testing.T) {
	tests := []struct {
		name    string
		ref     Reference
		out     string
		train   float64
		metrics map[string]float64
		err     string
	}{
		{"DXML", DXML("dxml"), dxmlOutput, 10.5, map[string]float64{"P@1": 60.08, "P@3": 35.87, "P@5": 25.5}, ""},
		{"DXML, exponent and no P@5", DXML("dxml"), "total duration of training : 1.5e2\np@1 : 7\n", 150,
			map[string]float64{"P@1": 7}, ""},
		{"last P@k counts", DXML("dxml"), "total duration of training :1\np@1 : 50\np@1 : 51\n", 1,
			map[string]float64{"P@1": 51}, ""},
		{"no training time", DXML("dxml"), "p@1 : 60\n", 0, nil, "no training time"},
		{"custom patterns", Reference{Name: "fastxml", TrainTime: regexp.MustCompile(`Training time: ([0-9.]+) ms`),
			Precision: map[int]*regexp.Regexp{1: regexp.MustCompile(`prec1=([0-9.]+)`)}},
			"Training time: 1234.5 ms\nprec1=44.4\n", 1234.5, map[string]float64{"P@1": 44.4}, ""},
		{"scores file: P@k not read", Reference{Name: "r", TrainTime: DXML("").TrainTime, Precision: DXML("").Precision, Scores: "s.txt"},
			dxmlOutput, 10.5, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			train, metrics, err := tc.ref.ParseOutput([]byte(tc.out))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if train != tc.train {
				t.Errorf("train time %v, want %v", train, tc.train)
			}
			if len(metrics) != len(tc.metrics) {
				t.Errorf("metrics %v, want %v", metrics, tc.metrics)
			}
			for k, want := range tc.metrics {
				if got, ok := metrics[k]; !ok || got != want {
					t.Errorf("%s = %v (found %v), want %v", k, got, ok, want)
				}
			}
		})
	}
}

func TestReferenceValidate(t *testing.T) {
	ok := DXML("dxml")
	if err := ok.Validate(); err != nil {
		t.Errorf("DXML reference: %v", err)
	}
	tests := []struct {
		name string
		edit func(r *Reference)
	}{
		{"no command", func(r *Reference) { r.Command = " " }},
		{"no train pattern", func(r *Reference) { r.TrainTime = nil }},
		{"train pattern without group", func(r *Reference) { r.TrainTime = regexp.MustCompile(`time [0-9.]+`) }},
		{"P@1 pattern with two groups", func(r *Reference) { r.Precision[1] = regexp.MustCompile(`(p)@1 ([0-9.]+)`) }},
	}
	for _, tc := range tests {
		r := DXML("dxml")
		tc.edit(&r)
		if err := r.Validate(); err == nil {
			t.Errorf("%s: Validate succeeded", tc.name)
		}
	}
}

func TestEvaluateScores(t *testing.T) {
	dir := t.TempDir()
	test := filepath.Join(dir, "test.txt")
	// Three rows over L=5 labels: {0,2}, {1}, {3,4}.
	if err := os.WriteFile(test, []byte("3 4 5\n0,2 0:1\n1 1:1\n3,4 2:1 3:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ds, err := data.ReadFile(test, data.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scores := filepath.Join(dir, "scores.txt")
	// Top-1 hits in rows 0 and 2; top-3 holds 1, 0 and 2 true labels.
	if err := os.WriteFile(scores, []byte("3 5\n2:0.9 1:0.5\n0:0.8\n0:0.1 4:0.7 3:0.6\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := EvaluateScores(ds, scores)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]float64{"P@1": 200.0 / 3, "P@3": 100.0 / 3} {
		if math.Abs(m[k]-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", k, m[k], want)
		}
	}
	short := filepath.Join(dir, "short.txt")
	if err := os.WriteFile(short, []byte("2 5\n2:0.9\n0:0.8\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := EvaluateScores(ds, short); err == nil || !strings.Contains(err.Error(), "2 rows") {
		t.Errorf("a score file with 2 of 3 rows: error %v", err)
	}
}

func TestCompareRows(t *testing.T) {
	const mib = 1 << 20
	xmc := []RunResult{
		{TrainS: 2, WallS: 3, PeakRSS: []int64{100 * mib, 50 * mib}, Metrics: map[string]float64{"P@1": 60, "P@3": 40}},
		{TrainS: 4, WallS: 5, PeakRSS: []int64{110 * mib, 60 * mib}, Metrics: map[string]float64{"P@1": 60, "P@3": 40}},
		{TrainS: 3, WallS: 4, PeakRSS: []int64{90 * mib, 40 * mib}, Metrics: map[string]float64{"P@1": 60, "P@3": 40}},
	}
	ref := []RunResult{
		{TrainS: 6, WallS: 8, Metrics: map[string]float64{"P@1": 50}},
		{TrainS: 6, WallS: 8, Metrics: map[string]float64{"P@1": 50}},
		{TrainS: 6, WallS: 8, Metrics: map[string]float64{"P@1": 50}},
	}
	rows := compareRows(xmc, ref)
	byName := map[string]CompareRow{}
	for _, r := range rows {
		byName[r.Metric] = r
	}
	tests := []struct {
		metric       string
		xmc, refMed  float64
		ratio        float64
		refMeasured  bool
		better, unit string
	}{
		{"train time", 3, 6, 0.5, true, "lower", "s"},
		{"whole-run time", 4, 8, 0.5, true, "lower", "s"},
		{"peak RSS, largest process", 100, 0, 0, false, "lower", "MiB"},
		{"peak RSS, all processes", 150, 0, 0, false, "lower", "MiB"},
		{"P@1", 60, 50, 1.2, true, "higher", "%"},
		{"P@3", 40, 0, 0, false, "higher", "%"},
	}
	for _, tc := range tests {
		r, ok := byName[tc.metric]
		if !ok {
			t.Errorf("no row %q", tc.metric)
			continue
		}
		if r.XMC.Median != tc.xmc || r.Ref.Median != tc.refMed || math.Abs(r.Ratio-tc.ratio) > 1e-12 ||
			(r.Ref.N > 0) != tc.refMeasured || r.Better != tc.better || r.Unit != tc.unit {
			t.Errorf("row %+v, want xmc %v ref %v ratio %v measured %v %s %s", r, tc.xmc, tc.refMed, tc.ratio, tc.refMeasured, tc.better, tc.unit)
		}
	}
	if _, ok := byName["P@5"]; ok || len(rows) != len(tests) {
		t.Errorf("%d rows, want %d and none for P@5, which neither side measured", len(rows), len(tests))
	}
	if r := byName["train time"]; r.XMC.Min != 2 || r.XMC.Max != 4 || r.XMC.N != 3 {
		t.Errorf("xmc train time %+v, want min 2 max 4 of 3", r.XMC)
	}
}

func TestComparisonOutputs(t *testing.T) {
	c := &Comparison{Reference: "DXML", Trees: 50, Ranks: 2, Threads: 1, Repeats: 1, Notes: compareNotes,
		Rows: compareRows(
			[]RunResult{{TrainS: 2, WallS: 3, Metrics: map[string]float64{"P@1": 60}}},
			[]RunResult{{TrainS: 4, WallS: 4, Metrics: map[string]float64{"P@1": 62}}})}
	var table, csvOut, js bytes.Buffer
	if err := c.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"xmc/DXML", "train time", "0.500", "whole-run time", "0.750", "P@1", "0.968"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	if err := c.WriteCSV(&csvOut); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&csvOut).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 || recs[1][0] != "train time" || recs[1][8] != "0.5" || recs[3][0] != "P@1" {
		t.Errorf("CSV %q", recs)
	}
	if err := c.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Comparison
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Rows) != 3 || back.Rows[0].Ratio != 0.5 || back.Rows[0].Ref.Median != 4 {
		t.Errorf("JSON round trip: %+v", back.Rows)
	}
}
