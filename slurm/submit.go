package slurm

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
)

// SubmitOptions control how Submit runs sbatch.
type SubmitOptions struct {
	// Wait makes sbatch wait for the job to end (sbatch --wait); a job
	// that ends with a non-zero exit status is then a *JobError.
	Wait bool
	// After lists jobs that must end, in any state, before this one starts
	// (--dependency=afterany:ID:ID...): runs that must not share nodes or
	// file systems with each other run one after the other.
	After []string
	// AfterOK lists jobs that must all succeed before this one starts
	// (--dependency=afterok:ID:ID...; for a job array, every task). If
	// one fails, this job is cancelled (--kill-on-invalid-dep=yes) rather
	// than left pending.
	AfterOK []string
	// Sbatch is the sbatch executable; empty means "sbatch" on PATH.
	Sbatch string
	// Dir is the directory sbatch runs in, which is also the job's working
	// directory; empty means the current one.
	Dir string
	// Env is sbatch's environment, which the job inherits; nil means the
	// current process's.
	Env []string
	// Submitted, when set, is called with the job id as soon as sbatch
	// reports it, before Submit waits for the job.
	Submitted func(jobID string)
	// Stderr receives sbatch's warnings when the submission succeeds; nil
	// discards them. A failed submission's messages are in the error.
	Stderr io.Writer
}

// JobError reports a job that ended with a non-zero exit status.
type JobError struct {
	JobID    string
	ExitCode int // 1 also when the job was killed by a signal or cancelled
}

// Error says which job failed and with what status.
func (e *JobError) Error() string {
	return fmt.Sprintf("job %s failed with exit status %d", e.JobID, e.ExitCode)
}

// Submit submits the batch script at path with sbatch --parsable and
// returns the job id. With opts.Wait it returns when the job has ended.
func Submit(ctx context.Context, path string, opts SubmitOptions) (jobID string, err error) {
	sbatch := opts.Sbatch
	if sbatch == "" {
		sbatch = "sbatch"
	}
	args := []string{"--parsable"}
	if opts.Wait {
		args = append(args, "--wait")
	}
	var deps []string
	if len(opts.After) > 0 {
		deps = append(deps, "afterany:"+strings.Join(opts.After, ":"))
	}
	if len(opts.AfterOK) > 0 {
		deps = append(deps, "afterok:"+strings.Join(opts.AfterOK, ":"))
		args = append(args, "--kill-on-invalid-dep=yes")
	}
	if len(deps) > 0 {
		args = append(args, "--dependency="+strings.Join(deps, ","))
	}
	args = append(args, path)
	cmd := exec.CommandContext(ctx, sbatch, args...)
	cmd.Dir, cmd.Env = opts.Dir, opts.Env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", fmt.Errorf("run sbatch: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("run sbatch: %w", err)
	}

	// sbatch --parsable prints "ID" or "ID;CLUSTER" once the job is
	// queued, then, with --wait, stays until the job ends.
	sc := bufio.NewScanner(stdout)
	if sc.Scan() {
		jobID, _, _ = strings.Cut(strings.TrimSpace(sc.Text()), ";")
		if !isJobID(jobID) {
			jobID = ""
		}
	}
	if jobID != "" && opts.Submitted != nil {
		opts.Submitted(jobID)
	}
	_, _ = io.Copy(io.Discard, stdout)
	err = cmd.Wait()

	msg := strings.TrimSpace(stderr.String())
	if jobID == "" {
		if err == nil {
			err = errors.New("it printed no job id")
		}
		if msg != "" {
			return "", fmt.Errorf("sbatch %s: %w: %s", path, err, msg)
		}
		return "", fmt.Errorf("sbatch %s: %w", path, err)
	}
	if msg != "" && opts.Stderr != nil {
		fmt.Fprintln(opts.Stderr, msg)
	}
	if exit, ok := errors.AsType[*exec.ExitError](err); ok && opts.Wait && exit.ExitCode() > 0 {
		// sbatch --wait exits with the job's status.
		return jobID, &JobError{JobID: jobID, ExitCode: exit.ExitCode()}
	}
	if err != nil {
		return jobID, fmt.Errorf("sbatch %s (job %s): %w", path, jobID, err)
	}
	return jobID, nil
}

// isJobID reports whether s is a Slurm job id: a positive decimal number.
func isJobID(s string) bool {
	return s != "" && s[0] != '0' && strings.TrimLeft(s, "0123456789") == ""
}
