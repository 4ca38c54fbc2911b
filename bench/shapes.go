package bench

import (
	"bufio"
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

	"xmc/atomicfile"
	"xmc/data"
	"xmc/job"
)

// Shape is the shape of a data set of the Extreme Classification
// Repository: its features, labels, and the mean numbers of labels and
// non-zero features per row. A scale study generates synthetic data of
// such shapes (data.Generate), with fewer rows to fit the machine: its
// costs, not its accuracy, are those of the real set (generated data is
// far easier than real text).
type Shape struct {
	Name                   string
	D, L                   int
	AvgLabels, AvgFeatures float64
	// MultiClass gives every row one label (AvgLabels is 1).
	MultiClass bool
}

// Shapes are the repository's data sets a scale study knows, by name.
func Shapes() []Shape {
	return []Shape{
		{"eurlex-4k", 5000, 3993, 5.31, 236.8, false},
		{"wiki10-31k", 101938, 30938, 18.64, 673.4, false},
		{"amazon-670k", 135909, 670091, 5.45, 75.68, false},
		// The shared wordnet-mc set's shape: multi-class, 20,206 classes.
		{"wordnet-mc", 41776, 20206, 1, 8.32, true},
	}
}

// ShapeByName returns the shape called name.
func ShapeByName(name string) (Shape, error) {
	var names []string
	for _, s := range Shapes() {
		if s.Name == name {
			return s, nil
		}
		names = append(names, s.Name)
	}
	return Shape{}, fmt.Errorf("shape %q: want one of %s", name, strings.Join(names, ", "))
}

// ShapesConfig describes a scale study: every algorithm trained on
// generated data of every shape with N rows (the first TrainFraction to
// train on, the rest to test), and a sweep of the label count at the last
// shape's other dimensions.
type ShapesConfig struct {
	Launcher Launcher
	Layout   Layout
	Shapes   []Shape
	// N is the rows generated per data set.
	N          int
	Algorithms []string
	// SweepL lists label counts for the sweep, trained with
	// SweepAlgorithms on data of the last shape's D and densities.
	SweepL          []int
	SweepAlgorithms []string
	Seed            uint64
	// TrainArgs are more xmc train flags of every run, for example a
	// --time-limit: a run stopped by it is reported with the work done.
	TrainArgs []string
	// AlgoArgs, if set, returns flags of one algorithm's runs.
	AlgoArgs func(algo string) []string
	// Dir receives the data (Dir/data), the summaries, logs and reports.
	// Data and runs already there are reused.
	Dir      string
	Progress io.Writer
}

// trainFraction of the generated rows are the training split.
const trainFraction = 0.8

// shapeData generates, unless present, the train/test files of s with n
// rows under dir, and returns their paths.
func shapeData(dir string, s Shape, n int, seed uint64) (train, test string, err error) {
	sub := filepath.Join(dir, "data", s.Name)
	train, test = filepath.Join(sub, "train.txt"), filepath.Join(sub, "test.txt")
	if _, err1 := os.Stat(train); err1 == nil {
		if _, err2 := os.Stat(test); err2 == nil {
			return train, test, nil
		}
	}
	if err := os.MkdirAll(sub, 0o755); err != nil {
		return "", "", err
	}
	ds, err := data.GenerateDataset(data.GenConfig{N: n, D: s.D, L: s.L, AvgLabels: s.AvgLabels,
		AvgFeatures: s.AvgFeatures, LabelExponent: 1, MultiClass: s.MultiClass, Seed: seed})
	if err != nil {
		return "", "", fmt.Errorf("generate %s: %w", s.Name, err)
	}
	cut := int(trainFraction * float64(n))
	rows := func(lo, hi int) []int {
		r := make([]int, hi-lo)
		for i := range r {
			r[i] = lo + i
		}
		return r
	}
	for _, part := range []struct {
		path   string
		lo, hi int
	}{{train, 0, cut}, {test, cut, n}} {
		sub := ds.Subset(rows(part.lo, part.hi))
		if err := atomicfile.Write(part.path, func(w *bufio.Writer) error { return data.WriteXMC(w, sub) }); err != nil {
			return "", "", err
		}
	}
	return train, test, nil
}

// shapeRunName names one run of a scale study (its summary file, less
// ".json").
func shapeRunName(set, algo string) string { return set + "__" + algo }

// RunShapes runs the study's missing runs.
func RunShapes(ctx context.Context, c ShapesConfig) error {
	switch {
	case len(c.Shapes) == 0 || len(c.Algorithms) == 0:
		return errors.New("shapes: give shapes and algorithms")
	case c.N < 10:
		return fmt.Errorf("shapes: --n %d: need at least 10 rows", c.N)
	}
	if err := checkOwnFlags(c.TrainArgs, "ranks", "threads", "summary", "checkpoint", "data", "test", "algo", "model-out"); err != nil {
		return err
	}
	if err := c.Launcher.Check(); err != nil {
		return err
	}
	type run struct {
		set, algo string
		shape     Shape
	}
	var runs []run
	for _, s := range c.Shapes {
		for _, a := range c.Algorithms {
			runs = append(runs, run{s.Name, a, s})
		}
	}
	last := c.Shapes[len(c.Shapes)-1]
	for _, l := range c.SweepL {
		s := last
		s.Name, s.L = fmt.Sprintf("%s-L%d", last.Name, l), l
		s.AvgLabels = min(s.AvgLabels, float64(l+1)/2)
		for _, a := range c.SweepAlgorithms {
			runs = append(runs, run{s.Name, a, s})
		}
	}
	scratch := filepath.Join(c.Dir, "scratch.model")
	defer removeScratch(scratch)
	var study []studyRun
	for _, r := range runs {
		study = append(study, studyRun{Name: shapeRunName(r.set, r.algo), Args: func() ([]string, error) {
			removeScratch(scratch) // the model of the run before
			train, test, err := shapeData(c.Dir, r.shape, c.N, c.Seed)
			if err != nil {
				return nil, err
			}
			args := append([]string{"--algo", r.algo, "--data", train, "--test", test, "--model-out", scratch,
				"--checkpoint", "none", "--seed", strconv.FormatUint(c.Seed, 10)}, c.TrainArgs...)
			if c.AlgoArgs != nil {
				args = append(args, c.AlgoArgs(r.algo)...)
			}
			return args, nil
		}})
	}
	return runMissing(ctx, c.Launcher, c.Layout, c.Dir, study, c.Progress)
}

// ShapeRow is one run of a scale study.
type ShapeRow struct {
	Dataset   string `json:"dataset"`
	Algorithm string `json:"algorithm"`
	Status    string `json:"status"`
	// UnitsDone is the work units (trees, blocks of labels) the run
	// finished, over all ranks: fewer than planned when it was interrupted.
	UnitsDone int64   `json:"units_done"`
	N         int     `json:"n_train"`
	D         int     `json:"d"`
	L         int     `json:"l"`
	TrainS    float64 `json:"train_s"`
	// PeakRSS is each rank's peak resident memory, in bytes.
	PeakRSS []int64 `json:"peak_rss_bytes"`
	// CommBytes is the bytes every rank sent and received, summed.
	CommBytes  int64 `json:"comm_bytes"`
	ModelBytes int64 `json:"model_bytes"`
	TestRows   int   `json:"test_rows"`
	// BytesPerUnit is the model's bytes per unit: per tree of a forest,
	// per label block of a linear model.
	BytesPerUnit float64 `json:"model_bytes_per_unit"`
	// PredictUSPerRow is the prediction time per test row, microseconds,
	// and PredictMSPerRowCore per row and core, milliseconds.
	PredictUSPerRow     float64 `json:"predict_us_per_row"`
	PredictMSPerRowCore float64 `json:"predict_ms_per_row_core"`
	P1                  float64 `json:"p_at_1"`
}

// ShapesStudy is a scale study's result.
type ShapesStudy struct {
	Ranks   int        `json:"ranks"`
	Threads int        `json:"threads_per_rank"`
	Rows    []ShapeRow `json:"rows"`
}

// LoadShapes reads the summaries of a scale study in dir.
func LoadShapes(dir string) (*ShapesStudy, error) {
	runs, _, err := LoadSummaries(dir)
	if err != nil {
		return nil, err
	}
	st := &ShapesStudy{}
	for _, s := range runs {
		name := strings.TrimSuffix(filepath.Base(s.Source), ".json")
		set, algo, ok := strings.Cut(name, "__")
		if !ok {
			continue
		}
		r := ShapeRow{Dataset: set, Algorithm: algo, Status: s.Status, TrainS: s.TrainS, PeakRSS: s.PeakRSSBytes,
			ModelBytes: s.ModelBytes, BytesPerUnit: s.ModelBytesPerUnit, P1: s.Metrics["P@1"]}
		for k, v := range map[string]*int{"N": &r.N, "D": &r.D, "L": &r.L} {
			if f, ok := s.Data[k].(float64); ok {
				*v = int(f)
			}
		}
		for _, b := range CommBytes(s.Comm) {
			r.CommBytes += b
		}
		if s.Balance != nil {
			for _, u := range s.Balance.Units {
				r.UnitsDone += u
			}
		}
		if rows, ok := testRows(s); ok && rows > 0 {
			r.TestRows = rows
			r.PredictUSPerRow = s.PredictS / float64(rows) * 1e6
			r.PredictMSPerRowCore = s.MSPerRowCore(rows)
		}
		st.Ranks, st.Threads = s.Ranks, s.ThreadsPerRank
		st.Rows = append(st.Rows, r)
	}
	if len(st.Rows) == 0 {
		return nil, fmt.Errorf("no scale study summaries in %s", dir)
	}
	slices.SortFunc(st.Rows, func(a, b ShapeRow) int {
		if c := strings.Compare(a.Dataset, b.Dataset); c != 0 {
			return c
		}
		return strings.Compare(a.Algorithm, b.Algorithm)
	})
	return st, nil
}

// testRows returns the test rows a training scored: from its summary, or,
// in a summary of an older xmc, its test file's header.
func testRows(s *job.Summary) (int, bool) {
	if s.TestRows > 0 {
		return s.TestRows, true
	}
	for i, a := range s.CommandLine {
		if a == "--test" && i+1 < len(s.CommandLine) {
			f, err := os.Open(s.CommandLine[i+1])
			if err != nil {
				return 0, false
			}
			defer f.Close()
			var n int
			_, err = fmt.Fscan(f, &n)
			return n, err == nil
		}
	}
	return 0, false
}

// WriteTable writes the study as a markdown table.
func (st *ShapesStudy) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprintf(tw, "| data set\t| N train\t| D\t| L\t| algorithm\t| status\t| train s\t| peak RSS, largest rank\t| bytes communicated\t| model\t| model / unit\t| predict µs/row\t| predict ms/row/core\t| P@1\t|\n")
	fmt.Fprintf(tw, "| ---\t| ---\t| ---\t| ---\t| ---\t| ---\t| ---\t| ---\t| ---\t| ---\t| ---\t| ---\t| ---\t| ---\t|\n")
	partial := false
	for _, r := range st.Rows {
		status, p1 := r.Status, fmt.Sprintf("%.2f", r.P1)
		if r.Status != "ok" {
			partial = true
			status = fmt.Sprintf("%s after %d units", r.Status, r.UnitsDone)
			p1 += " (partial)"
		}
		fmt.Fprintf(tw, "| %s\t| %d\t| %d\t| %d\t| %s\t| %s\t| %.1f\t| %s\t| %s\t| %s\t| %s\t| %.0f\t| %.3f\t| %s\t|\n", r.Dataset, r.N, r.D, r.L, r.Algorithm, status,
			r.TrainS, humanize.IBytes(uint64(largestRSS(r.PeakRSS))), humanize.IBytes(uint64(r.CommBytes)),
			humanize.IBytes(uint64(r.ModelBytes)), humanize.IBytes(uint64(r.BytesPerUnit)), r.PredictUSPerRow, r.PredictMSPerRowCore, p1)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if partial {
		_, err := fmt.Fprintln(w, "\nAn interrupted run's model holds only the units it finished within the time limit, and its",
			"P@1 is that partial model's: labels without a unit score nothing.")
		return err
	}
	return nil
}

// WriteJSON writes the study as indented JSON.
func (st *ShapesStudy) WriteJSON(w io.Writer) error {
	return writeJSON(w, st, "shapes")
}

// WriteCSV writes a line per run.
func (st *ShapesStudy) WriteCSV(w io.Writer) error {
	fmt.Fprintln(w, "dataset,n_train,d,l,algorithm,status,units_done,train_s,peak_rss_bytes_max,comm_bytes,model_bytes,model_bytes_per_unit,predict_us_per_row,predict_ms_per_row_core,p_at_1")
	for _, r := range st.Rows {
		if _, err := fmt.Fprintf(w, "%s,%d,%d,%d,%s,%s,%d,%.3f,%d,%d,%d,%.0f,%.1f,%.4f,%.2f\n", r.Dataset, r.N, r.D, r.L, r.Algorithm, r.Status,
			r.UnitsDone, r.TrainS, largestRSS(r.PeakRSS), r.CommBytes, r.ModelBytes, r.BytesPerUnit, r.PredictUSPerRow, r.PredictMSPerRowCore, r.P1); err != nil {
			return err
		}
	}
	return nil
}

// Plot draws, for the runs of the label sweep (data sets named
// "<shape>-L<labels>"), training time and the largest rank's peak memory
// against the number of labels, on log-log axes, a line per algorithm, into
// dir as sweep.png and sweep.svg.
func (st *ShapesStudy) Plot(dir string) ([]string, error) {
	lines := map[string]plotter.XYs{}
	mem := map[string]plotter.XYs{}
	for _, r := range st.Rows {
		if !strings.Contains(r.Dataset, "-L") || r.TrainS <= 0 {
			continue
		}
		lines[r.Algorithm] = append(lines[r.Algorithm], plotter.XY{X: float64(r.L), Y: r.TrainS})
		mem[r.Algorithm] = append(mem[r.Algorithm], plotter.XY{X: float64(r.L), Y: float64(largestRSS(r.PeakRSS)) / (1 << 20)})
	}
	if len(lines) == 0 {
		return nil, nil
	}
	var written []string
	for _, c := range []struct {
		name, title, ylabel string
		series              map[string]plotter.XYs
	}{
		{"sweep-time", "training time against labels, at fixed N and D", "train s", lines},
		{"sweep-memory", "peak memory of the largest rank against labels, at fixed N and D", "peak RSS (MiB)", mem},
	} {
		p := plot.New()
		p.Title.Text = c.title
		p.X.Label.Text = "labels L"
		p.Y.Label.Text = c.ylabel
		p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
		p.X.Tick.Marker, p.Y.Tick.Marker = logTicks125{}, logTicks125{}
		algos := slices.Sorted(func(yield func(string) bool) {
			for a := range c.series {
				if !yield(a) {
					return
				}
			}
		})
		for i, a := range algos {
			pts := c.series[a]
			slices.SortFunc(pts, func(x, y plotter.XY) int { return int(math.Copysign(1, x.X-y.X)) })
			l, s, err := plotter.NewLinePoints(pts)
			if err != nil {
				return written, fmt.Errorf("plot sweep: %w", err)
			}
			l.Color, s.Color, s.Shape = plotutil.Color(i), plotutil.Color(i), plotutil.Shape(i)
			s.Radius = vg.Points(3)
			p.Add(l, s)
			p.Legend.Add(a, l, s)
		}
		// At least a decade on the y axis (autoscaled to the data, a
		// curve that grows by 5% climbed the whole height), some room
		// above, and the legend below the curves.
		p.Y.Min, p.Y.Max = min(p.Y.Min, p.Y.Max/10), p.Y.Max*1.3
		p.Legend.Top, p.Legend.Left = false, false
		paths, err := savePlot(p, filepath.Join(dir, c.name))
		written = append(written, paths...)
		if err != nil {
			return written, err
		}
	}
	return written, nil
}
