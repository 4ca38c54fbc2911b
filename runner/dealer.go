package runner

import (
	"context"
	"encoding/binary"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"xmc/mpi"
)

// dealer hands a rank's workers the units to compute.
type dealer interface {
	// start is called once, before next, with the rank's progress
	// tracker.
	start(t *tracker)
	// next returns the next unit to compute, or false when there is none
	// left for this rank. It is safe for concurrent use.
	next() (unit int, ok bool, err error)
	// close is called once the workers have returned; it reports whether
	// units were left undone (by this rank under the static schedule, by
	// any rank under the dynamic one as far as this rank knows).
	close() (left bool, err error)
	// waited returns the time this rank waited for units from another
	// rank: the cost of scheduling.
	waited() time.Duration
}

// staticDealer deals this rank's units, u ≡ rank (mod size), less those
// found in the checkpoint, which it returns as results.
func (p Plan) staticDealer(ck *checkpoint) (dealer, []Result, error) {
	var loaded []Result
	d := &queueDealer{}
	for _, u := range OwnedUnits(p.Units, p.Comm.Rank(), p.Comm.Size()) {
		if data, ok, err := ck.load(u); err != nil {
			return nil, nil, err
		} else if ok {
			loaded = append(loaded, Result{Unit: u, Data: data})
		} else {
			d.queue = append(d.queue, u)
		}
	}
	return d, loaded, nil
}

// queueDealer hands out a fixed list of units in order.
type queueDealer struct {
	queue []int
	taken atomic.Int64
	// stop, if set, ends the hand-out early (rank 0 of the dynamic
	// schedule once interrupted); cut records that it did.
	stop func() bool
	cut  atomic.Bool
}

func (d *queueDealer) start(*tracker)        {}
func (d *queueDealer) waited() time.Duration { return 0 }

func (d *queueDealer) next() (int, bool, error) {
	units := d.take(1)
	if len(units) == 0 {
		return 0, false, nil
	}
	return units[0], true, nil
}

func (d *queueDealer) close() (bool, error) {
	return d.cut.Load() || d.taken.Load() < int64(len(d.queue)), nil
}

// take hands out up to n units at once, in order (none once stopped).
func (d *queueDealer) take(n int) []int {
	if d.stop != nil && d.stop() {
		if d.taken.Load() < int64(len(d.queue)) {
			d.cut.Store(true)
		}
		return nil
	}
	k := int(d.taken.Add(int64(n))) - n
	if k >= len(d.queue) {
		return nil
	}
	return d.queue[k:min(k+n, len(d.queue))]
}

// dynamicDealer prepares the dynamic schedule: the ranks agree on which
// checkpointed units each keeps (every unit found by any rank is kept by
// the lowest such rank, as a shared checkpoint directory shows every rank
// every unit), then rank 0 queues the others and serves them to all ranks.
func (p Plan) dynamicDealer(ctx context.Context, ck *checkpoint) (dealer, []Result, error) {
	c := p.Comm
	owner, err := p.claimCheckpoint(ck)
	if err != nil {
		return nil, nil, err
	}
	var loaded []Result
	for u, r := range owner {
		if int(r) != c.Rank() {
			continue
		}
		data, ok, err := ck.load(u)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			return nil, nil, fmt.Errorf("checkpoint: unit %d vanished from %s while resuming", u, p.Checkpoint)
		}
		loaded = append(loaded, Result{Unit: u, Data: data})
	}
	if c.Rank() != 0 {
		return &remoteDealer{comm: c}, loaded, nil
	}
	q := &queueDealer{stop: func() bool { return ctx.Err() != nil }}
	for u, r := range owner {
		if r < 0 {
			q.queue = append(q.queue, u)
		}
	}
	return &coordinator{queue: q, comm: c, served: make(chan error, 1), cost: cumulativeCost(q.queue, p.Cost)}, loaded, nil
}

// cumulativeCost returns, for i in [0, len(queue)], the estimated cost of
// queue[:i]: each unit's cost(u), or 1 when cost is nil.
func cumulativeCost(queue []int, cost func(u int) float64) []float64 {
	cum := make([]float64, len(queue)+1)
	for i, u := range queue {
		c := 1.0
		if cost != nil {
			c = max(cost(u), 0)
		}
		cum[i+1] = cum[i] + c
	}
	return cum
}

// claimCheckpoint returns, for every unit, the rank that keeps it from the
// checkpoint, or -1 if it must be computed. Without a checkpoint it
// exchanges nothing.
func (p Plan) claimCheckpoint(ck *checkpoint) ([]int32, error) {
	c := p.Comm
	owner := make([]int32, p.Units)
	for u := range owner {
		owner[u] = -1
	}
	if ck == nil {
		return owner, nil
	}
	found := ck.list(p.Units)
	var buf []byte
	for _, u := range found {
		buf = binary.LittleEndian.AppendUint32(buf, uint32(u))
	}
	lists, err := c.Gatherv(buf, 0, nil)
	if err != nil {
		return nil, err
	}
	var table []byte
	if c.Rank() == 0 {
		for r := len(lists) - 1; r >= 0; r-- { // the lowest rank last, so it wins
			for b := lists[r]; len(b) >= 4; b = b[4:] {
				if u := binary.LittleEndian.Uint32(b); int(u) < p.Units {
					owner[u] = int32(r)
				}
			}
		}
		for _, r := range owner {
			table = binary.LittleEndian.AppendUint32(table, uint32(r))
		}
	}
	if table, err = c.Bcast(table, 0); err != nil {
		return nil, err
	}
	if len(table) != 4*p.Units {
		return nil, fmt.Errorf("checkpoint claims: %d bytes for %d units", len(table), p.Units)
	}
	for u := range owner {
		owner[u] = int32(binary.LittleEndian.Uint32(table[4*u:]))
	}
	return owner, nil
}

// coordinator is rank 0's dealer under the dynamic schedule: its workers
// take units from the queue directly, and a goroutine serves the requests
// of the other ranks from the same queue. A request carries the progress
// the rank made since its last one, so progress costs no message of its
// own, and is answered with a chunk of units, guided: a share of the
// estimated cost left (Plan.Cost), so that a request serves many units
// while much is left and one as the end nears, when the ranks must finish
// together.
type coordinator struct {
	queue   *queueDealer
	comm    mpi.Comm
	tracker *tracker
	served  chan error
	cost    []float64 // cost[i]: the estimated cost of queue.queue[:i]
}

// Request kinds, the first byte of a tagRequest message; the 8 bytes that
// follow are the weight of the units finished since the last request.
const (
	requestUnits byte = 0 // send me units; none means none is left
	requestStop  byte = 1 // I stop asking (interrupted)
)

// maxChunk bounds the units of one answer: the first units (the most
// frequent labels) cost the most, and one rank should not take too many.
const maxChunk = 64

func (c *coordinator) start(t *tracker) {
	c.tracker = t
	if c.comm.Size() > 1 {
		go func() { c.served <- c.serve() }()
	} else {
		c.served <- nil
	}
}

func (c *coordinator) waited() time.Duration { return 0 }

func (c *coordinator) next() (int, bool, error) { return c.queue.next() }

// serve answers requests until every other rank has received an empty
// chunk or said it stops. It waits in a receive from any source, which the
// watchdog leaves alone: a rank busy with a long unit is not a dead node.
func (c *coordinator) serve() error {
	size := c.comm.Size()
	for open := size - 1; open > 0; {
		msg, from, err := c.comm.Recv(mpi.AnySource, tagRequest)
		if err != nil {
			return fmt.Errorf("schedule: %w", err)
		}
		if len(msg) != 9 {
			return fmt.Errorf("schedule: malformed request of %d bytes from rank %d", len(msg), from)
		}
		c.tracker.add(int(binary.LittleEndian.Uint64(msg[1:])))
		if msg[0] == requestStop {
			open--
			continue
		}
		units := c.queue.take(c.chunk(int(min(c.queue.taken.Load(), int64(len(c.queue.queue)))), size))
		if len(units) == 0 {
			open--
		}
		reply := make([]byte, 0, 4*len(units))
		for _, u := range units {
			reply = binary.LittleEndian.AppendUint32(reply, uint32(u))
		}
		if err := c.comm.Send(reply, from, tagAssign); err != nil {
			return fmt.Errorf("schedule: %w", err)
		}
	}
	return nil
}

// chunk returns how many units to hand a rank when the first taken units
// of the queue are gone, among size ranks: the most whose estimated cost
// stays within 1/(2·size) of the cost left, at least one and at most
// maxChunk. Units of equal cost give a 1/(2·size) share of the units left.
func (c *coordinator) chunk(taken, size int) int {
	total := c.cost[len(c.cost)-1]
	share := (total - c.cost[taken]) / float64(2*size)
	// The first n whose cost exceeds the share, less one.
	n := sort.Search(len(c.cost)-taken, func(n int) bool { return c.cost[taken+n]-c.cost[taken] > share }) - 1
	return max(1, min(n, maxChunk))
}

func (c *coordinator) close() (bool, error) {
	if err := <-c.served; err != nil {
		return false, err
	}
	return c.queue.close()
}

// remoteDealer asks rank 0 for chunks of units, one request at a time per
// rank, and hands them to the rank's workers.
type remoteDealer struct {
	comm    mpi.Comm
	tracker *tracker
	mu      sync.Mutex
	chunk   []int         // units received and not yet handed out
	done    bool          // rank 0 answered with no unit, or this rank said it stops
	wait    time.Duration // spent waiting for answers
}

func (d *remoteDealer) start(t *tracker) { d.tracker = t }

func (d *remoteDealer) waited() time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.wait
}

// request sends rank 0 a request of kind with the progress to report.
func (d *remoteDealer) request(kind byte) error {
	msg := binary.LittleEndian.AppendUint64([]byte{kind}, uint64(d.tracker.take()))
	return d.comm.Send(msg, 0, tagRequest)
}

func (d *remoteDealer) next() (int, bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.chunk) == 0 && !d.done {
		start := time.Now()
		if err := d.request(requestUnits); err != nil {
			return 0, false, err
		}
		msg, _, err := d.comm.Recv(0, tagAssign)
		d.wait += time.Since(start)
		if err != nil {
			return 0, false, err
		}
		if len(msg)%4 != 0 {
			return 0, false, fmt.Errorf("schedule: malformed answer of %d bytes", len(msg))
		}
		for ; len(msg) > 0; msg = msg[4:] {
			d.chunk = append(d.chunk, int(binary.LittleEndian.Uint32(msg)))
		}
		d.done = len(d.chunk) == 0
	}
	if len(d.chunk) == 0 {
		return 0, false, nil
	}
	u := d.chunk[0]
	d.chunk = d.chunk[1:]
	return u, true, nil
}

// close tells rank 0 that this rank stops asking, if it stopped before
// being told that no unit is left; that is then what it reports, with the
// units of its last chunk it did not start.
func (d *remoteDealer) close() (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.done && len(d.chunk) == 0 {
		return false, nil
	}
	d.done = true
	return true, d.request(requestStop)
}
