package main

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
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"sync"
	"syscall"
	"time"

	"xmc/bench"
	"xmc/mpi"
	"xmc/numa"
)

// jobOptions are the flags every command that does work shares: how the job
// is laid out (ranks, threads, NUMA domains) and what it reports.
type jobOptions struct {
	ranks       int
	threads     int
	numaSim     int
	commTimeout time.Duration
	commReport  bool
	summary     string
	verbose     bool
	timeLimit   time.Duration
	cpuProfile  string
}

func (o *jobOptions) register(fs *flag.FlagSet) {
	fs.IntVar(&o.ranks, "ranks", 1, "run `N` ranks as goroutines of this process (in-process backend); under mpirun/srun the launcher sets the ranks")
	fs.IntVar(&o.threads, "threads", 0, "worker threads per rank (0: SLURM_CPUS_PER_TASK, else the CPUs of the rank's affinity mask)")
	fs.IntVar(&o.numaSim, "numa-sim", 0, "simulate `K` NUMA domains by splitting the rank's CPUs (0: real topology)")
	fs.DurationVar(&o.commTimeout, "comm-timeout", 10*time.Minute, "abort the job when a communication makes no progress for this long (0: never)")
	fs.BoolVar(&o.commReport, "comm-report", false, "print the per-rank communication table at the end")
	fs.StringVar(&o.summary, "summary", "", "write the run's JSON summary to `FILE`")
	fs.BoolVar(&o.verbose, "v", false, "log from every rank, not only rank 0")
	fs.DurationVar(&o.timeLimit, "time-limit", 0, "stop cleanly after this long, keeping finished work (0: none)")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile (go tool pprof) to `FILE` (under MPI: FILE.rank-R, one per rank)")
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

// job is one rank's view of a running command: its communicator, its pinned
// workers, its logger, and the measurements that go into the summary.
type job struct {
	ctx     context.Context
	comm    *mpi.Counted
	rank    int
	size    int
	topo    numa.Topology
	pool    *numa.Pool
	threads int
	log     *slog.Logger
	backend string
	hosts   []string // on rank 0

	gc *gcPause // shared by the ranks of this process

	mu      sync.Mutex
	phases  map[string]float64
	summary bench.Summary // filled by the command on rank 0
}

// gcPause turns Go's garbage collector off while ranks of this process
// build the data they keep for the whole run, and restores the previous
// setting (GOGC) once the last of them is done. A collection while the
// heap grows to that data finds almost nothing to free (a parser's chunks
// stay live until joined into the matrices), yet each one stops the world:
// a Bibtex load took about 16. Pausing them cut a 2-rank Bibtex run's load
// from 0.07 to 0.04-0.05 s (alternating runs, medians of 6 and of 8), peak
// memory within 2 MiB. A memory limit (GOMEMLIMIT) still triggers
// collections.
type gcPause struct {
	mu      sync.Mutex
	pausing int // ranks between begin and end
	saved   int // the GC percentage to restore
}

// begin pauses the collector; every begin needs its end.
func (g *gcPause) begin() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.pausing == 0 {
		g.saved = debug.SetGCPercent(-1)
	}
	g.pausing++
}

// end resumes the collector once no rank of the process pauses it.
func (g *gcPause) end() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.pausing--; g.pausing == 0 {
		debug.SetGCPercent(g.saved)
	}
}

// phase runs fn and records its wall time under name (one of bench.Phases).
func (j *job) phase(name string, fn func() error) error {
	start := time.Now()
	err := fn()
	j.mu.Lock()
	j.phases[name] += time.Since(start).Seconds()
	j.mu.Unlock()
	return err
}

// runJob runs body on every rank of a job laid out by opts: under an MPI
// launcher one rank per process, otherwise opts.ranks goroutine ranks. The
// first error on any rank ends the whole job with that rank's message,
// prefixed with its rank.
func runJob(command string, opts jobOptions, body func(j *job) error) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGUSR1, syscall.SIGINT)
	defer stop()
	if opts.timeLimit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, opts.timeLimit, fmt.Errorf("--time-limit %v reached", opts.timeLimit))
		defer cancel()
	}
	start := time.Now()
	if mpi.LaunchedByMPI() {
		if opts.ranks > 1 {
			return fmt.Errorf("--ranks %d is for the in-process backend; under an MPI launcher the number of ranks comes from mpirun -np or srun", opts.ranks)
		}
		c, err := mpi.Init()
		if err != nil {
			return err
		}
		if opts.cpuProfile != "" {
			stopProfile, err := startCPUProfile(fmt.Sprintf("%s.rank-%d", opts.cpuProfile, c.Rank()))
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
			if !isInterrupt(err) {
				c.Abort(1, err.Error())
			}
		}
		if ferr := mpi.Finalize(); err == nil {
			err = ferr
		}
		return err
	}
	if opts.ranks < 1 {
		return fmt.Errorf("--ranks must be at least 1, got %d", opts.ranks)
	}
	if opts.cpuProfile != "" {
		stopProfile, err := startCPUProfile(opts.cpuProfile)
		if err != nil {
			return err
		}
		defer stopProfile()
	}
	gc := &gcPause{}
	return mpi.Launch(opts.ranks, func(c mpi.Comm) error {
		return runRank(ctx, command, opts, c, "in-process", opts.ranks, start, gc, body)
	})
}

func runRank(ctx context.Context, command string, opts jobOptions, raw mpi.Comm, backend string, sharing int, start time.Time, gc *gcPause, body func(j *job) error) error {
	rank := raw.Rank()
	level := slog.LevelInfo
	if rank != 0 && !opts.verbose {
		level = slog.LevelWarn
	}
	j := &job{
		ctx: ctx, comm: mpi.NewCounted(raw, opts.commTimeout), rank: rank, size: raw.Size(),
		log: newRankLogger(os.Stderr, rank, level), backend: backend, gc: gc, phases: map[string]float64{},
	}
	if backend == mpi.Backend {
		// Which point-to-point layer carries the messages: the user's,
		// the one Init picks for a one-node job, or OpenMPI's default.
		pml := "openmpi default"
		if v, ok := os.LookupEnv("OMPI_MCA_pml"); ok {
			pml = v
		}
		j.log.Info("mpi", "library", backend, "pml", pml)
	}
	if err := j.setupWorkers(opts, sharing); err != nil {
		return err
	}
	defer j.pool.Close()
	host, _ := os.Hostname()
	hosts, err := j.comm.Gatherv([]byte(host), 0)
	if err != nil {
		return err
	}
	for _, h := range hosts {
		j.hosts = append(j.hosts, string(h))
	}
	j.summary = bench.Summary{
		Version: version, CommandLine: os.Args, Command: command, Status: "ok", Backend: backend,
		Ranks: j.size, ThreadsPerRank: j.threads, NUMADomains: len(j.topo.Domains), Hosts: j.hosts,
		Slurm: slurmFields(os.Getenv),
	}
	if sl := j.summary.Slurm; len(sl) > 0 {
		// Every rank knows its task; rank 0's line shows unless -v.
		j.log.Info("slurm", "job_id", sl["SLURM_JOB_ID"], "procid", sl["SLURM_PROCID"], "nodes", sl["SLURM_NNODES"],
			"cpus_per_task", sl["SLURM_CPUS_PER_TASK"])
	}

	bodyErr := body(j)
	if bodyErr != nil && !isInterrupt(bodyErr) {
		return bodyErr
	}
	if bodyErr != nil {
		j.summary.Status = "interrupted"
	}
	if err := j.finish(opts, start); err != nil {
		return err
	}
	if bodyErr != nil {
		return bodyErr
	}
	return nil
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

// setupWorkers detects the topology (or simulates one), chooses the thread
// count and starts the pinned worker pool. sharing is the number of ranks
// that share this process's CPUs: in-process ranks always split them (and
// SLURM_CPUS_PER_TASK), unbound MPI ranks on one node split them when each
// sees every CPU.
func (j *job) setupWorkers(opts jobOptions, sharing int) error {
	topo, err := numa.Detect()
	if err != nil {
		return fmt.Errorf("detect NUMA topology: %w", err)
	}
	if opts.numaSim > 0 {
		if topo, err = topo.Simulate(opts.numaSim); err != nil {
			return fmt.Errorf("--numa-sim: %w", err)
		}
	}
	cpus := len(topo.CPUs())
	inProcess := j.backend == "in-process"
	if cpus == runtime.NumCPU() || inProcess {
		cpus = max(1, cpus/sharing)
	}
	threads, source, err := numa.ThreadCount(opts.threads, os.Getenv, cpus)
	if err != nil {
		return err
	}
	if inProcess && source == "SLURM_CPUS_PER_TASK" {
		// In-process ranks share the one task's CPUs.
		threads = max(1, threads/sharing)
	}
	if threads < len(topo.Domains) {
		// Every domain that holds a data replica needs a worker of its own.
		j.log.Warn("fewer threads than NUMA domains; using the first domains only", "threads", threads, "domains", len(topo.Domains))
		topo.Domains = topo.Domains[:threads]
	}
	j.topo, j.threads = topo, threads
	j.pool, err = numa.NewPool(topo, threads, j.log)
	if err != nil {
		return err
	}
	j.log.Debug("workers", "threads", threads, "from", source, "domains", len(topo.Domains))
	return nil
}

// finish reduces the phase times (max over ranks), gathers peak memory and
// communication figures, and on rank 0 prints the comm report and writes
// the summary.
func (j *job) finish(opts jobOptions, start time.Time) error {
	times := make([]float64, len(bench.Phases)+1)
	for i, p := range bench.Phases {
		times[i] = j.phases[p]
	}
	times[len(bench.Phases)] = time.Since(start).Seconds()
	if err := j.comm.ReduceFloat64(times, mpi.Max, 0); err != nil {
		return err
	}
	rss, err := j.comm.Gather(int64Bytes(peakRSS()), 0)
	if err != nil {
		return err
	}
	stats, err := mpi.GatherStats(j.comm, j.comm.Stats())
	if err != nil {
		return err
	}
	if j.rank != 0 {
		return nil
	}
	s := &j.summary
	s.SetPhases(times)
	s.WallS = times[len(bench.Phases)]
	for _, b := range rss {
		s.PeakRSSBytes = append(s.PeakRSSBytes, bytesInt64(b))
	}
	s.Comm = stats
	if opts.commReport {
		if err := mpi.WriteReport(os.Stderr, stats); err != nil {
			return err
		}
	}
	if opts.summary != "" {
		if err := s.WriteFile(opts.summary); err != nil {
			return err
		}
		j.log.Info("summary written", "path", opts.summary)
	}
	return nil
}

func isInterrupt(err error) bool { return errors.Is(err, errInterrupted) }

// errInterrupted is wrapped by command errors caused by a signal or the time
// limit; the job still writes its summary before exiting non-zero.
var errInterrupted = errors.New("interrupted")

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

func int64Bytes(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }

func bytesInt64(b []byte) int64 {
	if len(b) != 8 {
		return 0
	}
	return int64(binary.LittleEndian.Uint64(b))
}
