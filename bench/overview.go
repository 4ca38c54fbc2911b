package bench

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"text/tabwriter"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Overview sets several scaling studies side by side, one a trainer or a
// data set: each study's layouts at its largest core count, with their
// training speedup and parallel efficiency against the study's own
// baseline. It answers which trainers keep a node's cores busy, where each
// study's own table answers how one trainer scales.
type Overview struct {
	Studies []OverviewStudy `json:"studies"`
}

// OverviewStudy is one study of an Overview: its name (the directory its
// summaries came from), its title, baseline and largest core count, and
// its layouts at that count.
type OverviewStudy struct {
	Name     string        `json:"name"`
	Title    string        `json:"title"`
	Baseline Layout        `json:"baseline"`
	Cores    int           `json:"cores"`
	Rows     []OverviewRow `json:"rows"`
}

// OverviewRow is one layout of a study at its largest core count: the
// median training time, and the figures of its ScalingRow.
type OverviewRow struct {
	Layout
	TrainS          float64 `json:"train_s"`
	TrainSpeedup    float64 `json:"train_speedup"`
	TrainEfficiency float64 `json:"train_efficiency"`
	SerialFraction  float64 `json:"serial_fraction"`
	LoopEfficiency  float64 `json:"loop_efficiency"`
	WorkRatio       float64 `json:"work_ratio"`
}

// NewOverview returns the overview of the studies, named by names (one
// each, distinct).
func NewOverview(names []string, studies []*Scaling) (*Overview, error) {
	if len(names) != len(studies) || len(studies) == 0 {
		return nil, fmt.Errorf("overview: %d names for %d studies", len(names), len(studies))
	}
	o := &Overview{}
	for i, s := range studies {
		if slices.Contains(names[:i], names[i]) {
			return nil, fmt.Errorf("overview: two studies named %q", names[i])
		}
		if len(s.Rows) == 0 {
			return nil, fmt.Errorf("overview: study %s has no runs", names[i])
		}
		st := OverviewStudy{Name: names[i], Title: s.title(), Baseline: s.Baseline}
		for _, r := range s.Rows {
			st.Cores = max(st.Cores, r.Cores)
		}
		for _, r := range s.Rows {
			if r.Cores == st.Cores {
				st.Rows = append(st.Rows, OverviewRow{Layout: r.Layout, TrainS: r.Phases["train_s"].Median,
					TrainSpeedup: r.TrainSpeedup, TrainEfficiency: r.TrainEfficiency,
					SerialFraction: r.SerialFraction, LoopEfficiency: r.LoopEfficiency, WorkRatio: r.WorkRatio})
			}
		}
		o.Studies = append(o.Studies, st)
	}
	return o, nil
}

// layouts returns the layouts of every study's rows, each once, ordered by
// cores, then ranks.
func (o *Overview) layouts() []Layout {
	var ls []Layout
	for _, st := range o.Studies {
		for _, r := range st.Rows {
			if !slices.Contains(ls, r.Layout) {
				ls = append(ls, r.Layout)
			}
		}
	}
	slices.SortFunc(ls, compareLayouts)
	return ls
}

// WriteTable prints a line per study and layout: its training time,
// speedup and efficiency against the study's baseline, serial fraction,
// loop efficiency and work ratio.
func (o *Overview) WriteTable(w io.Writer) error {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "study\tlayout\tcores\tagainst\ttrain s\tS train\tE train\tserial f\tloop E\twork ×\t")
	for _, st := range o.Studies {
		for _, r := range st.Rows {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%.3f\t%.2f\t%.2f\t%.4f\t%.2f\t%.2f\t\n", st.Name, r.Layout, r.Cores(),
				st.Baseline, r.TrainS, r.TrainSpeedup, r.TrainEfficiency, r.SerialFraction, r.LoopEfficiency, r.WorkRatio)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(&buf, "Each study at its largest core count; S, E: training speedup and parallel efficiency against the study's own baseline (median times).")
	_, err := w.Write(buf.Bytes())
	return err
}

// WriteJSON writes the overview as indented JSON.
func (o *Overview) WriteJSON(w io.Writer) error {
	return writeJSON(w, o, "overview")
}

// WriteCSV writes one line per study and layout, as WriteTable.
func (o *Overview) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	head := []string{"study", "title", "ranks", "threads_per_rank", "cores", "baseline", "train_s", "train_speedup",
		"train_efficiency", "serial_fraction", "loop_efficiency", "work_ratio"}
	if err := cw.Write(head); err != nil {
		return err
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }
	for _, st := range o.Studies {
		for _, r := range st.Rows {
			rec := []string{st.Name, st.Title, strconv.Itoa(r.Ranks), strconv.Itoa(r.Threads), strconv.Itoa(r.Cores()),
				st.Baseline.String(), f(r.TrainS), f(r.TrainSpeedup), f(r.TrainEfficiency), f(r.SerialFraction),
				f(r.LoopEfficiency), f(r.WorkRatio)}
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// bars returns the layouts of the plot's bars, and for each the training
// efficiency of every study in that layout, 0 (no bar) where a study lacks
// it.
func (o *Overview) bars() ([]Layout, []plotter.Values) {
	layouts := o.layouts()
	efficiency := make([]plotter.Values, len(layouts))
	for i, l := range layouts {
		efficiency[i] = make(plotter.Values, len(o.Studies))
		for s, st := range o.Studies {
			for _, r := range st.Rows {
				if r.Layout == l {
					efficiency[i][s] = r.TrainEfficiency
				}
			}
		}
	}
	return layouts, efficiency
}

// Plot draws into dir, as overview.png and overview.svg, the training's
// parallel efficiency of every study at its largest core count: a group
// of bars a study, a bar a layout (one colour a layout across the groups),
// and the ideal at 1. It returns the paths written.
func (o *Overview) Plot(dir string) ([]string, error) {
	p := plot.New()
	p.Title.Text = "Parallel efficiency of the training at each study's largest core count"
	p.Y.Label.Text = "speedup / cores, against each study's baseline"
	p.Legend.Top = true
	layouts, efficiency := o.bars()
	width := vg.Points(min(24, 300/float64(len(o.Studies)*len(layouts))))
	for i, l := range layouts {
		bars, err := plotter.NewBarChart(efficiency[i], width)
		if err != nil {
			return nil, fmt.Errorf("plot overview: %w", err)
		}
		bars.Color = plotutil.Color(i)
		bars.LineStyle.Width = 0
		bars.Offset = vg.Length(float64(i)-float64(len(layouts)-1)/2) * width
		p.Add(bars)
		p.Legend.Add(fmt.Sprintf("%s (ranks × threads)", l), bars)
	}
	names := make([]string, len(o.Studies))
	for s, st := range o.Studies {
		names[s] = st.Name
	}
	p.NominalX(names...)
	if err := addLevel(p, len(o.Studies), 1, "ideal"); err != nil {
		return nil, fmt.Errorf("plot overview: %w", err)
	}
	p.Y.Min, p.Y.Max = 0, 1.6 // the top left free for the legend
	return savePlot(p, filepath.Join(dir, "overview"))
}
