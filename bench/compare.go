package bench

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/dustin/go-humanize"

	"xmc/data"
	"xmc/job"
	"xmc/metrics"
	"xmc/scores"
)

// Reference tells bench compare how to run another XMC program and read
// its results. DXML describes the C++ DXML program; other programs plug in
// with a command template and regular expressions, or a score file that
// xmc evaluates itself.
type Reference struct {
	// Name labels the program in tables and plots.
	Name string
	// Command is a /bin/sh command template; see Expand for its
	// placeholders. A template without {peakrss} runs unmeasured, and the
	// comparison has no memory figures for it.
	Command string
	// TrainTime matches the training time in seconds in the program's
	// output; its one group is the number. When several lines match (every
	// rank printing its own), the largest counts: the slowest rank sets the
	// pace.
	TrainTime *regexp.Regexp
	// Precision holds, by k, a pattern matching P@k in percent; the last
	// match counts. Ignored when Scores is set.
	Precision map[int]*regexp.Regexp
	// Scores, when set, is the score file (Extreme Classification
	// Repository format) the program writes for the test set; xmc
	// evaluates it with its own metrics code instead of trusting the
	// program's printout. Templates refer to it as {scores}.
	Scores string
}

// number matches a decimal or scientific floating-point number.
const number = `([-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)`

// DXML returns the Reference of the C++ DXML program at bin, which is run
// as "mpirun -np RANKS bin train.txt test.txt TREES_PER_RANK", each rank
// under "xmc-bench peakrss", and prints lines such as
// "total duration of training :9.09" (seconds) and "p@1 : 60.08".
func DXML(bin string) Reference {
	return Reference{
		Name:      "DXML",
		Command:   "{mpirun} -np {ranks} {peakrss} " + shellQuote(bin) + " {train} {test} {trees_per_rank}",
		TrainTime: regexp.MustCompile(`(?i)total duration of training\s*:\s*` + number),
		Precision: map[int]*regexp.Regexp{
			1: PrecisionPattern(1), 3: PrecisionPattern(3), 5: PrecisionPattern(5),
		},
	}
}

// PrecisionPattern returns the pattern of a "p@k : value" line, in any
// case, as DXML prints it; it does not match PSP@k.
func PrecisionPattern(k int) *regexp.Regexp {
	return regexp.MustCompile(fmt.Sprintf(`(?i)(?:^|[^a-z])p@%d\s*[:=]\s*%s`, k, number))
}

// Validate checks that r can be run and parsed.
func (r *Reference) Validate() error {
	if strings.TrimSpace(r.Command) == "" {
		return errors.New("reference: no command")
	}
	if r.TrainTime == nil {
		return fmt.Errorf("reference %s: no pattern for the training time", r.Name)
	}
	if n := r.TrainTime.NumSubexp(); n != 1 {
		return fmt.Errorf("reference %s: training time pattern %q has %d groups, want 1 (the number)", r.Name, r.TrainTime, n)
	}
	for k, re := range r.Precision {
		if n := re.NumSubexp(); n != 1 {
			return fmt.Errorf("reference %s: P@%d pattern %q has %d groups, want 1 (the number)", r.Name, k, re, n)
		}
	}
	return nil
}

// Vars are the values of a command template's placeholders.
type Vars struct {
	Train, Test  string
	Trees, Ranks int
	MPIRun       []string // {mpirun}: mpirun and its flags
	PeakRSS      []string // {peakrss}: the command prefix that measures a rank
	Scores       string   // {scores}: the score file path
}

// TemplatePlaceholders lists the placeholders Expand knows.
const TemplatePlaceholders = "{train} {test} {trees} {ranks} {trees_per_rank} {mpirun} {peakrss} {scores}"

var placeholder = regexp.MustCompile(`\$?\{([a-z_]+)\}`)

// Expand returns template with every placeholder replaced by its value,
// quoted for the shell: {train} and {test} (data paths), {trees} (the whole
// forest), {ranks}, {trees_per_rank} (trees/ranks, which must divide),
// {mpirun} (mpirun and its flags), {peakrss} (the prefix that runs a
// command under "xmc-bench peakrss", to go right before the program) and
// {scores}. Shell parameters such as ${dir} are left alone; any other
// {name} is an error, so that a typo does not reach the shell.
func Expand(template string, v Vars) (string, error) {
	var err error
	fail := func(e error) {
		if err == nil {
			err = e
		}
	}
	out := placeholder.ReplaceAllStringFunc(template, func(m string) string {
		if strings.HasPrefix(m, "$") {
			return m
		}
		switch name := m[1 : len(m)-1]; name {
		case "train":
			return shellQuote(v.Train)
		case "test":
			return shellQuote(v.Test)
		case "trees":
			return strconv.Itoa(v.Trees)
		case "ranks":
			return strconv.Itoa(v.Ranks)
		case "trees_per_rank":
			if v.Ranks < 1 || v.Trees%v.Ranks != 0 {
				fail(fmt.Errorf("{trees_per_rank}: %d trees do not divide among %d ranks; give --trees a multiple of --ranks", v.Trees, v.Ranks))
			} else {
				return strconv.Itoa(v.Trees / v.Ranks)
			}
		case "mpirun":
			if len(v.MPIRun) == 0 {
				fail(errors.New("{mpirun}: no mpirun command"))
			}
			return ShellJoin(v.MPIRun)
		case "peakrss":
			return ShellJoin(v.PeakRSS)
		case "scores":
			if v.Scores == "" {
				fail(errors.New("{scores} is used but no score file was given (--ref-scores)"))
			}
			return shellQuote(v.Scores)
		default:
			fail(fmt.Errorf("unknown placeholder %s; known: %s", m, TemplatePlaceholders))
		}
		return m
	})
	return out, err
}

// ParseOutput reads the training time and, without Scores, the P@k values
// from a run's output. A missing training time is an error; a missing P@k
// is left out of metrics.
func (r *Reference) ParseOutput(out []byte) (trainS float64, metrics map[string]float64, err error) {
	matches := r.TrainTime.FindAllSubmatch(out, -1)
	if len(matches) == 0 {
		return 0, nil, fmt.Errorf("%s printed no training time: no match for %q", r.Name, r.TrainTime)
	}
	for _, m := range matches {
		v, err := strconv.ParseFloat(string(m[1]), 64)
		if err != nil {
			return 0, nil, fmt.Errorf("%s training time %q: %w", r.Name, m[1], err)
		}
		trainS = max(trainS, v)
	}
	if r.Scores != "" {
		return trainS, nil, nil
	}
	metrics = map[string]float64{}
	for k, re := range r.Precision {
		all := re.FindAllSubmatch(out, -1)
		if len(all) == 0 {
			continue
		}
		last := all[len(all)-1][1]
		v, err := strconv.ParseFloat(string(last), 64)
		if err != nil {
			return 0, nil, fmt.Errorf("%s P@%d %q: %w", r.Name, k, last, err)
		}
		metrics[fmt.Sprintf("P@%d", k)] = v
	}
	return trainS, metrics, nil
}

// EvaluateScores computes P@k, nDCG@k and R@k for k in 1, 3, 5 of a score
// file against the true labels of test, with xmc's metrics code.
func EvaluateScores(test *data.Dataset, scoresPath string) (metrics.Metrics, error) {
	L, rows, err := scores.Read(scoresPath)
	if err != nil {
		return nil, err
	}
	if L > test.L() {
		return nil, fmt.Errorf("%s scores %d labels but the test set has L=%d", scoresPath, L, test.L())
	}
	if len(rows) != test.N() {
		return nil, fmt.Errorf("%s has %d rows but the test set has %d", scoresPath, len(rows), test.N())
	}
	m, err := metrics.Evaluate(&test.Y, rows, nil, []int{1, 3, 5})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", scoresPath, err)
	}
	return m, nil
}

// CompareConfig describes a comparison of xmc with a reference program on
// the same data, trees and ranks.
type CompareConfig struct {
	Ref Reference
	// Algo is xmc's algorithm: "forest" (the default, given Trees trees)
	// or any other, given only XMCArgs.
	Algo string
	// Launcher runs xmc; its MPIRun also fills {mpirun}.
	Launcher Launcher
	// PeakRSS is the command prefix that fills {peakrss}, normally
	// "xmc-bench peakrss --".
	PeakRSS      []string
	Train, Test  string
	Trees, Ranks int
	Threads      int // worker threads per xmc rank
	Repeats      int
	XMCArgs      []string // further xmc train flags
	Dir          string   // summaries, logs and results
	Progress     io.Writer
}

// comparer is a comparison under way.
type comparer struct {
	CompareConfig
	refCommand string        // the expanded reference command line
	test       *data.Dataset // the test set, to evaluate the reference's scores
}

// RunResult is one run of one program in a comparison.
type RunResult struct {
	Program string `json:"program"`
	Repeat  int    `json:"repeat"`
	// WallS is measured by bench around the whole command, launcher
	// start-up and shutdown included, the same way for both programs.
	WallS float64 `json:"wall_s"`
	// TrainS is xmc's train_s (the slowest rank) or the time the reference
	// printed.
	TrainS float64 `json:"train_s"`
	// PeakRSS is every process's peak resident set size: one entry per
	// rank, or one for all ranks of xmc's in-process backend. Empty when
	// not measured. The launcher's own memory is not included.
	PeakRSS []int64 `json:"peak_rss_bytes"`
	// AtFloor reports that a process's peak did not exceed the
	// measurement's floor (see ExecPeakRSS): it used at most that much.
	AtFloor bool               `json:"peak_rss_at_floor,omitempty"`
	Metrics map[string]float64 `json:"metrics,omitempty"`
	Log     string             `json:"log"`
}

// CompareRow is one measured quantity of both programs: the Stat over
// repeats of each, and the ratio of the medians, xmc over reference (0
// when either side was not measured).
type CompareRow struct {
	Metric string  `json:"metric"`
	Unit   string  `json:"unit"`
	XMC    Stat    `json:"xmc"`
	Ref    Stat    `json:"reference"`
	Ratio  float64 `json:"ratio"`
	Better string  `json:"better"` // "lower" or "higher"
}

// Comparison is the result of RunCompare.
type Comparison struct {
	Reference        string       `json:"reference"`
	Algorithm        string       `json:"algorithm"`
	ReferenceCommand string       `json:"reference_command"`
	XMCCommand       string       `json:"xmc_command"`
	Train            string       `json:"train"`
	Test             string       `json:"test"`
	Trees            int          `json:"trees"`
	Ranks            int          `json:"ranks"`
	Threads          int          `json:"xmc_threads_per_rank"`
	Repeats          int          `json:"repeats"`
	Rows             []CompareRow `json:"rows"`
	Runs             []RunResult  `json:"runs"`
	Notes            []string     `json:"notes"`
}

// compareNotes say what a comparison measures.
var compareNotes = []string{
	"xmc runs with --test: it trains, predicts and evaluates, as DXML does, and writes no model unless its flags after -- give --model-out",
	"train time: xmc's train_s from its summary (slowest rank); the reference's printed training time (largest over ranks)",
	"whole-run time: wall clock measured by bench around the whole command, launcher start-up included, alike for both",
	"peak RSS: each process's peak resident set size (ru_maxrss); the reference's ranks are measured by xmc-bench peakrss, " +
		"xmc's report their own; xmc's in-process backend is one process for all ranks; mpirun's own memory is not counted",
	"P@k: xmc's evaluation of its predictions; the reference's printout, or xmc's evaluation of its score file with --ref-scores",
	"ratio: xmc median / reference median; below 1 is better for times and memory, above 1 for P@k",
}

// RunCompare runs the reference and xmc Repeats times each, alternating
// (the reference first in odd repeats, xmc first in even ones, so that
// neither always runs on a warmer machine), and compares them.
func RunCompare(ctx context.Context, cfg CompareConfig) (*Comparison, error) {
	c := &comparer{CompareConfig: cfg}
	if c.Algo == "" {
		c.Algo = "forest"
	}
	switch {
	case c.Repeats < 1:
		return nil, fmt.Errorf("compare: --repeats must be at least 1, got %d", c.Repeats)
	case c.Ranks < 1 || c.Threads < 1 || c.Trees < 1:
		return nil, fmt.Errorf("compare: ranks, threads and trees must be at least 1, got %d, %d, %d", c.Ranks, c.Threads, c.Trees)
	case c.Train == "" || c.Test == "":
		return nil, errors.New("compare: give the training and the test set")
	}
	if err := c.Ref.Validate(); err != nil {
		return nil, err
	}
	if err := checkOwnFlags(c.XMCArgs, "algo", "ranks", "threads", "summary", "data", "test", "trees"); err != nil {
		return nil, err
	}
	if err := c.Launcher.Check(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(c.Dir, "logs"), 0o755); err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	var err error
	c.refCommand, err = Expand(c.Ref.Command, Vars{Train: c.Train, Test: c.Test, Trees: c.Trees, Ranks: c.Ranks,
		MPIRun: c.Launcher.MPIRun, PeakRSS: c.PeakRSS, Scores: c.Ref.Scores})
	if err != nil {
		return nil, fmt.Errorf("reference command: %w", err)
	}
	if c.Ref.Scores != "" {
		if c.test, err = data.ReadFile(c.Test, data.ReadOptions{}); err != nil {
			return nil, err
		}
	}
	progress := c.Progress
	if progress == nil {
		progress = io.Discard
	}
	cmp := &Comparison{
		Reference: c.Ref.Name, Algorithm: c.Algo, ReferenceCommand: c.refCommand,
		XMCCommand: ShellJoin(c.xmcCommand("SUMMARY.json")),
		Train:      c.Train, Test: c.Test, Trees: c.Trees, Ranks: c.Ranks, Threads: c.Threads, Repeats: c.Repeats,
		Notes: slices.Clone(compareNotes),
	}
	var xmcRuns, refRuns []RunResult
	for rep := 1; rep <= c.Repeats; rep++ {
		order := []bool{true, false} // reference first
		if rep%2 == 0 {
			order = []bool{false, true}
		}
		for _, ref := range order {
			var r RunResult
			var err error
			if ref {
				r, err = c.runRef(ctx, rep)
				refRuns = append(refRuns, r)
			} else {
				r, err = c.runXMC(ctx, rep)
				xmcRuns = append(xmcRuns, r)
			}
			if err != nil {
				return nil, fmt.Errorf("%s run %d: %w", r.Program, rep, err)
			}
			cmp.Runs = append(cmp.Runs, r)
			fmt.Fprintf(progress, "[%d/%d] %-5s rep %d: train %.3f s, whole run %.3f s%s%s\n",
				len(cmp.Runs), 2*c.Repeats, r.Program, rep, r.TrainS, r.WallS, rssNote(r.PeakRSS), metricNote(r.Metrics))
		}
	}
	if n := len(refRuns[0].PeakRSS); n != c.Ranks {
		cmp.Notes = append(cmp.Notes, fmt.Sprintf("the reference reported peak RSS for %d processes, not its %d ranks: "+
			"does its command template put {peakrss} right before the program?", n, c.Ranks))
	}
	if slices.ContainsFunc(refRuns, func(r RunResult) bool { return r.AtFloor }) {
		cmp.Notes = append(cmp.Notes, "some reference processes peaked at or below the resolution of xmc-bench peakrss "+
			"(its own resident size, about 10 MiB): their true peak is at most the figure shown")
	}
	cmp.Rows = compareRows(xmcRuns, refRuns)
	return cmp, nil
}

func rssNote(rss []int64) string {
	if len(rss) == 0 {
		return ""
	}
	return ", peak RSS " + humanize.IBytes(uint64(slices.Max(rss))) + " (largest process)"
}

// xmcCommand is the command line of one xmc run.
func (c *comparer) xmcCommand(summary string) []string {
	args := []string{"--algo", c.Algo, "--data", c.Train, "--test", c.Test}
	if c.Algo == "forest" {
		args = append(args, "--trees", strconv.Itoa(c.Trees))
	}
	args = append(append(args, c.XMCArgs...), "--summary", summary)
	return c.Launcher.Command(Layout{c.Ranks, c.Threads}, "train", args)
}

func (c *comparer) runXMC(ctx context.Context, rep int) (RunResult, error) {
	name := fmt.Sprintf("xmc-r%d", rep)
	summary := filepath.Join(c.Dir, name+".json")
	res := RunResult{Program: "xmc", Repeat: rep, Log: filepath.Join(c.Dir, "logs", name+".log")}
	r, err := runLogged(ctx, c.xmcCommand(summary), res.Log)
	if err != nil {
		return res, err
	}
	s, err := job.ReadSummary(summary)
	if err != nil {
		return res, err
	}
	res.WallS, res.TrainS, res.Metrics = r.wall.Seconds(), s.TrainS, s.Metrics
	res.PeakRSS = s.PeakRSSBytes
	if s.Backend == "in-process" && len(res.PeakRSS) > 0 {
		res.PeakRSS = res.PeakRSS[:1] // one process: every rank reported its figure
	}
	return res, nil
}

func (c *comparer) runRef(ctx context.Context, rep int) (RunResult, error) {
	name := fmt.Sprintf("ref-r%d", rep)
	res := RunResult{Program: c.Ref.Name, Repeat: rep, Log: filepath.Join(c.Dir, "logs", name+".log")}
	if c.Ref.Scores != "" {
		// A score file left by the previous run must not pass for this one's.
		if err := os.Remove(c.Ref.Scores); err != nil && !errors.Is(err, os.ErrNotExist) {
			return res, err
		}
	}
	r, err := runLogged(ctx, []string{"/bin/sh", "-c", c.refCommand}, res.Log)
	if err != nil {
		return res, err
	}
	res.WallS = r.wall.Seconds()
	if res.TrainS, res.Metrics, err = c.Ref.ParseOutput(r.output); err != nil {
		return res, fmt.Errorf("%w (log: %s)", err, res.Log)
	}
	recs, err := ParsePeakRSS(r.output)
	if err != nil {
		return res, err
	}
	for _, rec := range recs {
		res.PeakRSS = append(res.PeakRSS, rec.PeakRSSBytes)
		res.AtFloor = res.AtFloor || rec.PeakRSSBytes <= rec.FloorBytes
	}
	if c.Ref.Scores != "" {
		if res.Metrics, err = EvaluateScores(c.test, c.Ref.Scores); err != nil {
			return res, fmt.Errorf("evaluate the reference's scores: %w", err)
		}
	}
	return res, nil
}

// compareRows tabulates the runs of both programs.
func compareRows(xmc, ref []RunResult) []CompareRow {
	const mib = 1 << 20
	quantities := []struct {
		metric, unit, better string
		value                func(r RunResult) (float64, bool)
	}{
		{"train time", "s", "lower", func(r RunResult) (float64, bool) { return r.TrainS, true }},
		{"whole-run time", "s", "lower", func(r RunResult) (float64, bool) { return r.WallS, true }},
		{"peak RSS, largest process", "MiB", "lower", func(r RunResult) (float64, bool) {
			if len(r.PeakRSS) == 0 {
				return 0, false
			}
			return float64(slices.Max(r.PeakRSS)) / mib, true
		}},
		{"peak RSS, all processes", "MiB", "lower", func(r RunResult) (float64, bool) {
			var sum int64
			for _, b := range r.PeakRSS {
				sum += b
			}
			return float64(sum) / mib, len(r.PeakRSS) > 0
		}},
	}
	for _, k := range []int{1, 3, 5} {
		key := fmt.Sprintf("P@%d", k)
		quantities = append(quantities, struct {
			metric, unit, better string
			value                func(r RunResult) (float64, bool)
		}{key, "%", "higher", func(r RunResult) (float64, bool) { v, ok := r.Metrics[key]; return v, ok }})
	}
	stat := func(runs []RunResult, value func(RunResult) (float64, bool)) Stat {
		var xs []float64
		for _, r := range runs {
			if v, ok := value(r); ok {
				xs = append(xs, v)
			}
		}
		return Describe(xs)
	}
	var rows []CompareRow
	for _, q := range quantities {
		row := CompareRow{Metric: q.metric, Unit: q.unit, Better: q.better, XMC: stat(xmc, q.value), Ref: stat(ref, q.value)}
		if row.XMC.N == 0 && row.Ref.N == 0 {
			continue
		}
		if row.XMC.N > 0 && row.Ref.N > 0 && row.Ref.Median != 0 {
			row.Ratio = row.XMC.Median / row.Ref.Median
		}
		rows = append(rows, row)
	}
	return rows
}

// WriteJSON writes the comparison, runs included, as indented JSON.
func (c *Comparison) WriteJSON(w io.Writer) error {
	return writeJSON(w, c, "comparison")
}

// WriteCSV writes one line per compared quantity.
func (c *Comparison) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"metric", "unit", "xmc_median", "xmc_min", "xmc_max", "ref_median", "ref_min", "ref_max", "ratio", "better"})
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }
	for _, r := range c.Rows {
		cw.Write([]string{r.Metric, r.Unit, f(r.XMC.Median), f(r.XMC.Min), f(r.XMC.Max),
			f(r.Ref.Median), f(r.Ref.Min), f(r.Ref.Max), f(r.Ratio), r.Better})
	}
	cw.Flush()
	return cw.Error()
}

// WriteTable prints the comparison for a terminal: medians with their
// min–max range, and the ratio.
func (c *Comparison) WriteTable(w io.Writer) error {
	var buf bytes.Buffer
	what := fmt.Sprintf("%d trees", c.Trees)
	if c.Algorithm != "" && c.Algorithm != "forest" {
		what = "xmc's " + c.Algorithm
	}
	fmt.Fprintf(&buf, "xmc vs %s: %s, %d ranks (xmc: %d thread(s)/rank), median of %d runs each\n",
		c.Reference, what, c.Ranks, c.Threads, c.Repeats)
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "metric\tunit\txmc\t%s\txmc/%s\tbetter\n", c.Reference, c.Reference)
	cell := func(s Stat) string {
		if s.N == 0 {
			return "-"
		}
		if s.N == 1 || s.Min == s.Max {
			return fmt.Sprintf("%.3f", s.Median)
		}
		return fmt.Sprintf("%.3f (%.3f-%.3f)", s.Median, s.Min, s.Max)
	}
	for _, r := range c.Rows {
		ratio := "-"
		if r.Ratio != 0 {
			ratio = fmt.Sprintf("%.3f", r.Ratio)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Metric, r.Unit, cell(r.XMC), cell(r.Ref), ratio, r.Better)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range c.Notes {
		fmt.Fprintf(&buf, "- %s\n", n)
	}
	_, err := w.Write(buf.Bytes())
	return err
}
