//go:build mpi

package mpi_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// buildMpicheck builds mpi/internal/mpicheck into a temporary directory.
func buildMpicheck(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("mpirun"); err != nil {
		t.Skip("mpirun not found: install OpenMPI (Debian: openmpi-bin libopenmpi-dev)")
	}
	bin := filepath.Join(t.TempDir(), "mpicheck")
	cmd := exec.Command("go", "build", "-tags", "mpi", "-o", bin, "xmc/mpi/internal/mpicheck")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build mpicheck: %v\n%s", err, out)
	}
	return bin
}

// syncBuffer is a bytes.Buffer safe to read while a command writes it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// job is an mpirun command and its combined output.
type job struct {
	cmd    *exec.Cmd
	out    *syncBuffer
	ctx    context.Context
	cancel context.CancelFunc
}

// startMpirun starts mpirun with args. A job still running after limit is
// stopped, and wait then fails the test: a hang must fail, not block.
func startMpirun(t *testing.T, limit time.Duration, env []string, args ...string) *job {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	cmd := exec.CommandContext(ctx, "mpirun", args...)
	cmd.Env = append(os.Environ(), "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
	cmd.Env = append(cmd.Env, env...)
	// SIGTERM lets mpirun take its ranks down; SIGKILL follows if it cannot.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	// Orphaned daemons may keep the output pipe open; stop waiting for them.
	cmd.WaitDelay = 5 * time.Second
	j := &job{cmd: cmd, out: &syncBuffer{}, ctx: ctx, cancel: cancel}
	cmd.Stdout, cmd.Stderr = j.out, j.out
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start mpirun: %v", err)
	}
	return j
}

// wait returns mpirun's exit code and output; it fails the test if mpirun
// had to be stopped.
func (j *job) wait(t *testing.T) (int, string) {
	t.Helper()
	defer j.cancel()
	err := j.cmd.Wait()
	out := j.out.String()
	if j.ctx.Err() != nil {
		t.Fatalf("mpirun %s hung and was stopped: %v; output:\n%s", strings.Join(j.cmd.Args[1:], " "), j.ctx.Err(), out)
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, out
	case errors.As(err, &exit):
		return exit.ExitCode(), out
	}
	t.Fatalf("mpirun: %v\n%s", err, out)
	return 0, ""
}

// stop ends the job early, for a test that gives up on it.
func (j *job) stop() {
	j.cancel()
	j.cmd.Wait()
}

func mpirun(t *testing.T, limit time.Duration, args ...string) (int, string, time.Duration) {
	t.Helper()
	start := time.Now()
	code, out := startMpirun(t, limit, nil, args...).wait(t)
	return code, out, time.Since(start)
}

// TestMPIConformance runs the conformance suite on one node, where Init
// selects the ob1 PML (see OneNodePML) unless the user chose one.
func TestMPIConformance(t *testing.T) {
	bin := buildMpicheck(t)
	tests := []struct {
		np      int
		mca     []string
		wantPML string
		split   []string // mpicheck flags
	}{
		{1, nil, "ob1", nil}, {2, nil, "ob1", nil}, {3, nil, "ob1", nil}, {4, nil, "ob1", nil},
		{2, []string{"--mca", "pml", "^ucx"}, "^ucx", nil},
		// Every transfer split into messages of at most 64 KiB.
		{4, nil, "ob1", []string{"-max-message", "65536"}},
	}
	for _, tt := range tests {
		t.Run(strings.TrimSpace(fmt.Sprintf("np=%d %s %s", tt.np, strings.Join(tt.mca, " "), strings.Join(tt.split, " "))), func(t *testing.T) {
			args := append([]string{"-np", fmt.Sprint(tt.np), "--oversubscribe"}, tt.mca...)
			code, out, took := mpirun(t, time.Minute, append(append(args, bin, "-mode", "conformance"), tt.split...)...)
			want := fmt.Sprintf("conformance passed on %d ranks (openmpi backend, pml %s)", tt.np, tt.wantPML)
			if code != 0 || !strings.Contains(out, want) {
				t.Fatalf("exit code %d, want output %q; output:\n%s", code, want, out)
			}
			t.Logf("%d ranks in %v", tt.np, took.Round(time.Millisecond))
		})
	}
}

func TestMPIFailingRankEndsJob(t *testing.T) {
	bin := buildMpicheck(t)
	code, out, took := mpirun(t, 30*time.Second, "-np", "4", "--oversubscribe", bin, "-mode", "fail", "-rank", "2")
	if code == 0 {
		t.Fatalf("mpirun exited with 0; output:\n%s", out)
	}
	if !strings.Contains(out, "rank 2 of 4 aborts the job: mpicheck -mode fail: rank 2 fails on purpose") {
		t.Errorf("output lacks rank 2's message:\n%s", out)
	}
	if took > 10*time.Second {
		t.Errorf("job took %v to end, want a few seconds", took)
	}
	t.Logf("ended with code %d after %v", code, took.Round(time.Millisecond))
}

func TestMPIWatchdog(t *testing.T) {
	bin := buildMpicheck(t)
	code, out, took := mpirun(t, 30*time.Second, "-np", "3", "--oversubscribe", bin,
		"-mode", "stall", "-rank", "1", "-watchdog", "1s")
	if code == 0 {
		t.Fatalf("mpirun exited with 0; output:\n%s", out)
	}
	if !strings.Contains(out, "has been blocked in barrier for 1") || !strings.Contains(out, "--comm-timeout") {
		t.Errorf("output lacks the watchdog's message:\n%s", out)
	}
	if took > 10*time.Second {
		t.Errorf("job took %v to end, want about the watchdog's 1s", took)
	}
	t.Logf("ended with code %d after %v", code, took.Round(time.Millisecond))
}
