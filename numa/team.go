package numa

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Team is every worker of a pool held together by one of them, the lead,
// for a stretch of many short parallel loops (Pool.Together): between two
// loops the other workers wait spinning, for up to TeamSpin, rather than
// parking their threads, and the lead hands each loop out by a write to
// memory rather than through the pool's channels. On the 2-vCPU
// development VM a parked pinned thread took 0.1-0.4 ms to wake, longer
// than a worker's share of most of a tree root's loops, which the lead
// then ran mostly alone.
//
// Spinning takes a CPU that a worker of another team may need: the members
// and the lead spin only if the workers of every pool on the CPUs fit on
// them, one each (Options.SharedBy), and otherwise park at once. On 2 CPUs, 2
// in-process ranks of 2 workers each growing a tree together trained 25-35%
// slower with spinning than without.
//
// A loop of For or Spread ends when its chunks are done, not when every
// member has checked in: where the members park (long loops), a member
// that wakes after the others took every chunk no longer holds the loop
// up, nor does one that the system kept off its CPU. A loop of Run waits
// for every member.
//
// A Team is used only by its lead, from the function given to Together;
// once that function returns, the team's Run, For and Spread return ErrClosed.
type Team struct {
	// spinFor is how long to spin before parking, in nanoseconds:
	// TeamSpin while the loops are short, 0 once they are long (see
	// adaptSpin); loopNs is the loops' mean wall time, an exponential average
	// the lead keeps.
	spinFor atomic.Int64
	loopNs  float64
	lead    Worker
	members []Worker // the workers other than the lead
	// cur is the loop handed out last, a new one each time: a member
	// takes part in each loop it finds there once.
	cur    atomic.Pointer[teamLoop]
	closed atomic.Bool
	// A member that stopped spinning sets its parked flag and waits on
	// its wake channel; so does the lead waiting for a loop's end.
	parked     []atomic.Bool
	wake       []chan struct{}
	leadParked atomic.Bool
	leadWake   chan struct{}

	prof *profile // the pool's
	// pool is set, for a team that Together's caller leads (see
	// Together), to the pool that runs the team's loops.
	pool *Pool
}

// teamLoop is one loop of a Team. A loop of Run ends when every member
// has called fn (pending counts those yet to). A loop of For, Spread or
// ForThen ends when its items are done, whoever did them: a member that
// wakes from parking, or that the system kept off its CPU, after the others
// took every item is not waited for.
type teamLoop struct {
	fn      func(Worker) error // every worker's part, timed
	pending atomic.Int32

	// For's part: body over chunks of chunk indices of [0, n), chunks of
	// them; next is the next chunk to take.
	body     func(w Worker, lo, hi int)
	n, chunk int
	chunks   int64
	next     atomic.Int64
	// Spread's part, after For's in a loop of ForThen: each over the
	// indices of [0, spreadN), groups holding per group of indices the
	// next one to take (see Spread).
	each    func(w Worker, i int)
	spreadN int
	groups  []paddedCount
	// done counts the chunks and indices finished, active the workers
	// dealing; failed stops the dealing after an error.
	done   atomic.Int64
	active atomic.Int32
	failed atomic.Bool
	mu     sync.Mutex
	err    error // the first error of a member
}

// paddedCount is a counter alone in its cache line, so that workers
// taking indices of different groups do not contend for one line.
type paddedCount struct {
	atomic.Int64
	_ [56]byte
}

// TeamSpin is how long a worker of a Team spins for the next loop, or the
// lead for the end of one, before parking its thread: longer than the
// serial stretches between a tree root's parallel loops (0.1-0.6 ms on
// Delicious) and between a PD-Sparse round's loops, short enough that a
// team waiting on something slow gives its CPUs back soon.
//
// The workers spin only while the team's loops last less than TeamSpin on
// average: where they last longer, waking a parked thread is a small part
// of a loop, and spinning cores, which wait for the slowest worker of
// every uneven loop, take power and the runtime's CPU time from the
// working ones. On a 16-core node (docs/scaling) MEMOIR's rounds (loops of
// 1.7 ms) and forests grown together (4 ms) trained 15-25% faster with
// parked workers, PD-Sparse's rounds (loops of 0.1-0.3 ms) 2.2 times
// faster with spinning ones.
const TeamSpin = time.Millisecond

// Together runs body on worker 0 with a Team of every worker of the pool,
// worker 0 leading, and returns body's error (a loop's error is prefixed
// with the worker that returned it, as Run's are, but the lead's). The
// other workers serve the team until body returns: the pool must not be
// given other work meanwhile, and body must not call Run, For or Together
// on it. A pool of one worker that runs its loops itself
// (Options.InlineSingle) runs body on its pinned thread too, the team's
// loops there without a hand-off, rather than on the caller: a goroutine
// that the Go scheduler moves between CPUs loses its caches
// (docs/scaling/16-core.md, "One worker"). Where holding the workers would
// gain nothing (more workers than CPUs: see Options.SharedBy), and for a
// pool of one worker without InlineSingle, body runs on the caller with a
// team that hands its loops to the pool as For does.
func (p *Pool) Together(body func(t *Team) error) error {
	const lead = 0
	t := &Team{lead: p.workers[lead], leadWake: make(chan struct{}, 1), prof: &p.prof}
	if !p.fitsCPUs() || (len(p.workers) == 1 && !p.opts.InlineSingle) {
		// No team worth holding: workers that would park between loops
		// cost a wake-up each loop however they are handed it, and a
		// single worker's user asked for its loops to be handed to it.
		// body runs on the caller and its loops go to the pool as For's
		// do.
		t.pool = p
		p.mu.Lock()
		closed := p.closed
		p.mu.Unlock()
		if closed {
			return ErrClosed
		}
		defer t.close()
		return body(t)
	}
	t.spinFor.Store(int64(TeamSpin))
	for _, w := range p.workers {
		if w.ID != lead {
			t.members = append(t.members, w)
			t.wake = append(t.wake, make(chan struct{}, 1))
		}
	}
	t.parked = make([]atomic.Bool, len(t.members))
	// Every worker is handed its part at once (a lead that handed the
	// members theirs would add its own wake-up to theirs).
	var bodyErr error
	err := p.runAll(func(w Worker) error {
		if w.ID != lead {
			t.serve(w)
			return nil
		}
		defer t.close()
		bodyErr = body(t)
		return nil
	})
	if bodyErr != nil {
		return bodyErr
	}
	return err // a panic of body or a closed pool
}

// HoldsWorkers reports whether the team holds its members between loops,
// where they wait spinning while its loops are short: handing them a loop
// then costs no thread wake-up but in the stretches where they park. A
// team that does not hold them (more workers than CPUs) hands each loop to
// the pool, a wake-up every loop, so that a caller with a loop too short to
// be worth one can run it on the lead alone. Whether the members spin at
// the moment is no guide to that: a few loops that the system held up
// (a descheduled vCPU) park them for a few dozen loops, and a loop moved to
// the lead alone for those runs on one core while the others wait.
func (t *Team) HoldsWorkers() bool { return t.pool == nil }

// Lead returns the worker that leads the team.
func (t *Team) Lead() Worker { return t.lead }

// Workers returns the number of workers of the team, its lead included.
func (t *Team) Workers() int {
	if t.pool != nil {
		return len(t.pool.workers)
	}
	return len(t.members) + 1
}

// Run calls fn once on every worker of the team, concurrently, the lead's
// call on the calling thread, and waits for all to return. It returns the
// first error, prefixed with the worker that returned it (the lead's
// unprefixed, as the call that runs the lead prefixes it).
func (t *Team) Run(fn func(w Worker) error) error {
	if t.closed.Load() {
		return ErrClosed
	}
	if t.pool != nil {
		return t.pool.loop(fn)
	}
	d := &teamLoop{fn: t.prof.timed(fn)}
	d.pending.Store(int32(len(t.members)))
	return t.hand(d, func() bool { return d.pending.Load() == 0 })
}

// Waited records that a worker spent d of its part of one of the team's
// loops waiting for work that another worker of the loop makes (a loop
// whose items depend on one another): the pool's Profile counts that time
// idle, not busy.
func (t *Team) Waited(d time.Duration) { t.prof.busyNs.Add(-int64(d)) }

// WaitFor spins until cond reports true, for an index of the second part
// of a loop of ForThen that reads what a chunk of the first part makes, and
// records the wait as the worker's idle time (Waited). It reports false,
// giving up, if the loop failed meanwhile: a chunk that panicked never
// ends. In a team that hands its loops to the pool (see HoldsWorkers) the
// first part has ended before the second starts: cond must hold there.
func (t *Team) WaitFor(cond func() bool) bool {
	if cond() {
		return true
	}
	if t.pool != nil {
		panic("numa: WaitFor's condition does not hold after the first part of ForThen")
	}
	start := time.Now()
	defer func() { t.Waited(time.Since(start)) }()
	d := t.cur.Load()
	for n := 1; !cond(); n++ {
		if d.failed.Load() {
			return false
		}
		if n%32 == 0 && time.Since(start) > waitSpin {
			runtime.Gosched()
		} else {
			pause(spinPauses)
		}
	}
	return true
}

// waitSpin is how long WaitFor spins before it yields its thread between
// polls: longer than a wait lasts where every worker has a CPU (a chunk
// that runs while the second part starts: about a PD-Sparse row's search),
// short beside the time slice of a worker that the system keeps off its
// CPU, which a waiter that spins on would hold off longer.
const waitSpin = 50 * time.Microsecond

// For is Pool.For on the team's workers: it deals the range [0, n) in
// chunks of chunk, each worker taking the next chunk when done with one,
// and returns when every chunk is done, without waiting for members that
// took none (a member woken from parking after the others took every
// chunk). It returns the first error, as Run does.
func (t *Team) For(n, chunk int, fn func(w Worker, lo, hi int)) error {
	if t.closed.Load() {
		return ErrClosed
	}
	if t.pool != nil {
		return t.pool.For(n, chunk, fn)
	}
	return t.ForThen(n, chunk, fn, 0, nil)
}

// Spread is For over [0, n), one index at a time, with a share of its own
// for each worker: the indices are cut into one contiguous group per
// worker, and a worker takes those of its group first, then what is left
// of the others' groups, each in turn. Where the indices' loads are even,
// a worker takes the same indices loop after loop and their data stays in
// its core's cache; where they are not, or a member comes late, the others
// take what it left. Like For's, the loop ends when every index is done,
// not when every member has checked in: on a node whose every CPU runs a
// worker, the system keeps a member off its CPU now and then for a
// millisecond or more, which a loop of Run waits for
// (docs/scaling/16-core.md, runs 11 to 14). It returns the first error,
// as Run does.
func (t *Team) Spread(n int, fn func(w Worker, i int)) error {
	return t.ForThen(0, 1, nil, n, fn)
}

// ForThen is For over [0, n) in chunks of chunk (fn), then Spread over
// [0, m) (then), in one loop: a worker that finds no chunk left takes the
// indices of the second part, so that the workers done first start on it
// while the last chunks run, where two loops would hold them until the
// last chunk ends. An index of the second part may wait, with WaitFor, for
// chunks of the first whose results it reads: every chunk has been taken,
// by a worker that does not wait, before any worker starts on the second
// part. It returns the first error, as Run does.
func (t *Team) ForThen(n, chunk int, fn func(w Worker, lo, hi int), m int, then func(w Worker, i int)) error {
	if t.closed.Load() {
		return ErrClosed
	}
	chunk = max(chunk, 1)
	if t.pool != nil {
		if n > 0 {
			if err := t.pool.For(n, chunk, fn); err != nil {
				return err
			}
		}
		if m == 0 {
			return nil
		}
		return t.pool.For(m, 1, func(w Worker, i, _ int) { then(w, i) })
	}
	d := &teamLoop{body: fn, n: n, chunk: chunk, chunks: int64((n + chunk - 1) / chunk), each: then, spreadN: m}
	if m > 0 {
		d.groups = make([]paddedCount, t.Workers())
		for g := range d.groups {
			d.groups[g].Store(int64(g * m / len(d.groups)))
		}
	}
	d.fn = t.prof.timed(d.deal)
	return t.hand(d, d.finished)
}

// hand hands loop d out to the members, runs the lead's part and waits
// until ended reports the loop's end.
func (t *Team) hand(d *teamLoop, ended func() bool) error {
	start := time.Now()
	defer func() {
		e := time.Since(start)
		t.prof.loop(e)
		t.adaptSpin(e)
	}()
	t.cur.Store(d)
	t.wakeMembers()
	first := call(t.lead, d.fn)
	if first != nil && d.dealt() {
		d.fail()
	}
	t.await(ended)
	if first != nil {
		return first
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

// dealt reports whether d is a loop of For, Spread or ForThen, which
// deals items, rather than of Run.
func (d *teamLoop) dealt() bool { return d.body != nil || d.each != nil }

// deal is the part of worker w in a loop of For, Spread or ForThen: it
// takes the next chunk of For's part until none is left, then the indices
// of Spread's part (spread), or stops once a worker failed.
func (d *teamLoop) deal(w Worker) error {
	d.active.Add(1)
	defer d.active.Add(-1)
	for d.chunks > 0 {
		k := d.next.Add(1) - 1
		if k >= d.chunks || d.failed.Load() {
			break
		}
		lo := int(k) * d.chunk
		d.body(w, lo, min(lo+d.chunk, d.n))
		d.done.Add(1)
	}
	if d.spreadN > 0 && !d.failed.Load() {
		d.spread(w)
	}
	return nil
}

// spread is worker w's part of a loop's Spread part: the indices left of
// its own group, then of each other group in turn, until none is left or a
// worker failed.
func (d *teamLoop) spread(w Worker) {
	groups := len(d.groups)
	for k := range groups {
		g := (w.ID + k) % groups
		end := int64((g + 1) * d.spreadN / groups)
		if d.groups[g].Load() >= end {
			continue // a read, which needs no exclusive hold of the line
		}
		for i := d.groups[g].Add(1) - 1; i < end; i = d.groups[g].Add(1) - 1 {
			if d.failed.Load() {
				return
			}
			d.each(w, int(i))
			d.done.Add(1)
		}
	}
}

// fail stops a For loop's dealing after an error: the loop then ends when
// the workers still dealing have left it.
func (d *teamLoop) fail() { d.failed.Store(true) }

// finished reports whether a loop of For, Spread or ForThen has ended:
// every item done, or a failure and no worker left dealing.
func (d *teamLoop) finished() bool {
	return d.done.Load() == d.chunks+int64(d.spreadN) || (d.failed.Load() && d.active.Load() == 0)
}

// wakeMembers wakes the members that parked.
func (t *Team) wakeMembers() {
	for i := range t.members {
		if t.parked[i].Load() {
			select {
			case t.wake[i] <- struct{}{}:
			default:
			}
		}
	}
}

// await returns once ended reports the current loop's end, spinning, then
// parked until a member wakes the lead.
func (t *Team) await(ended func() bool) {
	if t.spin(ended) {
		return
	}
	for {
		t.leadParked.Store(true)
		if ended() {
			break
		}
		<-t.leadWake
		if ended() {
			break
		}
	}
	t.leadParked.Store(false)
	select { // a wake sent after the last check
	case <-t.leadWake:
	default:
	}
}

// serve runs member w's part of every loop until the team closes.
func (t *Team) serve(w Worker) {
	i := w.ID
	if i > t.lead.ID {
		i-- // members are the workers in order, less the lead
	}
	var last *teamLoop
	for {
		moved := func() bool { return t.cur.Load() != last }
		if !t.spin(moved) {
			for {
				t.parked[i].Store(true)
				if moved() {
					break
				}
				<-t.wake[i]
				if moved() {
					break
				}
			}
			t.parked[i].Store(false)
		}
		if t.closed.Load() {
			return
		}
		d := t.cur.Load()
		last = d
		if err := call(w, d.fn); err != nil {
			d.record(w, err) // before fail, which may end a loop of For
			if d.dealt() {
				d.fail()
			}
		}
		if !d.dealt() {
			d.pending.Add(-1)
		}
		if t.leadParked.Load() {
			select {
			case t.leadWake <- struct{}{}:
			default:
			}
		}
	}
}

// record keeps member w's error if it is the loop's first.
func (d *teamLoop) record(w Worker, err error) {
	d.mu.Lock()
	if d.err == nil {
		d.err = prefixed(w, err)
	}
	d.mu.Unlock()
}

// close ends the team: its members return from serve.
func (t *Team) close() {
	t.closed.Store(true)
	t.cur.Store(&teamLoop{})
	t.wakeMembers()
}

// adaptSpin adds a loop of wall time d to the team's mean and spins for
// TeamSpin while the mean stays below it, not at all once it is above.
func (t *Team) adaptSpin(d time.Duration) {
	const weight = 1.0 / 16 // about the last 16 loops
	if t.loopNs == 0 {
		t.loopNs = float64(d)
	}
	t.loopNs += weight * (float64(d) - t.loopNs)
	spin := int64(TeamSpin)
	if t.loopNs > float64(TeamSpin) {
		spin = 0
	}
	t.spinFor.Store(spin)
}

// spin polls cond for up to t.spinFor and reports whether it became true.
func (t *Team) spin(cond func() bool) bool {
	spinFor := time.Duration(t.spinFor.Load())
	if spinFor == 0 {
		return cond()
	}
	start := time.Now()
	for n := 1; ; n++ {
		if cond() {
			return true
		}
		pause(spinPauses)
		if n%32 == 0 && time.Since(start) > spinFor {
			return cond()
		}
	}
}

// spinPauses is the spin-wait hints between two polls of a spinning
// worker: a few hundred cycles, short beside a loop's hand-out.
const spinPauses = 8
