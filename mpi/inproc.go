package mpi

import (
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// AbortError is the error of a job that a rank ended with Abort (or that
// Counted's watchdog ended). Launch returns it wrapped, so that a launcher can
// find Code with errors.As and exit with it, as mpirun does.
type AbortError struct {
	Code int    // exit status requested by Abort
	Msg  string // Abort's message
}

// Error describes the abort with its code and message.
func (e *AbortError) Error() string {
	return fmt.Sprintf("aborted with code %d: %s", e.Code, e.Msg)
}

// Launch runs fn on n ranks, each a goroutine of this process, connected by
// an in-process communicator with the semantics of the MPI backend:
// collectives match in call order, Send and Recv do not overtake per
// (source, destination, tag), and received buffers are copies that never
// alias the sender's memory. Send never blocks (messages are buffered).
//
// The first rank whose fn returns an error or panics (the panic is recovered
// and its stack kept in the error), or that calls Abort, aborts the job:
// every blocked or later operation of every rank returns ErrAborted. A rank
// whose fn returns nil has finished; if other ranks then wait for it in a
// collective, or in a Recv it alone could satisfy, the job is aborted with an
// error naming the mismatch instead of hanging. fn must not leave goroutines
// that keep using c after it returns.
//
// Launch returns when every rank's fn has returned. Its error is the first
// failing rank's, as fmt.Errorf("rank %d: %w", rank, err).
//
// The backend refuses, as MPI does beyond MaxMessage, any single transfer
// of more than limit bytes (MaxMessage at most): a Send, a Bcast, a rank's
// Gather or Gatherv contribution or the total the root receives, a
// reduction's data. Tests set a small limit to check that every transfer
// went through Split.
func Launch(n, limit int, fn func(c Comm) error) error {
	return LaunchSpinning(n, limit, 0, fn)
}

// LaunchSpinning is Launch with collectives in which a rank that waits for
// the others spins, checking for their arrival, for up to spin before it
// parks its goroutine. A parked rank resumes only when the Go scheduler
// next finds a processor for it, which can take a good part of a short
// round (docs/scaling/16-core.md, "One worker"). Spinning takes the
// waiting rank's CPU, so a job should spin only where the ranks' workers
// fit the CPUs, one each (docs/scaling/16-core.md, run 18).
func LaunchSpinning(n, limit int, spin time.Duration, fn func(c Comm) error) error {
	return launch(n, limit, spin, nil, fn)
}

// launch is LaunchSpinning with a function that a rank calls right after
// it counts itself into a wait (nil but in tests, which hold a rank there).
func launch(n, limit int, spin time.Duration, afterArrive func(rank int), fn func(c Comm) error) error {
	if n < 1 {
		return fmt.Errorf("mpi: launch %d ranks: need at least 1", n)
	}
	w := newWorld(n)
	w.limit, w.spin, w.afterArrive = limit, spin, afterArrive
	var wg sync.WaitGroup
	for r := range n {
		c := &inprocComm{w: w, rank: r}
		wg.Go(func() {
			if err := runRank(fn, c); err != nil {
				w.fail(r, err)
				return
			}
			w.finish(r)
		})
	}
	wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failErr != nil {
		return fmt.Errorf("rank %d: %w", w.failRank, w.failErr)
	}
	return nil
}

// runRank calls fn, turning a panic into an error that keeps the stack.
func runRank(fn func(Comm) error, c Comm) (err error) {
	defer func() {
		p := recover()
		if p == nil {
			return
		}
		if perr, ok := p.(error); ok {
			err = fmt.Errorf("panic: %w\n%s", perr, debug.Stack())
			return
		}
		err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
	}()
	return fn(c)
}

// world is the state the ranks of one Launch share.
//
// Collectives work in phases separated by an internal barrier (wait): each
// rank publishes its part, waits, then reads the other ranks' parts directly
// (no per-pair copies), and waits again where a rank's memory must stay
// untouched until the others have read it. Parts and the Allreduce scratch
// are double-buffered by collective parity: a rank can only reach collective
// k+2, and overwrite the buffers of collective k, after every rank has
// entered collective k+1, so after every rank has finished reading them.
type world struct {
	size  int
	limit int           // the most bytes of one transfer
	spin  time.Duration // how long a rank spins in wait before parking
	// afterArrive, where set (tests), is called by a rank right after it
	// counts itself into a wait.
	afterArrive func(rank int)
	aborted     chan struct{} // closed by the first fail
	parts       [2][]part     // by collective parity, then by rank
	scratch     [2]any        // Allreduce result ([]float64 or []int64), by parity
	boxes       []mailbox     // by destination rank

	// The internal barrier takes no lock on its way in or out: a rank
	// that blocked on one behind ranks spinning on every CPU would wait
	// for a CPU until one of them stopped spinning (docs/scaling/16-core.md,
	// run 18).
	waits     atomic.Uint64 // waits completed
	arrived   atomic.Int32  // ranks in the current wait
	nReturned atomic.Int32  // ranks whose fn has returned nil

	mu       sync.Mutex
	failRank int
	failErr  error
	release  chan struct{} // closed when the current wait completes, for the ranks parked in it
	returned []bool        // ranks whose fn has returned nil
}

func newWorld(n int) *world {
	w := &world{
		size:     n,
		aborted:  make(chan struct{}),
		boxes:    make([]mailbox, n),
		release:  make(chan struct{}),
		returned: make([]bool, n),
	}
	w.parts[0] = make([]part, n)
	w.parts[1] = make([]part, n)
	for i := range w.boxes {
		w.boxes[i].arrival = make(chan struct{})
	}
	return w
}

// fail aborts the job on behalf of rank with err, unless it already failed.
func (w *world) fail(rank int, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.failLocked(rank, err)
}

func (w *world) failLocked(rank int, err error) {
	if w.failErr != nil {
		return
	}
	w.failRank, w.failErr = rank, err
	close(w.aborted)
}

// check returns ErrAborted once the job has been aborted.
func (w *world) check() error {
	select {
	case <-w.aborted:
		return ErrAborted
	default:
		return nil
	}
}

// finish records that rank's fn returned nil. Ranks already waiting for it
// in a collective would wait forever, so that aborts the job; receivers are
// woken to check whether their Recv can still complete.
func (w *world) finish(rank int) {
	w.mu.Lock()
	w.returned[rank] = true
	w.nReturned.Add(1)
	// A rank entering a wait counts itself in arrived before it looks at
	// nReturned, and this one the other way round, so one of the two sees
	// the other.
	if n := w.arrived.Load(); n > 0 {
		w.failLocked(rank, fmt.Errorf("mpi: returned while %d other rank(s) wait for it in a collective; "+
			"every rank must make the same collective calls in the same order", n))
	}
	w.mu.Unlock()
	for i := range w.boxes {
		b := &w.boxes[i]
		b.mu.Lock()
		b.notifyLocked()
		b.mu.Unlock()
	}
}

// wait is the barrier that separates the phases of a collective op. A
// rank counts itself in; the last one in starts the next wait's count and
// completes this one, which the others see spinning (w.spin) or, parked,
// by the closing of its release channel.
func (w *world) wait(rank int, op opKind) error {
	if err := w.check(); err != nil {
		return err
	}
	done := w.waits.Load()
	if w.arrived.Add(1) == int32(w.size) {
		w.arrived.Store(0) // before the wait completes: no rank can be in the next one yet
		w.mu.Lock()
		release := w.release
		w.release = make(chan struct{})
		w.waits.Add(1)
		w.mu.Unlock()
		close(release)
		return nil
	}
	if w.afterArrive != nil {
		w.afterArrive(rank)
	}
	passed := func() bool { return w.waits.Load() != done }
	// A rank that returned after this wait completed is no mismatch: the
	// wait's completion is seen here if its return is (it came first).
	if w.nReturned.Load() > 0 && !passed() {
		w.mu.Lock()
		err := fmt.Errorf("mpi: %s can never complete: rank(s) %v already returned; "+
			"every rank must make the same collective calls in the same order", op, w.returnedRanksLocked())
		w.failLocked(rank, err)
		w.mu.Unlock()
		return err
	}
	if w.spin > 0 && spinUntil(passed, w.aborted, w.spin) {
		return nil
	}
	w.mu.Lock()
	if passed() {
		w.mu.Unlock()
		return nil
	}
	release := w.release // this wait's: it is replaced only as the wait completes
	w.mu.Unlock()
	select {
	case <-release:
		return nil
	case <-w.aborted:
		return ErrAborted
	}
}

// spinUntil checks cond, over and over, for up to d or until aborted is
// closed, and reports whether cond became true. It reads the clock and
// aborted once every 64 checks.
func spinUntil(cond func() bool, aborted <-chan struct{}, d time.Duration) bool {
	end := time.Now().Add(d)
	for {
		for range 64 {
			if cond() {
				return true
			}
		}
		select {
		case <-aborted:
			return false
		default:
		}
		if time.Now().After(end) {
			return cond()
		}
	}
}

func (w *world) returnedRanksLocked() []int {
	var rs []int
	for r, done := range w.returned {
		if done {
			rs = append(rs, r)
		}
	}
	return rs
}

// part is one rank's contribution to a collective.
type part struct {
	op    opKind
	root  int
	redOp Op
	elem  string // element type of a reduction
	n     int    // length in bytes or elements
	bytes []byte // Bcast root's buffer or a Gather contribution (a copy)
	data  any    // []float64 or []int64 of a reduction
	// An Alltoallv's: where in bytes each rank's part lies (rank q's from
	// at[q] to at[q+1]), and the longest part.
	at      []int
	longest int
}

func (p part) String() string {
	switch p.op {
	case opReduce:
		return fmt.Sprintf("reduce(%s %s, root %d)", p.elem, p.redOp, p.root)
	case opAllreduce:
		return fmt.Sprintf("allreduce(%s %s)", p.elem, p.redOp)
	case opBarrier:
		return "barrier"
	}
	return fmt.Sprintf("%s(root %d)", p.op, p.root)
}

// matchParts checks that every rank called the same collective with
// compatible arguments. Every rank checks the same parts, so every rank
// reaches the same verdict.
func matchParts(parts []part) error {
	first := parts[0]
	for q, p := range parts {
		if p.op != first.op || p.root != first.root || p.redOp != first.redOp || p.elem != first.elem {
			return fmt.Errorf("mpi: mismatched collective calls: rank 0 called %v, rank %d called %v", first, q, p)
		}
		if p.n != first.n && p.op != opBcast && p.op != opGatherv && p.op != opAllgatherv && p.op != opAlltoallv {
			return fmt.Errorf("mpi: %s lengths differ: rank 0 passed %d, rank %d passed %d", p.op, first.n, q, p.n)
		}
	}
	return nil
}

// inprocComm is one rank's handle on a world.
type inprocComm struct {
	w    *world
	rank int
	seq  uint64 // collectives this rank has entered; collectives of a rank are never concurrent
	// staged holds, by collective parity as the world's parts, the copy of
	// this rank's Allgatherv contribution that the other ranks read, kept
	// from one collective to the next of its parity: a round's exchange
	// then leaves no garbage behind.
	staged [2][]byte
	// stagedAt holds, by parity as staged, where an Alltoallv's staged
	// contribution holds each rank's part.
	stagedAt [2][]int
}

// stage returns a copy of buf in this rank's staging buffer of the
// collective it is about to enter (see world: no rank reads it after the
// next collective, where the buffer of the other parity serves). Only for
// Allgatherv and Alltoallv, whose results never share the parts.
func (c *inprocComm) stage(buf []byte) []byte {
	parity := c.seq & 1
	if c.staged[parity] == nil { // an empty contribution is an empty part, not a nil one
		c.staged[parity] = make([]byte, 0, len(buf))
	}
	c.staged[parity] = append(c.staged[parity][:0], buf...)
	// Capacity cut to the length: where the parts are the result (all
	// empty), a rank's append must not write into the buffer they share.
	return c.staged[parity][:len(buf):len(buf)]
}

func (c *inprocComm) Rank() int { return c.rank }
func (c *inprocComm) Size() int { return c.w.size }

// enter starts this rank's next collective: it publishes p, waits until every
// rank has published its part, and returns all parts, checked to match, with
// the collective's parity. prepare, if not nil, runs before the wait.
func (c *inprocComm) enter(p part, prepare func(parity int)) ([]part, int, error) {
	if err := c.w.check(); err != nil {
		return nil, 0, err
	}
	parity := int(c.seq & 1)
	c.seq++
	parts := c.w.parts[parity]
	parts[c.rank] = p
	if prepare != nil {
		prepare(parity)
	}
	if err := c.w.wait(c.rank, p.op); err != nil {
		return nil, 0, err
	}
	if err := matchParts(parts); err != nil {
		c.w.fail(c.rank, err)
		return nil, 0, err
	}
	return parts, parity, nil
}

func (c *inprocComm) Barrier() error {
	_, _, err := c.enter(part{op: opBarrier}, nil)
	return err
}

func (c *inprocComm) Bcast(buf []byte, root int) ([]byte, error) {
	if err := checkRoot(opBcast, root, c.w.size); err != nil {
		return nil, err
	}
	p := part{op: opBcast, root: root}
	if c.rank == root {
		if err := c.w.checkSize(opBcast, len(buf)); err != nil {
			return nil, err
		}
		p.bytes, p.n = buf, len(buf)
	}
	parts, _, err := c.enter(p, nil)
	if err != nil {
		return nil, err
	}
	out := buf
	if c.rank != root {
		out = make([]byte, len(parts[root].bytes))
		copy(out, parts[root].bytes)
	}
	// Root's buf must stay untouched until every rank has copied it.
	if err := c.w.wait(c.rank, opBcast); err != nil {
		return nil, err
	}
	return out, nil
}

func (c *inprocComm) ReduceFloat64(data []float64, op Op, root int) error {
	return reduce(c, data, op, root)
}

func (c *inprocComm) ReduceInt64(data []int64, op Op, root int) error {
	return reduce(c, data, op, root)
}

func (c *inprocComm) AllreduceFloat64(data []float64, op Op) error {
	return allreduce(c, data, op)
}

func (c *inprocComm) AllreduceInt64(data []int64, op Op) error {
	return allreduce(c, data, op)
}

// reduce combines every rank's data into root's data. Rank r reduces the
// r-th of size equal chunks, reading that chunk of every rank's data and
// writing it into root's: chunks are disjoint, so ranks work in parallel
// without locks, and each element is read once per rank.
func reduce[T float64 | int64](c *inprocComm, data []T, op Op, root int) error {
	if err := checkOp(op); err != nil {
		return err
	}
	if err := checkRoot(opReduce, root, c.w.size); err != nil {
		return err
	}
	if err := c.w.checkSize(opReduce, 8*len(data)); err != nil {
		return err
	}
	p := part{op: opReduce, root: root, redOp: op, elem: elemName(data), n: len(data), data: data}
	parts, _, err := c.enter(p, nil)
	if err != nil {
		return err
	}
	lo, hi := chunk(len(data), c.w.size, c.rank)
	dst := parts[root].data.([]T)[lo:hi]
	for q, p := range parts {
		if q != root {
			combine(dst, p.data.([]T)[lo:hi], op)
		}
	}
	// Root must not return, nor the others change their data, before every
	// chunk is reduced.
	return c.w.wait(c.rank, opReduce)
}

// allreduce is reduce into a shared scratch buffer, which every rank then
// copies into its own data.
func allreduce[T float64 | int64](c *inprocComm, data []T, op Op) error {
	if err := checkOp(op); err != nil {
		return err
	}
	if err := c.w.checkSize(opAllreduce, 8*len(data)); err != nil {
		return err
	}
	n := len(data)
	sizeScratch := func(parity int) {
		if c.rank != 0 {
			return
		}
		s, _ := c.w.scratch[parity].([]T)
		if cap(s) < n {
			s = make([]T, n)
		}
		c.w.scratch[parity] = s[:n]
	}
	p := part{op: opAllreduce, redOp: op, elem: elemName(data), n: n, data: data}
	parts, parity, err := c.enter(p, sizeScratch)
	if err != nil {
		return err
	}
	res := c.w.scratch[parity].([]T)
	lo, hi := chunk(n, c.w.size, c.rank)
	copy(res[lo:hi], parts[0].data.([]T)[lo:hi])
	for _, p := range parts[1:] {
		combine(res[lo:hi], p.data.([]T)[lo:hi], op)
	}
	if err := c.w.wait(c.rank, opAllreduce); err != nil {
		return err
	}
	copy(data, res)
	return nil
}

func checkOp(op Op) error {
	if op != Sum && op != Min && op != Max {
		return fmt.Errorf("mpi: unknown reduction operator %d", int(op))
	}
	return nil
}

func elemName(data any) string {
	switch data.(type) {
	case []float64:
		return "float64"
	case []int64:
		return "int64"
	}
	return fmt.Sprintf("%T", data)
}

// chunk returns the bounds of rank's share of n elements split over size
// ranks.
func chunk(n, size, rank int) (lo, hi int) {
	return n * rank / size, n * (rank + 1) / size
}

// combine sets dst[i] = dst[i] op src[i].
func combine[T float64 | int64](dst, src []T, op Op) {
	src = src[:len(dst)]
	switch op {
	case Sum:
		for i, v := range src {
			dst[i] += v
		}
	case Min:
		for i, v := range src {
			dst[i] = min(dst[i], v)
		}
	case Max:
		for i, v := range src {
			dst[i] = max(dst[i], v)
		}
	}
}

func (c *inprocComm) Gather(buf []byte, root int) ([][]byte, error) {
	return c.gather(opGather, buf, root, nil)
}

func (c *inprocComm) Gatherv(buf []byte, root int, into []byte) ([][]byte, error) {
	return c.gather(opGatherv, buf, root, into)
}

// gather has every rank copy its own contribution (in parallel) and root
// collect the copies, with a single wait; root moves them into into where
// it holds them all, as the MPI backend receives them there. For
// Allgatherv every rank is a root and always copies: no rank's result may
// share another's (with nothing to copy, the parts are empty and sharing
// them shares nothing).
func (c *inprocComm) gather(op opKind, buf []byte, root int, into []byte) ([][]byte, error) {
	if err := checkRoot(op, root, c.w.size); err != nil {
		return nil, err
	}
	if err := c.w.checkSize(op, len(buf)); err != nil {
		return nil, err
	}
	all := op == opAllgatherv
	var own []byte
	if all {
		own = c.stage(buf)
	} else { // a root's result may hold it
		own = make([]byte, len(buf))
		copy(own, buf)
	}
	parts, _, err := c.enter(part{op: op, root: root, n: len(buf), bytes: own}, nil)
	if err != nil || (c.rank != root && !all) {
		return nil, err
	}
	total := 0
	for _, p := range parts {
		total += p.n
	}
	if err := c.w.checkSize(op, total); err != nil {
		receiver := "the root"
		if all {
			receiver = "each rank"
		}
		return nil, fmt.Errorf("%w (the total received by %s)", err, receiver)
	}
	if all && cap(into) < total {
		into = make([]byte, 0, total)
	}
	out := make([][]byte, len(parts))
	for q, p := range parts {
		out[q] = p.bytes
	}
	return packInto(into, out), nil
}

// Allgatherv is gather on every rank: the parts of a collective stay
// untouched until every rank has entered the next one (see world), so one
// wait serves, and each rank copies them into a buffer of its own.
func (c *inprocComm) Allgatherv(buf []byte, into []byte) ([][]byte, error) {
	return c.gather(opAllgatherv, buf, 0, into)
}

// allgathervUpTo is Allgatherv where the ranks' buffers total at most
// limit bytes; otherwise it returns their lengths, having copied none of
// them (see boundedAllgatherer).
func (c *inprocComm) allgathervUpTo(buf, into []byte, limit int) ([][]byte, []int64, bool, error) {
	var own []byte
	if len(buf) <= limit { // else the total is over limit: no rank reads it
		own = c.stage(buf)
	}
	parts, _, err := c.enter(part{op: opAllgatherv, n: len(buf), bytes: own}, nil)
	if err != nil {
		return nil, nil, false, err
	}
	lens, total := make([]int64, len(parts)), 0
	for q, p := range parts {
		lens[q] = int64(p.n)
		total += p.n
	}
	if total > limit {
		return nil, lens, false, nil
	}
	if err := c.w.checkSize(opAllgatherv, total); err != nil {
		return nil, nil, false, fmt.Errorf("%w (the total received by each rank)", err)
	}
	if cap(into) < total {
		into = make([]byte, 0, total)
	}
	out := make([][]byte, len(parts))
	for q, p := range parts {
		out[q] = p.bytes
	}
	return packInto(into, out), lens, true, nil
}

// checkSize refuses a transfer of more than the world's limit, as MPI
// refuses one of more than MaxMessage bytes.
func (w *world) checkSize(op opKind, n int) error {
	if n > w.limit {
		return fmt.Errorf("mpi: %s of %d bytes exceeds the %d bytes of one message (split larger transfers: mpi.Split)", op, n, w.limit)
	}
	return nil
}

func (c *inprocComm) Abort(code int, msg string) {
	c.w.fail(c.rank, &AbortError{Code: code, Msg: msg})
}
