package main

// Tests of how a run stops and resumes: a time limit, a killed process,
// a signal.

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"xmc/job"
	"xmc/runner"
)

// TestInterruptAndResume stops a run with its time limit, checks that it
// exits non-zero with a clear message and keeps its finished work, then
// resumes it, on another number of ranks, to the same model as an
// uninterrupted run: for work of independent units (a forest's trees, a
// tree per worker or grown by all together) and of synchronous rounds
// (lsq).
func TestInterruptAndResume(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
	}{
		{"units", []string{"--trees", "40"}},
		{"units grown together", []string{"--trees", "40", "--grow", "together", "--threads", "2"}},
		{"rounds", []string{"--algo", "lsq", "--epochs", "20", "--tol", "0"}},
		{"rounds of pdsparse", []string{"--algo", "pdsparse", "--epochs", "4", "--heldout", "0.1"}},
		{"rounds of memoir", []string{"--algo", "memoir", "--epochs", "4", "--heldout", "0.1", "--regularizer", "l1", "--lambda", "1e-4"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			ref, resumed := filepath.Join(dir, "ref.model"), filepath.Join(dir, "resumed.model")
			common := append([]string{"train", "--seed", "9", "--threads", "1", "--data", bibtexTrain}, c.args...)
			start := time.Now()
			mustXMC(t, append(common, "--model-out", ref, "--checkpoint", "none")...)
			rounds := strings.HasPrefix(c.name, "rounds")
			saved := interruptPartWay(t, common, resumed, time.Since(start)/2, rounds)
			want := fmt.Sprintf("%d units saved", saved)
			if rounds {
				want = "training in rounds, saved after round "
			}
			if got := mustXMC(t, "inspect", "--checkpoint", resumed+".ckpt"); !strings.Contains(got, want) {
				t.Errorf("xmc inspect --checkpoint: %q, want it to say %q", got, want)
			}
			out := mustXMC(t, append(common, "--model-out", resumed, "--ranks", "3")...)
			if !strings.Contains(out, "resuming") {
				t.Errorf("rerun did not resume:\n%s", out)
			}
			a, _ := os.ReadFile(ref)
			b, _ := os.ReadFile(resumed)
			if !bytes.Equal(a, b) {
				t.Error("resumed model differs from the uninterrupted one")
			}
			if _, err := os.Stat(resumed + ".ckpt"); !os.IsNotExist(err) {
				t.Errorf("checkpoint left after the resumed run completed: %v", err)
			}
		})
	}
}

// interruptPartWay runs the training of args into model with a time limit
// until the limit stops it part of the way (some units, or rounds, saved;
// of units not all) and returns the units saved. The first limit is half
// the uninterrupted run's time (40 trees took 0.8-1.1 s here); a run that
// finishes within it, the machine being less busy than during the
// uninterrupted run, is repeated with half the limit, and one that saved
// nothing with half as much again.
func interruptPartWay(t *testing.T, args []string, model string, limit time.Duration, rounds bool) int {
	t.Helper()
	for try := 1; ; try++ {
		out, code := xmc(t, append(args, "--model-out", model, "--time-limit", limit.String())...)
		interrupted := code == job.ExitInterrupted && strings.Contains(out, "interrupted")
		if code != 0 && !interrupted {
			t.Fatalf("--time-limit %v: exit %d, neither complete nor interrupted (exit %d):\n%s", limit, code, job.ExitInterrupted, out)
		}
		saved := savedUnits(model+".ckpt", rounds)
		switch {
		case interrupted && saved > 0 && (rounds || saved < 40):
			return saved
		case try == 6:
			t.Fatalf("%d runs with time limits down to %v: none stopped part of the way (exit %d, %d units saved), output:\n%s",
				try, limit, code, saved, out)
		case !interrupted || saved >= 40:
			for _, p := range []string{model, model + ".ckpt"} {
				if err := os.RemoveAll(p); err != nil {
					t.Fatal(err)
				}
			}
			limit /= 2
		default:
			limit += limit / 2
		}
	}
}

// savedUnits counts the units in the checkpoint at path: those of its round
// directories for a trainer of rounds.
func savedUnits(path string, rounds bool) int {
	if !rounds {
		units, _ := runner.CheckpointUnits(path)
		return len(units)
	}
	dirs, _ := filepath.Glob(filepath.Join(path, "round-*"))
	saved := 0
	for _, d := range dirs {
		units, _ := runner.CheckpointUnits(d)
		saved += len(units)
	}
	return saved
}

// TestCrashResume kills a training with SIGKILL, as a node failure would,
// once units have been saved (--checkpoint-every 0 saves each at once),
// and checks that the rerun resumes from every unit saved and writes the
// model of an uninterrupted run.
func TestCrashResume(t *testing.T) {
	dir := t.TempDir()
	ref, crashed := filepath.Join(dir, "ref.model"), filepath.Join(dir, "crashed.model")
	common := []string{"train", "--trees", "60", "--seed", "4", "--threads", "1", "--data", bibtexTrain}
	mustXMC(t, append(common, "--model-out", ref, "--checkpoint", "none")...)
	cmd := exec.Command(xmcBin, append(common, "--model-out", crashed, "--checkpoint-every", "0")...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		if units, _ := runner.CheckpointUnits(crashed + ".ckpt"); len(units) >= 5 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("no unit saved within a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	saved, _ := runner.CheckpointUnits(crashed + ".ckpt")
	if len(saved) >= 60 {
		t.Fatalf("the run finished before it was killed (%d units saved)", len(saved))
	}
	out := mustXMC(t, append(common, "--model-out", crashed, "--ranks", "2")...)
	if !strings.Contains(out, "resuming") {
		t.Errorf("rerun after the crash did not resume:\n%s", out)
	}
	if !bytes.Equal(readFile(t, ref), readFile(t, crashed)) {
		t.Error("the model resumed after a crash differs from the uninterrupted one")
	}
}

// TestTimeLimitAgreement stops trainings at many moments, on several
// in-process ranks: each must end either complete or interrupted, never
// with ranks in different collectives (which in-process ranks report as a
// mismatch and MPI ranks would wait on).
func TestTimeLimitAgreement(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args   []string
		limits []int // milliseconds
	}{
		{[]string{"--trees", "3", "--ranks", "2"}, []int{100, 120, 140, 160, 200, 250}},
		{[]string{"--algo", "dismec", "--ranks", "3"}, []int{450, 550, 600, 650, 750}},
		{[]string{"--algo", "lsq", "--ranks", "3"}, []int{150, 300, 450}},
	} {
		for _, ms := range c.limits {
			args := append([]string{"train", "--threads", "1", "--data", bibtexTrain, "--checkpoint", "none",
				"--model-out", filepath.Join(dir, "m.model"), "--time-limit", fmt.Sprintf("%dms", ms)}, c.args...)
			out, code := xmc(t, args...)
			if strings.Contains(out, "mismatched") || code != 0 && (code != job.ExitInterrupted || !strings.Contains(out, "interrupted: stopped")) {
				t.Errorf("%v --time-limit %dms: exit %d, neither complete nor interrupted:\n%s", c.args, ms, code, out)
			}
		}
	}
}

// TestSignalStopsCleanly sends SIGTERM, as Slurm does at the time limit, in
// the middle of training: xmc must stop taking trees, write what it has,
// and exit non-zero with a clear message.
func TestSignalStopsCleanly(t *testing.T) {
	dir := t.TempDir()
	modelPath := filepath.Join(dir, "m.model")
	cmd := exec.Command(xmcBin, "train", "--trees", "400", "--threads", "1", "--data", bibtexTrain, "--model-out", modelPath)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	buf := make([]byte, 4096)
	for !strings.Contains(out.String(), "progress") {
		n, err := stderr.Read(buf)
		out.Write(buf[:n])
		if err != nil {
			t.Fatalf("xmc ended before reporting progress:\n%s", out.String())
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	rest, _ := io.ReadAll(stderr)
	out.Write(rest)
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != job.ExitInterrupted || !strings.Contains(out.String(), "interrupted") {
		t.Fatalf("after SIGTERM: %v, want exit status %d\n%s", err, job.ExitInterrupted, out.String())
	}
	m := mustXMC(t, "inspect", "--model", modelPath)
	if !strings.Contains(m, "trees") {
		t.Errorf("the finished trees were not written:\n%s", m)
	}
}
