package bench

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot/plotter"
)

// TestOverview checks that an overview takes each study's layouts at its
// largest core count, with their figures, tabulates and plots them, and
// refuses studies it cannot name apart.
func TestOverview(t *testing.T) {
	grid, err := Aggregate(study())
	if err != nil {
		t.Fatal(err)
	}
	one, err := Aggregate(summaries(testRun{layout: Layout{1, 1}, train: 2, wall: 3, comm: []int64{0}, rss: []int64{1}}))
	if err != nil {
		t.Fatal(err)
	}
	o, err := NewOverview([]string{"grid", "one"}, []*Scaling{grid, one})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name    string
		cores   int
		layouts []Layout
	}{{"grid", 4, []Layout{{2, 2}}}, {"one", 1, []Layout{{1, 1}}}}
	if len(o.Studies) != len(want) {
		t.Fatalf("%d studies, want %d", len(o.Studies), len(want))
	}
	for i, w := range want {
		st := o.Studies[i]
		var layouts []Layout
		for _, r := range st.Rows {
			layouts = append(layouts, r.Layout)
		}
		if st.Name != w.name || st.Cores != w.cores || !slices.Equal(layouts, w.layouts) {
			t.Errorf("study %d: %s at %d cores, layouts %v; want %s at %d, %v", i, st.Name, st.Cores, layouts, w.name, w.cores, w.layouts)
		}
	}
	// The grid's 2x2 row: the median of one run, 3 s, against 1x1's 11 s.
	if r := o.Studies[0].Rows[0]; r.TrainS != 3 || r.TrainSpeedup != 11.0/3 || r.TrainEfficiency != 11.0/3/4 {
		t.Errorf("2x2: %+v, want 3 s, speedup 11/3, efficiency 11/12", r)
	}

	var table, csvText bytes.Buffer
	if err := o.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if err := o.WriteCSV(&csvText); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"grid", "2x2", "0.92", "one", "1x1"} {
		if !strings.Contains(table.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, table.String())
		}
	}
	records, err := csv.NewReader(&csvText).ReadAll()
	if err != nil || len(records) != 3 || records[1][0] != "grid" || records[2][0] != "one" {
		t.Errorf("csv: %v, %v; want a header and the rows of grid and one", records, err)
	}

	// A bar a layout, a value a study: 2x2 in grid alone, 1x1 in one.
	layouts, bars := o.bars()
	wantBars := []plotter.Values{{0, 1}, {11.0 / 12, 0}}
	if !slices.Equal(layouts, []Layout{{1, 1}, {2, 2}}) || len(bars) != 2 || !slices.Equal(bars[0], wantBars[0]) || !slices.Equal(bars[1], wantBars[1]) {
		t.Errorf("bars %v %v, want 1x1 and 2x2, %v", layouts, bars, wantBars)
	}

	dir := t.TempDir()
	written, err := o.Plot(dir)
	if err != nil {
		t.Fatal(err)
	}
	checkPlots(t, dir, written, "overview")
	svg, err := os.ReadFile(filepath.Join(dir, "overview.svg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"2x2", "1x1", "grid", "one", "ideal"} {
		if !strings.Contains(string(svg), s) {
			t.Errorf("overview.svg does not name %q", s)
		}
	}

	for _, c := range []struct {
		names   []string
		studies []*Scaling
	}{
		{[]string{"a", "a"}, []*Scaling{grid, one}},
		{[]string{"a"}, []*Scaling{grid, one}},
		{nil, nil},
		{[]string{"empty"}, []*Scaling{{}}},
	} {
		if _, err := NewOverview(c.names, c.studies); err == nil {
			t.Errorf("NewOverview(%v, %d studies) made an overview", c.names, len(c.studies))
		}
	}
}
