package numa

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// Worker describes one worker of a Pool.
type Worker struct {
	// ID numbers the workers from 0, domain after domain: domain 0's workers
	// come first.
	ID int
	// Domain is the index, in the pool's Topology.Domains, of the domain
	// whose CPUs the worker runs on.
	Domain int
	// Pinned reports whether the worker's thread is bound to exactly the CPUs
	// of its domain. It is false where the OS refused the binding.
	Pinned bool
}

// ErrClosed is returned by Run, For and Together on a closed Pool.
var ErrClosed = errors.New("numa: pool is closed")

// task is one call of a function on a worker; its result goes to done.
type task struct {
	fn   func(Worker) error
	done chan<- error
}

// Pool is a fixed set of workers, each a goroutine locked to its own OS
// thread and pinned to the CPUs of one NUMA domain. The workers live until
// Close, so their threads stay pinned from one Run to the next.
//
// Work runs on the pool in three ways: Run calls a function once on every
// worker, For deals a loop's chunks to the workers, and Together holds the
// workers in a Team for a stretch of many short loops (Team.Run, Team.For).
//
// Run may be called from several goroutines at once. Every worker executes
// the functions of concurrent Runs in the same order, so a function that
// waits for the other workers of its own Run (a barrier) does not
// deadlock. The functions must not call Run, For or Together on the same
// pool, which would deadlock, nor runtime.Goexit (t.FailNow in tests),
// which would end the worker and leave its caller waiting.
type Pool struct {
	workers      []Worker
	own          []chan task // own[i] feeds worker i, for Run
	domain       []chan task // domain[d] feeds any idle worker of domain d
	quit         chan struct{}
	exited       sync.WaitGroup
	memAvailable uint64 // this pool's share of the available memory at its start

	// mu serializes the hand-over of tasks, so that all workers receive
	// concurrent Runs in one order, and guards closed.
	mu     sync.Mutex
	closed bool
	// cpus is the number of CPUs of the pool's topology.
	cpus int
	opts Options
	prof profile
}

// Profile is how a pool's workers spent their time in parallel loops since
// the pool started: Run, For, and the Run and For of a Team. The time the
// caller spends between loops (the lead of a Team between its loops, too)
// is not in it: a trainer's serial part is its wall time less LoopS and its
// time in collectives.
type Profile struct {
	// Loops counts the parallel loops, and LoopS is the wall time from the
	// start of each to the return of its last worker, summed.
	Loops int64
	LoopS float64
	// BusyS is the time the workers spent computing in the loops, summed
	// over workers: Workers × LoopS were they all busy from start to end.
	BusyS float64
}

// Sub returns the profile of what was done between an earlier profile o
// and p.
func (p Profile) Sub(o Profile) Profile {
	return Profile{Loops: p.Loops - o.Loops, LoopS: p.LoopS - o.LoopS, BusyS: p.BusyS - o.BusyS}
}

// profile accumulates a Profile; its fields are nanoseconds and counts,
// added atomically by the workers.
type profile struct {
	loops, loopNs, busyNs atomic.Int64
}

// loop records a loop of wall time d.
func (p *profile) loop(d time.Duration) {
	p.loops.Add(1)
	p.loopNs.Add(int64(d))
}

// timed returns fn with its running time added to the busy time.
func (p *profile) timed(fn func(Worker) error) func(Worker) error {
	return func(w Worker) error {
		start := time.Now()
		defer func() { p.busyNs.Add(int64(time.Since(start))) }()
		return fn(w)
	}
}

// Waited records that a worker spent d of its part of one of the pool's
// loops waiting for work that another worker of the loop makes: the
// Profile counts that time idle, not busy (Team.Waited for a team's loops).
func (p *Pool) Waited(d time.Duration) { p.prof.busyNs.Add(-int64(d)) }

// Profile returns how the workers spent their time so far (see Profile).
func (p *Pool) Profile() Profile {
	return Profile{Loops: p.prof.loops.Load(), LoopS: time.Duration(p.prof.loopNs.Load()).Seconds(),
		BusyS: time.Duration(p.prof.busyNs.Load()).Seconds()}
}

// Options are the settings of a Pool that its user knows of the job and
// the pool cannot see for itself. The zero value is a pool alone on its
// CPUs that hands every loop to its workers.
type Options struct {
	// Log receives the pool's warnings (pinning refused) and its start
	// line; nil discards them.
	Log *slog.Logger
	// SharedBy is the number of pools of this size, this one included,
	// that run on the same CPUs: in-process ranks, or MPI ranks of one node
	// that are not bound apart (0 counts as 1). A Team waits spinning only
	// if the workers of all of them fit on the CPUs, one each (see Team).
	SharedBy int
	// InlineSingle lets For run the loops of a pool of one worker on the
	// calling goroutine, as that worker, rather than hand every loop to
	// the worker's thread and wait for it: that hand-off costs a thread
	// wake-up each way, and where CPUs are few (a pure-MPI job of one CPU
	// a rank, or ranks sharing a node's CPUs) the woken thread competes for
	// them with MPI threads, which poll for messages while they wait. Such
	// a pool also runs Together's body on its worker's thread (see
	// Together). The job sets it for the ranks of an MPI job, for a job of
	// one rank, and for ranks run as goroutines of one process whose
	// workers fit the CPUs, one each (their collectives then wait
	// spinning). Where they outnumber the CPUs, those ranks' collectives
	// park a waiting rank, and the Go scheduler queues the rank a
	// collective releases behind the goroutine that released it: a rank
	// that went straight on computing would delay the others. With it set,
	// For must not be called while the worker runs something else.
	InlineSingle bool
}

// NewPool starts threads workers over the domains of t and returns once
// every worker has pinned its thread, or failed to.
//
// The workers are spread in proportion to the domains' CPU counts and
// deterministically: each worker in turn goes to the domain with the fewest
// workers per CPU, the lowest index winning ties. Every domain thus gets a
// worker before any gets a second, so each domain has at least one worker
// when threads >= len(t.Domains); with fewer threads, the first domains get
// one each. Workers are numbered domain after domain (see Worker.ID).
//
// Each worker binds its thread to all CPUs of its domain, leaving the kernel
// to balance threads inside the domain. Where the OS refuses (EPERM or
// EINVAL in containers and cgroups, CPUs outside the cgroup), the worker
// runs unpinned and NewPool logs one warning for the whole pool on
// opts.Log.
func NewPool(t Topology, threads int, opts Options) (*Pool, error) {
	return newPool(t, threads, opts, pinThread)
}

// newPool is NewPool with the function that pins the calling thread to a
// CPU set given as pin, so that tests can simulate refusal.
func newPool(t Topology, threads int, opts Options, pin func(cpus []int) error) (*Pool, error) {
	if threads < 1 {
		return nil, fmt.Errorf("new pool: %d threads, need at least 1", threads)
	}
	if len(t.Domains) == 0 {
		return nil, errors.New("new pool: topology has no domains")
	}
	for i, d := range t.Domains {
		if len(d.CPUs) == 0 {
			return nil, fmt.Errorf("new pool: domain %d (node %d) has no CPUs", i, d.ID)
		}
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	opts.SharedBy = max(1, opts.SharedBy)

	counts := spread(t, threads)
	p := &Pool{
		cpus:         len(t.CPUs()),
		opts:         opts,
		memAvailable: AvailableMemory(os.ReadFile) / uint64(opts.SharedBy),
		workers:      make([]Worker, 0, threads),
		own:          make([]chan task, threads),
		domain:       make([]chan task, len(t.Domains)),
		quit:         make(chan struct{}),
	}
	for d, n := range counts {
		p.domain[d] = make(chan task)
		for range n {
			p.own[len(p.workers)] = make(chan task)
			p.workers = append(p.workers, Worker{ID: len(p.workers), Domain: d})
		}
	}

	pinErrs := make([]error, threads)
	var started sync.WaitGroup
	started.Add(threads)
	p.exited.Add(threads)
	for i := range p.workers {
		go p.work(&p.workers[i], t.Domains[p.workers[i].Domain].CPUs, pin, &pinErrs[i], &started)
	}
	started.Wait()

	refused := 0
	var firstErr error
	for _, err := range pinErrs {
		if err != nil {
			refused++
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	if refused > 0 {
		log.Warn("cannot pin worker threads to their NUMA domains; they run unpinned",
			"refused", refused, "workers", threads, "error", firstErr)
	}
	if cpus := len(t.CPUs()); threads > cpus {
		log.Info("more worker threads than CPUs", "threads", threads, "cpus", cpus)
	}
	log.Debug("worker pool started", "workers", threads, "domains", len(t.Domains), "per_domain", counts)
	return p, nil
}

// fitsCPUs reports whether the workers of all the pools that share the
// pool's CPUs (Options.SharedBy) are no more than the CPUs.
func (p *Pool) fitsCPUs() bool { return len(p.workers)*p.opts.SharedBy <= p.cpus }

// spread returns how many of threads workers each domain of t gets; see
// NewPool for the rule.
func spread(t Topology, threads int) []int {
	counts := make([]int, len(t.Domains))
	for range threads {
		best := 0
		for d := 1; d < len(counts); d++ {
			// counts[d]/cpus(d) < counts[best]/cpus(best), without division.
			if counts[d]*len(t.Domains[best].CPUs) < counts[best]*len(t.Domains[d].CPUs) {
				best = d
			}
		}
		counts[best]++
	}
	return counts
}

// work is the body of worker w: it pins its thread to cpus, records the
// outcome in w.Pinned and *pinErr, then runs tasks until the pool closes.
func (p *Pool) work(w *Worker, cpus []int, pin func([]int) error, pinErr *error, started *sync.WaitGroup) {
	defer p.exited.Done()
	// The thread stays locked for good: when this goroutine returns, the
	// runtime ends the thread instead of handing its narrowed affinity mask
	// to unrelated goroutines.
	runtime.LockOSThread()
	*pinErr = pin(cpus)
	w.Pinned = *pinErr == nil
	self := *w
	started.Done()

	own, domain := p.own[self.ID], p.domain[self.Domain]
	for {
		select {
		case t := <-own:
			t.done <- prefixed(self, call(self, t.fn))
		case t := <-domain:
			t.done <- call(self, t.fn)
		case <-p.quit:
			return
		}
	}
}

// call runs fn on w and turns a panic into an error carrying the stack, so
// that one failing function brings down neither the worker nor the process.
func call(w Worker, fn func(Worker) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	return fn(w)
}

// Workers returns a copy of the pool's workers, ordered by ID.
func (p *Pool) Workers() []Worker {
	return append([]Worker(nil), p.workers...)
}

// MemAvailable returns the pool's share of the memory available to the
// process when the pool started (see AvailableMemory; the pools that share
// the CPUs, Options.SharedBy, share it too), in bytes, 0 when unknown:
// what a trainer choosing between a copy of its data per worker and one
// per domain can afford.
func (p *Pool) MemAvailable() uint64 { return p.memAvailable }

// Domains returns the number of domains of the pool's topology; domains are
// numbered 0 to Domains()-1 in Worker.Domain and Replicas.
func (p *Pool) Domains() int {
	return len(p.domain)
}

// Run calls fn once on every worker, concurrently, each call on that
// worker's pinned thread, and waits for all calls to return. It returns the
// first error to occur, prefixed with the worker that returned it. A panic
// in fn is recovered and returned as an error with its stack; the worker
// remains usable.
func (p *Pool) Run(fn func(w Worker) error) error {
	start := time.Now()
	defer func() { p.prof.loop(time.Since(start)) }()
	return p.runAll(p.prof.timed(fn))
}

// submit hands fn to queue q, unless the pool is closed, and returns the
// channel on which its error will come.
func (p *Pool) submit(q chan task, fn func(Worker) error) (<-chan error, error) {
	done := make(chan error, 1)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrClosed
	}
	q <- task{fn: fn, done: done}
	return done, nil
}

// runAll calls fn on every worker and returns the first error: Run, and
// Together, whose function is not a loop of its own.
func (p *Pool) runAll(fn func(w Worker) error) error {
	done := make(chan error, len(p.workers))
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return ErrClosed
	}
	for _, c := range p.own {
		c <- task{fn: fn, done: done}
	}
	p.mu.Unlock()

	var first error
	for range p.workers {
		if err := <-done; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// prefixed returns err prefixed with worker w, which returned it (nil
// stays nil): how the errors of Run and For name their worker.
func prefixed(w Worker, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("worker %d (domain %d): %w", w.ID, w.Domain, err)
}

// For deals the range [0, n) to the pool's workers in chunks of chunk
// indices: each worker calls fn with the next chunk [lo, hi) as soon as it
// is done with its last one, so uneven chunks balance. It returns as Run
// does. A pool of one worker started with Options.InlineSingle runs the
// chunks on the calling goroutine, as that worker.
func (p *Pool) For(n, chunk int, fn func(w Worker, lo, hi int)) error {
	return p.loop(chunks(n, chunk, fn))
}

// loop calls fn on every worker, a parallel loop, as Run does; a pool of
// one worker started with Options.InlineSingle calls it on the calling
// goroutine, as that worker.
func (p *Pool) loop(fn func(w Worker) error) error {
	if len(p.workers) != 1 || !p.opts.InlineSingle {
		return p.Run(fn)
	}
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return ErrClosed
	}
	start := time.Now()
	defer func() { p.prof.loop(time.Since(start)) }()
	w := p.workers[0]
	return prefixed(w, call(w, p.prof.timed(fn)))
}

// chunks returns the function each worker of For runs: it calls fn with
// the next chunk of [0, n) not yet taken, chunk indices long (at least 1),
// until none is left.
func chunks(n, chunk int, fn func(w Worker, lo, hi int)) func(w Worker) error {
	chunk = max(chunk, 1)
	var next atomic.Int64
	return func(w Worker) error {
		for {
			lo := int(next.Add(int64(chunk))) - chunk
			if lo >= n {
				return nil
			}
			fn(w, lo, min(lo+chunk, n))
		}
	}
}

// runOnDomain calls fn on an idle worker of domain d, on that worker's pinned
// thread, waiting for one to become idle, and returns fn's error. A panic in
// fn is recovered and returned as an error with its stack.
func (p *Pool) runOnDomain(d int, fn func() error) error {
	if d < 0 || d >= len(p.domain) {
		return fmt.Errorf("run on domain %d: pool has %d domains", d, len(p.domain))
	}
	done, err := p.submit(p.domain[d], func(Worker) error { return fn() })
	if err != nil {
		return err
	}
	return <-done
}

// Close stops the workers once their current functions return, and ends
// their threads. It is safe to call more than once; Run, For and Together
// return ErrClosed afterwards.
func (p *Pool) Close() {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.quit)
	}
	p.mu.Unlock()
	p.exited.Wait()
}
