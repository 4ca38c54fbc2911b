package bench

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/dustin/go-humanize"

	"xmc/job"
	"xmc/mpi"
)

// Layout is the shape of a job: MPI ranks (one per node in production)
// times worker threads per rank.
type Layout struct {
	Ranks   int `json:"ranks"`
	Threads int `json:"threads_per_rank"`
}

// Cores is the number of cores the layout uses, ranks×threads.
func (l Layout) Cores() int { return l.Ranks * l.Threads }

// String writes the layout as "RxT", the form of summary file names.
func (l Layout) String() string { return fmt.Sprintf("%dx%d", l.Ranks, l.Threads) }

// Grid returns every layout of the given rank and thread counts, ordered by
// cores, then ranks. It is an error if a count is not positive or a list is
// empty.
func Grid(ranks, threads []int) ([]Layout, error) {
	if len(ranks) == 0 || len(threads) == 0 {
		return nil, fmt.Errorf("grid: need at least one rank count and one thread count")
	}
	var g []Layout
	for _, r := range ranks {
		for _, t := range threads {
			if r < 1 || t < 1 {
				return nil, fmt.Errorf("grid: ranks and threads must be at least 1, got %dx%d", r, t)
			}
			l := Layout{r, t}
			if !slices.Contains(g, l) {
				g = append(g, l)
			}
		}
	}
	slices.SortFunc(g, compareLayouts)
	return g, nil
}

func compareLayouts(a, b Layout) int {
	if c := a.Cores() - b.Cores(); c != 0 {
		return c
	}
	return a.Ranks - b.Ranks
}

// PhaseKeys names the timed quantities of a run in table order: the phases
// of job.Phases as "<name>_s", then "wall_s", the whole run.
var PhaseKeys = [...]string{"load_s", "train_s", "gather_s", "write_s", "predict_s", "eval_s", "wall_s"}

// phaseTimes returns s's times in the order of PhaseKeys.
func phaseTimes(s *job.Summary) [len(PhaseKeys)]float64 {
	return [...]float64{s.LoadS, s.TrainS, s.GatherS, s.WriteS, s.PredictS, s.EvalS, s.WallS}
}

// CommBytes returns the bytes every rank sent plus received over all
// operations, indexed by rank, from a summary's communication figures
// (see mpi.Counted for what an operation is charged).
func CommBytes(stats []mpi.Stats) []int64 {
	n := 0
	for _, s := range stats {
		n = max(n, s.Rank+1)
	}
	b := make([]int64, n)
	for _, s := range stats {
		for _, op := range s.Ops {
			b[s.Rank] += op.BytesSent + op.BytesRecv
		}
	}
	return b
}

// CommModel states the communication model that Scaling's predicted
// figures follow.
const CommModel = "model gathered to rank 0: the ranks own about 1/P of the units (trees, label blocks) each " +
	"and every non-root rank sends its units once, so rank 0 receives M(P-1)/P bytes and every other rank sends M/P, " +
	"with M the model size (model_bytes, which overstates the units' bytes by the file's few headers). " +
	"The measured figures count every operation: also the small collectives of each run, with " +
	"--test and --predict-on ranks the partial test scores every rank sends to rank 0, and, for trainers of " +
	"rounds (pdsparse, memoir, lsq), every round's exchange, which the model leaves out (pdsparse's and memoir's logs give the " +
	"bytes a rank receives a round)."

// Scaling is a strong-scaling study: runs of one problem on several
// layouts, aggregated per layout, with speedups against a baseline layout.
type Scaling struct {
	Command   string          `json:"command"`
	Algorithm string          `json:"algorithm,omitempty"`
	Backend   string          `json:"backend"`
	Data      map[string]any  `json:"data,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	// Baseline is the layout speedups are measured against: 1x1 when it
	// was run, else the layout with the fewest cores.
	Baseline  Layout       `json:"baseline"`
	CommModel string       `json:"comm_model"`
	Rows      []ScalingRow `json:"rows"`
	// Skipped lists the runs left out and why (interrupted runs).
	Skipped []string `json:"skipped,omitempty"`
}

// ScalingRow aggregates the repeated runs of one layout. Times are the
// maximum over ranks within a run (the slowest rank sets the pace);
// per-rank figures are medians over runs, rank by rank.
type ScalingRow struct {
	Layout
	Cores int `json:"cores"`
	Runs  int `json:"runs"`
	// Phases holds a Stat over runs for every key of PhaseKeys.
	Phases map[string]Stat `json:"phases"`

	TrainSpeedup    float64 `json:"train_speedup"`
	TrainEfficiency float64 `json:"train_efficiency"`
	WallSpeedup     float64 `json:"wall_speedup"`
	WallEfficiency  float64 `json:"wall_efficiency"`

	// CommBytes is every rank's bytes sent plus received.
	CommBytes []int64 `json:"comm_bytes_per_rank"`
	// CommRootBytes is rank 0's figure, CommOtherBytes the mean of the
	// other ranks' (0 with one rank).
	CommRootBytes  int64   `json:"comm_root_bytes"`
	CommOtherBytes float64 `json:"comm_nonroot_mean_bytes"`
	// ModelBytes is the size of the model written (0 without --model-out);
	// PredictedRootBytes and PredictedOtherBytes follow CommModel from it.
	ModelBytes          int64   `json:"model_bytes"`
	PredictedRootBytes  float64 `json:"predicted_root_bytes"`
	PredictedOtherBytes float64 `json:"predicted_nonroot_bytes"`

	// PeakRSS is every rank's peak resident set size; with the in-process
	// backend (SharedProcess) the ranks share one process and each entry
	// is that process's peak.
	PeakRSS       []int64 `json:"peak_rss_bytes_per_rank"`
	PeakRSSMax    int64   `json:"peak_rss_max_bytes"`
	SharedProcess bool    `json:"shared_process"`

	// Metrics holds the median of every metric over runs (P@k and friends,
	// in percent), when the runs evaluated a test set.
	Metrics map[string]float64 `json:"metrics,omitempty"`
	// SerialFraction is the median over runs of a run's serial fraction
	// (job.SerialFraction, over all its ranks), LoopEfficiency the
	// median of the lowest efficiency of a rank's parallel loops, and
	// Amdahl the speed-ups over one core the serial fraction allows on 16,
	// 64 and 128 cores. WorkS is the median of a run's work (job.Work: the
	// time its ranks and workers spent computing), and WorkRatio that
	// over the baseline's: above 1 where the layout repeats work, its
	// cores run slower beside each other, or it has more workers than
	// cores. They are 0 for summaries without
	// a profile (WorkRatio also where the baseline has none).
	SerialFraction float64            `json:"serial_fraction"`
	LoopEfficiency float64            `json:"loop_efficiency"`
	Amdahl         map[string]float64 `json:"amdahl_speedup,omitempty"`
	WorkS          float64            `json:"work_s"`
	WorkRatio      float64            `json:"work_ratio"`
	// TrainerStats holds, for every figure the trainer reported per rank
	// (job.Summary.TrainerStats, e.g. MEMOIR's block_state_bytes), the
	// median over runs of its largest value over the ranks.
	TrainerStats map[string]float64 `json:"trainer_stats_max_over_ranks,omitempty"`
}

// Aggregate groups run summaries by layout (ranks, threads per rank) and
// aggregates each group. Interrupted runs are left out and listed in
// Skipped. The summaries must describe one problem: the same command,
// algorithm, backend, data and parameters (the seed may differ, so that
// repeats can vary it); mixing problems is an error naming the files.
func Aggregate(runs []*job.Summary) (*Scaling, error) {
	var s Scaling
	var ok []*job.Summary
	for _, r := range runs {
		if r.Status != "ok" {
			s.Skipped = append(s.Skipped, fmt.Sprintf("%s: status %q", runName(r), r.Status))
			continue
		}
		if r.Ranks < 1 || r.ThreadsPerRank < 1 {
			return nil, fmt.Errorf("%s: layout %dx%d is not a run's", runName(r), r.Ranks, r.ThreadsPerRank)
		}
		ok = append(ok, r)
	}
	if len(ok) == 0 {
		return nil, fmt.Errorf("aggregate: no finished run among %d summaries", len(runs))
	}
	first := ok[0]
	for _, r := range ok[1:] {
		if err := sameProblem(first, r); err != nil {
			return nil, err
		}
	}
	s.Command, s.Algorithm, s.Backend, s.Data, s.Params = first.Command, first.Algorithm, first.Backend, first.Data, first.Params
	s.CommModel = CommModel

	groups := map[Layout][]*job.Summary{}
	for _, r := range ok {
		l := Layout{r.Ranks, r.ThreadsPerRank}
		groups[l] = append(groups[l], r)
	}
	layouts := slices.SortedFunc(maps.Keys(groups), compareLayouts)
	s.Baseline = layouts[0]
	if _, ok := groups[Layout{1, 1}]; ok {
		s.Baseline = Layout{1, 1}
	}
	for _, l := range layouts {
		s.Rows = append(s.Rows, aggregateLayout(l, groups[l]))
	}
	base := s.Row(s.Baseline)
	bTrain, bWall := base.Phases["train_s"].Median, base.Phases["wall_s"].Median
	for i := range s.Rows {
		r := &s.Rows[i]
		r.TrainSpeedup = Speedup(bTrain, r.Phases["train_s"].Median)
		r.TrainEfficiency = Efficiency(r.TrainSpeedup, s.Baseline.Cores(), r.Cores)
		r.WallSpeedup = Speedup(bWall, r.Phases["wall_s"].Median)
		r.WallEfficiency = Efficiency(r.WallSpeedup, s.Baseline.Cores(), r.Cores)
		if base.WorkS > 0 {
			r.WorkRatio = r.WorkS / base.WorkS
		}
	}
	return &s, nil
}

// Row returns the row of layout l, or nil.
func (s *Scaling) Row(l Layout) *ScalingRow {
	for i := range s.Rows {
		if s.Rows[i].Layout == l {
			return &s.Rows[i]
		}
	}
	return nil
}

func runName(s *job.Summary) string {
	if s.Source != "" {
		return s.Source
	}
	return fmt.Sprintf("run %dx%d", s.Ranks, s.ThreadsPerRank)
}

// sameProblem checks that b ran the problem a ran.
func sameProblem(a, b *job.Summary) error {
	differ := func(what string, x, y any) error {
		return fmt.Errorf("%s and %s are not runs of one problem: %s %v vs %v (put each study in a directory of its own)",
			runName(a), runName(b), what, x, y)
	}
	switch {
	case a.Command != b.Command:
		return differ("command", a.Command, b.Command)
	case a.Algorithm != b.Algorithm:
		return differ("algorithm", a.Algorithm, b.Algorithm)
	case a.Backend != b.Backend:
		return differ("backend", a.Backend, b.Backend)
	case !reflect.DeepEqual(a.Data, b.Data):
		return differ("data", a.Data, b.Data)
	}
	pa, err := paramsWithoutSeed(a)
	if err != nil {
		return err
	}
	pb, err := paramsWithoutSeed(b)
	if err != nil {
		return err
	}
	if !reflect.DeepEqual(pa, pb) {
		return differ("parameters", string(a.Params), string(b.Params))
	}
	return nil
}

func paramsWithoutSeed(s *job.Summary) (map[string]any, error) {
	if len(s.Params) == 0 {
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal(s.Params, &m); err != nil {
		return nil, fmt.Errorf("%s: params: %w", runName(s), err)
	}
	delete(m, "seed")
	return m, nil
}

func aggregateLayout(l Layout, runs []*job.Summary) ScalingRow {
	row := ScalingRow{Layout: l, Cores: l.Cores(), Runs: len(runs), Phases: map[string]Stat{}}
	for k, key := range PhaseKeys {
		xs := make([]float64, len(runs))
		for i, r := range runs {
			xs[i] = phaseTimes(r)[k]
		}
		row.Phases[key] = Describe(xs)
	}

	comm := make([][]int64, len(runs))
	rss := make([][]int64, len(runs))
	models := make([]int64, len(runs))
	for i, r := range runs {
		comm[i] = CommBytes(r.Comm)
		rss[i] = r.PeakRSSBytes
		models[i] = r.ModelBytes
		row.SharedProcess = row.SharedProcess || r.Backend == "in-process"
	}
	row.CommBytes = medianPerRank(comm, l.Ranks)
	row.PeakRSS = medianPerRank(rss, l.Ranks)
	row.PeakRSSMax = slices.Max(row.PeakRSS)
	row.CommRootBytes = row.CommBytes[0]
	if l.Ranks > 1 {
		var sum int64
		for _, b := range row.CommBytes[1:] {
			sum += b
		}
		row.CommOtherBytes = float64(sum) / float64(l.Ranks-1)
	}
	row.ModelBytes = medianInt(models)
	p, m := float64(l.Ranks), float64(row.ModelBytes)
	row.PredictedRootBytes = m * (p - 1) / p
	if l.Ranks > 1 {
		row.PredictedOtherBytes = m / p
	}

	row.aggregateProfiles(runs)
	values := map[string][]float64{}
	for _, r := range runs {
		for k, v := range r.Metrics {
			values[k] = append(values[k], v)
		}
	}
	for k, xs := range values {
		if row.Metrics == nil {
			row.Metrics = map[string]float64{}
		}
		row.Metrics[k] = Median(xs)
	}
	stats := map[string][]float64{}
	for _, r := range runs {
		largest := map[string]float64{}
		for _, st := range r.TrainerStats {
			for k, v := range st {
				if old, ok := largest[k]; !ok || v > old {
					largest[k] = v
				}
			}
		}
		for k, v := range largest {
			stats[k] = append(stats[k], v)
		}
	}
	for k, xs := range stats {
		if row.TrainerStats == nil {
			row.TrainerStats = map[string]float64{}
		}
		row.TrainerStats[k] = Median(xs)
	}
	return row
}

// AmdahlCores are the core counts at which a study gives the speed-up its
// serial fraction allows.
var AmdahlCores = []int{16, 64, 128}

// aggregateProfiles sets the row's serial fraction, loop efficiency, Amdahl
// bounds and work from the runs' profiles, if they have them.
func (row *ScalingRow) aggregateProfiles(runs []*job.Summary) {
	var fs, es, ws []float64
	for _, r := range runs {
		if len(r.Profile) == 0 {
			continue
		}
		e := 1.0
		for _, p := range r.Profile {
			e = min(e, p.LoopEfficiency())
		}
		fs, es, ws = append(fs, job.SerialFraction(r.Profile)), append(es, e), append(ws, job.Work(r.Profile))
	}
	if len(fs) == 0 {
		return
	}
	row.SerialFraction, row.LoopEfficiency, row.WorkS = Median(fs), Median(es), Median(ws)
	row.Amdahl = map[string]float64{}
	for _, n := range AmdahlCores {
		row.Amdahl[strconv.Itoa(n)] = job.AmdahlSpeedup(row.SerialFraction, n)
	}
}

// byteStatKeys returns the trainer figures in bytes (named *_bytes) that
// some row holds, sorted: the table shows them per rank.
func (s *Scaling) byteStatKeys() []string {
	seen := map[string]bool{}
	for _, r := range s.Rows {
		for k := range r.TrainerStats {
			if strings.HasSuffix(k, "_bytes") {
				seen[k] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// medianPerRank returns, for each of ranks ranks, the median over runs of
// that rank's value; runs that lack the rank are left out of its median.
func medianPerRank(runs [][]int64, ranks int) []int64 {
	out := make([]int64, ranks)
	for rank := range out {
		var xs []int64
		for _, r := range runs {
			if rank < len(r) {
				xs = append(xs, r[rank])
			}
		}
		out[rank] = medianInt(xs)
	}
	return out
}

func medianInt(xs []int64) int64 {
	f := make([]float64, len(xs))
	for i, x := range xs {
		f[i] = float64(x)
	}
	return int64(math.Round(Median(f)))
}

// metricKeys returns the metric names present in any row, P@k first, then
// the others alphabetically.
func (s *Scaling) metricKeys() []string {
	seen := map[string]bool{}
	for _, r := range s.Rows {
		for k := range r.Metrics {
			seen[k] = true
		}
	}
	return sortMetricKeys(slices.Collect(maps.Keys(seen)))
}

// sortMetricKeys orders metric names by family (P, nDCG, PSP, PSnDCG, R,
// others) and then by k.
func sortMetricKeys(keys []string) []string {
	family := func(k string) (int, int) {
		name, kk, _ := strings.Cut(k, "@")
		n, _ := strconv.Atoi(kk)
		i := slices.Index([]string{"P", "nDCG", "PSP", "PSnDCG", "R"}, name)
		if i < 0 {
			i = 5
		}
		return i, n
	}
	slices.SortFunc(keys, func(a, b string) int {
		fa, ka := family(a)
		fb, kb := family(b)
		if fa != fb {
			return fa - fb
		}
		if ka != kb {
			return ka - kb
		}
		return strings.Compare(a, b)
	})
	return keys
}

// WriteJSON writes the study as indented JSON.
func (s *Scaling) WriteJSON(w io.Writer) error {
	return writeJSON(w, s, "scaling")
}

// WriteCSV writes one line per layout: the layout, every phase's median,
// min and max, speedups and efficiencies, communication and memory figures
// in bytes, and the metrics.
func (s *Scaling) WriteCSV(w io.Writer) error {
	metrics := s.metricKeys()
	head := []string{"ranks", "threads_per_rank", "cores", "runs"}
	for _, k := range PhaseKeys {
		p := strings.TrimSuffix(k, "_s")
		head = append(head, p+"_median_s", p+"_min_s", p+"_max_s")
	}
	head = append(head, "train_speedup", "train_efficiency", "wall_speedup", "wall_efficiency",
		"comm_root_bytes", "comm_nonroot_mean_bytes", "model_bytes", "predicted_root_bytes", "predicted_nonroot_bytes",
		"peak_rss_max_bytes", "shared_process", "serial_fraction", "loop_efficiency", "work_s", "work_ratio")
	for _, n := range AmdahlCores {
		head = append(head, fmt.Sprintf("amdahl_%d", n))
	}
	head = append(head, metrics...)
	cw := csv.NewWriter(w)
	if err := cw.Write(head); err != nil {
		return err
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }
	for _, r := range s.Rows {
		rec := []string{strconv.Itoa(r.Ranks), strconv.Itoa(r.Threads), strconv.Itoa(r.Cores), strconv.Itoa(r.Runs)}
		for _, k := range PhaseKeys {
			st := r.Phases[k]
			rec = append(rec, f(st.Median), f(st.Min), f(st.Max))
		}
		rec = append(rec, f(r.TrainSpeedup), f(r.TrainEfficiency), f(r.WallSpeedup), f(r.WallEfficiency),
			strconv.FormatInt(r.CommRootBytes, 10), f(r.CommOtherBytes), strconv.FormatInt(r.ModelBytes, 10),
			f(r.PredictedRootBytes), f(r.PredictedOtherBytes), strconv.FormatInt(r.PeakRSSMax, 10),
			strconv.FormatBool(r.SharedProcess), f(r.SerialFraction), f(r.LoopEfficiency), f(r.WorkS), f(r.WorkRatio))
		for _, n := range AmdahlCores {
			rec = append(rec, f(r.Amdahl[strconv.Itoa(n)]))
		}
		for _, m := range metrics {
			if v, ok := r.Metrics[m]; ok {
				rec = append(rec, f(v))
			} else {
				rec = append(rec, "")
			}
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteTable prints the study for a terminal: per layout the median times
// of every phase (train and wall with their min–max range), speedup and
// efficiency against the baseline, communication per rank and peak memory.
func (s *Scaling) WriteTable(w io.Writer) error {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', tabwriter.AlignRight)
	metrics := s.metricKeys()
	if len(metrics) > 0 {
		metrics = metrics[:1] // P@1 when evaluated: the table stays narrow
	}
	rssHead := "peak RSS/rank"
	if len(s.Rows) > 0 && s.Rows[0].SharedProcess {
		rssHead = "peak RSS/proc"
	}
	head := []string{"layout", "cores", "runs", "train s", "(min-max)", "wall s", "(min-max)",
		"load", "gather", "write", "predict", "eval", "S train", "E train", "S wall", "E wall",
		"comm rank0", "comm other", "model pred.", rssHead, "serial f", "loop E", "work ×", "Amdahl 16/64/128"}
	byteStats := s.byteStatKeys()
	for _, k := range byteStats {
		head = append(head, strings.TrimSuffix(k, "_bytes")+"/rank")
	}
	head = append(head, metrics...)
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, r := range s.Rows {
		tr, wa := r.Phases["train_s"], r.Phases["wall_s"]
		cells := []string{r.Layout.String(), strconv.Itoa(r.Cores), strconv.Itoa(r.Runs),
			fmt.Sprintf("%.3f", tr.Median), fmt.Sprintf("(%.3f-%.3f)", tr.Min, tr.Max),
			fmt.Sprintf("%.3f", wa.Median), fmt.Sprintf("(%.3f-%.3f)", wa.Min, wa.Max)}
		for _, k := range []string{"load_s", "gather_s", "write_s", "predict_s", "eval_s"} {
			cells = append(cells, fmt.Sprintf("%.3f", r.Phases[k].Median))
		}
		other := "-"
		if r.Ranks > 1 {
			other = humanize.IBytes(uint64(r.CommOtherBytes))
		}
		cells = append(cells, fmt.Sprintf("%.2f", r.TrainSpeedup), fmt.Sprintf("%.2f", r.TrainEfficiency),
			fmt.Sprintf("%.2f", r.WallSpeedup), fmt.Sprintf("%.2f", r.WallEfficiency),
			humanize.IBytes(uint64(r.CommRootBytes)), other, humanize.IBytes(uint64(r.PredictedRootBytes)), humanize.IBytes(uint64(r.PeakRSSMax)))
		if r.Amdahl == nil {
			cells = append(cells, "-", "-", "-", "-")
		} else {
			work := "-"
			if r.WorkRatio > 0 {
				work = fmt.Sprintf("%.2f", r.WorkRatio)
			}
			cells = append(cells, fmt.Sprintf("%.4f", r.SerialFraction), fmt.Sprintf("%.2f", r.LoopEfficiency), work,
				fmt.Sprintf("%.1f/%.1f/%.1f", r.Amdahl["16"], r.Amdahl["64"], r.Amdahl["128"]))
		}
		for _, k := range byteStats {
			if v, ok := r.TrainerStats[k]; ok {
				cells = append(cells, humanize.IBytes(uint64(v)))
			} else {
				cells = append(cells, "-")
			}
		}
		for _, m := range metrics {
			if v, ok := r.Metrics[m]; ok {
				cells = append(cells, fmt.Sprintf("%.2f", v))
			} else {
				cells = append(cells, "-")
			}
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(&buf, "S, E: speedup and parallel efficiency against %s (median times). comm: bytes sent+received, "+
		"rank 0 and mean of the others; model pred.: rank 0's gather volume M(P-1)/P predicted from the model size; "+
		"serial f: the training's serial fraction (the largest rank's serial and collective time over it and every "+
		"rank's work in parallel loops), loop E: the workers' busy share of the parallel loops, work ×: the time "+
		"the ranks and workers spent computing over %s's (above 1: work repeated, cores slower beside each other, or "+
		"more workers than cores; where f is small, S ≈ cores × loop E / work ×), Amdahl: the speed-up over one "+
		"core that f allows on 16, 64 and 128 cores.\n", s.Baseline, s.Baseline)
	_, err := w.Write(buf.Bytes())
	return err
}
