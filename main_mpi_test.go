//go:build mpi

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"xmc/job"
)

// These tests run the MPI build of xmc under real mpirun, and check that it
// produces exactly what the in-process backend produces.

// mpirun runs xmc-mpi (built once) on np ranks and returns its output and
// exit code; a run that outlives its deadline fails the test instead of
// hanging CI.
func mpirun(t *testing.T, np int, args ...string) (string, int) {
	t.Helper()
	bin := filepath.Join(filepath.Dir(xmcBin), "xmc-mpi")
	if _, err := os.Stat(bin); err != nil {
		if out, err := exec.Command("go", "build", "-tags", "mpi", "-o", bin, ".").CombinedOutput(); err != nil {
			t.Fatalf("build xmc-mpi: %v\n%s", err, out)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	full := append([]string{"--oversubscribe", "--bind-to", "none", "-np", fmt.Sprint(np), bin}, args...)
	cmd := exec.CommandContext(ctx, "mpirun", full...)
	cmd.Env = append(os.Environ(), "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("mpirun %v hung:\n%s", args, out)
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

func TestMPIModelMatchesInProcess(t *testing.T) {
	dir := t.TempDir()
	ref := filepath.Join(dir, "ref.model")
	for _, algo := range []struct {
		name  string
		args  []string
		cases []struct {
			np   int
			args []string
		}
	}{
		{"forest", []string{"--trees", "6", "--seed", "11"}, []struct {
			np   int
			args []string
		}{{2, nil}, {4, []string{"--threads", "3"}}, {3, []string{"--numa-sim", "2", "--threads", "2"}}}}, // 4 x 3: 2 trees per rank, grown together
		{"ppdsparse", []string{"--algo", "ppdsparse", "--seed", "11", "--labels-per-unit", "4"}, []struct {
			np   int
			args []string
		}{{2, nil}, {4, []string{"--threads", "2"}}}},
		{"lsq", []string{"--algo", "lsq", "--seed", "11", "--epochs", "3"}, []struct {
			np   int
			args []string
		}{{2, nil}, {3, []string{"--threads", "2"}}}},
		{"pdsparse", []string{"--algo", "pdsparse", "--seed", "11", "--epochs", "2"}, []struct {
			np   int
			args []string
		}{{2, nil}, {3, []string{"--threads", "2"}}}},
		{"memoir", []string{"--algo", "memoir", "--seed", "11", "--epochs", "2"}, []struct {
			np   int
			args []string
		}{{2, nil}, {3, []string{"--threads", "2"}}}},
	} {
		path := filepath.Join(dir, algo.name+".model")
		mustXMC(t, append([]string{"train", "--data", bibtexTrain, "--model-out", path, "--ranks", "1", "--threads", "1"}, algo.args...)...)
		want, _ := os.ReadFile(path)
		for _, c := range algo.cases {
			path := filepath.Join(dir, fmt.Sprintf("%s-np%d.model", algo.name, c.np))
			args := append([]string{"train", "--data", bibtexTrain, "--model-out", path}, algo.args...)
			if out, code := mpirun(t, c.np, append(args, c.args...)...); code != 0 {
				t.Fatalf("%s: mpirun -np %d: exit %d\n%s", algo.name, c.np, code, out)
			}
			got, _ := os.ReadFile(path)
			if !bytes.Equal(got, want) {
				t.Errorf("%s: mpirun -np %d %v: model differs from 1 rank x 1 thread in process", algo.name, c.np, c.args)
			}
		}
	}
	if err := os.Rename(filepath.Join(dir, "forest.model"), ref); err != nil {
		t.Fatal(err)
	}

	// Distributed prediction under MPI gives the in-process scores.
	inproc, viaMPI := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	mustXMC(t, "predict", "--model", ref, "--data", bibtexTest, "--out", inproc)
	if out, code := mpirun(t, 2, "predict", "--model", ref, "--data", bibtexTest, "--out", viaMPI); code != 0 {
		t.Fatalf("mpirun predict: exit %d\n%s", code, out)
	}
	a, _ := os.ReadFile(inproc)
	b, _ := os.ReadFile(viaMPI)
	if !bytes.Equal(a, b) {
		t.Error("scores predicted under mpirun -np 2 differ from in-process ones")
	}
}

// TestMPIMaxMessage is checkMaxMessage under mpirun -np 4.
func TestMPIMaxMessage(t *testing.T) {
	checkMaxMessage(t, func(args ...string) string {
		out, code := mpirun(t, 4, args...)
		if code != 0 {
			t.Fatalf("mpirun -np 4 %v: exit %d\n%s", args, code, out)
		}
		return out
	})
}

// TestMPIRoundsResume stops a round-mode training under mpirun -np 2 with
// its time limit and resumes it under mpirun -np 3: the model must be the
// in-process uninterrupted one, byte for byte.
func TestMPIRoundsResume(t *testing.T) {
	dir := t.TempDir()
	ref, resumed := filepath.Join(dir, "ref.model"), filepath.Join(dir, "resumed.model")
	common := []string{"train", "--algo", "lsq", "--seed", "4", "--epochs", "20", "--tol", "0", "--threads", "1", "--data", bibtexTrain}
	start := time.Now()
	mustXMC(t, append(common, "--model-out", ref, "--checkpoint", "none")...)
	// A quarter of the one-rank run's time: two ranks train about twice
	// as fast, so half of it (0.72 s of a 0.9 s mpirun here) let the run
	// end before the limit now and then.
	limit := time.Since(start) / 4
	out, code := mpirun(t, 2, append(common, "--model-out", resumed, "--time-limit", limit.String())...)
	if code != job.ExitInterrupted || !strings.Contains(out, "interrupted") {
		t.Fatalf("time limit under mpirun: exit %d, want %d; output:\n%s", code, job.ExitInterrupted, out)
	}
	if out, code := mpirun(t, 3, append(common, "--model-out", resumed)...); code != 0 || !strings.Contains(out, "resuming") {
		t.Fatalf("resume under mpirun -np 3: exit %d, output:\n%s", code, out)
	}
	a, _ := os.ReadFile(ref)
	b, _ := os.ReadFile(resumed)
	if !bytes.Equal(a, b) {
		t.Error("model resumed under mpirun differs from the uninterrupted in-process one")
	}
}

// TestMPITrainTestModes is TestTrainTestModes under mpirun -np 2, against
// the in-process scores.
func TestMPITrainTestModes(t *testing.T) {
	dir := t.TempDir()
	want := filepath.Join(dir, "want.txt")
	mustXMC(t, append(trainTestArgs(dir, trainTestModes[0], want), "--ranks", "2")...)
	a, _ := os.ReadFile(want)
	for i, mode := range trainTestModes {
		scores := filepath.Join(dir, fmt.Sprintf("scores%d.txt", i))
		if out, code := mpirun(t, 2, trainTestArgs(dir, mode, scores)...); code != 0 {
			t.Fatalf("mpirun train --test %v: exit %d\n%s", mode, code, out)
		}
		if b, _ := os.ReadFile(scores); !bytes.Equal(a, b) {
			t.Errorf("mpirun train --test %v: scores differ from in-process ones", mode)
		}
	}
}

func TestMPIInfoListsRanks(t *testing.T) {
	out, code := mpirun(t, 4, "info")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	for r := range 4 {
		if !strings.Contains(out, fmt.Sprintf("rank %d on", r)) {
			t.Errorf("info under mpirun -np 4 does not list rank %d:\n%s", r, out)
		}
	}
	if !strings.Contains(out, "world size 4") {
		t.Errorf("info output:\n%s", out)
	}
}

// TestMPICPUProfile checks that under MPI each rank writes its own profile.
func TestMPICPUProfile(t *testing.T) {
	prof := filepath.Join(t.TempDir(), "cpu.prof")
	out, code := mpirun(t, 2, "train", "--trees", "2", "--data", bibtexTrain, "--checkpoint", "none",
		"--model-out", filepath.Join(t.TempDir(), "m"), "--cpuprofile", prof)
	if code != 0 {
		t.Fatalf("exit %d, output:\n%s", code, out)
	}
	for r := range 2 {
		if p := fmt.Sprintf("%s.rank-%d", prof, r); !isProfile(p) {
			t.Errorf("%s is not a CPU profile", p)
		}
	}
}

// TestMPIFailureEndsJob checks that an error ends the whole job promptly with
// the failing rank's message and a non-zero exit.
func TestMPIFailureEndsJob(t *testing.T) {
	start := time.Now()
	out, code := mpirun(t, 2, "train", "--trees", "4", "--data", "/nonexistent/train.txt", "--model-out", filepath.Join(t.TempDir(), "m"))
	if code == 0 || !strings.Contains(out, "/nonexistent/train.txt") {
		t.Errorf("exit %d, output:\n%s", code, out)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the failed job took %v to end", d)
	}
}
