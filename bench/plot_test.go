package bench

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"xmc/job"
)

// checkPlots checks that every plot name was written as a PNG that decodes
// to a sensible size and as an SVG document.
func checkPlots(t *testing.T, dir string, written []string, names ...string) {
	t.Helper()
	for _, name := range names {
		for _, format := range PlotFormats {
			path := filepath.Join(dir, name+"."+format)
			if !slices.Contains(written, path) {
				t.Errorf("%s not among the paths returned: %v", path, written)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Error(err)
				continue
			}
			switch format {
			case "png":
				img, err := png.Decode(bytes.NewReader(b))
				if err != nil {
					t.Errorf("%s: %v", path, err)
					continue
				}
				if r := img.Bounds(); r.Dx() < 300 || r.Dy() < 200 {
					t.Errorf("%s is %dx%d pixels", path, r.Dx(), r.Dy())
				}
			case "svg":
				if !bytes.Contains(b, []byte("<svg")) || !bytes.HasSuffix(bytes.TrimSpace(b), []byte("</svg>")) {
					t.Errorf("%s is not a whole SVG document (%d bytes)", path, len(b))
				}
			}
		}
	}
}

func TestScalingPlot(t *testing.T) {
	tests := []struct {
		name string
		runs []*job.Summary
	}{
		{"grid", study()},
		{"one layout", summaries(testRun{layout: Layout{1, 1}, train: 1, wall: 2, comm: []int64{0}, rss: []int64{1}})},
		{"no model written", summaries(
			testRun{layout: Layout{1, 1}, train: 2, wall: 3, comm: []int64{0}, rss: []int64{1}},
			testRun{layout: Layout{4, 1}, train: 1, wall: 2, comm: []int64{10, 5, 5, 5}, rss: []int64{1, 1, 1, 1}},
		)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Aggregate(tc.runs)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			written, err := s.Plot(dir)
			if err != nil {
				t.Fatal(err)
			}
			checkPlots(t, dir, written, "speedup", "efficiency", "comm")
		})
	}
}

func TestScalingPlotLegend(t *testing.T) {
	s, err := Aggregate(study())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := s.Plot(dir); err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(filepath.Join(dir, "comm.svg"))
	if err != nil {
		t.Fatal(err)
	}
	// gonum writes text into the SVG: the model must be stated on the plot.
	for _, want := range []string{"M(P-1)/P", "M/P", "measured"} {
		if !strings.Contains(string(svg), want) {
			t.Errorf("comm.svg does not state %q", want)
		}
	}
}

func TestComparisonPlot(t *testing.T) {
	c := &Comparison{Reference: "DXML", Trees: 50, Ranks: 2, Repeats: 3, Rows: compareRows(
		[]RunResult{{TrainS: 2, WallS: 3, PeakRSS: []int64{100 << 20}, Metrics: map[string]float64{"P@1": 60}}},
		[]RunResult{{TrainS: 4, WallS: 4, Metrics: map[string]float64{"P@1": 62}}},
	)}
	dir := t.TempDir()
	written, err := c.Plot(dir)
	if err != nil {
		t.Fatal(err)
	}
	checkPlots(t, dir, written, "compare")

	empty := &Comparison{Reference: "DXML", Rows: compareRows(
		[]RunResult{{TrainS: 2, WallS: 3}}, []RunResult{{TrainS: 0, WallS: 0}})}
	if _, err := empty.Plot(t.TempDir()); err == nil {
		t.Error("a comparison with no ratio plotted without error")
	}
}

// TestLogTicks125 checks the sweep plots' log ticks: labels at 1, 2 and 5
// times the powers of ten, unlabelled ticks at the other multiples, none
// outside the range.
func TestLogTicks125(t *testing.T) {
	tests := []struct {
		min, max float64
		labels   []string
		ticks    int
	}{
		{5, 7.3, []string{"5"}, 3},
		{4.2, 95, []string{"5", "10", "20", "50"}, 14},
		{10000, 100000, []string{"10000", "20000", "50000", "100000"}, 10},
		{0.15, 0.6, []string{"0.2", "0.5"}, 5},
	}
	for _, tt := range tests {
		var labels []string
		ticks := logTicks125{}.Ticks(tt.min, tt.max)
		for _, tk := range ticks {
			if tk.Value < tt.min || tk.Value > tt.max {
				t.Errorf("[%v, %v]: tick %v outside", tt.min, tt.max, tk.Value)
			}
			if tk.Label != "" {
				labels = append(labels, tk.Label)
			}
		}
		if !slices.Equal(labels, tt.labels) || len(ticks) != tt.ticks {
			t.Errorf("[%v, %v]: %d ticks labelled %q, want %d labelled %q", tt.min, tt.max, len(ticks), labels, tt.ticks, tt.labels)
		}
	}
}
