package pipeline

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"xmc/job"
	"xmc/model"
	"xmc/runner"
	"xmc/train/registry"
)

const (
	bibtexTrain = "../testdata/bibtex/train.txt"
	bibtexTest  = "../testdata/bibtex/test.txt"
)

// options lays out an in-process job of ranks ranks of one thread.
func options(ranks int) job.Options {
	return job.Options{Ranks: ranks, Threads: 1, CommTimeout: time.Minute, Version: "test"}
}

// config returns a training of algo on Bibtex with the algorithm's flags
// set from args, writing nothing.
func config(t *testing.T, algo string, args ...string) TrainConfig {
	t.Helper()
	a, err := registry.Lookup(algo)
	if err != nil {
		t.Fatal(err)
	}
	tr := a.New()
	fs := flag.NewFlagSet(algo, flag.ContinueOnError)
	tr.Flags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return TrainConfig{Algorithm: algo, Trainer: tr, DataPath: bibtexTrain, Seed: 3,
		PredictOn: PredictOnRanks, Eval: DefaultEvalOptions(), Input: Input{SplitCol: 1}}
}

// quickAlgorithms are every registered algorithm with flags that make its
// Bibtex training short.
var quickAlgorithms = map[string][]string{
	"forest":    {"--trees", "3"},
	"pdsparse":  {"--epochs", "2"},
	"dismec":    {"--labels-per-unit", "40"},
	"ppdsparse": {"--labels-per-unit", "40"},
	"lsq":       {"--epochs", "2"},
	"memoir":    {"--epochs", "2"},
	"plt":       {"--trees", "3", "--max-leaves", "20", "--max-iter", "5"},
}

// TestEveryAlgorithmTested keeps quickAlgorithms in step with the registry.
func TestEveryAlgorithmTested(t *testing.T) {
	for _, a := range registry.Algorithms() {
		if _, ok := quickAlgorithms[a.Name]; !ok {
			t.Errorf("algorithm %s is missing from quickAlgorithms", a.Name)
		}
	}
}

// TestAssembleAndPredict trains every algorithm on 2 ranks into a gathered
// model and a sharded one, scores the test set while training (by the
// ranks' parts and by rank 0 alone) and afterwards with Predict from both
// files on 3 ranks: every way must give the same scores, byte for byte.
func TestAssembleAndPredict(t *testing.T) {
	for algo, args := range quickAlgorithms {
		t.Run(algo, func(t *testing.T) {
			dir := t.TempDir()
			var scores []string
			for _, c := range []struct {
				name, predictOn string
				shard           bool
			}{{"gathered", PredictOnRanks, false}, {"sharded", PredictOnRoot, true}} {
				cfg := config(t, algo, args...)
				cfg.TestPath, cfg.PredictOn, cfg.Shard = bibtexTest, c.predictOn, c.shard
				cfg.ModelOut = filepath.Join(dir, c.name+".model")
				cfg.ScoresOut = filepath.Join(dir, c.name+".train-scores")
				if err := Train(options(2), cfg); err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				for _, mode := range []string{PredictOnRanks, PredictOnRoot} {
					out := filepath.Join(dir, c.name+"-"+mode+".scores")
					p := PredictConfig{Models: []string{cfg.ModelOut}, DataPath: bibtexTest, Out: out, PredictOn: mode,
						Eval: DefaultEvalOptions(), Input: Input{SplitCol: 1}}
					if err := Predict(options(3), p); err != nil {
						t.Fatalf("predict %s model on %s: %v", c.name, mode, err)
					}
					scores = append(scores, out)
				}
				scores = append(scores, cfg.ScoresOut)
			}
			want, err := os.ReadFile(scores[0])
			if err != nil || len(want) == 0 {
				t.Fatalf("%s: %v", scores[0], err)
			}
			for _, s := range scores[1:] {
				if got, _ := os.ReadFile(s); !bytes.Equal(got, want) {
					t.Errorf("%s differs from %s", filepath.Base(s), filepath.Base(scores[0]))
				}
			}
		})
	}
}

// TestFailedWriteKeepsUnits checks that a model that cannot be written
// fails the training with its path named, and leaves every finished unit
// in the checkpoint, gathered or sharded.
func TestFailedWriteKeepsUnits(t *testing.T) {
	for _, shard := range []bool{false, true} {
		t.Run(fmt.Sprintf("shard=%v", shard), func(t *testing.T) {
			dir := t.TempDir()
			cfg := config(t, "forest", "--trees", "4")
			cfg.ModelOut = filepath.Join(dir, "no-such-dir", "m.model")
			cfg.Checkpoint = filepath.Join(dir, "ckpt")
			cfg.CheckpointEvery = time.Hour // nothing saved before the write fails
			cfg.Shard = shard
			err := Train(options(2), cfg)
			if err == nil || !strings.Contains(err.Error(), "no-such-dir") {
				t.Fatalf("unwritable model: %v", err)
			}
			if units, _ := runner.CheckpointUnits(cfg.Checkpoint); len(units) != 4 {
				t.Errorf("checkpoint holds %d units, want 4", len(units))
			}
		})
	}
}

// TestConfigCheck lists the settings refused before any rank starts.
func TestConfigCheck(t *testing.T) {
	ok := config(t, "forest")
	ok.ModelOut = "m"
	for _, c := range []struct {
		name   string
		change func(c *TrainConfig)
		want   string
	}{
		{"no data", func(c *TrainConfig) { c.DataPath = "" }, "--data"},
		{"nothing to do", func(c *TrainConfig) { c.ModelOut = "" }, "nothing to do"},
		{"shard without a model", func(c *TrainConfig) { c.ModelOut, c.TestPath, c.Shard = "", "t", true }, "--shard"},
		{"schedule", func(c *TrainConfig) { c.Schedule = "greedy" }, "greedy"},
		{"predict-on", func(c *TrainConfig) { c.PredictOn = "all" }, "all"},
		{"two tests", func(c *TrainConfig) { c.TestPath, c.TestSplit = "a", "b" }, "not both"},
		{"top-k", func(c *TrainConfig) { c.Eval.TopK = 0 }, "--top-k"},
		{"model a directory", func(c *TrainConfig) { c.ModelOut = t.TempDir() }, "is a directory"},
	} {
		cfg := ok
		c.change(&cfg)
		if err := cfg.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error about %s", c.name, err, c.want)
		}
	}
	if err := ok.Check(); err != nil {
		t.Errorf("valid config: %v", err)
	}
}

// writeUnusualData writes, under dir, a training and a test file of real
// text's awkward cases: real-valued (TF-IDF-like) features, rows that are
// only their labels (no feature at all), rows without labels, and a label
// (7) that only test rows carry.
func writeUnusualData(t *testing.T, dir string) (trainPath, testPath string) {
	t.Helper()
	rows := func(n int, seed int, withUnseen bool) string {
		var b strings.Builder
		fmt.Fprintf(&b, "%d 30 8\n", n)
		for i := range n {
			h := uint32(i*2654435761) ^ uint32(seed)
			labels := []string{fmt.Sprint(h % 3), fmt.Sprint(3 + h/3%4)}
			switch {
			case i%11 == 5:
				labels = nil // a row without labels
			case withUnseen && i%4 == 0:
				labels = append(labels, "7")
			}
			b.WriteString(strings.Join(labels, ","))
			if i%9 == 2 {
				b.WriteString("\n") // a row that is only its labels
				continue
			}
			for j := range 30 {
				if (h>>(j%13))&3 == 0 || j/5 == int(h%6) {
					fmt.Fprintf(&b, " %d:%.6f", j, 0.05+float64((h>>(j%7))%97)/101)
				}
			}
			b.WriteString("\n")
		}
		return b.String()
	}
	trainPath, testPath = filepath.Join(dir, "train.txt"), filepath.Join(dir, "test.txt")
	if err := os.WriteFile(trainPath, []byte(rows(120, 1, false)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(testPath, []byte(rows(40, 2, true)), 0o644); err != nil {
		t.Fatal(err)
	}
	return trainPath, testPath
}

// TestUnusualData trains and evaluates every algorithm on real-valued
// features with empty rows and a label seen only in test: each must
// train, score every test row with finite scores, predict the same from
// its model file and never predict the label no training row carries.
func TestUnusualData(t *testing.T) {
	dir := t.TempDir()
	trainPath, testPath := writeUnusualData(t, dir)
	for algo, args := range quickAlgorithms {
		t.Run(algo, func(t *testing.T) {
			cfg := config(t, algo, args...)
			cfg.DataPath, cfg.TestPath = trainPath, testPath
			cfg.ModelOut = filepath.Join(dir, algo+".model")
			cfg.ScoresOut = filepath.Join(dir, algo+".train-scores")
			if err := Train(options(2), cfg); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, algo+".scores")
			p := PredictConfig{Models: []string{cfg.ModelOut}, DataPath: testPath, Out: out, PredictOn: PredictOnRanks,
				Eval: DefaultEvalOptions(), Input: Input{SplitCol: 1}}
			if err := Predict(options(1), p); err != nil {
				t.Fatal(err)
			}
			a, _ := os.ReadFile(cfg.ScoresOut)
			b, _ := os.ReadFile(out)
			if !bytes.Equal(a, b) || len(a) == 0 {
				t.Errorf("scores of train --test and predict differ (%d and %d bytes)", len(a), len(b))
			}
			if s := string(a); strings.Contains(s, "NaN") || strings.Contains(s, "Inf") {
				t.Errorf("non-finite scores:\n%s", s)
			}
			for i, line := range strings.Split(string(a), "\n")[1:] {
				for _, tok := range strings.Fields(line) {
					if strings.HasPrefix(tok, "7:") {
						t.Errorf("test row %d: label 7, never seen in training, predicted: %s", i, line)
					}
				}
			}
		})
	}
}

// TestShardAbove checks that a model larger than ShardAbove is sharded,
// with the scores of the gathered one.
func TestShardAbove(t *testing.T) {
	dir := t.TempDir()
	var scores [][]byte
	for _, above := range []int64{0, 1} {
		cfg := config(t, "forest", "--trees", "3")
		cfg.ModelOut = filepath.Join(dir, fmt.Sprintf("m%d", above))
		cfg.ShardAbove = above
		if err := Train(options(2), cfg); err != nil {
			t.Fatal(err)
		}
		if sharded, err := model.IsManifest(cfg.ModelOut); err != nil || sharded != (above == 1) {
			t.Errorf("--shard-above %d: manifest %v, %v", above, sharded, err)
		}
		out := cfg.ModelOut + ".scores"
		p := PredictConfig{Models: []string{cfg.ModelOut}, DataPath: bibtexTest, Out: out, PredictOn: PredictOnRanks,
			Eval: DefaultEvalOptions(), Input: Input{SplitCol: 1}}
		if err := Predict(options(2), p); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(out)
		scores = append(scores, b)
	}
	if !bytes.Equal(scores[0], scores[1]) {
		t.Error("the model sharded by size predicts differently")
	}
}
