package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"xmc/job"
	"xmc/runner"
)

// The CLI tests run the real xmc binary, built once by TestMain, on the
// bundled Bibtex data, with the in-process backend. main_mpi_test.go runs
// the same commands under mpirun.

var xmcBin string

const (
	bibtexTrain = "testdata/bibtex/train.txt"
	bibtexTest  = "testdata/bibtex/test.txt"
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "xmc-cli-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	xmcBin = filepath.Join(dir, "xmc")
	if out, err := exec.Command("go", "build", "-o", xmcBin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build xmc: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// xmc runs the binary and returns its combined output and exit code.
func xmc(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(xmcBin, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return string(out), ee.ExitCode()
		}
		t.Fatalf("run xmc %v: %v", args, err)
	}
	return string(out), 0
}

func mustXMC(t *testing.T, args ...string) string {
	t.Helper()
	out, code := xmc(t, args...)
	if code != 0 {
		t.Fatalf("xmc %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

func readSummary(t *testing.T, path string) *job.Summary {
	t.Helper()
	s, err := job.ReadSummary(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestModelIndependentOfLayout checks the determinism promise: the same
// seed gives a byte-identical model for any number of ranks, threads and
// NUMA domains, whether workers grow trees alone or, with fewer trees per
// rank than workers, together.
func TestModelIndependentOfLayout(t *testing.T) {
	dir := t.TempDir()
	layouts := [][]string{
		{"--ranks", "1", "--threads", "1"},
		{"--ranks", "4", "--threads", "2"},
		{"--ranks", "1", "--threads", "2", "--numa-sim", "2"},
		{"--ranks", "3", "--threads", "1"},
		{"--ranks", "3", "--threads", "3"},                    // 2 trees per rank: together
		{"--ranks", "1", "--threads", "8", "--numa-sim", "2"}, // 6 trees, 8 workers: together
		{"--ranks", "2", "--threads", "2", "--grow", "together"},
		{"--ranks", "3", "--threads", "3", "--grow", "alone"},
	}
	var ref []byte
	for i, l := range layouts {
		path := filepath.Join(dir, fmt.Sprintf("m%d.model", i))
		args := append([]string{"train", "--trees", "6", "--seed", "11", "--data", bibtexTrain, "--model-out", path}, l...)
		mustXMC(t, args...)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			ref = b
			continue
		}
		if !bytes.Equal(b, ref) {
			t.Errorf("layout %v: model differs from 1 rank x 1 thread", l)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "m0.model.ckpt")); !os.IsNotExist(err) {
		t.Errorf("checkpoint directory left after a successful run: %v", err)
	}
}

// TestTrainPredictEval runs the whole pipeline: train with a test set, then
// predict and eval separately, and checks that all agree.
func TestTrainPredictEval(t *testing.T) {
	dir := t.TempDir()
	modelPath := filepath.Join(dir, "f.model")
	sumPath := filepath.Join(dir, "train.json")
	out := mustXMC(t, "train", "--trees", "10", "--seed", "7", "--ranks", "2", "--data", bibtexTrain,
		"--test", bibtexTest, "--model-out", modelPath, "--summary", sumPath, "--comm-report")
	if !strings.Contains(out, "P@1") || !strings.Contains(out, "gatherv") {
		t.Errorf("train output lacks the metric table or the comm report:\n%s", out)
	}
	s := readSummary(t, sumPath)
	if s.Status != "ok" || s.Ranks != 2 || s.Algorithm != "forest" || len(s.Comm) != 2 || len(s.PeakRSSBytes) != 2 {
		t.Errorf("summary: status %q ranks %d algo %q comm %d rss %d", s.Status, s.Ranks, s.Algorithm, len(s.Comm), len(s.PeakRSSBytes))
	}
	if s.Metrics["P@1"] < 55 || s.TrainS <= 0 || s.ModelBytes <= 0 {
		t.Errorf("summary: P@1 %.2f train_s %.3f model_bytes %d", s.Metrics["P@1"], s.TrainS, s.ModelBytes)
	}

	// Prediction by the ranks' own trees and by rank 0 alone give the
	// same scores, byte for byte, as does any number of ranks.
	var scores []string
	for i, args := range [][]string{{"--ranks", "2"}, {"--ranks", "3", "--predict-on", "root"}, {"--ranks", "1"}} {
		path := filepath.Join(dir, fmt.Sprintf("scores%d.txt", i))
		mustXMC(t, append([]string{"predict", "--model", modelPath, "--data", bibtexTest, "--out", path}, args...)...)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		scores = append(scores, string(b))
		if i > 0 && scores[i] != scores[0] {
			t.Errorf("predict %v: scores differ from --ranks 2", args)
		}
	}
	jsonPath := filepath.Join(dir, "eval.json")
	evalOut := mustXMC(t, "eval", "--data", bibtexTest, "--train", bibtexTrain, "--json", jsonPath, filepath.Join(dir, "scores0.txt"))
	if !strings.Contains(evalOut, "PSP@5") {
		t.Errorf("eval output lacks PSP@5:\n%s", evalOut)
	}
	var ev map[string]map[string]float64
	b, _ := os.ReadFile(jsonPath)
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	got := ev[filepath.Join(dir, "scores0.txt")]
	for _, k := range []string{"P@1", "P@3", "P@5", "nDCG@5", "PSP@5"} {
		if d := got[k] - s.Metrics[k]; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s: eval of predicted scores %.4f, train --test %.4f", k, got[k], s.Metrics[k])
		}
	}

	// --show lists predictions by label name, stars on the true ones.
	names := filepath.Join(dir, "labels.txt")
	os.WriteFile(names, []byte("# label_id\tname\ttrain_count\tdescription\n0\tTAG_2005\t10\t\n1\tTAG_ACL\t3\tconference\n"), 0o644)
	shown := mustXMC(t, "eval", "--data", bibtexTest, "--show", "2", "--label-names", names, filepath.Join(dir, "scores0.txt"))
	if !strings.Contains(shown, "row 1, true labels:") || !strings.Contains(shown, " *  1.") {
		t.Errorf("eval --show:\n%s", shown)
	}
	shown = mustXMC(t, "predict", "--model", modelPath, "--data", bibtexTest, "--out", filepath.Join(dir, "s.txt"),
		"--show", "3", "--label-names", names)
	if !strings.Contains(shown, "row 2, true labels:") {
		t.Errorf("predict --show:\n%s", shown)
	}

	inspect := mustXMC(t, "inspect", "--model", modelPath)
	if !strings.Contains(inspect, "10 trees") || !strings.Contains(inspect, "depth") {
		t.Errorf("inspect output:\n%s", inspect)
	}
}

// TestLinearPipeline trains the one-vs-all models through the same
// runtime: identical bytes for any layout, sharded or gathered, the
// accuracy of each method on Bibtex, and prediction and inspection of
// either file.
func TestLinearPipeline(t *testing.T) {
	for _, c := range []struct {
		algo   string
		args   []string
		minP1  float64
		layout [][]string
	}{
		{"dismec", nil, 63.5, [][]string{{"--ranks", "1", "--threads", "1"}, {"--ranks", "3", "--threads", "1"}, {"--ranks", "1", "--threads", "2", "--numa-sim", "2"}}},
		{"ppdsparse", nil, 64.3, [][]string{{"--ranks", "1", "--threads", "1"}, {"--ranks", "3", "--threads", "2", "--numa-sim", "2"},
			{"--ranks", "2", "--schedule", "static"}}},
		// The round mode's trainer: ranks own label blocks and agree on the
		// step size every epoch.
		{"lsq", nil, 54, [][]string{{"--ranks", "1", "--threads", "1"}, {"--ranks", "3", "--threads", "2", "--numa-sim", "2"},
			{"--ranks", "4", "--threads", "1"}}},
		// A multi-class trainer of rounds on multi-label data: ranks own
		// class blocks and exchange each batch's candidates.
		{"pdsparse", []string{"--epochs", "3", "--heldout", "0.1"}, 55, [][]string{{"--ranks", "1", "--threads", "1"},
			{"--ranks", "3", "--threads", "2", "--numa-sim", "2"}, {"--ranks", "4", "--threads", "1"}}},
		// The other multi-class trainer: ranks own class blocks, each with
		// its own index, and exchange each batch's rivals.
		{"memoir", []string{"--epochs", "3", "--heldout", "0.1"}, 57, [][]string{{"--ranks", "1", "--threads", "1"},
			{"--ranks", "3", "--threads", "2", "--numa-sim", "2"}, {"--ranks", "4", "--threads", "1"}}},
	} {
		t.Run(c.algo, func(t *testing.T) {
			dir := t.TempDir()
			var ref []byte
			for i, l := range c.layout {
				path := filepath.Join(dir, fmt.Sprintf("d%d.model", i))
				mustXMC(t, slices.Concat([]string{"train", "--algo", c.algo, "--data", bibtexTrain, "--model-out", path}, c.args, l)...)
				b, _ := os.ReadFile(path)
				if i == 0 {
					ref = b
				} else if !bytes.Equal(b, ref) {
					t.Errorf("layout %v: model differs from 1 rank x 1 thread", l)
				}
			}
			sharded := filepath.Join(dir, "d.manifest")
			sumPath := filepath.Join(dir, "d.json")
			mustXMC(t, slices.Concat([]string{"train", "--algo", c.algo, "--data", bibtexTrain, "--test", bibtexTest, "--ranks", "2",
				"--model-out", sharded, "--shard", "--summary", sumPath}, c.args)...)
			sum := readSummary(t, sumPath)
			if p1 := sum.Metrics["P@1"]; p1 < c.minP1 {
				t.Errorf("P@1 on Bibtex = %.2f, want at least %.1f", p1, c.minP1)
			}
			if c.algo == "memoir" {
				// Each rank reports its class blocks' memory and the
				// index's recall at each epoch's end.
				if len(sum.TrainerStats) != 2 {
					t.Fatalf("trainer stats of %d ranks, want 2", len(sum.TrainerStats))
				}
				for r, st := range sum.TrainerStats {
					if rec, ok := st["index_recall@1_epoch_3"]; st["block_state_bytes"] <= 0 || !ok || rec < 0 || rec > 1 {
						t.Errorf("rank %d trainer stats %v", r, st)
					}
				}
			}
			var scores []string
			for i, m := range []string{filepath.Join(dir, "d0.model"), sharded} {
				path := filepath.Join(dir, fmt.Sprintf("ds%d.txt", i))
				mustXMC(t, "predict", "--model", m, "--data", bibtexTest, "--out", path, "--ranks", fmt.Sprint(i+2))
				b, _ := os.ReadFile(path)
				scores = append(scores, string(b))
			}
			if scores[0] != scores[1] {
				t.Error("sharded and gathered models predict differently")
			}
			if out := mustXMC(t, "inspect", "--model", sharded); !strings.Contains(out, "159 labels") || !strings.Contains(out, c.algo) {
				t.Errorf("inspect of a sharded model:\n%s", out)
			}
		})
	}
}

// TestShardedModel writes one file per rank plus a manifest and predicts
// from it, with the same scores as the gathered model.
func TestShardedModel(t *testing.T) {
	dir := t.TempDir()
	whole, sharded := filepath.Join(dir, "whole.model"), filepath.Join(dir, "sharded.manifest")
	mustXMC(t, "train", "--trees", "5", "--seed", "2", "--ranks", "2", "--data", bibtexTrain, "--model-out", whole)
	mustXMC(t, "train", "--trees", "5", "--seed", "2", "--ranks", "2", "--data", bibtexTrain, "--model-out", sharded, "--shard")
	var scores []string
	for i, m := range []string{whole, sharded} {
		path := filepath.Join(dir, fmt.Sprintf("s%d.txt", i))
		mustXMC(t, "predict", "--model", m, "--data", bibtexTest, "--out", path, "--ranks", "2")
		b, _ := os.ReadFile(path)
		scores = append(scores, string(b))
	}
	if scores[0] != scores[1] {
		t.Error("sharded and gathered models predict differently")
	}
	// A missing shard is an error naming it.
	os.Remove(sharded + ".rank-0001-of-0002")
	out, code := xmc(t, "predict", "--model", sharded, "--data", bibtexTest, "--out", filepath.Join(dir, "x.txt"))
	if code == 0 || !strings.Contains(out, "rank-0001-of-0002") {
		t.Errorf("missing shard: exit %d, output:\n%s", code, out)
	}
}

// trainTestModes are the ways train --test can predict: by the ranks' own
// parts or by rank 0 alone, with the model gathered into one file, sharded,
// or not written.
var trainTestModes = [][]string{
	{"--predict-on", "ranks"}, {"--predict-on", "root"},
	{"--predict-on", "ranks", "--shard", "--model-out"}, {"--predict-on", "root", "--shard", "--model-out"},
	{"--predict-on", "ranks", "--model-out"}, {"--predict-on", "root", "--model-out"},
}

// trainTestArgs returns the arguments of train --test in mode (see
// trainTestModes), writing scores to scores and any model under dir.
func trainTestArgs(dir string, mode []string, scores string) []string {
	args := []string{"train", "--trees", "4", "--seed", "5", "--data", bibtexTrain, "--test", bibtexTest,
		"--checkpoint", "none", "--scores-out", scores}
	args = append(args, mode...)
	if mode[len(mode)-1] == "--model-out" {
		args = append(args, filepath.Join(dir, strings.Join(mode, "")+".model"))
	}
	return args
}

// TestTrainTestModes checks that train --test scores the test set the same,
// byte for byte, whichever way it predicts, on 2 ranks: every rank must
// agree on the collectives each way takes.
func TestTrainTestModes(t *testing.T) {
	dir := t.TempDir()
	var want []byte
	for i, mode := range trainTestModes {
		scores := filepath.Join(dir, fmt.Sprintf("scores%d.txt", i))
		mustXMC(t, append(trainTestArgs(dir, mode, scores), "--ranks", "2")...)
		got, err := os.ReadFile(scores)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			want = got
		} else if !bytes.Equal(got, want) {
			t.Errorf("train --test %v: scores differ from %v", mode, trainTestModes[0])
		}
	}
}

// maxMessageCases are trainings run with and without --max-message 65536:
// trees of about 1 MiB and label blocks of a few KiB, gathered in pieces.
var maxMessageCases = [][]string{
	{"--trees", "4", "--seed", "3"},
	{"--algo", "ppdsparse", "--labels-per-unit", "4"},
}

// checkMaxMessage trains and predicts each case of maxMessageCases with run
// (in process or under mpirun), with and without --max-message 65536, and
// checks that the model bytes and scores are the same.
func checkMaxMessage(t *testing.T, run func(args ...string) string) {
	dir := t.TempDir()
	for i, c := range maxMessageCases {
		var models, scores []string
		for _, limit := range [][]string{nil, {"--max-message", "65536"}} {
			m := filepath.Join(dir, fmt.Sprintf("m%d-%d.model", i, len(models)))
			s := filepath.Join(dir, fmt.Sprintf("m%d-%d.scores", i, len(models)))
			run(append(append([]string{"train", "--data", bibtexTrain, "--test", bibtexTest, "--model-out", m,
				"--scores-out", s, "--checkpoint", "none"}, c...), limit...)...)
			p := s + ".predicted"
			run(append([]string{"predict", "--model", m, "--data", bibtexTest, "--out", p}, limit...)...)
			models, scores = append(models, m), append(scores, s, p)
		}
		if a, b := readFile(t, models[0]), readFile(t, models[1]); !bytes.Equal(a, b) {
			t.Errorf("%v: --max-message 65536 changed the model", c)
		}
		for _, s := range scores[1:] {
			if !bytes.Equal(readFile(t, scores[0]), readFile(t, s)) {
				t.Errorf("%v: %s differs from the scores without a limit", c, filepath.Base(s))
			}
		}
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestMaxMessage is checkMaxMessage on 4 in-process ranks, whose backend
// refuses any transfer above the limit.
func TestMaxMessage(t *testing.T) {
	checkMaxMessage(t, func(args ...string) string { return mustXMC(t, append(args, "--ranks", "4")...) })
}

// TestBadInput checks that bad data and damaged models give a clear error
// naming the problem, a non-zero exit, and no output file.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.txt")
	os.WriteFile(bad, []byte("2 10 3\n0,1 1:1 2:1\n2 3:1 12:1\n"), 0o644)
	modelPath := filepath.Join(dir, "m.model")
	out, code := xmc(t, "train", "--trees", "2", "--data", bad, "--model-out", modelPath)
	if code == 0 || !strings.Contains(out, "bad.txt:3:") {
		t.Errorf("bad feature id: exit %d, output:\n%s", code, out)
	}
	if _, err := os.Stat(modelPath); !os.IsNotExist(err) {
		t.Error("a model file was left after a failed run")
	}

	mustXMC(t, "train", "--trees", "2", "--data", bibtexTrain, "--model-out", modelPath, "--ranks", "2")
	wide := filepath.Join(dir, "wide.txt")
	os.WriteFile(wide, []byte("1 5000 159\n3 4999:1\n"), 0o644)
	out, code = xmc(t, "predict", "--model", modelPath, "--data", wide, "--out", filepath.Join(dir, "s.txt"))
	if code == 0 || !strings.Contains(out, "D=5000") {
		t.Errorf("test D above the model's: exit %d, output:\n%s", code, out)
	}

	b, _ := os.ReadFile(modelPath)
	b[len(b)/2] ^= 0x40
	corrupt := filepath.Join(dir, "corrupt.model")
	os.WriteFile(corrupt, b, 0o644)
	out, code = xmc(t, "predict", "--model", corrupt, "--data", bibtexTest, "--out", filepath.Join(dir, "s.txt"))
	if code == 0 || !strings.Contains(out, "checksum") {
		t.Errorf("corrupt model: exit %d, output:\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "s.txt")); !os.IsNotExist(err) {
		t.Error("a score file was left after a failed prediction")
	}

	// A model that cannot be written fails the run, naming the path, and
	// keeps the checkpoint for a rerun.
	unwritable := filepath.Join(dir, "no-such-dir", "m.model")
	ckpt := filepath.Join(dir, "kept.ckpt")
	out, code = xmc(t, "train", "--trees", "2", "--ranks", "2", "--data", bibtexTrain, "--test", bibtexTest,
		"--model-out", unwritable, "--checkpoint", ckpt)
	if code == 0 || !strings.Contains(out, unwritable) {
		t.Errorf("unwritable model path: exit %d, output:\n%s", code, out)
	}
	if units, _ := runner.CheckpointUnits(ckpt); len(units) != 2 {
		t.Errorf("after a failed model write the checkpoint holds %d units, want 2", len(units))
	}

	// An output path that is a directory is refused before any work (the
	// check at the write says "write DIR: DIR is a directory").
	for _, args := range [][]string{
		{"train", "--trees", "2", "--data", bibtexTrain, "--model-out", dir},
		{"train", "--algo", "ensemble", "--data", bibtexTrain, "--model-out", dir},
		{"train", "--trees", "2", "--data", bibtexTrain, "--model-out", modelPath, "--summary", dir},
		{"predict", "--model", modelPath, "--data", bibtexTest, "--out", dir},
	} {
		out, code = xmc(t, args...)
		if code == 0 || !strings.Contains(out, dir+" is a directory: give a file's path") {
			t.Errorf("%v: exit %d, output:\n%s", args, code, out)
		}
	}

	out, code = xmc(t, "train", "--algo", "nonsense", "--data", bibtexTrain, "--model-out", modelPath)
	if code == 0 || !strings.Contains(out, "nonsense") {
		t.Errorf("unknown algorithm: exit %d, output:\n%s", code, out)
	}
	// Data on which no label has a positive row leaves a one-vs-all
	// trainer nothing to train: a clear error, not an empty model.
	unlabelled := filepath.Join(dir, "unlabelled.txt")
	os.WriteFile(unlabelled, []byte("2 4 3\n 0:1 1:1\n 2:1\n"), 0o644)
	for _, algo := range []string{"dismec", "ppdsparse"} {
		out, code = xmc(t, "train", "--algo", algo, "--data", unlabelled, "--model-out", modelPath)
		if code == 0 || !strings.Contains(out, "positive training row") {
			t.Errorf("%s on data without positives: exit %d, output:\n%s", algo, code, out)
		}
	}
	// A flag of another algorithm is an error that names its algorithm.
	out, code = xmc(t, "train", "--algo", "dismec", "--trees", "5", "--data", bibtexTrain, "--model-out", modelPath)
	if code == 0 || !strings.Contains(out, "--algo forest") {
		t.Errorf("flag of another algorithm: exit %d, output:\n%s", code, out)
	}
}

func TestInfoAndHelp(t *testing.T) {
	out := mustXMC(t, "info", "--ranks", "4")
	for r := range 4 {
		if !strings.Contains(out, fmt.Sprintf("rank %d on", r)) {
			t.Errorf("info --ranks 4 does not list rank %d:\n%s", r, out)
		}
	}
	if !strings.Contains(out, "in-process, world size 4") || !strings.Contains(out, "CPU:") {
		t.Errorf("info output:\n%s", out)
	}
	for _, c := range commands() {
		out, code := xmc(t, c.Name, "-h")
		if code != 0 || !strings.Contains(out, "Usage: xmc "+c.Name) {
			t.Errorf("%s -h: exit %d\n%s", c.Name, code, out)
		}
	}
	if _, code := xmc(t, "frobnicate"); code != 2 {
		t.Errorf("unknown command: exit %d, want 2", code)
	}
}

// isProfile reports whether the file at path is a pprof profile: gzipped
// protocol buffers.
func isProfile(path string) bool {
	b, err := os.ReadFile(path)
	return err == nil && len(b) > 2 && b[0] == 0x1f && b[1] == 0x8b
}

// TestCPUProfile checks --cpuprofile: one profile for the process, whatever
// the number of in-process ranks.
func TestCPUProfile(t *testing.T) {
	prof := filepath.Join(t.TempDir(), "cpu.prof")
	mustXMC(t, "train", "--trees", "2", "--ranks", "2", "--data", bibtexTrain, "--checkpoint", "none",
		"--model-out", filepath.Join(t.TempDir(), "m"), "--cpuprofile", prof)
	if !isProfile(prof) {
		t.Errorf("%s is not a CPU profile", prof)
	}
	out, code := xmc(t, "info", "--cpuprofile", filepath.Join(t.TempDir(), "no-such-dir", "p"))
	if code == 0 || !strings.Contains(out, "--cpuprofile") {
		t.Errorf("unwritable profile: exit %d, output:\n%s", code, out)
	}
}

// TestPDSparseHeldoutFile stops PD-Sparse on a held-out data file: the same
// model on 1 and 3 ranks, and a clear error for a file that cannot be read.
func TestPDSparseHeldoutFile(t *testing.T) {
	dir := t.TempDir()
	var models [][]byte
	for _, ranks := range []string{"1", "3"} {
		path := filepath.Join(dir, "h"+ranks+".model")
		out := mustXMC(t, "train", "--algo", "pdsparse", "--epochs", "2", "--heldout", bibtexTest, "--data", bibtexTrain,
			"--model-out", path, "--ranks", ranks)
		if !strings.Contains(out, "heldout_accuracy") {
			t.Errorf("no held-out accuracy logged:\n%s", out)
		}
		b, _ := os.ReadFile(path)
		models = append(models, b)
	}
	if !bytes.Equal(models[0], models[1]) || len(models[0]) == 0 {
		t.Error("held-out training on 1 and 3 ranks gave different models")
	}
	missing := filepath.Join(dir, "missing.txt")
	out, code := xmc(t, "train", "--algo", "pdsparse", "--heldout", missing, "--data", bibtexTrain, "--model-out", filepath.Join(dir, "m"))
	if code == 0 || !strings.Contains(out, "--heldout") || !strings.Contains(out, "missing.txt") {
		t.Errorf("missing held-out file: exit %d, output:\n%s", code, out)
	}
}
