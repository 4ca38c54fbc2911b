package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"

	"xmc/internal/cli"
	"xmc/slurm"
)

// slurmUsage is the help text of xmc slurm.
const slurmUsage = `Usage: xmc slurm <subcommand> [flags] [--] <xmc command> [xmc flags]

Subcommands:
  script   print the sbatch script of an xmc run
  submit   submit an xmc run with sbatch and print its job id (--wait: wait for it, fail when it fails)
  scaling  submit a strong-scaling sweep over node and thread counts, one job per run

Example:
  xmc slurm submit --nodes 4 --cpus-per-task 32 --time 01:00:00 -- train --algo forest --data train.txt --trees 100

Run "xmc slurm <subcommand> -h" for its flags.
`

// runSlurm runs "xmc slurm <subcommand>": sbatch scripts and submissions of
// xmc runs in the production layout, one MPI rank per node.
func runSlurm(args []string) error {
	return slurmMain(args, os.Stdout, os.Stderr)
}

// slurmMain is runSlurm writing to stdout and stderr.
func slurmMain(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		io.WriteString(stderr, slurmUsage)
		if len(args) == 0 {
			return errUsage
		}
		return nil
	}
	switch args[0] {
	case "script":
		return slurmScript(args[1:], stdout, stderr)
	case "submit":
		return slurmSubmit(args[1:], stdout, stderr)
	case "scaling":
		return slurmScaling(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "xmc slurm: unknown subcommand %q (want script, submit or scaling)\n", args[0])
	return errUsage
}

// slurmFlags are the flags of the slurm subcommands that fill a slurm.Job.
type slurmFlags struct {
	job      slurm.Job
	launcher string
	extra    stringList
	modules  stringList
}

// register adds the flags; layout adds those of one run (its nodes, CPUs
// per task and output, an array of tasks, requeueing), which a scaling
// sweep sets per run or, for the last two, leaves out: a requeued run's
// summary would time only its last part.
func (f *slurmFlags) register(fs *flag.FlagSet, layout bool) {
	if layout {
		fs.IntVar(&f.job.Nodes, "nodes", 1, "nodes, one xmc rank on each")
		fs.IntVar(&f.job.CPUsPerTask, "cpus-per-task", 0, "CPUs of each rank, which runs one pinned worker thread per CPU (required)")
		fs.StringVar(&f.job.Output, "output", "", "the job's output `FILE`, with Slurm's patterns such as %j (default: Slurm's slurm-%j.out)")
		fs.StringVar(&f.job.Array, "array", "", "run a job array of these task `ids` (sbatch --array: 1-5, 0,4,8, 1-20%4); {task} in the xmc arguments becomes each task's id, e.g. --seed {task} --model-out m{task}.model")
		fs.IntVar(&f.job.Requeue, "requeue", 0, "put the job back in the queue up to `N` times when xmc stops at the signal, to resume from its checkpoint: a training longer than the time limit runs to its end")
	}
	fs.IntVar(&f.job.TasksPerNode, "ntasks-per-node", 1, "ranks per node; xmc's layout is one, more is for trying a cluster of one node")
	fs.StringVar(&f.job.Mem, "mem", "", "memory per node, e.g. 64G (default: the partition's)")
	fs.StringVar(&f.job.Time, "time", "", "time limit, e.g. 90, 01:30:00 or 1-12 (default: the partition's)")
	fs.StringVar(&f.job.Partition, "partition", "", "partition to run in")
	fs.StringVar(&f.job.Account, "account", "", "account to charge")
	fs.StringVar(&f.job.Name, "job-name", "", "job name (default: xmc-<command>)")
	fs.StringVar(&f.job.Signal, "signal", "USR1@120", "signal xmc gets SECONDS before the time limit, to stop cleanly and write its summary: USR1, TERM or INT @SECONDS (\"\": none)")
	fs.StringVar(&f.launcher, "launcher", string(slurm.Srun), "how the ranks start: srun (srun --mpi=pmix), mpirun (OpenMPI's, no hostfile needed) or none (xmc in the batch shell: one task, --ranks as goroutines)")
	fs.Var(&f.extra, "sbatch-line", "extra sbatch `option` such as --exclusive or --constraint=ib (repeatable)")
	fs.Var(&f.modules, "module", "environment `module` to load first (repeatable)")
	fs.StringVar(&f.job.Exe, "xmc", "", "the xmc `binary` the job runs, on a file system the nodes share (default: this one)")
}

// parse parses args and returns the job they describe, its xmc command line
// being what follows the flags (after "--").
func (f *slurmFlags) parse(fs *flag.FlagSet, args []string) (slurm.Job, error) {
	if err := parseFlags(fs, args, true); err != nil {
		return slurm.Job{}, err
	}
	j := f.job
	j.Launcher = slurm.Launcher(f.launcher)
	j.ExtraLines, j.Modules = f.extra, f.modules
	j.Args = fs.Args()
	if len(j.Args) == 0 {
		fmt.Fprintf(fs.Output(), "xmc %s: give the xmc command to run after --, e.g. -- train --data train.txt\n", fs.Name())
		fs.Usage()
		return j, errUsage
	}
	known := slices.ContainsFunc(commands(), func(c cli.Command) bool { return c.Name == j.Args[0] })
	if !known || j.Args[0] == "slurm" {
		return j, fmt.Errorf("%q is not an xmc command to run in a job (run \"xmc help\" for the commands)", j.Args[0])
	}
	if j.Name == "" {
		j.Name = "xmc-" + j.Args[0]
	}
	if j.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return j, fmt.Errorf("find the xmc binary (give it with --xmc): %w", err)
		}
		j.Exe = exe
	}
	if j.CPUsPerTask == 0 && fs.Lookup("cpus-per-task") != nil {
		return j, errors.New("--cpus-per-task is required: the CPUs of each rank, e.g. the cores of a node for one rank per node")
	}
	return j, nil
}

func slurmScript(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("slurm script", "slurm script --nodes N --cpus-per-task C [flags] -- <xmc command> [xmc flags]")
	fs.SetOutput(stderr)
	var f slurmFlags
	f.register(fs, true)
	j, err := f.parse(fs, args)
	if err != nil {
		return err
	}
	script, err := j.Script()
	if err != nil {
		return err
	}
	_, err = io.WriteString(stdout, script)
	return err
}

func slurmSubmit(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("slurm submit", "slurm submit --nodes N --cpus-per-task C [--wait] [flags] -- <xmc command> [xmc flags]")
	fs.SetOutput(stderr)
	var f slurmFlags
	f.register(fs, true)
	wait := fs.Bool("wait", false, "wait for the job to end; fail, naming its output, when it fails")
	merge := fs.String("then-merge", "", "with --array of train --label-range {task}/N --model-out ...{task}...: once every task succeeded, join the range models into `FILE` (xmc merge, a job of one CPU)")
	j, err := f.parse(fs, args)
	if err != nil {
		return err
	}
	var mergeJob slurm.Job
	if *merge != "" {
		if mergeJob, err = slurm.MergeJob(j, *merge); err != nil {
			return err
		}
	}
	ctx, stop := cli.SignalContext()
	defer stop()
	s := submitter{ctx: ctx, stdout: stdout, stderr: stderr}
	if *merge == "" {
		_, err := s.submit(j, slurm.SubmitOptions{Wait: *wait})
		return err
	}
	id, err := s.submit(j, slurm.SubmitOptions{})
	if err != nil {
		return err
	}
	_, err = s.submit(mergeJob, slurm.SubmitOptions{Wait: *wait, AfterOK: []string{id}})
	return err
}

// submitter submits jobs for xmc slurm submit: each job's id goes to
// stdout, what it is and where its output goes to stderr.
type submitter struct {
	ctx            context.Context
	stdout, stderr io.Writer
}

// submit writes j's script and submits it with opts, returning the job id.
func (s submitter) submit(j slurm.Job, opts slurm.SubmitOptions) (string, error) {
	script, err := j.Script()
	if err != nil {
		return "", err
	}
	path, keep, err := writeJobScript(j, script)
	if err != nil {
		return "", err
	}
	if !keep {
		defer os.Remove(path)
	}
	output := jobOutputPath(j, "%j")
	opts.Stderr = s.stderr
	opts.Submitted = func(id string) {
		output = jobOutputPath(j, id)
		fmt.Fprintln(s.stdout, id)
		fmt.Fprintf(s.stderr, "submitted job %s, %s (output %s)\n", id, j.Name, output)
	}
	id, err := slurm.Submit(s.ctx, path, opts)
	if jerr, ok := errors.AsType[*slurm.JobError](err); ok {
		return id, fmt.Errorf("%w; its output is %s%s", jerr, output, outputExcerpt(output))
	}
	if err != nil {
		return id, err
	}
	if opts.Wait {
		fmt.Fprintf(s.stderr, "job %s completed\n", id)
	}
	return id, nil
}

// writeJobScript writes script to a new file beside the job's output, kept
// as a record of the run, or to a temporary file when the output's
// directory is not known before submission; keep says which. It creates
// the output's directory: Slurm fails a job whose output it cannot open,
// without a word.
func writeJobScript(j slurm.Job, script string) (path string, keep bool, err error) {
	dir := filepath.Dir(j.Output)
	keep = j.Output != "" && !strings.Contains(dir, "%")
	if keep {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", false, fmt.Errorf("create the output directory: %w", err)
		}
	} else {
		dir = ""
	}
	f, err := os.CreateTemp(dir, j.Name+"-*.sbatch")
	if err != nil {
		return "", false, fmt.Errorf("write the job script: %w", err)
	}
	_, err = f.WriteString(script)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", false, fmt.Errorf("write the job script %s: %w", f.Name(), err)
	}
	return f.Name(), keep, nil
}

// jobOutputPath is the absolute path of the output of job id, relative
// paths being relative to the directory of submission (the job's).
func jobOutputPath(j slurm.Job, id string) string {
	name := ""
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	p := j.OutputPath(id, name)
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	return p
}

// outputExcerpt returns the lines of the job output at path that explain a
// failure, indented, for an error message: xmc's own error lines ("xmc
// train: ...", one per rank), or else the last lines of the output.
// Launchers pad xmc's messages with their own (MPI_ABORT notices, srun
// errors), which would bury them in a plain tail. It returns nothing when
// the output cannot be read.
func outputExcerpt(path string) string {
	const most = 5
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	var picked []string
	for _, l := range lines {
		if (strings.HasPrefix(l, "xmc ") || strings.HasPrefix(l, "xmc:")) && !slices.Contains(picked, l) && len(picked) < most {
			picked = append(picked, l)
		}
	}
	if len(picked) == 0 {
		picked = lines[max(0, len(lines)-2*most):]
	}
	return "\n  | " + strings.Join(picked, "\n  | ")
}

func slurmScaling(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("slurm scaling", "slurm scaling --out DIR [--nodes-list 1,2,4 --threads-list 16,32 --repeats 3 --chain] [flags] -- <xmc command> [xmc flags]")
	fs.SetOutput(stderr)
	var f slurmFlags
	f.register(fs, false)
	nodes := fs.String("nodes-list", "1,2,4", "node counts to run, comma-separated")
	threads := fs.String("threads-list", "", "CPUs per task (worker threads per rank) to run, comma-separated (required)")
	repeats := fs.Int("repeats", 3, "runs of every combination, interleaved")
	out := fs.String("out", "", "`DIR` for the runs' summaries, outputs and scripts (required; must hold no summaries)")
	chain := fs.Bool("chain", false, "run the jobs one after the other (each depends on the previous) instead of independently; consider also --sbatch-line --exclusive")
	dryRun := fs.Bool("dry-run", false, "write the scripts but submit nothing")
	j, err := f.parse(fs, args)
	if err != nil {
		return err
	}
	if *out == "" {
		return errors.New("--out is required")
	}
	if *threads == "" {
		return errors.New("--threads-list is required: the CPUs per task to run, e.g. 16,32")
	}
	ns, err := cli.IntList("nodes-list", *nodes)
	if err != nil {
		return err
	}
	ts, err := cli.IntList("threads-list", *threads)
	if err != nil {
		return err
	}
	dir, err := filepath.Abs(*out)
	if err != nil {
		return err
	}
	runs, err := slurm.Sweep{Base: j, Nodes: ns, Threads: ts, Repeats: *repeats, Dir: dir}.Runs()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create --out: %w", err)
	}
	if old, _ := filepath.Glob(filepath.Join(dir, "*.json")); len(old) > 0 {
		return fmt.Errorf("--out %s already holds %s; use a new directory so that xmc-bench report sees this sweep's runs only", *out, filepath.Base(old[0]))
	}

	ctx, stop := cli.SignalContext()
	defer stop()
	var prev string
	for _, r := range runs {
		script, err := r.Job.Script()
		if err != nil {
			return fmt.Errorf("run %s: %w", r.Tag, err)
		}
		if err := os.WriteFile(r.Script, []byte(script), 0o644); err != nil {
			return fmt.Errorf("write the job script: %w", err)
		}
		if *dryRun {
			fmt.Fprintf(stdout, "%s %s\n", r.Tag, r.Script)
			continue
		}
		opts := slurm.SubmitOptions{Stderr: stderr}
		if *chain && prev != "" {
			opts.After = []string{prev}
		}
		id, err := slurm.Submit(ctx, r.Script, opts)
		if err != nil {
			return fmt.Errorf("run %s: %w", r.Tag, err)
		}
		fmt.Fprintf(stdout, "%s %s\n", r.Tag, id)
		prev = id
	}
	if *dryRun {
		fmt.Fprintf(stdout, "# submit each with sbatch; when they have finished: xmc-bench report %s\n", *out)
	} else {
		fmt.Fprintf(stdout, "# when the jobs have finished: xmc-bench report %s\n", *out)
	}
	return nil
}
