package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"xmc/atomicfile"
)

// Plot size: readable in a README at full width and in a paper column.
const (
	plotWidth  = 6 * vg.Inch
	plotHeight = 4 * vg.Inch
)

// PlotFormats are the file formats every plot is written in: PNG for
// READMEs and slides, SVG for papers.
var PlotFormats = [...]string{"png", "svg"}

// Plot draws the study into dir: speedup and parallel efficiency of the
// training and whole-run times against cores (with the ideal lines), and
// the bytes communicated per rank against ranks beside CommModel's
// prediction. Each plot is written as speedup.png and speedup.svg, and so
// on; Plot returns the paths written.
func (s *Scaling) Plot(dir string) ([]string, error) {
	var paths []string
	for _, f := range []struct {
		name string
		draw func() (*plot.Plot, error)
	}{
		{"speedup", func() (*plot.Plot, error) { return s.plotSpeedup(false) }},
		{"efficiency", func() (*plot.Plot, error) { return s.plotSpeedup(true) }},
		{"comm", s.plotComm},
	} {
		p, err := f.draw()
		if err != nil {
			return paths, fmt.Errorf("plot %s: %w", f.name, err)
		}
		written, err := savePlot(p, filepath.Join(dir, f.name))
		paths = append(paths, written...)
		if err != nil {
			return paths, err
		}
	}
	return paths, nil
}

// title names the problem: algorithm, trees and data set.
func (s *Scaling) title() string {
	t := s.Algorithm
	if t == "" {
		t = s.Command
	}
	var p struct {
		Trees int `json:"trees"`
	}
	if json.Unmarshal(s.Params, &p) == nil && p.Trees > 0 {
		t += fmt.Sprintf(", %d trees", p.Trees)
	}
	if path, ok := s.Data["train"].(string); ok {
		t += ", " + filepath.Join(filepath.Base(filepath.Dir(path)), filepath.Base(path))
	}
	return t
}

// threadCounts returns the distinct threads-per-rank values of the rows.
func (s *Scaling) threadCounts() []int {
	var ts []int
	for _, r := range s.Rows {
		if !slices.Contains(ts, r.Threads) {
			ts = append(ts, r.Threads)
		}
	}
	slices.Sort(ts)
	return ts
}

// plotSpeedup draws speedup (or, with efficiency, parallel efficiency)
// against cores, one line per threads-per-rank value and time (train: solid,
// wall: dashed), and the ideal.
func (s *Scaling) plotSpeedup(efficiency bool) (*plot.Plot, error) {
	p := plot.New()
	what := "Speedup"
	if efficiency {
		what = "Parallel efficiency"
	}
	p.Title.Text = fmt.Sprintf("%s vs %s: %s", what, s.Baseline, s.title())
	p.X.Label.Text = "cores (ranks × threads per rank)"
	p.Y.Label.Text = what
	p.Legend.Top, p.Legend.Left = true, true

	minC, maxC := s.Rows[0].Cores, s.Rows[0].Cores
	var ticks []plot.Tick
	for _, r := range s.Rows {
		minC, maxC = min(minC, r.Cores), max(maxC, r.Cores)
		if !slices.ContainsFunc(ticks, func(t plot.Tick) bool { return t.Value == float64(r.Cores) }) {
			ticks = append(ticks, plot.Tick{Value: float64(r.Cores), Label: fmt.Sprint(r.Cores)})
		}
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)

	base := float64(s.Baseline.Cores())
	ideal := plotter.XYs{{X: float64(minC), Y: float64(minC) / base}, {X: float64(maxC), Y: float64(maxC) / base}}
	if efficiency {
		ideal[0].Y, ideal[1].Y = 1, 1
	}
	l, err := plotter.NewLine(ideal)
	if err != nil {
		return nil, err
	}
	l.Color = color.Gray{Y: 128}
	l.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
	p.Add(l)
	p.Legend.Add("ideal", l)

	for i, t := range s.threadCounts() {
		for _, m := range []struct {
			name   string
			value  func(r *ScalingRow) float64
			dashed bool
		}{
			{"train", func(r *ScalingRow) float64 { return pick(efficiency, r.TrainEfficiency, r.TrainSpeedup) }, false},
			{"whole run", func(r *ScalingRow) float64 { return pick(efficiency, r.WallEfficiency, r.WallSpeedup) }, true},
		} {
			var xys plotter.XYs
			for k := range s.Rows {
				if r := &s.Rows[k]; r.Threads == t {
					xys = append(xys, plotter.XY{X: float64(r.Cores), Y: m.value(r)})
				}
			}
			line, points, err := plotter.NewLinePoints(xys)
			if err != nil {
				return nil, err
			}
			line.Color, points.Color = plotutil.Color(i), plotutil.Color(i)
			points.Shape = plotutil.Shape(i)
			if m.dashed {
				line.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
			}
			p.Add(line, points)
			p.Legend.Add(fmt.Sprintf("%s, %d thread(s)/rank", m.name, t), line, points)
		}
	}
	makeRoom(p, float64(minC), float64(maxC))
	return p, nil
}

// makeRoom sets the axes of p so that the lines start at y = 0, do not
// touch the sides, and leave the top third free for the legend.
func makeRoom(p *plot.Plot, minX, maxX float64) {
	pad := max(0.05*(maxX-minX), 0.25)
	p.X.Min, p.X.Max = minX-pad, maxX+pad
	p.Y.Min, p.Y.Max = 0, max(p.Y.Max*1.6, 1e-9)
}

func pick(first bool, a, b float64) float64 {
	if first {
		return a
	}
	return b
}

// plotComm draws the bytes sent and received per rank against ranks, using
// for each rank count the row with the fewest threads (communication does
// not depend on threads), beside the model's prediction.
func (s *Scaling) plotComm() (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Communication per rank: " + s.title()
	p.X.Label.Text = "ranks"
	p.Y.Label.Text = "MiB sent + received"
	p.Legend.Top, p.Legend.Left = true, true

	var rows []*ScalingRow
	for i := range s.Rows {
		r := &s.Rows[i]
		j := slices.IndexFunc(rows, func(q *ScalingRow) bool { return q.Ranks == r.Ranks })
		switch {
		case j < 0:
			rows = append(rows, r)
		case r.Threads < rows[j].Threads:
			rows[j] = r
		}
	}
	slices.SortFunc(rows, func(a, b *ScalingRow) int { return a.Ranks - b.Ranks })
	var ticks []plot.Tick
	for _, r := range rows {
		ticks = append(ticks, plot.Tick{Value: float64(r.Ranks), Label: fmt.Sprint(r.Ranks)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)

	const mib = 1 << 20
	series := []struct {
		name  string
		value func(r *ScalingRow) float64
		root  bool // defined with one rank too
		model bool
	}{
		{"measured, rank 0", func(r *ScalingRow) float64 { return float64(r.CommRootBytes) }, true, false},
		{"measured, other ranks (mean)", func(r *ScalingRow) float64 { return r.CommOtherBytes }, false, false},
		{"model, rank 0: M(P-1)/P", func(r *ScalingRow) float64 { return r.PredictedRootBytes }, true, true},
		{"model, other ranks: M/P", func(r *ScalingRow) float64 { return r.PredictedOtherBytes }, false, true},
	}
	hasModel := slices.ContainsFunc(rows, func(r *ScalingRow) bool { return r.ModelBytes > 0 })
	for i, sr := range series {
		if sr.model && !hasModel {
			continue
		}
		var xys plotter.XYs
		for _, r := range rows {
			if sr.root || r.Ranks > 1 {
				xys = append(xys, plotter.XY{X: float64(r.Ranks), Y: sr.value(r) / mib})
			}
		}
		if len(xys) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, err
		}
		c := plotutil.Color(i % 2)
		line.Color, points.Color = c, c
		points.Shape = plotutil.Shape(i % 2)
		if sr.model {
			line.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
			points.Shape = draw.CrossGlyph{}
		}
		p.Add(line, points)
		p.Legend.Add(sr.name, line, points)
	}
	if hasModel {
		p.Legend.Add("M = model size; model: trees gathered to rank 0")
	}
	makeRoom(p, float64(rows[0].Ranks), float64(rows[len(rows)-1].Ranks))
	return p, nil
}

// logTicks125 marks a log axis at 1, 2 and 5 times the powers of ten,
// labelled, and at their other integer multiples, unlabelled. gonum's
// plot.LogTicks labels only the powers of ten, which leaves a curve within
// one decade (a time that grows from 5 to 7 s) with one label or none.
type logTicks125 struct{}

// Ticks returns the ticks between min and max (both positive).
func (logTicks125) Ticks(min, max float64) []plot.Tick {
	var ticks []plot.Tick
	for k := int(math.Floor(math.Log10(min))); k <= int(math.Ceil(math.Log10(max))); k++ {
		for m := 1; m <= 9; m++ {
			// Tenths as m/10, not m·0.1: labels of exact decimals.
			v := float64(m) * math.Pow10(k)
			if k < 0 {
				v = float64(m) / math.Pow10(-k)
			}
			if v < min || v > max {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || m == 2 || m == 5 {
				t.Label = strconv.FormatFloat(v, 'f', -1, 64)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// savePlot writes p as base.png and base.svg and returns the paths.
func savePlot(p *plot.Plot, base string) ([]string, error) {
	var paths []string
	for _, format := range PlotFormats {
		wt, err := p.WriterTo(plotWidth, plotHeight, format)
		if err != nil {
			return paths, fmt.Errorf("plot %s: %w", base, err)
		}
		path := base + "." + format
		err = atomicfile.Write(path, func(w *bufio.Writer) error {
			_, err := wt.WriteTo(w)
			return err
		})
		if err != nil {
			return paths, fmt.Errorf("write plot: %w", err)
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// Plot draws the comparison's ratios, xmc over the reference, as a bar
// chart with the parity line at 1 into dir as compare.png and compare.svg,
// and returns the paths written. Quantities measured on one side only are
// left out.
func (c *Comparison) Plot(dir string) ([]string, error) {
	var names []string
	var ratios plotter.Values
	for _, r := range c.Rows {
		if r.Ratio == 0 {
			continue
		}
		names = append(names, r.Metric)
		ratios = append(ratios, r.Ratio)
	}
	if len(ratios) == 0 {
		return nil, fmt.Errorf("plot comparison: no quantity measured for both programs")
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("xmc / %s: %d trees, %d ranks, median of %d runs\ntime, memory: below 1 is better for xmc; P@k: above 1",
		c.Reference, c.Trees, c.Ranks, c.Repeats)
	p.Y.Label.Text = "xmc / " + c.Reference
	p.Y.Min = 0
	bars, err := plotter.NewBarChart(ratios, vg.Points(28))
	if err != nil {
		return nil, fmt.Errorf("plot comparison: %w", err)
	}
	bars.Color = plotutil.Color(0)
	bars.LineStyle.Width = 0
	p.Add(bars)
	if err := addLevel(p, len(ratios), 1, "parity"); err != nil {
		return nil, fmt.Errorf("plot comparison: %w", err)
	}
	p.Legend.Top = true
	p.NominalX(names...)
	p.X.Tick.Label.Rotation = 0.35
	p.X.Tick.Label.XAlign = draw.XRight
	return savePlot(p, filepath.Join(dir, "compare"))
}

// addLevel draws across a bar chart of n bars (or groups) a dashed line at
// y, named name in the legend: the parity or the ideal the bars are read
// against.
func addLevel(p *plot.Plot, n int, y float64, name string) error {
	l, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: y}, {X: float64(n) - 0.5, Y: y}})
	if err != nil {
		return err
	}
	l.Color = color.Gray{Y: 64}
	l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}
