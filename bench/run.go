package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dustin/go-humanize"

	"xmc/job"
)

// Launcher kinds.
const (
	// InProc runs a job as one xmc process whose ranks are goroutines
	// (xmc train --ranks R).
	InProc = "inproc"
	// MPIRun runs a job under mpirun, one xmc-mpi process per rank.
	MPIRun = "mpirun"
)

// Launcher starts xmc on a layout.
type Launcher struct {
	Kind   string // InProc or MPIRun
	XMC    string // the pure-Go xmc binary, for InProc
	XMCMPI string // the MPI build, for MPIRun
	// MPIRun is the mpirun program and the flags that go before -np, for
	// MPIRun and for references that use {mpirun}.
	MPIRun []string
}

// DefaultMPIRun returns the mpirun command line bench uses unless told
// otherwise: --oversubscribe lets a study ask for more ranks than cores, and
// --bind-to none leaves thread placement to xmc (which pins its workers to
// the rank's affinity mask), where OpenMPI's default binding would confine
// every rank to one core whatever --threads says.
func DefaultMPIRun() []string { return []string{"mpirun", "--oversubscribe", "--bind-to", "none"} }

// Check reports whether the launcher's binary exists, with advice when it
// does not.
func (ln Launcher) Check() error {
	bin, hint := ln.XMC, "build it with: go build -o bin/xmc ."
	switch ln.Kind {
	case InProc:
	case MPIRun:
		bin, hint = ln.XMCMPI, "build it with: make build (or go build -tags mpi -o bin/xmc-mpi .), or use --launcher inproc"
		if len(ln.MPIRun) == 0 {
			return errors.New("launcher mpirun: no mpirun command given")
		}
		if _, err := exec.LookPath(ln.MPIRun[0]); err != nil {
			return fmt.Errorf("launcher mpirun: %w (install OpenMPI: apt-get install openmpi-bin libopenmpi-dev libpmix-dev)", err)
		}
	default:
		return fmt.Errorf("launcher %q: want %s or %s", ln.Kind, InProc, MPIRun)
	}
	if st, err := os.Stat(bin); err != nil || st.IsDir() {
		return fmt.Errorf("launcher %s: no xmc binary at %q: %s", ln.Kind, bin, hint)
	}
	return nil
}

// Command returns the command line that runs "xmc sub args..." on layout
// l: "xmc sub --ranks R --threads T args..." for InProc, and
// "mpirun ... -np R xmc-mpi sub --threads T args..." for MPIRun.
func (ln Launcher) Command(l Layout, sub string, args []string) []string {
	var argv []string
	if ln.Kind == MPIRun {
		argv = append(argv, ln.MPIRun...)
		argv = append(argv, "-np", strconv.Itoa(l.Ranks), ln.XMCMPI, sub)
	} else {
		argv = append(argv, ln.XMC, sub, "--ranks", strconv.Itoa(l.Ranks))
	}
	argv = append(argv, "--threads", strconv.Itoa(l.Threads))
	return append(argv, args...)
}

// checkOwnFlags rejects flags in args that bench sets itself.
func checkOwnFlags(args []string, own ...string) error {
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") {
			for _, o := range own {
				if name == o {
					return fmt.Errorf("extra xmc flag %s: bench sets --%s itself", a, o)
				}
			}
		}
	}
	return nil
}

// run is one finished command.
type run struct {
	wall   time.Duration // from start to exit, measured here
	output []byte        // standard output and error, interleaved
}

// runLogged runs argv and writes its command line, output and exit status
// to logPath. The command runs in a process group of its own, so that
// cancelling ctx (bench's SIGINT or SIGTERM) reaches everything it started,
// a shell's children included: the group gets SIGTERM (mpirun passes it on
// to the ranks and cleans up), the command SIGKILL 30 s later. A failure
// returns an error holding the end of the output and the log's path.
func runLogged(ctx context.Context, argv []string, logPath string) (run, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return run{}, fmt.Errorf("run log: %w", err)
	}
	defer f.Close()
	fmt.Fprintf(f, "$ %s\n", ShellJoin(argv))
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdout = io.MultiWriter(f, &out)
	cmd.Stderr = cmd.Stdout
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	start := time.Now()
	err = cmd.Run()
	r := run{wall: time.Since(start), output: out.Bytes()}
	fmt.Fprintf(f, "# exit: %v; wall %.3f s\n", exitText(err), r.wall.Seconds())
	if err := f.Close(); err != nil {
		return r, fmt.Errorf("run log: %w", err)
	}
	if err != nil {
		if ctx.Err() != nil {
			return r, fmt.Errorf("%s: %w", filepath.Base(argv[0]), context.Cause(ctx))
		}
		return r, fmt.Errorf("%s: %w; its output ends:\n%s\n(whole log: %s)", filepath.Base(argv[0]), err, tail(r.output, 15), logPath)
	}
	return r, nil
}

func exitText(err error) string {
	if err == nil {
		return "0"
	}
	return err.Error()
}

// tail returns the last n lines of b, indented.
func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  " + strings.Join(lines, "\n  ")
}

// ShellJoin quotes argv for a POSIX shell, for logs and for command
// templates: words made only of safe characters stay as they are, others
// are single-quoted.
func ShellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("@%_-+=:,./", c)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ScaleConfig describes a strong-scaling study on this machine.
type ScaleConfig struct {
	Launcher Launcher
	Layouts  []Layout
	Repeats  int
	// Warmup runs are made first, on the layout with the most cores, and
	// not recorded: they fill the page cache with the data set and the
	// binary, which would otherwise slow the first recorded run only.
	Warmup int
	// TrainArgs are the xmc train flags of every run (data, algorithm,
	// trees, ...). RunScale adds the layout, --summary, and --model-out
	// into a scratch file with --checkpoint none, so that gather and write
	// are timed and a leftover checkpoint never shortens a run.
	TrainArgs []string
	// Dir receives the summaries, named "<ranks>x<threads>-r<repeat>.json",
	// and the runs' logs under Dir/logs.
	Dir string
	// Progress receives a line per run; nil discards them.
	Progress io.Writer
}

// RunScale runs the study and returns the summaries of the recorded runs.
// Runs are interleaved: every layout once, then every layout again, each
// round starting one layout further, so that drift of the machine (thermal
// throttling, other jobs) hits every layout alike. A failed run ends the
// study; the summaries written so far stay in Dir for xmc-bench report. Dir
// must not hold summaries already, so that a study never mixes with an
// older one.
func RunScale(ctx context.Context, c ScaleConfig) ([]*job.Summary, error) {
	logs, err := c.start()
	if err != nil {
		return nil, err
	}
	progress := c.Progress
	if progress == nil {
		progress = io.Discard
	}
	scratch := filepath.Join(c.Dir, "scratch.model")
	defer removeScratch(scratch)
	args := func(summary string) []string {
		a := append([]string{"--model-out", scratch, "--checkpoint", "none"}, c.TrainArgs...)
		if summary != "" {
			a = append(a, "--summary", summary)
		}
		return a
	}

	widest := c.Layouts[0]
	for _, l := range c.Layouts {
		if l.Cores() > widest.Cores() {
			widest = l
		}
	}
	for i := range c.Warmup {
		log := filepath.Join(logs, fmt.Sprintf("warmup-%s-%d.log", widest, i+1))
		fmt.Fprintf(progress, "warm-up %d/%d on %s (not recorded)\n", i+1, c.Warmup, widest)
		if _, err := runLogged(ctx, c.Launcher.Command(widest, "train", args("")), log); err != nil {
			return nil, fmt.Errorf("warm-up run: %w", err)
		}
		removeScratch(scratch)
	}

	total := c.Repeats * len(c.Layouts)
	var runs []*job.Summary
	for rep := 1; rep <= c.Repeats; rep++ {
		for k := range c.Layouts {
			l := c.Layouts[(k+rep-1)%len(c.Layouts)]
			name := fmt.Sprintf("%s-r%d", l, rep)
			summary := filepath.Join(c.Dir, name+".json")
			r, err := runLogged(ctx, c.Launcher.Command(l, "train", args(summary)), filepath.Join(logs, name+".log"))
			removeScratch(scratch)
			if err != nil {
				return runs, fmt.Errorf("run %s: %w", name, err)
			}
			s, err := job.ReadSummary(summary)
			if err != nil {
				return runs, fmt.Errorf("run %s: %w", name, err)
			}
			if s.Ranks != l.Ranks || s.ThreadsPerRank != l.Threads {
				return runs, fmt.Errorf("run %s: the job ran as %dx%d, not %s (check the launcher and SLURM_CPUS_PER_TASK)",
					name, s.Ranks, s.ThreadsPerRank, l)
			}
			runs = append(runs, s)
			fmt.Fprintf(progress, "[%*d/%d] %-6s rep %d: train %.3f s, wall %.3f s (process %.3f s)%s\n",
				len(strconv.Itoa(total)), len(runs), total, l, rep, s.TrainS, s.WallS, r.wall.Seconds(), metricNote(s.Metrics))
		}
	}
	return runs, nil
}

// start checks the study's settings and makes its directory of logs,
// which it returns; Dir must hold no run summaries yet.
func (c ScaleConfig) start() (string, error) {
	switch {
	case len(c.Layouts) == 0:
		return "", errors.New("scale: no layout to run")
	case c.Repeats < 1:
		return "", fmt.Errorf("scale: --repeats must be at least 1, got %d", c.Repeats)
	case c.Warmup < 0:
		return "", fmt.Errorf("scale: --warmup must not be negative, got %d", c.Warmup)
	}
	if err := checkOwnFlags(c.TrainArgs, "ranks", "threads", "summary", "checkpoint"); err != nil {
		return "", err
	}
	if err := c.Launcher.Check(); err != nil {
		return "", err
	}
	logs := filepath.Join(c.Dir, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return "", fmt.Errorf("scale: %w", err)
	}
	if old, _, err := LoadSummaries(c.Dir); err != nil {
		return "", err
	} else if len(old) > 0 {
		return "", fmt.Errorf("scale: %s already holds %d run summaries (%s, ...); give a new --out directory or remove them",
			c.Dir, len(old), filepath.Base(old[0].Source))
	}
	return logs, nil
}

// studyRun is one xmc train run of a study (accuracy, shapes), recorded
// in the summary file Name.json of the study's directory.
type studyRun struct {
	Name string
	// Args returns the run's xmc train flags, but --summary; it is called
	// only when the run is due (a scale study generates its data then).
	Args func() ([]string, error)
}

// runMissing runs, in order, the runs whose summary dir does not hold yet,
// so that a study can be resumed or extended, each logged to
// dir/logs/Name.log and reported on progress. A run that exits with an
// error but leaves its summary (stopped by a --time-limit given to every
// run) counts; cancelling ctx ends the study.
func runMissing(ctx context.Context, ln Launcher, l Layout, dir string, runs []studyRun, progress io.Writer) error {
	logs := filepath.Join(dir, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return err
	}
	if progress == nil {
		progress = io.Discard
	}
	for i, r := range runs {
		summary := filepath.Join(dir, r.Name+".json")
		if _, err := os.Stat(summary); err == nil {
			fmt.Fprintf(progress, "[%d/%d] %s: done before\n", i+1, len(runs), r.Name)
			continue
		}
		args, err := r.Args()
		if err != nil {
			return err
		}
		argv := ln.Command(l, "train", append(args, "--summary", summary))
		res, runErr := runLogged(ctx, argv, filepath.Join(logs, r.Name+".log"))
		if ctx.Err() != nil {
			return runErr
		}
		s, err := job.ReadSummary(summary)
		if err != nil {
			if runErr != nil {
				return fmt.Errorf("run %s: %w", r.Name, runErr)
			}
			return fmt.Errorf("run %s: %w", r.Name, err)
		}
		fmt.Fprintf(progress, "[%d/%d] %s: %s, train %.1f s (process %.1f s), peak RSS %s%s\n", i+1, len(runs), r.Name, s.Status,
			s.TrainS, res.wall.Seconds(), humanize.IBytes(uint64(largestRSS(s.PeakRSSBytes))), metricNote(s.Metrics))
	}
	return nil
}

// largestRSS returns the largest of the ranks' peak memory, 0 for none.
func largestRSS(rss []int64) int64 {
	if len(rss) == 0 {
		return 0
	}
	return slices.Max(rss)
}

func metricNote(m map[string]float64) string {
	if v, ok := m["P@1"]; ok {
		return fmt.Sprintf(", P@1 %.2f", v)
	}
	return ""
}

// removeScratch deletes a scratch model and, if the run sharded it, its
// shards.
func removeScratch(path string) {
	matches, _ := filepath.Glob(path + "*")
	for _, m := range matches {
		os.RemoveAll(m)
	}
}
