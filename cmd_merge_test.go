package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLabelRangeMerge trains the labels in ranges, in several layouts and
// with one range sharded, and checks that xmc merge joins them into the
// model one training of every label writes, byte for byte, also when
// measured label costs cut the parts, and that merge refuses ranges that
// leave a gap, overlap, or come from another training.
func TestLabelRangeMerge(t *testing.T) {
	delicious := filepath.Join("testdata", "delicious", "train.txt")
	// Costs of Bibtex's 159 labels in the format of xmc-bench project's
	// label-costs file, all equal: 3 parts of 53 labels, where the
	// trainer's estimate, dearer for the head, cuts elsewhere.
	costs := filepath.Join(t.TempDir(), "label-costs.txt")
	if err := os.WriteFile(costs, []byte("# from to core-s/label\n0 16 0.5\n16 159 0.5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, algo, data string
		ranges           [][]string // per range: --label-range and layout
	}{
		{"dismec parts of Delicious", "dismec", delicious, [][]string{{"2/4"}, {"0/4", "--ranks", "2"}, {"3/4", "--threads", "2"}, {"1/4"}}},
		// Cuts inside blocks (Delicious's DiSMEC blocks hold 2 labels),
		// one range sharded.
		{"dismec cut blocks", "dismec", delicious, [][]string{{"0:3", "--shard"}, {"3:5"}, {"5:", "--ranks", "3"}}},
		{"ppdsparse parts of Bibtex", "ppdsparse", bibtexTrain, [][]string{{"0/3"}, {"1/3", "--ranks", "2"}, {"2/3"}}},
		{"ppdsparse parts of Bibtex by measured costs", "ppdsparse", bibtexTrain,
			// The second: a --label-range after --label-costs keeps the costs.
			[][]string{{"0/3", "--label-costs", costs}, {"1/3", "--label-costs", costs, "--label-range", "1/3"}, {"2/3", "--label-costs", costs}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			whole := filepath.Join(dir, "whole.model")
			train := []string{"train", "--algo", c.algo, "--data", c.data, "--checkpoint", "none"}
			mustXMC(t, append(train, "--model-out", whole)...)
			var parts []string
			for i, r := range c.ranges {
				path := filepath.Join(dir, fmt.Sprintf("r%d.model", i))
				mustXMC(t, slices.Concat(train, []string{"--model-out", path, "--label-range"}, r)...)
				parts = append(parts, path)
			}
			merged := filepath.Join(dir, "merged.model")
			mustXMC(t, append([]string{"merge", "--out", merged}, parts...)...)
			if !bytes.Equal(readFile(t, merged), readFile(t, whole)) {
				t.Fatal("merged model differs from the model of one training")
			}
			bad := [][]string{parts[1:], append(slices.Clone(parts), parts[0]), {whole}}
			for _, b := range bad {
				out := filepath.Join(dir, "bad.model")
				msg, code := xmc(t, append([]string{"merge", "--out", out}, b...)...)
				if code == 0 {
					t.Errorf("merge of %v exited 0", b)
				}
				if _, err := os.Stat(out); err == nil {
					t.Errorf("merge of %v left %s", b, out)
				}
				if !strings.Contains(msg, "no range") && !strings.Contains(msg, "overlap") && !strings.Contains(msg, "every label") {
					t.Errorf("merge of %v: %s", b, msg)
				}
			}
		})
	}
	// Ranges of other parameters or other data are refused.
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.model"), filepath.Join(dir, "b.model")
	mustXMC(t, "train", "--algo", "dismec", "--data", bibtexTrain, "--label-range", "0:50", "--model-out", a)
	mustXMC(t, "train", "--algo", "dismec", "--data", bibtexTrain, "--label-range", "50:", "--cost", "2", "--model-out", b)
	if msg, code := xmc(t, "merge", "--out", filepath.Join(dir, "m"), a, b); code == 0 || !strings.Contains(msg, "other parameters") {
		t.Errorf("merge of other parameters: exit %d: %s", code, msg)
	}
	mustXMC(t, "train", "--algo", "dismec", "--data", filepath.Join("testdata", "bibtex", "test.txt"), "--label-range", "50:", "--model-out", b)
	if msg, code := xmc(t, "merge", "--out", filepath.Join(dir, "m"), a, b); code == 0 || !strings.Contains(msg, "other data") {
		t.Errorf("merge of other data: exit %d: %s", code, msg)
	}
	// Measured costs cut the parts where they say, and only parts of the
	// data they were measured on.
	for _, c := range []struct {
		data, labels string
		ok           bool
		want         string
	}{
		{bibtexTrain, "1/3", true, "training a label range from=53 to=106"},
		{bibtexTrain, "0:50", false, "give --label-range PART/PARTS"},
		{delicious, "0/2", false, "measured on other data"},
	} {
		msg, code := xmc(t, "train", "--algo", "ppdsparse", "--data", c.data, "--label-range", c.labels, "--label-costs", costs, "--model-out", a)
		if (code == 0) != c.ok || !strings.Contains(msg, c.want) {
			t.Errorf("--label-range %s --label-costs on %s: exit %d: %s", c.labels, c.data, code, msg)
		}
	}
	// A trainer whose labels are coupled refuses a range.
	if msg, code := xmc(t, "train", "--algo", "lsq", "--data", bibtexTrain, "--label-range", "0/2", "--model-out", a); code == 0 || !strings.Contains(msg, "trains its labels together") {
		t.Errorf("lsq with a label range: exit %d: %s", code, msg)
	}
}
