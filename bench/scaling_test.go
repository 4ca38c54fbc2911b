package bench

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"xmc/job"
	"xmc/mpi"
)

// testRun is the part of a run summary that the aggregation reads.
type testRun struct {
	layout      Layout
	train, wall float64
	comm        []int64 // bytes per rank, charged to gatherv: rank 0 receives, the others send
	rss         []int64
	model       int64
	p1          float64
}

func (r testRun) summary(name string) *job.Summary {
	s := &job.Summary{
		Version: "test", Command: "train", Algorithm: "forest", Status: "ok", Backend: "openmpi",
		Ranks: r.layout.Ranks, ThreadsPerRank: r.layout.Threads,
		TrainS: r.train, WallS: r.wall, LoadS: 0.5, GatherS: 0.1,
		PeakRSSBytes: r.rss, ModelBytes: r.model,
		Params: json.RawMessage(`{"trees":50,"seed":1}`),
		Data:   map[string]any{"train": "data/bibtex/train.txt", "N": 4880.0},
		Source: name,
	}
	if r.p1 > 0 {
		s.Metrics = map[string]float64{"P@1": r.p1, "P@3": r.p1 / 2}
	}
	for rank, b := range r.comm {
		op := mpi.OpStats{Op: "gatherv", Calls: 1, Messages: 1, BytesSent: b}
		if rank == 0 {
			op.BytesSent, op.BytesRecv = 0, b
		}
		s.Comm = append(s.Comm, mpi.Stats{Rank: rank, Ops: []mpi.OpStats{{Op: "barrier", Calls: 1, Messages: 2}, op}})
	}
	return s
}

func summaries(runs ...testRun) []*job.Summary {
	var out []*job.Summary
	for i, r := range runs {
		out = append(out, r.summary(r.layout.String()+"-r"+string(rune('1'+i))+".json"))
	}
	return out
}

func TestGrid(t *testing.T) {
	tests := []struct {
		ranks, threads []int
		want           []Layout
		err            bool
	}{
		{[]int{1, 2, 4}, []int{1, 2}, []Layout{{1, 1}, {1, 2}, {2, 1}, {2, 2}, {4, 1}, {4, 2}}, false},
		{[]int{4, 1, 1}, []int{1}, []Layout{{1, 1}, {4, 1}}, false},
		{[]int{1}, []int{8, 2}, []Layout{{1, 2}, {1, 8}}, false},
		{[]int{0, 1}, []int{1}, nil, true},
		{nil, []int{1}, nil, true},
	}
	for _, tc := range tests {
		got, err := Grid(tc.ranks, tc.threads)
		if (err != nil) != tc.err {
			t.Errorf("Grid(%v, %v) error %v, want error %v", tc.ranks, tc.threads, err, tc.err)
			continue
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("Grid(%v, %v) = %v, want %v", tc.ranks, tc.threads, got, tc.want)
		}
	}
}

func TestCommBytes(t *testing.T) {
	stats := []mpi.Stats{
		{Rank: 1, Ops: []mpi.OpStats{{Op: "gatherv", BytesSent: 300}, {Op: "bcast", BytesRecv: 8}}},
		{Rank: 0, Ops: []mpi.OpStats{{Op: "gatherv", BytesRecv: 300}, {Op: "bcast", BytesSent: 8}}},
	}
	if got, want := CommBytes(stats), []int64{308, 308}; !slices.Equal(got, want) {
		t.Errorf("CommBytes = %v, want %v", got, want)
	}
	if got := CommBytes(nil); len(got) != 0 {
		t.Errorf("CommBytes(nil) = %v, want empty", got)
	}
}

// study is a 2×2 grid with three repeats of 1x1 and 2x1 and one of the
// others.
func study() []*job.Summary {
	return summaries(
		testRun{layout: Layout{1, 1}, train: 10, wall: 12, comm: []int64{0}, rss: []int64{100}, model: 1000, p1: 60},
		testRun{layout: Layout{1, 1}, train: 12, wall: 14, comm: []int64{0}, rss: []int64{110}, model: 1000, p1: 60},
		testRun{layout: Layout{1, 1}, train: 11, wall: 13, comm: []int64{0}, rss: []int64{90}, model: 1000, p1: 61},
		testRun{layout: Layout{2, 1}, train: 6, wall: 7, comm: []int64{600, 500}, rss: []int64{80, 60}, model: 1000, p1: 60},
		testRun{layout: Layout{2, 1}, train: 5, wall: 6, comm: []int64{520, 510}, rss: []int64{70, 50}, model: 1000, p1: 60},
		testRun{layout: Layout{2, 1}, train: 5.5, wall: 6.5, comm: []int64{510, 520}, rss: []int64{75, 55}, model: 1000, p1: 60},
		testRun{layout: Layout{1, 2}, train: 6, wall: 8, comm: []int64{0}, rss: []int64{120}, model: 1000, p1: 60},
		testRun{layout: Layout{2, 2}, train: 3, wall: 4, comm: []int64{520, 500}, rss: []int64{90, 70}, model: 1000, p1: 60},
	)
}

func TestAggregate(t *testing.T) {
	s, err := Aggregate(study())
	if err != nil {
		t.Fatal(err)
	}
	if s.Baseline != (Layout{1, 1}) {
		t.Errorf("baseline %v, want 1x1", s.Baseline)
	}
	var layouts []Layout
	for _, r := range s.Rows {
		layouts = append(layouts, r.Layout)
	}
	if want := []Layout{{1, 1}, {1, 2}, {2, 1}, {2, 2}}; !slices.Equal(layouts, want) {
		t.Fatalf("rows %v, want %v", layouts, want)
	}
	approx := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	base, r21, r22 := s.Row(Layout{1, 1}), s.Row(Layout{2, 1}), s.Row(Layout{2, 2})
	if got, want := base.Phases["train_s"], (Stat{Median: 11, Min: 10, Max: 12, N: 3}); got != want {
		t.Errorf("1x1 train %+v, want %+v", got, want)
	}
	if got := base.Phases["load_s"]; got.Median != 0.5 || got.N != 3 {
		t.Errorf("1x1 load %+v, want median 0.5 of 3", got)
	}
	approx("1x1 train speedup", base.TrainSpeedup, 1)
	approx("1x1 wall efficiency", base.WallEfficiency, 1)
	approx("2x1 train speedup", r21.TrainSpeedup, 2)
	approx("2x1 train efficiency", r21.TrainEfficiency, 1)
	approx("2x1 wall speedup", r21.WallSpeedup, 2)
	approx("2x2 train speedup", r22.TrainSpeedup, 11.0/3)
	approx("2x2 train efficiency", r22.TrainEfficiency, 11.0/12)
	approx("2x2 wall efficiency", r22.WallEfficiency, 13.0/4/4)

	// Per-rank medians, rank by rank: rank 0 of {600, 520, 510}, rank 1 of
	// {500, 510, 520}.
	if want := []int64{520, 510}; !slices.Equal(r21.CommBytes, want) {
		t.Errorf("2x1 comm per rank %v, want %v", r21.CommBytes, want)
	}
	if r21.CommRootBytes != 520 || r21.CommOtherBytes != 510 {
		t.Errorf("2x1 comm root %d, others %v; want 520, 510", r21.CommRootBytes, r21.CommOtherBytes)
	}
	approx("2x1 predicted root", r21.PredictedRootBytes, 500)
	approx("2x1 predicted other", r21.PredictedOtherBytes, 500)
	approx("1x1 predicted root", base.PredictedRootBytes, 0)
	approx("1x1 predicted other", base.PredictedOtherBytes, 0)
	if want := []int64{75, 55}; !slices.Equal(r21.PeakRSS, want) || r21.PeakRSSMax != 75 {
		t.Errorf("2x1 peak RSS %v max %d, want %v max 75", r21.PeakRSS, r21.PeakRSSMax, want)
	}
	if base.PeakRSSMax != 100 || base.SharedProcess {
		t.Errorf("1x1 peak RSS max %d shared %v, want 100 false", base.PeakRSSMax, base.SharedProcess)
	}
	approx("1x1 P@1", base.Metrics["P@1"], 60)
	approx("1x1 P@3", base.Metrics["P@3"], 30)
	if s.Command != "train" || s.Algorithm != "forest" || s.Backend != "openmpi" || s.CommModel == "" {
		t.Errorf("study header %q %q %q %q", s.Command, s.Algorithm, s.Backend, s.CommModel)
	}
}

func TestAggregateBaselineWithout1x1(t *testing.T) {
	s, err := Aggregate(summaries(
		testRun{layout: Layout{4, 1}, train: 2, wall: 3},
		testRun{layout: Layout{2, 1}, train: 4, wall: 5},
		testRun{layout: Layout{1, 2}, train: 5, wall: 6},
	))
	if err != nil {
		t.Fatal(err)
	}
	// Two layouts have 2 cores; the one with fewer ranks is the baseline.
	if s.Baseline != (Layout{1, 2}) {
		t.Fatalf("baseline %v, want 1x2", s.Baseline)
	}
	r := s.Row(Layout{4, 1})
	if r.TrainSpeedup != 2.5 || r.TrainEfficiency != 1.25 {
		t.Errorf("4x1 train speedup %v efficiency %v, want 2.5 and 1.25 (against 2 cores)", r.TrainSpeedup, r.TrainEfficiency)
	}
}

func TestAggregateSkipsAndRejects(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(runs []*job.Summary)
		err     string // substring; "" means success
		skipped int
	}{
		{"consistent", func([]*job.Summary) {}, "", 0},
		{"seed may differ", func(r []*job.Summary) { r[1].Params = json.RawMessage(`{"trees":50,"seed":7}`) }, "", 0},
		{"interrupted run left out", func(r []*job.Summary) { r[1].Status = "interrupted" }, "", 1},
		{"all interrupted", func(r []*job.Summary) {
			for _, s := range r {
				s.Status = "interrupted"
			}
		}, "no finished run", 2},
		{"other trees", func(r []*job.Summary) { r[1].Params = json.RawMessage(`{"trees":10,"seed":1}`) }, "parameters", 0},
		{"other data", func(r []*job.Summary) { r[1].Data = map[string]any{"train": "other.txt", "N": 4880.0} }, "data", 0},
		{"other backend", func(r []*job.Summary) { r[1].Backend = "in-process" }, "backend", 0},
		{"other command", func(r []*job.Summary) { r[1].Command = "predict" }, "command", 0},
		{"bad layout", func(r []*job.Summary) { r[1].ThreadsPerRank = 0 }, "layout", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			runs := summaries(testRun{layout: Layout{1, 1}, train: 2, wall: 3}, testRun{layout: Layout{2, 1}, train: 1, wall: 2})
			tc.edit(runs)
			s, err := Aggregate(runs)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one about %q", err, tc.err)
				}
				if tc.err != "no finished run" && !strings.Contains(err.Error(), "2x1-r2.json") {
					t.Errorf("error %q does not name the file", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Skipped) != tc.skipped {
				t.Errorf("skipped %v, want %d", s.Skipped, tc.skipped)
			}
			if len(s.Rows) != 2-tc.skipped {
				t.Errorf("%d rows, want %d", len(s.Rows), 2-tc.skipped)
			}
		})
	}
}

func TestAggregateInProcess(t *testing.T) {
	runs := summaries(testRun{layout: Layout{2, 1}, train: 1, wall: 2, rss: []int64{300, 300}})
	runs[0].Backend = "in-process"
	s, err := Aggregate(runs)
	if err != nil {
		t.Fatal(err)
	}
	if r := s.Rows[0]; !r.SharedProcess || r.PeakRSSMax != 300 {
		t.Errorf("in-process row: shared %v, peak %d; want true, 300", r.SharedProcess, r.PeakRSSMax)
	}
	var b bytes.Buffer
	if err := s.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "peak RSS/proc") {
		t.Errorf("the table does not say the peak is per process:\n%s", b.String())
	}
}

func TestScalingCSV(t *testing.T) {
	s, err := Aggregate(study())
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := s.WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1+len(s.Rows) {
		t.Fatalf("%d CSV lines, want a header and %d rows", len(recs), len(s.Rows))
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	for _, h := range []string{"ranks", "threads_per_rank", "cores", "train_median_s", "train_min_s", "wall_max_s",
		"train_speedup", "train_efficiency", "comm_root_bytes", "predicted_root_bytes", "peak_rss_max_bytes", "P@1", "P@3"} {
		if _, ok := col[h]; !ok {
			t.Errorf("CSV lacks column %q", h)
		}
	}
	// Rows follow s.Rows: 1x1, 1x2, 2x1, 2x2.
	row21 := recs[3]
	for h, want := range map[string]string{"ranks": "2", "threads_per_rank": "1", "cores": "2", "runs": "3",
		"train_median_s": "5.5", "train_min_s": "5", "train_max_s": "6", "train_speedup": "2", "comm_root_bytes": "520",
		"predicted_root_bytes": "500", "P@1": "60"} {
		if got := row21[col[h]]; got != want {
			t.Errorf("2x1 %s = %q, want %q", h, got, want)
		}
	}
}

func TestScalingJSONRoundTrip(t *testing.T) {
	s, err := Aggregate(study())
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := s.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var back Scaling
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Rows, s.Rows) || back.Baseline != s.Baseline {
		t.Errorf("JSON round trip changed the study:\n%s", b.String())
	}
	if !strings.Contains(b.String(), `"train_speedup": 2`) {
		t.Errorf("JSON lacks the 2x1 speedup:\n%s", b.String())
	}
}

func TestScalingTable(t *testing.T) {
	s, err := Aggregate(study())
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := s.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 1+len(s.Rows)+1 {
		t.Fatalf("table has %d lines, want header, %d rows and a legend:\n%s", len(lines), len(s.Rows), b.String())
	}
	for i, want := range []string{"1x1", "1x2", "2x1", "2x2"} {
		f := strings.Fields(lines[1+i])
		if f[0] != want {
			t.Errorf("row %d starts with %q, want %q", i, f[0], want)
		}
	}
	if f := strings.Fields(lines[3]); !slices.Contains(f, "5.500") || !slices.Contains(f, "(5.000-6.000)") || !slices.Contains(f, "2.00") {
		t.Errorf("2x1 row lacks median 5.500, range (5.000-6.000) or speedup 2.00: %q", lines[3])
	}
}

// TestAggregateTrainerStats checks that a trainer's per-rank figures become
// the median over runs of their largest rank's value, and that figures in
// bytes get a column of the table.
func TestAggregateTrainerStats(t *testing.T) {
	var runs []*job.Summary
	for i, state := range []float64{300, 100, 200} {
		s := testRun{layout: Layout{2, 1}, train: 5, wall: 6, comm: []int64{1, 1}, rss: []int64{9, 9}}.summary(
			"2x1-r" + string(rune('1'+i)) + ".json")
		s.TrainerStats = []map[string]float64{{"block_state_bytes": state, "recall": 0.5}, {"block_state_bytes": state / 2, "recall": 0.5}}
		runs = append(runs, s)
	}
	s, err := Aggregate(runs)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Rows[0].TrainerStats; got["block_state_bytes"] != 200 || got["recall"] != 0.5 {
		t.Errorf("trainer stats %v, want block_state_bytes 200 and recall 0.5", got)
	}
	var buf bytes.Buffer
	if err := s.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "block_state/rank") || strings.Contains(buf.String(), "recall/rank") {
		t.Errorf("table without the bytes column, or with one for a figure not in bytes:\n%s", buf.String())
	}
}

// TestAggregateProfiles checks a layout's serial fraction (the median over
// runs of the run's: the largest rank's serial and collective time over it
// and both ranks' work in loops), loop efficiency and Amdahl bounds, and
// that summaries without a profile leave them out.
func TestAggregateProfiles(t *testing.T) {
	var runs []*job.Summary
	for i, serial := range []float64{1, 3, 2} { // seconds of serial time on rank 1
		s := testRun{layout: Layout{2, 2}, train: 10, wall: 11, comm: []int64{1, 1}, rss: []int64{9, 9}}.summary(fmt.Sprintf("r%d.json", i))
		s.Profile = []job.Profile{
			job.NewProfile(2, 10, 9, 100, 18, 0.5, 0),         // 0.5 s serial, 0.5 in collectives, E = 1
			job.NewProfile(2, 10, 10-serial-1, 100, 12, 1, 0), // serial s serial, 1 in collectives, E = 12/(2(9-serial))
		}
		runs = append(runs, s)
	}
	sc, err := Aggregate(runs)
	if err != nil {
		t.Fatal(err)
	}
	r := sc.Rows[0]
	want := 3.0 / 33 // the median run: 2 s serial and 1 s in collectives on rank 1, 18 + 12 s in loops
	if math.Abs(r.SerialFraction-want) > 1e-12 {
		t.Errorf("serial fraction %v, want %v", r.SerialFraction, want)
	}
	if a := r.Amdahl["16"]; math.Abs(a-1/(want+(1-want)/16)) > 1e-9 || r.Amdahl["128"] <= a {
		t.Errorf("Amdahl bounds %v", r.Amdahl)
	}
	if e := 12 / (2 * 7.0); math.Abs(r.LoopEfficiency-e) > 1e-12 {
		t.Errorf("loop efficiency %v, want %v", r.LoopEfficiency, e)
	}
	var table strings.Builder
	if err := sc.WriteTable(&table); err != nil || !strings.Contains(table.String(), fmt.Sprintf("%.4f", want)) {
		t.Errorf("table without the serial fraction (%v):\n%s", err, table.String())
	}
	plain, err := Aggregate(summaries(testRun{layout: Layout{1, 1}, train: 1, wall: 1, comm: []int64{1}, rss: []int64{1}}))
	if err != nil || plain.Rows[0].Amdahl != nil {
		t.Errorf("a run without a profile: %v, %+v", err, plain.Rows[0].Amdahl)
	}
}

// TestAggregateWork checks each layout's work (the median run's CPU time in
// loops' work and alone, over every rank) and its ratio to the baseline's,
// in the table too, and that a layout or baseline without a profile has
// none.
func TestAggregateWork(t *testing.T) {
	// profiled returns a run of l whose every rank worked busy in loops and
	// serial alone, and waited 1 s in collectives.
	profiled := func(l Layout, busy, serial float64, name string) *job.Summary {
		s := testRun{layout: l, train: 10, wall: 11, comm: make([]int64, l.Ranks), rss: make([]int64, l.Ranks)}.summary(name)
		for range l.Ranks {
			s.Profile = append(s.Profile, job.NewProfile(l.Threads, 10, 10-serial-1, 100, busy, 1, 0))
		}
		return s
	}
	plain := func(l Layout, name string) *job.Summary {
		return testRun{layout: l, train: 10, wall: 11, comm: make([]int64, l.Ranks), rss: make([]int64, l.Ranks)}.summary(name)
	}
	one, two, four := Layout{1, 1}, Layout{2, 1}, Layout{1, 4}
	tests := []struct {
		name string
		runs []*job.Summary
		want map[Layout][2]float64 // work_s, work_ratio
		cell string                // in the table's two-rank row
	}{
		{"against one worker", []*job.Summary{
			profiled(one, 9, 1, "a"), profiled(one, 8, 1, "b"), profiled(one, 12, 1, "c"), // medians 10 s
			profiled(two, 6, 0.5, "d"), // two ranks: 13 s
			plain(four, "e"),
		}, map[Layout][2]float64{one: {10, 1}, two: {13, 1.3}, four: {0, 0}}, "1.30"},
		{"a baseline without a profile", []*job.Summary{plain(one, "a"), profiled(two, 6, 0.5, "b")},
			map[Layout][2]float64{one: {0, 0}, two: {13, 0}}, "-"},
	}
	for _, tc := range tests {
		sc, err := Aggregate(tc.runs)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for l, w := range tc.want {
			r := sc.Row(l)
			if math.Abs(r.WorkS-w[0]) > 1e-12 || math.Abs(r.WorkRatio-w[1]) > 1e-12 {
				t.Errorf("%s: %s work %v, ratio %v, want %v", tc.name, l, r.WorkS, r.WorkRatio, w)
			}
		}
		var table strings.Builder
		if err := sc.WriteTable(&table); err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(table.String(), "\n") {
			if f := strings.Fields(line); len(f) > 0 && f[0] == two.String() {
				if !slices.Contains(f, tc.cell) {
					t.Errorf("%s: two ranks' row without work × %s: %q", tc.name, tc.cell, line)
				}
			}
		}
	}
}
