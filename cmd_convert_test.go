package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNumPyFormat converts Bibtex to the NumPy files of Python's XMC tools
// and back, and checks that training on either gives the same model bytes,
// that scores written as an .npz matrix evaluate as the text ones do, and
// that a bad file stops the run with its name and leaves no model.
func TestNumPyFormat(t *testing.T) {
	dir := t.TempDir()
	at := func(name string) string { return filepath.Join(dir, name) }
	mustXMC(t, "convert", "--data", bibtexTrain, "--out", at("X.trn.npz"))
	mustXMC(t, "convert", "--data", bibtexTest, "--out", at("bibtex-test-features.npz"), "--compress")
	for _, f := range []string{"Y.trn.npz", "bibtex-test-labels.npz"} {
		if _, err := os.Stat(at(f)); err != nil {
			t.Fatalf("labels file not written beside the features: %v", err)
		}
	}
	mustXMC(t, "convert", "--data", at("X.trn.npz"), "--format", "npz", "--out", at("back.txt"))
	mustXMC(t, "convert", "--data", bibtexTrain, "--out", at("text.txt"))
	if a, b := readFile(t, at("back.txt")), readFile(t, at("text.txt")); !bytes.Equal(a, b) {
		t.Error("Bibtex through .npz and back differs from Bibtex written as text")
	}

	for _, algo := range [][]string{{"--algo", "forest", "--trees", "4"}, {"--algo", "lsq"}} {
		name := algo[1]
		mustXMC(t, append([]string{"train", "--seed", "3", "--data", bibtexTrain, "--model-out", at(name + ".text.model")}, algo...)...)
		mustXMC(t, append([]string{"train", "--seed", "3", "--format", "npz", "--data", at("X.trn.npz"),
			"--ranks", "2", "--model-out", at(name + ".npz.model")}, algo...)...)
		if !bytes.Equal(readFile(t, at(name+".text.model")), readFile(t, at(name+".npz.model"))) {
			t.Errorf("%s: the model trained on .npz differs from the one trained on text", name)
		}
	}

	mustXMC(t, "predict", "--model", at("forest.text.model"), "--data", bibtexTest, "--out", at("s.txt"))
	mustXMC(t, "predict", "--model", at("forest.text.model"), "--format", "npz", "--data", at("bibtex-test-features.npz"),
		"--labels-data", "none", "--out", at("s.npz"))
	evalText := mustXMC(t, "eval", "--data", bibtexTest, at("s.txt"))
	evalNPZ := mustXMC(t, "eval", "--format", "npz", "--data", at("bibtex-test-features.npz"), at("s.npz"))
	if !strings.Contains(evalText, "P@1") || metricRows(evalText) != metricRows(evalNPZ) {
		t.Errorf("eval of text scores:\n%s\neval of .npz scores:\n%s", evalText, evalNPZ)
	}

	b := readFile(t, at("X.trn.npz"))
	os.WriteFile(at("X.bad.npz"), b[:len(b)/2], 0o644)
	os.WriteFile(at("Y.bad.npz"), readFile(t, at("Y.trn.npz")), 0o644)
	out, code := xmc(t, "train", "--format", "npz", "--data", at("X.bad.npz"), "--model-out", at("bad.model"))
	if code == 0 || !strings.Contains(out, "X.bad.npz: not a readable .npz") {
		t.Errorf("truncated .npz: exit %d, output:\n%s", code, out)
	}
	if _, err := os.Stat(at("bad.model")); !os.IsNotExist(err) {
		t.Errorf("a model was left after a bad input: %v", err)
	}
}

// metricRows returns eval's table of one score file without its heading,
// which names the file.
func metricRows(evalOut string) string {
	_, rows, _ := strings.Cut(evalOut, "\n")
	return rows
}
