// Package slurm renders and submits the sbatch scripts that run xmc on a
// Slurm cluster, in xmc's production layout: one MPI rank per node, started
// by srun --mpi=pmix or by mpirun, each rank using the CPUs of its task for
// its pinned worker threads (xmc reads SLURM_CPUS_PER_TASK).
//
// A Job describes one run and renders its script; Submit hands a script to
// sbatch; a Sweep expands a strong-scaling study into Jobs. The local/
// directory holds shell scripts that bring up a single-node Slurm cluster
// for testing.
package slurm

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Launcher names how a batch script starts xmc's ranks.
type Launcher string

const (
	// Srun starts one rank per task with srun --mpi=pmix. It needs an MPI
	// build of xmc and Slurm's PMIx plugin (Debian: libpmix-dev).
	Srun Launcher = "srun"
	// Mpirun starts the ranks with OpenMPI's mpirun, which takes the
	// nodes and task counts from the Slurm allocation: no hostfile.
	Mpirun Launcher = "mpirun"
	// Direct runs xmc in the batch shell itself, without an MPI launcher:
	// one task on one node, ranks as goroutines (xmc --ranks N).
	Direct Launcher = "none"
)

// Job is one xmc run on a Slurm cluster: its resources, the sbatch options
// and the xmc command line. The zero value of an optional field leaves the
// choice to Slurm (or the cluster's defaults).
type Job struct {
	// Name is the job name (sbatch --job-name); optional.
	Name string
	// Nodes is the number of nodes, at least 1.
	Nodes int
	// TasksPerNode is the number of tasks (ranks) per node; 0 means 1,
	// xmc's production layout. More than one is for single-node tests.
	TasksPerNode int
	// CPUsPerTask is the number of CPUs of each task, at least 1: the
	// worker threads of each rank.
	CPUsPerTask int
	// Mem is the memory per node in Slurm's syntax: a number of megabytes,
	// or a number with a K, M, G or T suffix; optional.
	Mem string
	// Time is the time limit in one of Slurm's formats: "minutes",
	// "minutes:seconds", "hours:minutes:seconds", "days-hours",
	// "days-hours:minutes" or "days-hours:minutes:seconds"; optional.
	Time string
	// Partition and Account are the partition and the account to charge;
	// optional.
	Partition, Account string
	// Output is the path of the job's stdout and stderr, with Slurm's
	// patterns such as %j (job id) and %x (job name); empty means Slurm's
	// default, slurm-%j.out in the submission directory.
	Output string
	// Signal asks Slurm to send a signal before the time limit, as
	// "SIG@SECONDS", e.g. "USR1@120". SIG is one xmc handles by stopping
	// cleanly and writing its summary: USR1, TERM or INT. Empty sends none.
	Signal string
	// Requeue is how many times at most a run that xmc stopped cleanly at
	// the signal (exit status 3, its finished work in its checkpoint) is
	// put back in the queue, to resume from its checkpoint in the same job
	// id (sbatch --requeue; Slurm counts the restarts in
	// SLURM_RESTART_COUNT), so that a training longer than the time limit
	// runs to its end. It needs Signal. 0 never requeues.
	Requeue int
	// Array makes the job an array of tasks with these ids (sbatch
	// --array: "1-5", "0,4,8", "1-20%4"); optional. In Args the text
	// ArrayTask becomes each task's id, so that the tasks differ, e.g.
	// "--seed", ArrayTask.
	Array string
	// ExtraLines are further sbatch options, one per #SBATCH line, such as
	// "--exclusive" or "--constraint=ib" (a leading "#SBATCH" is allowed).
	ExtraLines []string
	// Modules are environment modules to load before the run.
	Modules []string
	// Launcher starts the ranks; empty means Srun.
	Launcher Launcher
	// Exe is the xmc executable to run.
	Exe string
	// Args are xmc's arguments, starting with its command, e.g.
	// {"train", "--algo", "forest", "--data", "train.txt"}.
	Args []string
}

// ArrayTask, in an argument of a job array's xmc command (Job.Args), stands
// for the id of the array task that runs it.
const ArrayTask = "{task}"

// managedField returns the Job field that sets the sbatch option opt
// ("--nodes", "-N"), or "" when the Job leaves opt alone. Extra lines may
// not set these options again: sbatch would take whichever came last.
func managedField(opt string) string {
	switch opt {
	case "--job-name", "-J":
		return "Name"
	case "--nodes", "-N":
		return "Nodes"
	case "--ntasks", "-n":
		return "Nodes and TasksPerNode"
	case "--ntasks-per-node":
		return "TasksPerNode"
	case "--cpus-per-task", "-c":
		return "CPUsPerTask"
	case "--mem":
		return "Mem"
	case "--time", "-t":
		return "Time"
	case "--partition", "-p":
		return "Partition"
	case "--account", "-A":
		return "Account"
	case "--output", "-o":
		return "Output"
	case "--signal":
		return "Signal"
	case "--array", "-a":
		return "Array"
	case "--requeue", "--no-requeue", "--open-mode":
		return "Requeue"
	}
	return ""
}

// Patterns of the Mem and Signal fields (see Job).
var (
	memRE    = regexp.MustCompile(`^[0-9]+[KMGT]?$`)
	arrayRE  = regexp.MustCompile(`^[0-9]+(-[0-9]+(:[0-9]+)?)?(,[0-9]+(-[0-9]+(:[0-9]+)?)?)*(%[0-9]+)?$`)
	signalRE = regexp.MustCompile(`^(?:SIG)?(USR1|TERM|INT)@([0-9]+)$`)
)

// tasksPerNode returns TasksPerNode with its default applied.
func (j Job) tasksPerNode() int {
	if j.TasksPerNode == 0 {
		return 1
	}
	return j.TasksPerNode
}

// launcher returns Launcher with its default applied.
func (j Job) launcher() Launcher {
	if j.Launcher == "" {
		return Srun
	}
	return j.Launcher
}

// Validate reports the first field of j that sbatch would reject, or that
// would make the script run something other than what j describes.
func (j Job) Validate() error {
	if j.Nodes < 1 {
		return fmt.Errorf("nodes must be at least 1, got %d", j.Nodes)
	}
	if j.TasksPerNode < 0 {
		return fmt.Errorf("tasks per node must be at least 1, got %d", j.TasksPerNode)
	}
	if j.CPUsPerTask < 1 {
		return fmt.Errorf("CPUs per task must be at least 1, got %d", j.CPUsPerTask)
	}
	switch l := j.launcher(); l {
	case Srun, Mpirun:
	case Direct:
		if j.Nodes != 1 || j.tasksPerNode() != 1 {
			return fmt.Errorf("launcher %q runs one task on one node, not %d nodes with %d tasks each; use srun or mpirun, or xmc --ranks for ranks in one process",
				l, j.Nodes, j.tasksPerNode())
		}
	default:
		return fmt.Errorf("unknown launcher %q (want %s, %s or %s)", l, Srun, Mpirun, Direct)
	}
	if j.Mem != "" && !memRE.MatchString(j.Mem) {
		return fmt.Errorf("memory %q: want a number of megabytes, optionally with a K, M, G or T suffix, e.g. 64G", j.Mem)
	}
	var limit time.Duration
	if j.Time != "" {
		var err error
		if limit, err = ParseTime(j.Time); err != nil {
			return err
		}
	}
	switch {
	case j.Requeue < 0:
		return fmt.Errorf("requeue %d: want how many times at most to requeue the job, 0 for never", j.Requeue)
	case j.Requeue > 0 && j.Signal == "":
		return errors.New("a job requeued to resume needs the signal that stops xmc cleanly before the time limit")
	}
	if j.Signal != "" {
		lead, err := checkSignal(j.Signal)
		if err != nil {
			return err
		}
		if limit > 0 && lead >= limit {
			return fmt.Errorf("signal %q would come at the start of the job: %v is not less than the time limit %s", j.Signal, lead, j.Time)
		}
	}
	for _, f := range []struct{ what, v string }{
		{"job name", j.Name}, {"partition", j.Partition}, {"account", j.Account}, {"output path", j.Output},
	} {
		if err := checkSbatchValue(f.what, f.v); err != nil {
			return err
		}
	}
	for _, line := range j.ExtraLines {
		if _, err := sbatchLine(line); err != nil {
			return err
		}
	}
	for _, m := range j.Modules {
		if strings.TrimSpace(m) == "" || strings.ContainsAny(m, "\x00\n\r") {
			return fmt.Errorf("module name %q: want a non-empty name on one line", m)
		}
	}
	if j.Exe == "" {
		return errors.New("no xmc executable given")
	}
	if len(j.Args) == 0 {
		return errors.New("no xmc command given (e.g. train --data FILE ...)")
	}
	for _, a := range append([]string{j.Exe}, j.Args...) {
		if strings.ContainsRune(a, 0) {
			return fmt.Errorf("argument %q contains a NUL byte, which no shell can pass", a)
		}
	}
	return j.validateArray()
}

// validateArray checks the Array field, and that ArrayTask appears in the
// arguments only of a job array.
func (j Job) validateArray() error {
	if j.Array != "" && !arrayRE.MatchString(j.Array) {
		return fmt.Errorf("array %q: want task ids as sbatch --array takes them, e.g. 1-5, 0,4,8 or 1-20%%4", j.Array)
	}
	if j.Array == "" && slices.ContainsFunc(j.Args, func(a string) bool { return strings.Contains(a, ArrayTask) }) {
		return fmt.Errorf("%s in the xmc arguments stands for an array task's id: give the job an array of tasks", ArrayTask)
	}
	return nil
}

// checkSbatchValue rejects values sbatch would split or misread on an
// #SBATCH line: sbatch does not run the shell over these lines, so quoting
// cannot protect them.
func checkSbatchValue(what, v string) error {
	if i := strings.IndexFunc(v, func(r rune) bool {
		return r <= ' ' || r == 0x7f || r == '"' || r == '\''
	}); i >= 0 {
		return fmt.Errorf("%s %q: spaces, quotes and control characters are not allowed on #SBATCH lines", what, v)
	}
	return nil
}

// checkSignal validates a Signal field (see Job.Signal) and returns how
// long before the time limit the signal comes.
func checkSignal(s string) (time.Duration, error) {
	if strings.Contains(s, ":") {
		return 0, fmt.Errorf("signal %q: give SIG@SECONDS without a B: or R: prefix; the script chooses who receives it from the launcher", s)
	}
	m := signalRE.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("signal %q: want SIG@SECONDS with SIG one of USR1, TERM, INT (the signals xmc stops cleanly on), e.g. USR1@120", s)
	}
	secs, err := strconv.Atoi(m[2])
	if err != nil || secs > 65535 {
		return 0, fmt.Errorf("signal %q: Slurm sends signals at most 65535 s before the time limit", s)
	}
	return time.Duration(secs) * time.Second, nil
}

// sbatchLine returns the option of an extra #SBATCH line, without the
// "#SBATCH" prefix, after checking it is one option on one line that the
// Job does not set itself.
func sbatchLine(line string) (string, error) {
	opt := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "#SBATCH"))
	if strings.ContainsAny(opt, "\x00\n\r") {
		return "", fmt.Errorf("sbatch line %q: must be a single line", line)
	}
	if !strings.HasPrefix(opt, "-") {
		return "", fmt.Errorf("sbatch line %q: want an sbatch option such as --exclusive or --constraint=ib", line)
	}
	name, _, _ := strings.Cut(strings.Fields(opt)[0], "=")
	if !strings.HasPrefix(name, "--") && len(name) > 2 {
		name = name[:2] // a short option with its value attached: -N2
	}
	if field := managedField(name); field != "" {
		return "", fmt.Errorf("sbatch line %q: %s is set by the job's %s, not by an extra line", line, name, field)
	}
	return opt, nil
}

// Script renders j as an sbatch script, after validating it.
//
// The script loads the modules, exports the thread settings and replaces
// the batch shell with the launcher. The pre-time-limit signal goes where
// xmc runs: srun's job steps for Srun (--signal=SIG@T), the batch shell for
// Mpirun, where mpirun forwards SIGUSR1 and SIGTERM to every rank, and for
// Direct, where xmc is the batch shell (--signal=B:SIG@T). With Requeue the
// batch shell stays, passes the signal on to mpirun or xmc, and requeues
// the job when xmc exits with ExitInterrupted.
func (j Job) Script() (string, error) {
	if err := j.Validate(); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("#!/bin/bash\n")
	opt := func(name, v string) {
		if v != "" {
			fmt.Fprintf(&b, "#SBATCH --%s=%s\n", name, v)
		}
	}
	opt("job-name", j.Name)
	opt("nodes", fmt.Sprint(j.Nodes))
	opt("ntasks-per-node", fmt.Sprint(j.tasksPerNode()))
	opt("cpus-per-task", fmt.Sprint(j.CPUsPerTask))
	opt("mem", j.Mem)
	opt("time", j.Time)
	opt("partition", j.Partition)
	opt("account", j.Account)
	opt("output", j.Output)
	opt("array", j.Array)
	launcher := j.launcher()
	if j.Signal != "" {
		if launcher == Srun {
			opt("signal", j.Signal)
		} else {
			opt("signal", "B:"+j.Signal)
		}
	}
	if j.Requeue > 0 {
		// A requeued job's runs append to one output file.
		b.WriteString("#SBATCH --requeue\n#SBATCH --open-mode=append\n")
	}
	for _, line := range j.ExtraLines {
		o, _ := sbatchLine(line) // checked by Validate
		fmt.Fprintf(&b, "#SBATCH %s\n", o)
	}

	b.WriteString("\n# Rendered by xmc slurm. Each rank runs SLURM_CPUS_PER_TASK pinned worker threads.\n")
	if j.Signal != "" {
		sig, secs, _ := strings.Cut(strings.TrimPrefix(j.Signal, "SIG"), "@")
		fmt.Fprintf(&b, "# SIG%s %s s before the time limit makes xmc stop cleanly and write its summary.\n", sig, secs)
	}
	b.WriteString("set -eu\n")
	for _, m := range j.Modules {
		fmt.Fprintf(&b, "module load %s\n", Quote(m))
	}
	b.WriteString(`export OMP_NUM_THREADS="$SLURM_CPUS_PER_TASK" GOMAXPROCS="$SLURM_CPUS_PER_TASK"` + "\n")

	var cmd []string
	switch launcher {
	case Srun:
		// Since Slurm 22.05 srun no longer inherits --cpus-per-task from
		// sbatch; without it every task would get one CPU. A task that
		// exits with an error without reaching MPI_Abort (a crash) ends
		// the step rather than leaving the others waiting on it.
		cmd = append(cmd, "srun", "--mpi=pmix", "--kill-on-bad-exit=1", `--cpus-per-task="$SLURM_CPUS_PER_TASK"`)
	case Mpirun:
		// Binding would confine each rank to a core or a socket; xmc pins
		// its own threads within the CPUs of its task. Short out-of-band
		// keepalives let mpirun notice a lost node within xmc's
		// --comm-timeout (OpenMPI 4.1's mpirun can otherwise hang when a
		// rank's abort reaches it first).
		cmd = append(cmd, "mpirun", `-np "$SLURM_NTASKS"`, "--bind-to none", "-x OMP_NUM_THREADS", "-x GOMAXPROCS",
			"--mca oob_tcp_keepalive_time 10 --mca oob_tcp_keepalive_intvl 5 --mca oob_tcp_keepalive_probes 3")
	}
	cmd = append(cmd, Quote(j.Exe))
	for _, a := range j.Args {
		cmd = append(cmd, quoteArg(a))
	}
	run := strings.Join(cmd, " ")
	if j.Requeue == 0 {
		b.WriteString("exec " + run + "\n")
		return b.String(), nil
	}
	if launcher == Srun {
		b.WriteString("status=0\n" + run + " || status=$?\n")
	} else {
		// The signal comes to this shell, which no longer execs the
		// run: pass it on, the trap set before the run starts. wait
		// returns early when the signal comes; the run's own status is
		// that of the wait that sees it end.
		sig, _, _ := strings.Cut(strings.TrimPrefix(j.Signal, "SIG"), "@")
		fmt.Fprintf(&b, "pid=\ntrap 'kill -%s \"$pid\" 2>/dev/null || :' %s\n%s &\npid=$!\n", sig, sig, run)
		b.WriteString("while :; do\n\tstatus=0\n\twait \"$pid\" || status=$?\n\tkill -0 \"$pid\" 2>/dev/null || break\ndone\n")
	}
	fmt.Fprintf(&b, `# xmc exits %d when it stopped cleanly at the signal, its finished work in its
# checkpoint: put the job back in the queue to resume, at most %d times.
if [ "$status" -eq %d ] && [ "${SLURM_RESTART_COUNT:-0}" -lt %d ]; then
	scontrol requeue "$SLURM_JOB_ID" || echo "xmc slurm: scontrol requeue failed: submit the job again to resume" >&2
fi
exit "$status"
`, ExitInterrupted, j.Requeue, ExitInterrupted, j.Requeue)
	return b.String(), nil
}

// ExitInterrupted is xmc's exit status for a run stopped cleanly before its
// end, which the same command run again resumes (job.ExitInterrupted; the
// slurm package does not depend on the job package).
const ExitInterrupted = 3

// OutputPath returns the path Slurm writes the job's output to, given its
// job id and the submitting user: Output (or Slurm's default, slurm-%j.out,
// or slurm-%A_%a.out for a job array) with the patterns %j, %A (both the
// job id), %x (the job name), %u (the user) and %% replaced. Other
// patterns, which depend on the node or task (%a, an array task's id), are
// left as they are.
func (j Job) OutputPath(jobID, user string) string {
	pattern := j.Output
	switch {
	case pattern == "" && j.Array != "":
		pattern = "slurm-%A_%a.out"
	case pattern == "":
		pattern = "slurm-%j.out"
	}
	var b strings.Builder
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		if c != '%' || i+1 == len(pattern) {
			b.WriteByte(c)
			continue
		}
		i++
		switch pattern[i] {
		case 'j', 'A':
			b.WriteString(jobID)
		case 'x':
			b.WriteString(j.Name)
		case 'u':
			b.WriteString(user)
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(pattern[i])
		}
	}
	return b.String()
}

// HasArg reports whether the xmc arguments set the flag name ("summary"
// for -summary, --summary, --summary=FILE).
func (j Job) HasArg(name string) bool {
	return slices.ContainsFunc(j.Args, func(a string) bool {
		a, _, _ = strings.Cut(a, "=")
		return a == "-"+name || a == "--"+name
	})
}

// quoteArg returns the xmc argument a as one shell word, each ArrayTask in
// it expanded to the array task's id.
func quoteArg(a string) string {
	parts := strings.Split(a, ArrayTask)
	words := make([]string, 0, 2*len(parts))
	for i, p := range parts {
		if i > 0 {
			words = append(words, `"$SLURM_ARRAY_TASK_ID"`)
		}
		if p != "" || len(parts) == 1 {
			words = append(words, Quote(p))
		}
	}
	return strings.Join(words, "")
}
