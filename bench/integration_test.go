package bench

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"xmc/atomicfile"
	"xmc/data"
	"xmc/model"
	"xmc/scores"
)

// The integration tests run the real xmc-bench and xmc binaries, built
// once by TestMain into one directory (xmc-bench runs the xmc beside it),
// on the bundled Bibtex data with tiny forests.

const (
	bibtexTrain = "../testdata/bibtex/train.txt"
	bibtexTest  = "../testdata/bibtex/test.txt"
	// helperAllocEnv makes the test binary a child for TestExecPeakRSS that
	// allocates and touches this many MiB and exits.
	helperAllocEnv = "XMC_BENCH_TEST_ALLOC_MIB"
)

var (
	benchBin string
	buildErr error
)

func TestMain(m *testing.M) {
	if v := os.Getenv(helperAllocEnv); v != "" {
		os.Exit(allocate(v))
	}
	dir, err := os.MkdirTemp("", "xmc-bench-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	benchBin = filepath.Join(dir, "xmc-bench")
	// A failed build fails the integration tests only, with its output.
	for _, pkg := range []string{"xmc", "xmc/cmd/xmc-bench"} {
		if out, err := exec.Command("go", "build", "-o", dir, pkg).CombinedOutput(); err != nil && buildErr == nil {
			buildErr = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// allocate touches every page of mib MiB, so that they are resident.
func allocate(mib string) int {
	n, err := strconv.Atoi(mib)
	if err != nil {
		return 2
	}
	b := make([]byte, n<<20)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	runtime.KeepAlive(b)
	return 0
}

// needBinaries fails the test when the binaries could not be built.
func needBinaries(t *testing.T) {
	t.Helper()
	if buildErr != nil {
		t.Fatal(buildErr)
	}
}

// runBench runs xmc-bench and returns its standard output, standard error
// and exit code.
func runBench(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(benchBin, args...)
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("run xmc-bench %v: %v", args, err)
	}
	return o.String(), e.String(), code
}

// mustBench runs xmc-bench, failing t unless it succeeds, and returns its
// standard output.
func mustBench(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := runBench(t, args...)
	if code != 0 {
		t.Fatalf("xmc-bench %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestCeilingCommand runs xmc-bench ceiling on one and two workers: a row
// per loop and count; a bad count is refused with a non-zero exit.
func TestCeilingCommand(t *testing.T) {
	needBinaries(t)
	out := mustBench(t, "ceiling", "--workers", "2", "--ops", "1")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1+2*len(CeilingKinds) || !strings.Contains(lines[0], "ceiling") {
		t.Errorf("xmc-bench ceiling printed\n%s\nwant a header and %d rows", out, 2*len(CeilingKinds))
	}
	if _, errOut, code := runBench(t, "ceiling", "--workers", "0"); code == 0 || !strings.Contains(errOut, "--workers") {
		t.Errorf("--workers 0: exit %d, %q", code, errOut)
	}
}

func TestScaleCommand(t *testing.T) {
	needBinaries(t)
	out := filepath.Join(t.TempDir(), "study")
	table := mustBench(t, "scale", "--data", bibtexTrain, "--test", bibtexTest, "--trees", "2",
		"--ranks", "1,2", "--threads", "1", "--repeats", "1", "--warmup", "0", "--ceiling", "--copies", "--out", out)

	var s Scaling
	readJSON(t, filepath.Join(out, "scaling.json"), &s)
	if len(s.Rows) != 2 || s.Rows[0].Layout != (Layout{1, 1}) || s.Rows[1].Layout != (Layout{2, 1}) {
		t.Fatalf("rows %+v, want 1x1 and 2x1", s.Rows)
	}
	if s.Baseline != (Layout{1, 1}) || s.Backend != "in-process" || s.Command != "train" {
		t.Errorf("baseline %v backend %q command %q", s.Baseline, s.Backend, s.Command)
	}
	one, two := s.Rows[0], s.Rows[1]
	for _, r := range s.Rows {
		tr, wall := r.Phases["train_s"], r.Phases["wall_s"]
		if r.Runs != 1 || tr.Median <= 0 || wall.Median < tr.Median || r.Phases["gather_s"].N != 1 {
			t.Errorf("%s: runs %d, train %+v, wall %+v", r.Layout, r.Runs, tr, wall)
		}
		if r.Metrics["P@1"] < 30 || r.PeakRSSMax <= 0 || !r.SharedProcess {
			t.Errorf("%s: P@1 %v, peak RSS %d, shared %v", r.Layout, r.Metrics["P@1"], r.PeakRSSMax, r.SharedProcess)
		}
	}
	// The same seed gives the same forest on any layout.
	if one.Metrics["P@1"] != two.Metrics["P@1"] {
		t.Errorf("P@1 %v on 1x1 but %v on 2x1", one.Metrics["P@1"], two.Metrics["P@1"])
	}
	if one.CommRootBytes != 0 {
		t.Errorf("one rank communicated %d bytes", one.CommRootBytes)
	}
	// Rank 0 receives at least the other rank's trees, which the model
	// predicts from the model size.
	if two.ModelBytes <= 0 || two.PredictedRootBytes <= 0 || float64(two.CommRootBytes) < 0.9*two.PredictedRootBytes ||
		two.CommOtherBytes <= 0 {
		t.Errorf("2x1 comm: rank 0 %d B, others %v B, model %d B, predicted %v B",
			two.CommRootBytes, two.CommOtherBytes, two.ModelBytes, two.PredictedRootBytes)
	}
	for _, f := range []string{"1x1-r1.json", "2x1-r1.json", "logs/1x1-r1.log", "logs/2x1-r1.log", "scaling.csv"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(out, "scratch.model*")); len(m) > 0 {
		t.Errorf("scratch models left behind: %v", m)
	}
	csvLines := 0
	if b, err := os.ReadFile(filepath.Join(out, "scaling.csv")); err == nil {
		csvLines = len(strings.Split(strings.TrimSpace(string(b)), "\n"))
	}
	if csvLines != 3 {
		t.Errorf("scaling.csv has %d lines, want 3", csvLines)
	}
	// The machine's ceiling at 1 and 2 workers: a header and a row per
	// loop and count.
	if b, err := os.ReadFile(filepath.Join(out, "ceiling.txt")); err != nil ||
		len(strings.Split(strings.TrimSpace(string(b)), "\n")) != 1+2*len(CeilingKinds) {
		t.Errorf("ceiling.txt: %v\n%s", err, b)
	}
	// One copy alone and two at once, each with its summary and log,
	// and none of their scratch models left.
	if b, err := os.ReadFile(filepath.Join(out, "copies.txt")); err != nil ||
		len(strings.Split(strings.TrimSpace(string(b)), "\n")) != 3 || !strings.Contains(string(b), "ceiling") {
		t.Errorf("copies.txt: %v\n%s", err, b)
	}
	for _, f := range []string{"1-r1-c1.json", "2-r1-c1.json", "2-r1-c2.json", "logs/2-r1-c2.log"} {
		if st, err := os.Stat(filepath.Join(out, "copies", f)); err != nil || st.Size() == 0 {
			t.Errorf("copies/%s: %v", f, err)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(out, "copies", "*.model*")); len(m) > 0 {
		t.Errorf("copies' scratch models left behind: %v", m)
	}
	var written []string
	for _, n := range []string{"speedup", "efficiency", "comm"} {
		for _, f := range PlotFormats {
			written = append(written, filepath.Join(out, n+"."+f))
		}
	}
	checkPlots(t, out, written, "speedup", "efficiency", "comm")
	if !strings.Contains(table, "2x1") || !strings.Contains(table, "1x1") {
		t.Errorf("table lacks the layouts:\n%s", table)
	}

	// A second study into the same directory would mix with the first.
	_, errOut, code := runBench(t, "scale", "--data", bibtexTrain, "--trees", "2", "--ranks", "1", "--threads", "1",
		"--repeats", "1", "--warmup", "0", "--out", out)
	if code == 0 || !strings.Contains(errOut, "already holds 2 run summaries") {
		t.Errorf("second study into %s: exit %d\n%s", out, code, errOut)
	}

	// report rebuilds the same study from the summaries.
	again := filepath.Join(t.TempDir(), "report")
	mustBench(t, "report", "--out", again, out)
	var r Scaling
	readJSON(t, filepath.Join(again, "scaling.json"), &r)
	if !reflect.DeepEqual(r.Rows, s.Rows) {
		t.Errorf("report's rows differ from scale's:\n%+v\n%+v", r.Rows, s.Rows)
	}
	checkPlots(t, again, append(written[:0:0], filepath.Join(again, "speedup.png"), filepath.Join(again, "speedup.svg")), "speedup")

	// Several directories: each study into a folder named after its
	// directory, and their overview beside them; --out is then needed.
	second := filepath.Join(t.TempDir(), "second")
	if err := os.Symlink(out, second); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runBench(t, "report", out, second); code == 0 || !strings.Contains(errOut, "--out") {
		t.Errorf("report of two directories without --out: exit %d\n%s", code, errOut)
	}
	both := filepath.Join(t.TempDir(), "both")
	table = mustBench(t, "report", "--out", both, out, second)
	for _, name := range []string{filepath.Base(out), "second"} {
		var r Scaling
		readJSON(t, filepath.Join(both, name, "scaling.json"), &r)
		if !reflect.DeepEqual(r.Rows, s.Rows) {
			t.Errorf("report's study %s differs from scale's", name)
		}
	}
	var o Overview
	readJSON(t, filepath.Join(both, "overview.json"), &o)
	if len(o.Studies) != 2 || o.Studies[1].Name != "second" || o.Studies[1].Cores != 2 {
		t.Errorf("overview %+v, want two studies at 2 cores, the second named second", o)
	}
	checkPlots(t, both, []string{filepath.Join(both, "overview.png"), filepath.Join(both, "overview.svg")}, "overview")
	if !strings.Contains(table, "== overview") {
		t.Errorf("report's output lacks the overview:\n%s", table)
	}
}

// writeFakeReference writes a test double of a reference XMC program: a
// shell script that trains nothing but prints lines in DXML's format and
// copies a prepared score file to where it is told, so that the adapter
// (command template, patterns, {peakrss}, score evaluation) can be tested
// without the C++ program. Its numbers are not measurements and the tests
// never present them as such.
func writeFakeReference(t *testing.T, dir, body string) string {
	t.Helper()
	path := filepath.Join(dir, "fake-reference.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// perfectTop1 writes a score file that ranks the first true label of every
// test row first, so that its P@1 is exactly 100.
func perfectTop1(t *testing.T, path string) {
	t.Helper()
	test, err := data.ReadFile(bibtexTest, data.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rows := make([][]model.Scored, test.N())
	for i := range rows {
		lo := test.Y.Indptr[i]
		rows[i] = []model.Scored{{Label: test.Y.Indices[lo], Score: 1}}
	}
	err = atomicfile.Write(path, func(w *bufio.Writer) error { return scores.Write(w, test.L(), rows) })
	if err != nil {
		t.Fatal(err)
	}
}

func TestCompareCommandScores(t *testing.T) {
	needBinaries(t)
	dir := t.TempDir()
	prepared := filepath.Join(dir, "prepared.scores")
	perfectTop1(t, prepared)
	script := writeFakeReference(t, dir, `echo "train=$1 test=$2 trees_per_rank=$3"
echo "total duration of training :1.25"
echo "p@1 : 12.5"
cp "$5" "$4"
`)
	out := filepath.Join(dir, "cmp")
	mustBench(t, "compare", "--launcher", "inproc", "--ref-name", "fake",
		"--ref-cmd", "{peakrss} /bin/sh "+script+" {train} {test} {trees_per_rank} {scores} "+prepared,
		"--ref-scores", filepath.Join(dir, "ref.scores"),
		"--data", bibtexTrain, "--test", bibtexTest, "--trees", "2", "--ranks", "2", "--repeats", "1", "--out", out)

	var c Comparison
	readJSON(t, filepath.Join(out, "compare.json"), &c)
	rows := map[string]CompareRow{}
	for _, r := range c.Rows {
		rows[r.Metric] = r
	}
	if r := rows["train time"]; r.Ref.Median != 1.25 || r.XMC.Median <= 0 || r.Ratio != r.XMC.Median/1.25 {
		t.Errorf("train time row %+v", r)
	}
	// P@1 comes from xmc's evaluation of the score file, not the printout.
	if r := rows["P@1"]; r.Ref.Median != 100 || r.XMC.Median < 30 {
		t.Errorf("P@1 row %+v, want the reference at 100", r)
	}
	if r := rows["peak RSS, largest process"]; r.Ref.N != 1 || r.Ref.Median <= 0 || r.XMC.Median <= 0 {
		t.Errorf("peak RSS row %+v", r)
	}
	if len(c.Runs) != 2 || c.Runs[0].Program != "fake" || c.Runs[1].Program != "xmc" {
		t.Errorf("runs %+v, want the reference first, then xmc", c.Runs)
	}
	if !strings.Contains(c.ReferenceCommand, "bench peakrss --") || !strings.Contains(c.ReferenceCommand, " 1 ") {
		t.Errorf("reference command %q lacks the peakrss prefix or 1 tree per rank", c.ReferenceCommand)
	}
	checkPlots(t, out, []string{filepath.Join(out, "compare.png"), filepath.Join(out, "compare.svg")}, "compare")
}

// TestCompareCommandAlgo compares another algorithm than the forest: xmc
// trains it with the flags after --, without --trees.
func TestCompareCommandAlgo(t *testing.T) {
	needBinaries(t)
	dir := t.TempDir()
	script := writeFakeReference(t, dir, `echo "total duration of training :0.5"
echo "p@1 : 50"
`)
	out := filepath.Join(dir, "cmp")
	table := mustBench(t, "compare", "--launcher", "inproc", "--ref-name", "fake", "--algo", "ppdsparse",
		"--ref-cmd", "{peakrss} /bin/sh "+script,
		"--data", bibtexTrain, "--test", bibtexTest, "--ranks", "1", "--repeats", "1", "--out", out, "--", "--cost", "2")
	var c Comparison
	readJSON(t, filepath.Join(out, "compare.json"), &c)
	if c.Algorithm != "ppdsparse" || !strings.Contains(c.XMCCommand, "--algo ppdsparse") ||
		!strings.Contains(c.XMCCommand, "--cost 2") || strings.Contains(c.XMCCommand, "--trees") {
		t.Errorf("algorithm %q, xmc command %q", c.Algorithm, c.XMCCommand)
	}
	if xmc := c.Runs[1]; xmc.Program != "xmc" || xmc.Metrics["P@1"] < 50 {
		t.Errorf("xmc run %+v", xmc)
	}
	if !strings.Contains(table, "xmc's ppdsparse") {
		t.Errorf("table:\n%s", table)
	}
}

func TestCompareCommandDXML(t *testing.T) {
	needBinaries(t)
	if _, err := exec.LookPath("mpirun"); err != nil {
		t.Skip("mpirun not installed; the DXML template runs the reference under mpirun")
	}
	// OpenMPI refuses to run as root without these; harmless otherwise.
	t.Setenv("OMPI_ALLOW_RUN_AS_ROOT", "1")
	t.Setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
	dir := t.TempDir()
	// Every rank prints its training time; rank 0 the precisions.
	script := writeFakeReference(t, dir, `r=$OMPI_COMM_WORLD_RANK
echo "rank $r of $OMPI_COMM_WORLD_SIZE: $3 trees"
echo "total duration of training :$r.5"
if [ "$r" = 0 ]; then printf 'p@1 : 60.08\np@3 : 35.5\np@5 : 25.25\n'; fi
`)
	out := filepath.Join(dir, "cmp")
	table := mustBench(t, "compare", "--launcher", "inproc", "--dxml-bin", script,
		"--data", bibtexTrain, "--test", bibtexTest, "--trees", "2", "--ranks", "2", "--repeats", "1", "--out", out)
	var c Comparison
	readJSON(t, filepath.Join(out, "compare.json"), &c)
	if c.Reference != "DXML" || len(c.Runs) != 2 {
		t.Fatalf("reference %q, %d runs", c.Reference, len(c.Runs))
	}
	ref := c.Runs[0]
	if ref.TrainS != 1.5 || ref.Metrics["P@1"] != 60.08 || ref.Metrics["P@5"] != 25.25 {
		t.Errorf("DXML run %+v: want the slowest rank's 1.5 s and rank 0's precisions", ref)
	}
	if len(ref.PeakRSS) != 2 {
		t.Errorf("DXML peak RSS %v, want one figure per rank", ref.PeakRSS)
	}
	if !strings.Contains(table, "xmc/DXML") {
		t.Errorf("table:\n%s", table)
	}
}
