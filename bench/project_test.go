package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"xmc/train"
)

// TestStrata checks that the strata cover the labels once, in order, and
// that each stratum's pieces lie in it, hold the sample's labels and do
// not overlap.
func TestStrata(t *testing.T) {
	for _, c := range []struct {
		labels, sample, pieces int
		ratio                  float64
	}{
		{983, 64, 2, 2}, {983, 64, 1, 4}, {357254, 64, 2, 2}, {10, 64, 2, 2}, {200, 7, 3, 1.5}, {1, 1, 1, 2},
	} {
		st := strata(c.labels, c.sample, c.pieces, c.ratio)
		at := 0
		for _, s := range st {
			if s.From != at || s.To <= s.From {
				t.Fatalf("%+v: stratum %d:%d after %d", c, s.From, s.To, at)
			}
			at = s.To
			prev := s.From
			for _, p := range s.Pieces {
				if p.From < prev || p.To <= p.From || p.To > s.To {
					t.Errorf("%+v: stratum %d:%d has piece %v", c, s.From, s.To, p)
				}
				prev = p.To
			}
			if want := min(c.sample, s.To-s.From); s.sampled() != want {
				t.Errorf("%+v: stratum %d:%d samples %d labels, want %d", c, s.From, s.To, s.sampled(), want)
			}
		}
		if at != c.labels {
			t.Errorf("%+v: strata end at %d", c, at)
		}
	}
}

// TestProjectCommand projects DiSMEC's cost on Bibtex with the real
// binary, from samples of 8 labels in 2 pieces.
func TestProjectCommand(t *testing.T) {
	needBinaries(t)
	out := filepath.Join(t.TempDir(), "project")
	table := mustBench(t, "project", "--data", "../testdata/bibtex/train.txt", "--algos", "dismec", "--sample", "8",
		"--threads", "2", "--out", out)
	m := regexp.MustCompile(`(?m)^dismec: 159 labels with a positive row, 4880 training rows; (\d+) labels sampled`).FindStringSubmatch(table)
	if m == nil || !strings.Contains(table, "projected: ") || !strings.Contains(table, "128:159") {
		t.Fatalf("projection:\n%s", table)
	}
	if b, err := os.ReadFile(filepath.Join(out, "projection.txt")); err != nil || string(b) != table {
		t.Errorf("projection.txt: %v\n%s", err, b)
	}
	// The label costs: the table's strata, for xmc train --label-costs.
	costs, err := train.ReadLabelCosts(filepath.Join(out, "label-costs-dismec.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range costs.Strata {
		if !regexp.MustCompile(fmt.Sprintf(`(?m)^\s*%d:%d\s`, s.From, s.To)).MatchString(table) {
			t.Errorf("label costs: stratum %d:%d is not in the projection", s.From, s.To)
		}
	}
	if costs.Labels() != 159 {
		t.Errorf("label costs of %d labels, want 159", costs.Labels())
	}
}
