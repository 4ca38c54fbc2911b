package slurm_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"xmc/data"
)

// The integration test runs xmc through a real single-node Slurm cluster
// brought up by local/up.sh: sbatch, slurmctld, slurmd, srun --mpi=pmix and
// the MPI build of xmc. It needs root (the daemons run as root) and
// installs Slurm with apt-get when missing, so it runs only when asked:
//
//	XMC_SLURM_TEST=1 go test ./slurm -run Integration
//
// XMC_SLURM_STATE sets the cluster's state directory (default
// $TMPDIR/xmc-slurm). A cluster already running there is used and left
// running; otherwise the test brings one up and tears it down.

// summary holds the fields of an xmc run summary the test checks.
type summary struct {
	Status         string             `json:"status"`
	Backend        string             `json:"backend"`
	Ranks          int                `json:"ranks"`
	ThreadsPerRank int                `json:"threads_per_rank"`
	Slurm          map[string]string  `json:"slurm"`
	Metrics        map[string]float64 `json:"metrics"`
}

func readSummary(t *testing.T, path string) summary {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read summary: %v", err)
	}
	var s summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("read summary %s: %v", path, err)
	}
	return s
}

// cluster is a running local Slurm and an xmc binary to submit with.
type cluster struct {
	xmc      string
	root     string   // the repository, where xmc runs
	env      []string // SLURM_CONF and the OpenMPI settings for root
	launcher string   // srun, or none for a pure-Go build
	tasks    int      // tasks per node of the 2-rank job
	ranks    []string // xmc flags that make 2 ranks
}

func TestIntegration(t *testing.T) {
	if os.Getenv("XMC_SLURM_TEST") != "1" {
		t.Skip("set XMC_SLURM_TEST=1 to run xmc under a local Slurm cluster (as root; installs Slurm with apt-get)")
	}
	if os.Geteuid() != 0 {
		t.Skip("the local Slurm cluster needs root (slurmd runs as root)")
	}
	_, errCtld := exec.LookPath("slurmctld")
	if _, errApt := exec.LookPath("apt-get"); errCtld != nil && errApt != nil {
		t.Skip("Slurm is not installed and there is no apt-get to install it")
	}
	c := setUp(t)
	t.Run("train", c.testTrain)
	t.Run("failing job", c.testFailure)
	t.Run("scaling chain", c.testScaling)
	t.Run("label ranges", c.testLabelRanges)
	t.Run("requeued to resume", c.testRequeue)
}

// setUp builds xmc and brings up the cluster, registering its teardown.
func setUp(t *testing.T) *cluster {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	state := os.Getenv("XMC_SLURM_STATE")
	if state == "" {
		state = filepath.Join(os.TempDir(), "xmc-slurm")
	}
	c := &cluster{
		xmc:  filepath.Join(t.TempDir(), "xmc"),
		root: root,
		env: append(os.Environ(), "SLURM_CONF="+filepath.Join(state, "slurm.conf"),
			"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"),
		launcher: "srun",
		tasks:    2,
	}

	start := time.Now()
	build := exec.Command("go", "build", "-tags", "mpi", "-o", c.xmc, ".")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		// Without the MPI build, run 2 in-process ranks in one task.
		t.Logf("go build -tags mpi failed, using the pure-Go build with --ranks 2: %v\n%s", err, out)
		build = exec.Command("go", "build", "-o", c.xmc, ".")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
		c.launcher, c.tasks, c.ranks = "none", 1, []string{"--ranks", "2"}
	}
	t.Logf("built xmc (launcher %s) in %.1f s", c.launcher, time.Since(start).Seconds())

	wasUp := daemonAlive(filepath.Join(state, "slurmctld.pid"), "slurmctld")
	start = time.Now()
	up := exec.Command("./local/up.sh", state)
	if out, err := up.CombinedOutput(); err != nil {
		t.Fatalf("local/up.sh: %v\n%s", err, out)
	}
	t.Logf("local Slurm up in %.1f s", time.Since(start).Seconds())
	if !wasUp {
		t.Cleanup(func() {
			start := time.Now()
			if out, err := exec.Command("./local/down.sh", state).CombinedOutput(); err != nil {
				t.Errorf("local/down.sh: %v\n%s", err, out)
			}
			t.Logf("local Slurm down in %.1f s", time.Since(start).Seconds())
		})
	}
	return c
}

// daemonAlive reports whether the PID file names a running process called
// name.
func daemonAlive(pidFile, name string) bool {
	pid, err := os.ReadFile(pidFile)
	if err != nil {
		return false
	}
	comm, err := os.ReadFile(filepath.Join("/proc", strings.TrimSpace(string(pid)), "comm"))
	return err == nil && strings.TrimSpace(string(comm)) == name
}

// run runs xmc with args in the repository and returns its stdout, its
// stderr and its exit status.
func (c *cluster) run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(c.xmc, args...)
	cmd.Dir, cmd.Env = c.root, c.env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if exit, ok := errors.AsType[*exec.ExitError](err); ok {
		return out.String(), errOut.String(), exit.ExitCode()
	}
	if err != nil {
		t.Fatalf("run xmc: %v", err)
	}
	return out.String(), errOut.String(), 0
}

// submitArgs are the xmc slurm submit flags of a 2-rank job on the node.
func (c *cluster) submitArgs(output string) []string {
	return []string{"slurm", "submit", "--wait", "--launcher", c.launcher,
		"--nodes", "1", "--ntasks-per-node", strconv.Itoa(c.tasks), "--cpus-per-task", "1", "--time", "5", "--output", output}
}

var jobIDLine = regexp.MustCompile(`^[1-9][0-9]*\n$`)

func (c *cluster) testTrain(t *testing.T) {
	dir := t.TempDir()
	sum := filepath.Join(dir, "S.json")
	args := append(c.submitArgs(filepath.Join(dir, "train-%j.out")), "--",
		"train", "--algo", "forest", "--trees", "4", "--data", "testdata/bibtex/train.txt",
		"--test", "testdata/bibtex/test.txt", "--summary", sum)
	start := time.Now()
	stdout, stderr, code := c.run(t, append(args, c.ranks...)...)
	t.Logf("xmc slurm submit --wait: %.1f s", time.Since(start).Seconds())
	if code != 0 {
		t.Fatalf("xmc slurm submit exited %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if !jobIDLine.MatchString(stdout) {
		t.Fatalf("stdout %q, want the job id alone", stdout)
	}
	id := strings.TrimSpace(stdout)
	s := readSummary(t, sum)
	if s.Status != "ok" || s.Ranks != 2 {
		t.Errorf("summary: status %q, %d ranks; want ok, 2", s.Status, s.Ranks)
	}
	if got := s.Slurm["SLURM_JOB_ID"]; got != id {
		t.Errorf("summary's SLURM_JOB_ID %q, want the submitted job's %s", got, id)
	}
	if p := s.Metrics["P@1"]; p <= 40 {
		t.Errorf("P@1 = %.2f, want above 40 (metrics %v)", p, s.Metrics)
	}
	if c.launcher == "srun" && s.Backend == "in-process" {
		t.Errorf("backend %q under srun, want the MPI backend", s.Backend)
	}
	out, err := os.ReadFile(filepath.Join(dir, "train-"+id+".out"))
	if err != nil {
		t.Fatalf("job output: %v", err)
	}
	if !strings.Contains(string(out), "P@1") {
		t.Errorf("job output has no metrics table:\n%s", out)
	}
	// A one-node job step uses the shared-memory PML (mpi.OneNodePML).
	if s.Backend != "in-process" && !strings.Contains(string(out), "pml=ob1") {
		t.Errorf("one-node %s job does not log pml=ob1:\n%s", c.launcher, out)
	}
	scripts, _ := filepath.Glob(filepath.Join(dir, "xmc-train-*.sbatch"))
	if len(scripts) != 1 {
		t.Errorf("scripts kept beside the output: %q, want one", scripts)
	}
}

func (c *cluster) testFailure(t *testing.T) {
	dir := t.TempDir()
	args := append(c.submitArgs(filepath.Join(dir, "bad-%j.out")), "--",
		"train", "--algo", "forest", "--trees", "4", "--data", "/nonexistent/train.txt", "--test", "testdata/bibtex/test.txt")
	stdout, stderr, code := c.run(t, append(args, c.ranks...)...)
	if code == 0 {
		t.Fatalf("xmc slurm submit --wait of a failing job exited 0\nstdout: %s\nstderr: %s", stdout, stderr)
	}
	id := strings.TrimSpace(stdout)
	output := filepath.Join(dir, "bad-"+id+".out")
	for _, want := range []string{"job " + id + " failed with exit status", "its output is " + output, "/nonexistent/train.txt"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

func (c *cluster) testScaling(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sweep")
	stdout, stderr, code := c.run(t, "slurm", "scaling", "--out", dir, "--nodes-list", "1", "--threads-list", "1,2",
		"--repeats", "1", "--chain", "--launcher", c.launcher, "--time", "5", "--",
		"train", "--algo", "forest", "--trees", "4", "--data", "testdata/bibtex/train.txt", "--test", "testdata/bibtex/test.txt")
	if code != 0 {
		t.Fatalf("xmc slurm scaling exited %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "1x1-r1 ") || !strings.HasPrefix(lines[1], "1x2-r1 ") ||
		lines[2] != "# when the jobs have finished: xmc-bench report "+dir {
		t.Fatalf("stdout:\n%s\nwant the two runs' job ids and the report command", stdout)
	}
	// The second job waits for the first: check while it is pending.
	second := strings.Fields(lines[1])[1]
	cmd := exec.Command("scontrol", "-o", "show", "job", second)
	cmd.Env = c.env
	show, err := cmd.Output()
	if err != nil {
		t.Fatalf("scontrol show job %s: %v", second, err)
	}
	if first := strings.Fields(lines[0])[1]; !strings.Contains(string(show), "Dependency=afterany:"+first) {
		t.Errorf("job %s does not depend on job %s:\n%s", second, first, show)
	}

	for i, threads := range []int{1, 2} {
		tag, id, _ := strings.Cut(lines[i], " ")
		path := filepath.Join(dir, tag+".json")
		deadline := time.Now().Add(30 * time.Second)
		for !fileExists(path) && time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond)
		}
		if !fileExists(path) {
			out, _ := os.ReadFile(filepath.Join(dir, tag+".out"))
			t.Fatalf("no summary %s after 30 s; job output:\n%s", path, out)
		}
		s := readSummary(t, path)
		if s.Status != "ok" || s.ThreadsPerRank != threads || s.Slurm["SLURM_JOB_ID"] != id {
			t.Errorf("%s: status %q, %d threads per rank, job %q; want ok, %d, %s",
				tag, s.Status, s.ThreadsPerRank, s.Slurm["SLURM_JOB_ID"], threads, id)
		}
	}
}

// testLabelRanges trains DiSMEC's labels in 3 ranges as a job array, cut
// by a label-costs file (train --label-costs), and joins them in a merge job
// that depends on it: the tasks' logs show the cut the costs make, and the
// merged model is the model of one training of every label.
func (c *cluster) testLabelRanges(t *testing.T) {
	dir := t.TempDir()
	data := "testdata/delicious/train.txt"
	merged, whole := filepath.Join(dir, "merged.model"), filepath.Join(dir, "whole.model")
	// The first 8 labels cost a million times the rest: parts 0 and 1 hold
	// a few of them each, where the estimate in positives gives part 0 a
	// third of the cost, hundreds of labels.
	labels := labelsWithPositives(t, filepath.Join(c.root, data))
	costs := filepath.Join(dir, "costs.txt")
	text := fmt.Sprintf("# Delicious, by hand\n0 8 1000\n8 16 0.001\n16 %d 0.001\n", labels)
	if err := os.WriteFile(costs, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append(c.submitArgs(filepath.Join(dir, "range-%A_%a.out")), "--array", "0-2", "--then-merge", merged, "--",
		"train", "--algo", "dismec", "--data", data, "--checkpoint", "none",
		"--label-range", "{task}/3", "--label-costs", costs, "--model-out", filepath.Join(dir, "range-{task}.model"))
	start := time.Now()
	stdout, stderr, code := c.run(t, append(args, c.ranks...)...)
	t.Logf("xmc slurm submit --array --then-merge --wait: %.1f s", time.Since(start).Seconds())
	if code != 0 {
		t.Fatalf("xmc slurm submit exited %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	ids := strings.Fields(stdout)
	if len(ids) != 2 {
		t.Fatalf("stdout %q, want the array's and the merge's job ids", stdout)
	}
	// Each task logs its range: part 0 ends within the costly head.
	out, err := os.ReadFile(filepath.Join(dir, "range-"+ids[0]+"_0.out"))
	m := regexp.MustCompile(`training a label range from=0 to=(\d+) of=(\d+)`).FindSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("task 0's output (%v) has no label range from 0:\n%s", err, out)
	}
	if to, _ := strconv.Atoi(string(m[1])); to > 8 || string(m[2]) != strconv.Itoa(labels) {
		t.Errorf("task 0 trained labels 0:%s of %s; want at most 8 of %d, cut by the costs", m[1], m[2], labels)
	}
	if _, stderr, code := c.run(t, "train", "--algo", "dismec", "--data", data, "--checkpoint", "none", "--model-out", whole); code != 0 {
		t.Fatalf("xmc train: exit %d: %s", code, stderr)
	}
	a, errA := os.ReadFile(merged)
	b, errB := os.ReadFile(whole)
	if errA != nil || errB != nil || !bytes.Equal(a, b) {
		t.Errorf("the merged model differs from one training's (%v, %v)", errA, errB)
	}
}

// labelsWithPositives returns how many labels of the dataset at path have
// a positive row: the labels a label-costs file covers.
func labelsWithPositives(t *testing.T, path string) int {
	t.Helper()
	d, err := data.ReadFile(path, data.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, count := range data.LabelCounts(&d.Y) {
		n += min(int(count), 1)
	}
	return n
}

// testRequeue submits a training requeued to resume (--requeue), stops its
// first run with the signal Slurm sends before the time limit (scancel
// --signal), and waits for the job: its second run, in the same job and
// output file, resumes from the checkpoint and finishes.
func (c *cluster) testRequeue(t *testing.T) {
	dir := t.TempDir()
	output, sum := filepath.Join(dir, "requeue.out"), filepath.Join(dir, "S.json")
	args := []string{"slurm", "submit", "--requeue", "2", "--launcher", c.launcher, "--nodes", "1",
		"--ntasks-per-node", strconv.Itoa(c.tasks), "--cpus-per-task", "1", "--time", "5", "--output", output, "--",
		"train", "--algo", "forest", "--trees", "200", "--data", "testdata/bibtex/train.txt",
		"--model-out", filepath.Join(dir, "m.model"), "--summary", sum}
	start := time.Now()
	stdout, stderr, code := c.run(t, append(args, c.ranks...)...)
	if code != 0 {
		t.Fatalf("xmc slurm submit exited %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	id := strings.TrimSpace(stdout)
	read := func() string { b, _ := os.ReadFile(output); return string(b) }
	waitFor(t, 60*time.Second, "the first run's progress", func() bool { return strings.Contains(read(), "progress") })
	// Under srun the signal goes to the job's steps, where xmc runs; with
	// no launcher to the batch shell, which passes it on.
	signal := []string{"--signal=USR1", id}
	if c.launcher == "none" {
		signal = []string{"--signal=USR1", "--batch", id}
	}
	cancel := exec.Command("scancel", signal...)
	cancel.Env = c.env
	if out, err := cancel.CombinedOutput(); err != nil {
		t.Fatalf("scancel %v: %v\n%s", signal, err, out)
	}
	var s summary
	waitFor(t, 120*time.Second, "the resumed run's summary", func() bool {
		if !fileExists(sum) {
			return false
		}
		s = readSummary(t, sum)
		return s.Status == "ok"
	})
	t.Logf("a job requeued once: %.1f s", time.Since(start).Seconds())
	out := read()
	for _, want := range []string{"interrupted", "resuming", "progress"} {
		if !strings.Contains(out, want) {
			t.Errorf("the job's output has no %q:\n%s", want, out)
		}
	}
	if got := s.Slurm["SLURM_JOB_ID"]; got != id {
		t.Errorf("summary's SLURM_JOB_ID %q, want the submitted job's %s", got, id)
	}
}

// waitFor polls done until it reports true, failing the test after limit.
func waitFor(t *testing.T, limit time.Duration, what string, done func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); !done(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after %v", what, limit)
		}
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
