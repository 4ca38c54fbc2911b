// Package job is the life of one xmc command on every rank of a job: it
// starts the ranks (one per process under mpirun or srun, or goroutines of
// one process for laptops and tests), sets up each rank's communicator,
// pinned worker pool and logger, stops cleanly on a signal or the time
// limit, ends the whole job when any rank fails, and keeps the run record
// (Summary) that --summary writes.
package job

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"syscall"
	"time"

	"xmc/atomicfile"
	"xmc/mpi"
	"xmc/numa"
)

// Options are the flags every command that does work shares: how the job
// is laid out (ranks, threads, NUMA domains) and what it reports.
type Options struct {
	Ranks       int
	Threads     int
	NUMASim     int
	CommTimeout time.Duration
	CommReport  bool
	SummaryPath string
	Verbose     bool
	TimeLimit   time.Duration
	CPUProfile  string
	// MaxMessage bounds the bytes of one MPI transfer: larger ones are
	// split (mpi.Split). 0 means mpi.MaxMessage.
	MaxMessage int
	// Version is xmc's version, recorded in the summary; it is set by the
	// program, not by a flag.
	Version string
}

// Register adds the options' flags to fs.
func (o *Options) Register(fs *flag.FlagSet) {
	fs.IntVar(&o.Ranks, "ranks", 1, "run `N` ranks as goroutines of this process (in-process backend); under mpirun/srun the launcher sets the ranks")
	fs.IntVar(&o.Threads, "threads", 0, "worker threads per rank (0: SLURM_CPUS_PER_TASK, else the CPUs of the rank's affinity mask)")
	fs.IntVar(&o.NUMASim, "numa-sim", 0, "simulate `K` NUMA domains by splitting the rank's CPUs (0: real topology)")
	fs.DurationVar(&o.CommTimeout, "comm-timeout", 10*time.Minute, "abort the job when a communication makes no progress for this long (0: never)")
	fs.BoolVar(&o.CommReport, "comm-report", false, "print the per-rank communication table at the end")
	fs.StringVar(&o.SummaryPath, "summary", "", "write the run's JSON summary to `FILE`")
	fs.BoolVar(&o.Verbose, "v", false, "log from every rank, not only rank 0")
	fs.DurationVar(&o.TimeLimit, "time-limit", 0, "stop cleanly after this long, keeping finished work, and exit with status 3 (0: no limit)")
	fs.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile (go tool pprof) to `FILE` (under MPI: FILE.rank-R, one per rank)")
	fs.IntVar(&o.MaxMessage, "max-message", mpi.MaxMessage, "split every transfer between ranks into messages of at most `BYTES` (MPI's own limit is 2^31-1; the in-process backend refuses larger ones too)")
}

// ErrInterrupted is wrapped by the error of a command stopped by a signal
// or the time limit: every rank agreed to stop, so the job still ends in
// order (the summary is written, MPI finalised) before exiting with
// ExitInterrupted, the status by which a script or a Slurm job tells a run
// to resume from one that failed.
var ErrInterrupted error = interrupted{}

// ExitInterrupted is the exit status of a command stopped cleanly before
// its end (ErrInterrupted): the same command run again resumes from its
// checkpoint. A failure exits 1, a usage error 2.
const ExitInterrupted = 3

// interrupted is ErrInterrupted's type, which carries its exit status.
type interrupted struct{}

func (interrupted) Error() string { return "interrupted" }

// ExitStatus returns ExitInterrupted, the status the command exits with
// (see cli.Program.Run).
func (interrupted) ExitStatus() int { return ExitInterrupted }

// stopContext returns a context that is done once one of the signals of a
// clean stop arrives or limit passes (0: no limit), its cause saying
// which, and the function that releases it. Once the context is done, the
// release keeps catching the signals until the process exits: every rank
// then ends with ErrInterrupted at about the same moment, and a signal on
// the way out (srun signals the tasks still running when the first one
// exits) must not kill a rank and change its exit status.
func stopContext(limit time.Duration) (context.Context, func()) {
	parent, cancel := context.WithCancelCause(context.Background())
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGUSR1, syscall.SIGINT)
	go func() {
		select {
		case sig := <-signals:
			cancel(fmt.Errorf("signal %v", sig))
		case <-parent.Done():
		}
	}()
	ctx, stopTimer := parent, context.CancelFunc(func() {})
	if limit > 0 {
		ctx, stopTimer = context.WithTimeoutCause(parent, limit, fmt.Errorf("--time-limit %v reached", limit))
	}
	return ctx, func() {
		if ctx.Err() == nil {
			signal.Stop(signals)
		}
		stopTimer()
		cancel(nil)
	}
}

// Rank is one rank's view of a running command: its communicator, its
// pinned workers, its logger, and the measurements that go into the
// summary.
type Rank struct {
	// Ctx is done once a signal (SIGTERM, SIGUSR1, SIGINT) arrives or the
	// time limit passes; its cause says which (see StopReason).
	Ctx context.Context
	// Comm connects the ranks and accounts every message.
	Comm *mpi.Counted
	// ID is this rank, in [0, Size).
	ID, Size int
	// Topo is the NUMA topology the workers run on, and Pool the workers.
	Topo    numa.Topology
	Pool    *numa.Pool
	Threads int
	// Log writes the rank's log lines; ranks other than 0 log only
	// warnings unless -v.
	Log *slog.Logger
	// Backend names the communicator: mpi.Backend or "in-process".
	Backend string
	// Hosts lists the host of every rank, on rank 0.
	Hosts []string
	// Summary is the run record, filled by the command on rank 0 and
	// written at the end with the phase times, peak memory and
	// communication figures of every rank.
	Summary Summary

	gc *gcPause // shared by the ranks of this process

	mu     sync.Mutex
	phases map[string]float64
}

// Phase runs fn and adds its wall time to the phase name (one of Phases).
func (r *Rank) Phase(name string, fn func() error) error {
	start := time.Now()
	err := fn()
	r.AddPhase(name, time.Since(start))
	return err
}

// AddPhase adds d to the phase name, for time measured by the caller (a
// phase interleaved with another).
func (r *Rank) AddPhase(name string, d time.Duration) {
	r.mu.Lock()
	r.phases[name] += d.Seconds()
	r.mu.Unlock()
}

// PhaseSeconds returns the wall time recorded so far under the phase name.
func (r *Rank) PhaseSeconds(name string) float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.phases[name]
}

// StopReason says why the rank stops before its work is done: the signal
// or the time limit that ended Ctx, or, where Ctx is not done, that
// another rank stopped (ranks agree to stop together).
func (r *Rank) StopReason() string {
	if cause := context.Cause(r.Ctx); cause != nil {
		return cause.Error()
	}
	return "another rank stopped"
}

// PauseGC turns Go's garbage collector off while the rank builds data it
// keeps for the whole run (see gcPause); every PauseGC needs its ResumeGC.
func (r *Rank) PauseGC() { r.gc.begin() }

// ResumeGC ends a PauseGC.
func (r *Rank) ResumeGC() { r.gc.end() }

// GCHeadroom lets the heap grow by at least bytes past the live data
// before Go's garbage collector runs, while the rank's workers grow what
// they keep together (see gcPause); the function it returns ends it.
func (r *Rank) GCHeadroom(bytes uint64) (end func()) {
	r.gc.beginRoom(bytes)
	return r.gc.endRoom
}

// Run runs body on every rank of a job laid out by opts: under an MPI
// launcher one rank per process, otherwise opts.Ranks goroutine ranks. The
// first error on any rank ends the whole job with that rank's message,
// prefixed with its rank; an error wrapping ErrInterrupted, which every
// rank returns together, ends it in order.
func Run(command string, opts Options, body func(r *Rank) error) error {
	ctx, stop := stopContext(opts.TimeLimit)
	defer stop()
	start := time.Now()
	limit := opts.MaxMessage
	if limit == 0 {
		limit = mpi.MaxMessage
	}
	if limit < mpi.MinMessage || limit > mpi.MaxMessage {
		return fmt.Errorf("--max-message %d: want %d to %d bytes", limit, mpi.MinMessage, mpi.MaxMessage)
	}
	if err := atomicfile.CheckPath(opts.SummaryPath); err != nil {
		return fmt.Errorf("--summary %w: give a file's path", err)
	}
	if mpi.LaunchedByMPI() {
		if opts.Ranks > 1 {
			return fmt.Errorf("--ranks %d is for the in-process backend; under an MPI launcher the number of ranks comes from mpirun -np or srun", opts.Ranks)
		}
		raw, err := mpi.Init()
		if err != nil {
			return err
		}
		c, err := mpi.Split(raw, limit)
		if err != nil {
			raw.Abort(1, err.Error())
			return err
		}
		if opts.CPUProfile != "" {
			stopProfile, err := startCPUProfile(fmt.Sprintf("%s.rank-%d", opts.CPUProfile, c.Rank()))
			if err != nil {
				c.Abort(1, err.Error())
				return err
			}
			defer stopProfile()
		}
		err = runRank(ctx, command, opts, c, mpi.Backend, mpiRanksSharingCPUs(), start, &gcPause{}, body)
		if err != nil {
			err = fmt.Errorf("rank %d: %w", c.Rank(), err)
			// Make sure the other ranks end now rather than at their next
			// collective's watchdog. An interruption is agreed by every
			// rank and ends in order: finalize, then exit non-zero.
			if !errors.Is(err, ErrInterrupted) {
				c.Abort(1, err.Error())
			}
		}
		if ferr := mpi.Finalize(); err == nil {
			err = ferr
		}
		return err
	}
	if opts.Ranks < 1 {
		return fmt.Errorf("--ranks must be at least 1, got %d", opts.Ranks)
	}
	if opts.CPUProfile != "" {
		stopProfile, err := startCPUProfile(opts.CPUProfile)
		if err != nil {
			return err
		}
		defer stopProfile()
	}
	spin, err := inProcessSpin(opts)
	if err != nil {
		return err
	}
	gc := &gcPause{}
	// The backend refuses what Split would not split, as MPI does.
	return mpi.LaunchSpinning(opts.Ranks, limit, spin, func(raw mpi.Comm) error {
		c, err := mpi.Split(raw, limit)
		if err != nil {
			return err
		}
		return runRank(ctx, command, opts, c, "in-process", opts.Ranks, start, gc, body)
	})
}

// startCPUProfile starts Go's CPU profiler writing to path, for
// --cpuprofile, and returns the function that stops it and closes the file.
// One profile covers the whole process, so in-process ranks share one.
func startCPUProfile(path string) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile %s: %w", path, err)
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

func runRank(ctx context.Context, command string, opts Options, raw mpi.Comm, backend string, sharing int, start time.Time, gc *gcPause, body func(r *Rank) error) error {
	id := raw.Rank()
	level := slog.LevelInfo
	if id != 0 && !opts.Verbose {
		level = slog.LevelWarn
	}
	r := &Rank{
		Ctx: ctx, Comm: mpi.NewCounted(raw, opts.CommTimeout), ID: id, Size: raw.Size(),
		Log: NewRankLogger(os.Stderr, id, level), Backend: backend, gc: gc, phases: map[string]float64{},
	}
	if backend == mpi.Backend {
		// Which point-to-point layer carries the messages: the user's,
		// the one Init picks for a one-node job, or OpenMPI's default.
		pml := "openmpi default"
		if v, ok := os.LookupEnv("OMPI_MCA_pml"); ok {
			pml = v
		}
		r.Log.Info("mpi", "library", backend, "pml", pml)
	}
	if err := r.setupWorkers(opts, sharing); err != nil {
		return err
	}
	defer r.Pool.Close()
	host, _ := os.Hostname()
	hosts, err := r.Comm.Gatherv([]byte(host), 0, nil)
	if err != nil {
		return err
	}
	for _, h := range hosts {
		r.Hosts = append(r.Hosts, string(h))
	}
	r.Summary = Summary{
		Version: opts.Version, CommandLine: os.Args, Command: command, Status: "ok", Backend: backend,
		Ranks: r.Size, ThreadsPerRank: r.Threads, NUMADomains: len(r.Topo.Domains), Hosts: r.Hosts,
		Slurm: slurmFields(os.Getenv),
	}
	if sl := r.Summary.Slurm; len(sl) > 0 {
		// Every rank knows its task; rank 0's line shows unless -v.
		r.Log.Info("slurm", "job_id", sl["SLURM_JOB_ID"], "procid", sl["SLURM_PROCID"], "nodes", sl["SLURM_NNODES"],
			"cpus_per_task", sl["SLURM_CPUS_PER_TASK"])
	}

	bodyErr := body(r)
	if bodyErr != nil && !errors.Is(bodyErr, ErrInterrupted) {
		return bodyErr
	}
	if bodyErr != nil {
		r.Summary.Status = "interrupted"
	}
	if err := r.finish(opts, start); err != nil {
		return err
	}
	return bodyErr
}

// mpiRanksSharingCPUs is the number of MPI ranks of this job on this node
// when they all see every CPU (mpirun --bind-to none, several ranks per node
// for a test): their default thread counts then split the CPUs instead of
// oversubscribing them. A launcher that binds ranks (mpirun's default,
// Slurm's task affinity) already gives each its own CPUs.
func mpiRanksSharingCPUs() int {
	n, err := strconv.Atoi(os.Getenv("OMPI_COMM_WORLD_LOCAL_SIZE"))
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// setupWorkers lays out the rank's workers (workerLayout) and starts its
// pinned worker pool. sharing is the number of ranks that share this
// process's CPUs (see workerLayout).
func (r *Rank) setupWorkers(opts Options, sharing int) error {
	inProcess := r.Backend == "in-process"
	topo, threads, source, shared, err := workerLayout(opts, sharing, inProcess)
	if err != nil {
		return err
	}
	fit := workersFitCPUs(topo, threads, sharing)
	if threads < len(topo.Domains) {
		// Every domain that holds a data replica needs a worker of its own.
		r.Log.Warn("fewer threads than NUMA domains; using the first domains only", "threads", threads, "domains", len(topo.Domains))
		topo.Domains = topo.Domains[:threads]
	}
	r.Topo, r.Threads = topo, threads
	// The workers are locked to their threads and keep every P of the Go
	// scheduler busy while they train; one P more lets the goroutines that
	// serve other ranks (rank 0's dealer of units and progress listener,
	// receives that poll) run when a message comes rather than when a
	// worker is next preempted.
	procs := threads + 1
	if inProcess {
		procs = threads*sharing + 1
	}
	if runtime.GOMAXPROCS(0) < procs {
		runtime.GOMAXPROCS(procs)
	}
	po := numa.Options{Log: r.Log, SharedBy: 1,
		// A rank of one worker runs its loops itself, unless the ranks are
		// goroutines of this process whose workers outnumber the CPUs (see
		// numa.Options.InlineSingle and inProcessSpin).
		InlineSingle: !inProcess || r.Comm.Size() == 1 || fit}
	if shared {
		po.SharedBy = sharing
	}
	if r.Pool, err = numa.NewPool(topo, threads, po); err != nil {
		return err
	}
	r.Log.Debug("workers", "threads", threads, "from", source, "domains", len(topo.Domains))
	return nil
}

// workerLayout detects the topology (or simulates one) and chooses a rank's
// thread count, for sharing ranks that share the CPUs if shared: in-process
// ranks always split them (and SLURM_CPUS_PER_TASK), unbound MPI ranks on
// one node split them when each sees every CPU.
func workerLayout(opts Options, sharing int, inProcess bool) (topo numa.Topology, threads int, source string, shared bool, err error) {
	topo, err = numa.Detect()
	if err != nil {
		return topo, 0, "", false, fmt.Errorf("detect NUMA topology: %w", err)
	}
	if opts.NUMASim > 0 {
		if topo, err = topo.Simulate(opts.NUMASim); err != nil {
			return topo, 0, "", false, fmt.Errorf("--numa-sim: %w", err)
		}
	}
	cpus := len(topo.CPUs())
	shared = cpus == runtime.NumCPU() || inProcess
	if shared {
		cpus = max(1, cpus/sharing)
	}
	threads, source, err = numa.ThreadCount(opts.Threads, os.Getenv, cpus)
	if err != nil {
		return topo, 0, "", false, err
	}
	if inProcess && source == "SLURM_CPUS_PER_TASK" {
		// In-process ranks share the one task's CPUs.
		threads = max(1, threads/sharing)
	}
	return topo, threads, source, shared, nil
}

// inProcessSpin returns how long in-process ranks wait spinning in their
// collectives before parking (mpi.LaunchSpinning): numa.TeamSpin where the
// ranks' workers fit the CPUs, one each, and 0 (park at once) where they
// outnumber them. A rank of one worker then also runs its loops itself, and
// its rounds on its worker's pinned thread (numa.Options.InlineSingle):
// the rank that a collective releases is already running, not queued
// behind the one that released it. Where the workers take every CPU this
// still wins: on a 16-core node, PD-Sparse's 16 ranks of one thread
// trained 1.3-1.4 times faster spinning, MEMOIR's 1.4 times, 2 ranks of 8
// threads and 4 of 4 1.25-1.6 times (docs/scaling/16-core.md, run 18; run
// 9 had found the opposite while the collectives' barrier took a lock, on
// which a rank could block behind ranks spinning on every CPU).
func inProcessSpin(opts Options) (time.Duration, error) {
	topo, threads, _, _, err := workerLayout(opts, opts.Ranks, true)
	if err != nil || !workersFitCPUs(topo, threads, opts.Ranks) {
		return 0, err
	}
	return numa.TeamSpin, nil
}

// workersFitCPUs reports whether ranks ranks of threads workers each fit
// the CPUs of topo, one a CPU: where they do, in-process ranks spin in
// their collectives and run one-worker loops themselves.
func workersFitCPUs(topo numa.Topology, threads, ranks int) bool {
	return threads*ranks <= len(topo.CPUs())
}

// finish reduces the phase times (max over ranks), gathers peak memory and
// communication figures, and on rank 0 prints the comm report and writes
// the summary.
func (r *Rank) finish(opts Options, start time.Time) error {
	times := make([]float64, len(Phases)+1)
	for i, p := range Phases {
		times[i] = r.PhaseSeconds(p)
	}
	times[len(Phases)] = time.Since(start).Seconds()
	if err := r.Comm.ReduceFloat64(times, mpi.Max, 0); err != nil {
		return err
	}
	rss, err := r.Comm.Gather(binary.LittleEndian.AppendUint64(nil, uint64(peakRSS())), 0)
	if err != nil {
		return err
	}
	stats, err := mpi.GatherStats(r.Comm, r.Comm.Stats())
	if err != nil {
		return err
	}
	if r.ID != 0 {
		return nil
	}
	s := &r.Summary
	s.SetPhases(times)
	s.WallS = times[len(Phases)]
	for _, b := range rss {
		s.PeakRSSBytes = append(s.PeakRSSBytes, int64(binary.LittleEndian.Uint64(b)))
	}
	s.Comm = stats
	if opts.CommReport {
		if err := mpi.WriteReport(os.Stderr, stats); err != nil {
			return err
		}
	}
	if opts.SummaryPath != "" {
		if err := s.WriteFile(opts.SummaryPath); err != nil {
			return err
		}
		r.Log.Info("summary written", "path", opts.SummaryPath)
	}
	return nil
}

// slurmFields picks the Slurm variables worth keeping in a summary.
func slurmFields(getenv func(string) string) map[string]string {
	m := map[string]string{}
	for _, k := range []string{"SLURM_JOB_ID", "SLURM_JOB_NAME", "SLURM_PROCID", "SLURM_NNODES", "SLURM_NTASKS",
		"SLURM_CPUS_PER_TASK", "SLURM_JOB_NODELIST", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURM_CLUSTER_NAME"} {
		if v := getenv(k); v != "" {
			m[k] = v
		}
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// peakRSS is the process's peak resident set size in bytes. With the
// in-process backend all ranks share one process and report the same value.
func peakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss * 1024 // Linux reports KiB
}
