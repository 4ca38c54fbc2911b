package main

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"xmc/job"
	"xmc/slurm"
)

// The Slurm submissions themselves are tested against a real local Slurm
// in slurm/integration_test.go (XMC_SLURM_TEST=1); these tests cover the
// flags and the files the subcommands write.

func TestSlurmScript(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := slurmMain([]string{"script", "--nodes", "4", "--cpus-per-task", "32", "--time", "01:00:00",
		"--mem", "100G", "--module", "openmpi", "--sbatch-line", "--exclusive", "--launcher", "mpirun", "--xmc", "/opt/xmc",
		"--", "train", "--algo", "forest", "--data", "my train.txt", "--trees", "100"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	for _, want := range []string{
		"#SBATCH --job-name=xmc-train\n", "#SBATCH --nodes=4\n", "#SBATCH --ntasks-per-node=1\n",
		"#SBATCH --cpus-per-task=32\n", "#SBATCH --time=01:00:00\n", "#SBATCH --mem=100G\n",
		"#SBATCH --signal=B:USR1@120\n", "#SBATCH --exclusive\n", "module load openmpi\n",
		"/opt/xmc train --algo forest --data 'my train.txt' --trees 100\n",
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("script lacks %q:\n%s", want, stdout.String())
		}
	}
}

// TestSlurmScriptRequeue checks --requeue, and that the script requeues on
// the status xmc stops with at the signal.
func TestSlurmScriptRequeue(t *testing.T) {
	if slurm.ExitInterrupted != job.ExitInterrupted {
		t.Fatalf("slurm requeues on exit status %d, but xmc exits %d when it stops cleanly", slurm.ExitInterrupted, job.ExitInterrupted)
	}
	var stdout, stderr bytes.Buffer
	err := slurmMain([]string{"script", "--cpus-per-task", "4", "--time", "04:00:00", "--requeue", "3", "--xmc", "/opt/xmc",
		"--", "train", "--data", "train.txt"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	for _, want := range []string{"#SBATCH --requeue\n", "#SBATCH --signal=USR1@120\n",
		`if [ "$status" -eq 3 ] && [ "${SLURM_RESTART_COUNT:-0}" -lt 3 ]; then` + "\n"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("script lacks %q:\n%s", want, stdout.String())
		}
	}
	stderr.Reset()
	err = slurmMain([]string{"script", "--cpus-per-task", "4", "--requeue", "3", "--signal", "", "--", "train"}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "needs the signal") {
		t.Errorf("--requeue without a signal: %v, want an error", err)
	}
}

func TestSlurmScriptDefaultBinary(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	var stdout, stderr bytes.Buffer
	if err := slurmMain([]string{"script", "--cpus-per-task", "2", "info"}, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "--cpus-per-task=\"$SLURM_CPUS_PER_TASK\" "+exe+" info\n") {
		t.Errorf("script does not run this binary (%s) under srun:\n%s", exe, stdout.String())
	}
}

func TestSlurmErrors(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		usage bool   // a usage error (exit status 2)
		want  string // in the error, when not a usage error
	}{
		{name: "no subcommand", args: nil, usage: true},
		{name: "unknown subcommand", args: []string{"run"}, usage: true},
		{name: "bad flag", args: []string{"script", "--nodes", "many"}, usage: true},
		{name: "no xmc command", args: []string{"script", "--cpus-per-task", "4"}, usage: true},
		{name: "no CPUs per task", args: []string{"script", "--", "train"}, want: "--cpus-per-task is required"},
		{name: "unknown xmc command", args: []string{"script", "--cpus-per-task", "4", "--", "fit"}, want: `"fit" is not an xmc command`},
		{name: "slurm in slurm", args: []string{"submit", "--cpus-per-task", "4", "--", "slurm", "script"}, want: `"slurm" is not an xmc command`},
		{name: "bad launcher", args: []string{"script", "--cpus-per-task", "4", "--launcher", "aprun", "--", "train"}, want: `unknown launcher "aprun"`},
		{name: "bad time", args: []string{"script", "--cpus-per-task", "4", "--time", "2h", "--", "train"}, want: `time limit "2h"`},
		{name: "scaling without --out", args: []string{"scaling", "--threads-list", "1", "--", "train"}, want: "--out is required"},
		{name: "scaling without threads", args: []string{"scaling", "--out", "d", "--", "train"}, want: "--threads-list is required"},
		{name: "scaling bad list", args: []string{"scaling", "--out", "d", "--threads-list", "1,x", "--", "train"}, want: "--threads-list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := slurmMain(tt.args, &stdout, &stderr)
			switch {
			case tt.usage && !errors.Is(err, errUsage):
				t.Errorf("error %v, want a usage error", err)
			case tt.usage && stderr.Len() == 0:
				t.Errorf("usage error without a message")
			case !tt.usage && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want one with %q", err, tt.want)
			}
			if stdout.Len() > 0 {
				t.Errorf("wrote %q to stdout", stdout.String())
			}
		})
	}
	var stdout, stderr bytes.Buffer
	if err := slurmMain([]string{"script", "-h"}, &stdout, &stderr); !errors.Is(err, flag.ErrHelp) || !strings.Contains(stderr.String(), "-cpus-per-task") {
		t.Errorf("script -h: error %v, help %q; want flag.ErrHelp and the flags", err, stderr.String())
	}
}

func TestSlurmScalingDryRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sweep")
	args := []string{"scaling", "--out", dir, "--nodes-list", "1,2", "--threads-list", "8", "--repeats", "2", "--dry-run",
		"--time", "30", "--xmc", "/opt/xmc", "--", "train", "--data", "train.txt"}
	var stdout, stderr bytes.Buffer
	if err := slurmMain(args, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	tags := []string{"1x8-r1", "2x8-r1", "1x8-r2", "2x8-r2"}
	var want strings.Builder
	for _, tag := range tags {
		want.WriteString(tag + " " + filepath.Join(dir, tag+".sbatch") + "\n")
	}
	want.WriteString("# submit each with sbatch; when they have finished: xmc-bench report " + dir + "\n")
	if stdout.String() != want.String() {
		t.Errorf("stdout:\n%s\nwant:\n%s", stdout.String(), want.String())
	}
	script, err := os.ReadFile(filepath.Join(dir, "2x8-r1.sbatch"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		"#SBATCH --job-name=xmc-train-2x8-r1\n", "#SBATCH --nodes=2\n", "#SBATCH --cpus-per-task=8\n", "#SBATCH --time=30\n",
		"#SBATCH --output=" + filepath.Join(dir, "2x8-r1.out") + "\n",
		"/opt/xmc train --data train.txt --summary " + filepath.Join(dir, "2x8-r1.json") + "\n",
	} {
		if !strings.Contains(string(script), w) {
			t.Errorf("2x8-r1.sbatch lacks %q:\n%s", w, script)
		}
	}

	// A directory holding summaries already is refused.
	if err := os.WriteFile(filepath.Join(dir, "1x8-r1.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = slurmMain(args, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "already holds 1x8-r1.json") {
		t.Errorf("sweep into a directory with summaries: error %v, want it refused", err)
	}
}

func TestOutputExcerpt(t *testing.T) {
	dir := t.TempDir()
	// The output of a real 2-rank job under srun --mpi=pmix whose data
	// file did not exist.
	mpiAbort := `[rank 0] 04:59:51 INFO  slurm job job_id=15 nodes=1
xmc: rank 1 of 2 aborts the job: rank 1: read dataset: open /nonexistent/train.txt: no such file or directory
--------------------------------------------------------------------------
MPI_ABORT was invoked on rank 1 in communicator MPI_COMM_WORLD
with errorcode 1.

NOTE: invoking MPI_ABORT causes Open MPI to kill all MPI processes.
You may or may not see output from other processes, depending on
exactly when Open MPI kills them.
--------------------------------------------------------------------------
xmc: rank 0 of 2 aborts the job: rank 0: read dataset: open /nonexistent/train.txt: no such file or directory
xmc: rank 0 of 2 aborts the job: rank 0: read dataset: open /nonexistent/train.txt: no such file or directory
slurmstepd-vm: error: *** STEP 15.0 ON vm CANCELLED AT 2026-11-22T04:59:51 ***
srun: error: vm: task 0: Killed
srun: error: vm: task 1: Exited with exit code 1
`
	var long strings.Builder
	for i := range 30 {
		long.WriteString(strings.Repeat("x", i%3) + "line\n")
	}
	tests := []struct{ name, output, want string }{
		{"xmc errors picked, once each", mpiAbort,
			"\n  | xmc: rank 1 of 2 aborts the job: rank 1: read dataset: open /nonexistent/train.txt: no such file or directory" +
				"\n  | xmc: rank 0 of 2 aborts the job: rank 0: read dataset: open /nonexistent/train.txt: no such file or directory"},
		{"command error", "[rank 0] INFO start\nxmc train: --trees must be positive\n", "\n  | xmc train: --trees must be positive"},
		{"no xmc line: the tail", "slurmstepd: error: *** JOB 9 CANCELLED AT 2026-11-22T05:00:00 DUE TO TIME LIMIT ***\n",
			"\n  | slurmstepd: error: *** JOB 9 CANCELLED AT 2026-11-22T05:00:00 DUE TO TIME LIMIT ***"},
		{"long output: last ten lines", long.String(), "\n  | xxline" + strings.Repeat("\n  | line\n  | xline\n  | xxline", 3)},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, "out")
			if err := os.WriteFile(path, []byte(tt.output), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := outputExcerpt(path); got != tt.want {
				t.Errorf("excerpt %q, want %q", got, tt.want)
			}
		})
	}
	if got := outputExcerpt(filepath.Join(dir, "missing")); got != "" {
		t.Errorf("excerpt of a missing file %q, want none", got)
	}
}
