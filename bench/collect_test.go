package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadSummaries(t *testing.T) {
	dir := t.TempDir()
	for _, s := range study()[:3] {
		// Name them as a Slurm sweep does.
		if err := s.WriteFile(filepath.Join(dir, filepath.Base(s.Source))); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		"scaling.json":    `{"command":"train","rows":[]}`, // bench's own output: passed over silently
		"notes.json":      `{"author":"me"}`,
		"broken.json":     `{"xmc_version":`,
		"readme.txt":      "not JSON at all",
		"sub/1x1-r9.json": "",
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runs, skipped, err := LoadSummaries(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 3 {
		t.Fatalf("read %d summaries, want 3", len(runs))
	}
	for i, r := range runs {
		if want := filepath.Join(dir, "1x1-r"+string(rune('1'+i))+".json"); r.Source != want {
			t.Errorf("summary %d from %s, want %s (file-name order)", i, r.Source, want)
		}
		if r.Ranks != 1 || r.ThreadsPerRank != 1 || len(r.Comm) != 1 {
			t.Errorf("summary %d read back as %dx%d with %d comm entries", i, r.Ranks, r.ThreadsPerRank, len(r.Comm))
		}
	}
	if runs[1].TrainS != 12 {
		t.Errorf("second summary's train_s %v, want 12", runs[1].TrainS)
	}
	if len(skipped) != 2 || !strings.Contains(strings.Join(skipped, "\n"), "broken.json") ||
		!strings.Contains(strings.Join(skipped, "\n"), "notes.json") {
		t.Errorf("skipped %q, want broken.json and notes.json", skipped)
	}
	if _, _, err := LoadSummaries(filepath.Join(dir, "missing")); err == nil {
		t.Error("LoadSummaries of a missing directory succeeded")
	}
}
