package runner

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"

	"xmc/mpi"
)

// dealer hands a rank's workers the units to compute.
type dealer interface {
	// next returns the next unit to compute, or false when there is none
	// left for this rank. It is safe for concurrent use.
	next() (unit int, ok bool, err error)
	// close is called once the workers have returned; it reports whether
	// units were left undone (by this rank under the static schedule, by
	// any rank under the dynamic one as far as this rank knows).
	close() (left bool, err error)
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

func (d *queueDealer) next() (int, bool, error) {
	if d.stop != nil && d.stop() {
		if d.taken.Load() < int64(len(d.queue)) {
			d.cut.Store(true)
		}
		return 0, false, nil
	}
	k := d.taken.Add(1) - 1
	if k >= int64(len(d.queue)) {
		return 0, false, nil
	}
	return d.queue[k], true, nil
}

func (d *queueDealer) close() (bool, error) {
	return d.cut.Load() || d.taken.Load() < int64(len(d.queue)), nil
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
	co := &coordinator{queue: q, comm: c, served: make(chan error, 1)}
	if c.Size() > 1 {
		go func() { co.served <- co.serve() }()
	} else {
		co.served <- nil
	}
	return co, loaded, nil
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
	found, err := ck.list(p.Units)
	if err != nil {
		return nil, err
	}
	var buf []byte
	for _, u := range found {
		buf = binary.LittleEndian.AppendUint32(buf, uint32(u))
	}
	lists, err := c.Gatherv(buf, 0)
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
// of the other ranks from the same queue.
type coordinator struct {
	queue  *queueDealer
	comm   mpi.Comm
	served chan error
}

// Request kinds, the one byte of a tagRequest message.
const (
	requestUnit byte = 0 // send me a unit, or -1 if none is left
	requestStop byte = 1 // I stop asking (interrupted)
)

func (c *coordinator) next() (int, bool, error) { return c.queue.next() }

// serve answers requests until every other rank has received a -1 or said
// it stops. It waits in a receive from any source, which the watchdog
// leaves alone: a rank busy with a long unit is not a dead node.
func (c *coordinator) serve() error {
	for open := c.comm.Size() - 1; open > 0; {
		msg, from, err := c.comm.Recv(mpi.AnySource, tagRequest)
		if err != nil {
			return fmt.Errorf("schedule: %w", err)
		}
		if len(msg) != 1 {
			return fmt.Errorf("schedule: malformed request of %d bytes from rank %d", len(msg), from)
		}
		if msg[0] == requestStop {
			open--
			continue
		}
		reply := int32(-1)
		if u, ok, _ := c.queue.next(); ok {
			reply = int32(u)
		} else {
			open--
		}
		if err := c.comm.Send(binary.LittleEndian.AppendUint32(nil, uint32(reply)), from, tagAssign); err != nil {
			return fmt.Errorf("schedule: %w", err)
		}
	}
	return nil
}

func (c *coordinator) close() (bool, error) {
	if err := <-c.served; err != nil {
		return false, err
	}
	return c.queue.close()
}

// remoteDealer asks rank 0 for units, one request at a time per rank.
type remoteDealer struct {
	comm mpi.Comm
	mu   sync.Mutex
	done bool // rank 0 answered -1 or this rank said it stops
}

func (d *remoteDealer) next() (int, bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.done {
		return 0, false, nil
	}
	if err := d.comm.Send([]byte{requestUnit}, 0, tagRequest); err != nil {
		return 0, false, err
	}
	msg, _, err := d.comm.Recv(0, tagAssign)
	if err != nil {
		return 0, false, err
	}
	if len(msg) != 4 {
		return 0, false, fmt.Errorf("schedule: malformed answer of %d bytes", len(msg))
	}
	u := int32(binary.LittleEndian.Uint32(msg))
	if u < 0 {
		d.done = true
		return 0, false, nil
	}
	return int(u), true, nil
}

// close tells rank 0 that this rank stops asking, if it stopped before
// being told that no unit is left; that is then what it reports.
func (d *remoteDealer) close() (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.done {
		return false, nil
	}
	d.done = true
	return true, d.comm.Send([]byte{requestStop}, 0, tagRequest)
}
