package bench

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFindDatasets(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"b/train.txt", "b/test.txt", "a/train.txt.gz", "a/test.txt.gz", "c/train.txt", "d/notes"} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755)
		os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644)
	}
	sets, err := FindDatasets(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(sets) != 2 || sets[0].Name != "a" || sets[1].Name != "b" || !strings.HasSuffix(sets[0].Test, "test.txt.gz") {
		t.Errorf("data sets %+v, want a (gzipped) and b", sets)
	}
	if _, err := FindDatasets(filepath.Join(dir, "d")); err == nil {
		t.Error("a directory without data sets was accepted")
	}
}

func TestAccuracyNames(t *testing.T) {
	name := accuracyName("wordnet-mc", "forest-d2", 17)
	set, label, seed, ok := parseAccuracyName("/x/" + name)
	if !ok || set != "wordnet-mc" || label != "forest-d2" || seed != 17 {
		t.Errorf("%s parsed as %q %q %d %v", name, set, label, seed, ok)
	}
	if _, _, _, ok := parseAccuracyName("1x2-r1.json"); ok {
		t.Error("a scaling summary parsed as an accuracy run")
	}
}

func TestMeanSD(t *testing.T) {
	m := meanSD([]float64{1, 2, 3, 4})
	if m.Mean != 2.5 || math.Abs(m.SD-1.2909944) > 1e-6 || m.N != 4 {
		t.Errorf("meanSD = %+v", m)
	}
	if m := meanSD([]float64{7}); m.Mean != 7 || m.SD != 0 {
		t.Errorf("one value: %+v", m)
	}
}

// TestAccuracyCommand runs a small study with the real binary: two
// algorithms, two seeds, then a variant added under its own label; each
// invocation reuses the runs already made.
func TestAccuracyCommand(t *testing.T) {
	needBinaries(t)
	data := filepath.Join(t.TempDir(), "sets")
	os.MkdirAll(filepath.Join(data, "bibtex"), 0o755)
	for _, f := range []string{"train.txt", "test.txt"} {
		b, err := os.ReadFile(filepath.Join("../testdata/bibtex", f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(data, "bibtex", f), b, 0o644)
	}
	out := filepath.Join(t.TempDir(), "acc")
	mustBench(t, "accuracy", "--data-dir", data, "--algos", "dismec", "--seeds", "1,2", "--ranks", "1", "--out", out)
	mustBench(t, "accuracy", "--data-dir", data, "--algos", "forest", "--seeds", "1,2", "--ranks", "1",
		"--out", out, "--", "--trees", "3")
	first, _ := os.Stat(filepath.Join(out, "bibtex__dismec__s1.json"))
	table := mustBench(t, "accuracy", "--data-dir", data, "--algos", "forest", "--seeds", "1,2", "--ranks", "1",
		"--label", "forest-leaf5", "--out", out, "--", "--leaf-size", "5", "--trees", "3")
	again, _ := os.Stat(filepath.Join(out, "bibtex__dismec__s1.json"))
	if first == nil || again == nil || !first.ModTime().Equal(again.ModTime()) {
		t.Error("the second study ran dismec again instead of reusing its summaries")
	}
	a, err := LoadAccuracy(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Rows) != 3 {
		t.Fatalf("%d rows, want forest, forest-leaf5 and dismec on bibtex:\n%s", len(a.Rows), table)
	}
	for _, r := range a.Rows {
		p1 := r.Metrics["P@1"]
		if p1.N != 2 || p1.Mean < 40 || r.TrainS.Mean <= 0 || r.PeakRSS.Mean <= 0 || r.Metrics["PSP@5"].N != 2 {
			t.Errorf("%s: P@1 %+v, train %+v, RSS %+v", r.Label, p1, r.TrainS, r.PeakRSS)
		}
	}
	// DiSMEC does not depend on the seed; a forest does.
	if d := a.Rows[0]; d.Label != "dismec" || d.Metrics["P@1"].SD != 0 {
		t.Errorf("dismec row %+v", d)
	}
	for _, f := range []string{"accuracy.md", "accuracy.json", "accuracy.csv", "accuracy.png", "accuracy.svg"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	if !strings.Contains(table, "| bibtex") || !strings.Contains(table, "±") {
		t.Errorf("table:\n%s", table)
	}
}

// TestShapesCommand runs a tiny scale study with the real binary: one
// shape, two algorithms, a sweep of two label counts.
func TestShapesCommand(t *testing.T) {
	needBinaries(t)
	out := filepath.Join(t.TempDir(), "shapes")
	table := mustBench(t, "shapes", "--shapes", "eurlex-4k", "--n", "300", "--algos", "forest,dismec",
		"--sweep-l", "500,2000", "--trees", "2", "--ranks", "2", "--out", out)
	st, err := LoadShapes(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Rows) != 4 {
		t.Fatalf("%d runs, want 4:\n%s", len(st.Rows), table)
	}
	for _, r := range st.Rows {
		if r.Status != "ok" || r.N != 240 || r.TrainS <= 0 || len(r.PeakRSS) != 2 || r.CommBytes <= 0 || r.ModelBytes <= 0 || r.PredictUSPerRow <= 0 ||
			r.BytesPerUnit <= 0 || r.PredictMSPerRowCore <= 0 {
			t.Errorf("%s %s: %+v", r.Dataset, r.Algorithm, r)
		}
	}
	if st.Rows[0].Dataset != "eurlex-4k" || st.Rows[2].L != 2000 && st.Rows[3].L != 2000 {
		t.Errorf("rows %+v", st.Rows)
	}
	for _, f := range []string{"shapes.md", "shapes.json", "shapes.csv", "sweep-time.png", "sweep-memory.svg", "data/eurlex-4k/train.txt"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}
