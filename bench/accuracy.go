package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/dustin/go-humanize"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"xmc/job"
	"xmc/metrics"
)

// Dataset is one train/test pair of an accuracy study.
type Dataset struct {
	Name        string
	Train, Test string
}

// FindDatasets returns the data sets of dir: every subdirectory (and dir
// itself) holding train.txt and test.txt, each possibly gzipped, in name
// order.
func FindDatasets(dir string) ([]Dataset, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("find data sets: %w", err)
	}
	var sets []Dataset
	try := func(name, path string) {
		train, test := pairFile(path, "train"), pairFile(path, "test")
		if train != "" && test != "" {
			sets = append(sets, Dataset{Name: name, Train: train, Test: test})
		}
	}
	try(filepath.Base(filepath.Clean(dir)), dir)
	for _, e := range entries {
		if e.IsDir() {
			try(e.Name(), filepath.Join(dir, e.Name()))
		}
	}
	if len(sets) == 0 {
		return nil, fmt.Errorf("find data sets: no directory of %s holds train.txt and test.txt (or .txt.gz)", dir)
	}
	slices.SortFunc(sets, func(a, b Dataset) int { return strings.Compare(a.Name, b.Name) })
	return sets, nil
}

// pairFile returns dir/name.txt or dir/name.txt.gz, whichever exists.
func pairFile(dir, name string) string {
	for _, f := range []string{name + ".txt", name + ".txt.gz"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err == nil && !st.IsDir() {
			return filepath.Join(dir, f)
		}
	}
	return ""
}

// AccuracyConfig describes an accuracy study: every algorithm trained on
// every data set with every seed, and evaluated on the data set's test
// split.
type AccuracyConfig struct {
	Launcher Launcher
	// Layout is the ranks and threads of every run.
	Layout     Layout
	Datasets   []Dataset
	Algorithms []string
	Seeds      []uint64
	// Label names the runs in tables instead of the algorithm, for a
	// variant of one (its flags in TrainArgs); empty uses the algorithm.
	Label string
	// TrainArgs are more xmc train flags of every run.
	TrainArgs []string
	// Dir receives the summaries, "<data set>__<label>__s<seed>.json",
	// and the runs' logs under Dir/logs. A run whose summary is already
	// there is not run again, so that a study can be resumed or extended.
	Dir string
	// Progress receives a line per run; nil discards them.
	Progress io.Writer
}

// accuracyName names one run (its summary file, less ".json").
func accuracyName(set, label string, seed uint64) string {
	return fmt.Sprintf("%s__%s__s%d", set, label, seed)
}

// parseAccuracyName reverses accuracyName.
func parseAccuracyName(path string) (set, label string, seed uint64, ok bool) {
	parts := strings.Split(strings.TrimSuffix(filepath.Base(path), ".json"), "__")
	if len(parts) != 3 || !strings.HasPrefix(parts[2], "s") {
		return "", "", 0, false
	}
	seed, err := strconv.ParseUint(parts[2][1:], 10, 64)
	return parts[0], parts[1], seed, err == nil
}

// RunAccuracy runs the study's missing runs, data set after data set.
func RunAccuracy(ctx context.Context, c AccuracyConfig) error {
	switch {
	case len(c.Datasets) == 0 || len(c.Algorithms) == 0 || len(c.Seeds) == 0:
		return errors.New("accuracy: give data sets, algorithms and seeds")
	case c.Label != "" && len(c.Algorithms) != 1:
		return errors.New("accuracy: a label names a variant of one algorithm")
	case strings.Contains(c.Label, "__"):
		return fmt.Errorf("accuracy: label %q must not contain \"__\"", c.Label)
	}
	if err := checkOwnFlags(c.TrainArgs, "ranks", "threads", "summary", "checkpoint", "data", "test", "seed", "algo"); err != nil {
		return err
	}
	if err := c.Launcher.Check(); err != nil {
		return err
	}
	var runs []studyRun
	for _, set := range c.Datasets {
		for _, algo := range c.Algorithms {
			label := algo
			if c.Label != "" {
				label = c.Label
			}
			for _, seed := range c.Seeds {
				name := accuracyName(set.Name, label, seed)
				args := append([]string{"--algo", algo, "--seed", strconv.FormatUint(seed, 10), "--data", set.Train, "--test", set.Test,
					"--checkpoint", "none"}, c.TrainArgs...)
				if algo == "ensemble" {
					// An ensemble file names its members' files: they
					// are kept in the study's directory.
					args = append(args, "--model-out", filepath.Join(c.Dir, name+".model"))
				}
				runs = append(runs, studyRun{Name: name,
					Args: func() ([]string, error) { return args, nil }})
			}
		}
	}
	return runMissing(ctx, c.Launcher, c.Layout, c.Dir, runs, c.Progress)
}

// MeanSD is the mean and sample standard deviation of a quantity over runs
// (seeds).
type MeanSD struct {
	Mean float64 `json:"mean"`
	SD   float64 `json:"sd"`
	N    int     `json:"n"`
}

// meanSD returns the MeanSD of xs (SD 0 for fewer than two values).
func meanSD(xs []float64) MeanSD {
	m := MeanSD{N: len(xs)}
	if len(xs) == 0 {
		return m
	}
	for _, x := range xs {
		m.Mean += x
	}
	m.Mean /= float64(len(xs))
	if len(xs) > 1 {
		var ss float64
		for _, x := range xs {
			ss += (x - m.Mean) * (x - m.Mean)
		}
		m.SD = math.Sqrt(ss / float64(len(xs)-1))
	}
	return m
}

// AccuracyMetrics are the metrics an accuracy study tabulates: macro-F1
// only on multi-class data sets (one label per row), where accuracy is P@1.
var AccuracyMetrics = []string{"P@1", "P@3", "P@5", "PSP@1", "PSP@3", "PSP@5", metrics.MetricMacroF1}

// Accuracy is an accuracy study's result: a row per data set and label.
type Accuracy struct {
	Rows []AccuracyRow `json:"rows"`
	// Skipped lists the summaries left out, with the reason.
	Skipped []string `json:"skipped,omitempty"`
}

// AccuracyRow is one label (an algorithm or a variant of one) on one data
// set, over its seeds.
type AccuracyRow struct {
	Dataset string            `json:"dataset"`
	Label   string            `json:"label"`
	Seeds   []uint64          `json:"seeds"`
	Metrics map[string]MeanSD `json:"metrics"`
	TrainS  MeanSD            `json:"train_s"`
	// PeakRSS is the mean over seeds of the largest rank's peak resident
	// memory, in bytes.
	PeakRSS MeanSD `json:"peak_rss_bytes"`
	Ranks   int    `json:"ranks"`
	Threads int    `json:"threads_per_rank"`
}

// LoadAccuracy reads every summary of an accuracy study in dir and
// aggregates them per data set and label.
func LoadAccuracy(dir string) (*Accuracy, error) {
	runs, skipped, err := LoadSummaries(dir)
	if err != nil {
		return nil, err
	}
	type key struct{ set, label string }
	groups := map[key][]*job.Summary{}
	seeds := map[key][]uint64{}
	a := &Accuracy{Skipped: skipped}
	for _, s := range runs {
		set, label, seed, ok := parseAccuracyName(s.Source)
		switch {
		case !ok:
			a.Skipped = append(a.Skipped, s.Source+": not named <data set>__<label>__s<seed>.json")
			continue
		case s.Status != "ok" || s.Metrics == nil:
			a.Skipped = append(a.Skipped, fmt.Sprintf("%s: status %q, metrics %d", s.Source, s.Status, len(s.Metrics)))
			continue
		}
		k := key{set, label}
		groups[k] = append(groups[k], s)
		seeds[k] = append(seeds[k], seed)
	}
	if len(groups) == 0 {
		return nil, fmt.Errorf("no accuracy study summaries in %s", dir)
	}
	for k, g := range groups {
		r := AccuracyRow{Dataset: k.set, Label: k.label, Seeds: seeds[k], Metrics: map[string]MeanSD{},
			Ranks: g[0].Ranks, Threads: g[0].ThreadsPerRank}
		slices.Sort(r.Seeds)
		for _, m := range AccuracyMetrics {
			var xs []float64
			for _, s := range g {
				if v, ok := s.Metrics[m]; ok {
					xs = append(xs, v)
				}
			}
			if len(xs) > 0 {
				r.Metrics[m] = meanSD(xs)
			}
		}
		var train, rss []float64
		for _, s := range g {
			train = append(train, s.TrainS)
			rss = append(rss, float64(largestRSS(s.PeakRSSBytes)))
		}
		r.TrainS, r.PeakRSS = meanSD(train), meanSD(rss)
		a.Rows = append(a.Rows, r)
	}
	slices.SortFunc(a.Rows, func(x, y AccuracyRow) int {
		if c := strings.Compare(x.Dataset, y.Dataset); c != 0 {
			return c
		}
		return strings.Compare(x.Label, y.Label)
	})
	return a, nil
}

// WriteTable writes the study as a markdown table: mean ± sd over seeds.
func (a *Accuracy) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprintf(tw, "| data set\t| method\t| seeds\t")
	for _, m := range AccuracyMetrics {
		fmt.Fprintf(tw, "| %s\t", m)
	}
	fmt.Fprintf(tw, "| train s\t| peak RSS / rank\t|\n")
	fmt.Fprintf(tw, "| ---\t| ---\t| ---\t%s| ---\t| ---\t|\n", strings.Repeat("| ---\t", len(AccuracyMetrics)))
	for _, r := range a.Rows {
		fmt.Fprintf(tw, "| %s\t| %s\t| %d\t", r.Dataset, r.Label, len(r.Seeds))
		for _, m := range AccuracyMetrics {
			v, ok := r.Metrics[m]
			switch {
			case !ok:
				fmt.Fprintf(tw, "| \t")
			case v.N > 1:
				fmt.Fprintf(tw, "| %.2f ± %.2f\t", v.Mean, v.SD)
			default:
				fmt.Fprintf(tw, "| %.2f\t", v.Mean)
			}
		}
		fmt.Fprintf(tw, "| %.1f\t| %s\t|\n", r.TrainS.Mean, humanize.IBytes(uint64(r.PeakRSS.Mean)))
	}
	return tw.Flush()
}

// WriteJSON writes the study as indented JSON.
func (a *Accuracy) WriteJSON(w io.Writer) error {
	return writeJSON(w, a, "accuracy")
}

// WriteCSV writes a line per row: data set, label, seeds, then mean and sd
// of every metric, train time and peak RSS.
func (a *Accuracy) WriteCSV(w io.Writer) error {
	head := []string{"dataset", "label", "seeds"}
	for _, m := range AccuracyMetrics {
		head = append(head, m+"_mean", m+"_sd")
	}
	fmt.Fprintln(w, strings.Join(append(head, "train_s_mean", "peak_rss_bytes_mean"), ","))
	for _, r := range a.Rows {
		cells := []string{r.Dataset, r.Label, strconv.Itoa(len(r.Seeds))}
		for _, m := range AccuracyMetrics {
			v, ok := r.Metrics[m]
			if !ok {
				cells = append(cells, "", "")
				continue
			}
			cells = append(cells, strconv.FormatFloat(v.Mean, 'f', 4, 64), strconv.FormatFloat(v.SD, 'f', 4, 64))
		}
		cells = append(cells, strconv.FormatFloat(r.TrainS.Mean, 'f', 3, 64), strconv.FormatFloat(r.PeakRSS.Mean, 'f', 0, 64))
		if _, err := fmt.Fprintln(w, strings.Join(cells, ",")); err != nil {
			return err
		}
	}
	return nil
}

// Plot draws P@1 per data set, a point per label with its standard
// deviation over seeds as an error bar, into dir as accuracy.png and
// accuracy.svg.
func (a *Accuracy) Plot(dir string) ([]string, error) {
	var sets, labels []string
	for _, r := range a.Rows {
		if !slices.Contains(sets, r.Dataset) {
			sets = append(sets, r.Dataset)
		}
		if !slices.Contains(labels, r.Label) {
			labels = append(labels, r.Label)
		}
	}
	slices.Sort(labels)
	p := plot.New()
	p.Title.Text = "P@1 per data set: mean over seeds, bars ± 1 sd"
	p.Y.Label.Text = "P@1 (%)"
	// The labels of a data set stand side by side around its position.
	step := 0.7 / float64(max(1, len(labels)))
	for i, label := range labels {
		var pts plotter.XYs
		var errs plotter.YErrors
		for j, set := range sets {
			for _, r := range a.Rows {
				if r.Dataset == set && r.Label == label {
					m := r.Metrics["P@1"]
					pts = append(pts, plotter.XY{X: float64(j) + (float64(i)-float64(len(labels)-1)/2)*step, Y: m.Mean})
					errs = append(errs, struct{ Low, High float64 }{m.SD, m.SD})
				}
			}
		}
		if len(pts) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, fmt.Errorf("plot accuracy: %w", err)
		}
		sc.GlyphStyle.Color = plotutil.Color(i)
		sc.GlyphStyle.Shape = plotutil.Shape(i)
		sc.GlyphStyle.Radius = vg.Points(3)
		eb := &plotter.YErrorBars{XYs: pts, YErrors: errs, LineStyle: plotter.DefaultLineStyle, CapWidth: vg.Points(4)}
		eb.LineStyle.Color = plotutil.Color(i)
		p.Add(sc, eb)
		p.Legend.Add(label, sc)
	}
	p.Legend.Top = true
	p.NominalX(sets...)
	p.X.Min, p.X.Max = -0.5, float64(len(sets))-0.5
	return savePlot(p, filepath.Join(dir, "accuracy"))
}
