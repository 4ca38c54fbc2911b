package mpi

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"
)

// Counted wraps a Comm, accounts every operation and watches for stalls.
//
// # Accounting model
//
// Backends move data with algorithms of their own (trees, rings, shared
// memory), so Counted does not measure the wire. It charges each operation
// what a flat algorithm would move, computed from the arguments and results
// alone, which makes the figures exact and identical on every backend. With
// P ranks and an operation on n payload bytes (8 per element of a
// reduction):
//
//	operation  root (rank 0 where there is none)       every other rank
//	barrier    2(P-1) messages, no bytes               2 messages, no bytes
//	bcast      P-1 messages, sends n(P-1)              1 message, receives n
//	reduce     P-1 messages, receives n(P-1)           1 message, sends n
//	allreduce  2(P-1) messages, receives and sends     2 messages, sends n,
//	           n(P-1) (a reduce, then a bcast)         receives n
//	gather     P-1 messages, receives the sum of       1 message, sends its
//	gatherv    the other ranks' lengths                own length
//	allgatherv 2(P-1) messages, sends its own length   the same
//	           to each other rank, receives the sum of
//	           the other ranks' lengths
//	alltoallv  2(P-1) messages, sends the sum of its    the same
//	           parts for the other ranks, receives the
//	           sum of theirs for it
//	send       1 message, sends n
//	recv       1 message, receives n
//
// Messages counts the messages a rank sends or receives, so the sum over
// ranks counts each message twice. Message counts do not depend on sizes: an
// empty contribution is still a message. Only payload is counted, not the
// lengths that Bcast and Gatherv exchange first. Calls, Messages and bytes
// count operations that succeeded; BlockedSeconds, the time spent inside
// operations (waiting and copying), includes the failed ones.
//
// # Watchdog
//
// With a non-zero watchdog duration, an operation of this rank that stays
// blocked longer than that ends the whole job: Counted calls the wrapped
// Comm's Abort with code 3 and a message naming the rank, the operation, how
// long it was blocked and the likely causes. Only time inside an operation
// counts, so long local work between operations never fires it; but a rank
// waiting in a collective for a rank that is still computing is blocked, so
// the duration must exceed the longest legitimate imbalance between ranks.
//
// Recv from AnySource is not watched: that is how listeners (a progress
// receiver on rank 0) wait for messages that come when they come. A rank
// stalled there is still caught, by the collective that its other
// goroutines, or the other ranks, reach next.
type Counted struct {
	inner    Comm
	watchdog time.Duration
	fired    atomic.Bool // the watchdog has called Abort

	mu  sync.Mutex
	ops [numOps]opTally
}

type opTally struct {
	calls, messages, sent, recv int64
	blocked                     time.Duration
}

// NewCounted wraps c. watchdog is the longest time an operation may block
// before the job is aborted; 0 disables the watchdog.
func NewCounted(c Comm, watchdog time.Duration) *Counted {
	return &Counted{inner: c, watchdog: watchdog}
}

// Stats is one rank's communication figures, as collected by GatherStats and
// written to benchmark summaries.
type Stats struct {
	Rank int       `json:"rank"`
	Ops  []OpStats `json:"ops"`
}

// OpStats is the tally of one operation kind (see Counted for the model).
type OpStats struct {
	Op             string  `json:"op"`
	Calls          int64   `json:"calls"`
	Messages       int64   `json:"messages"`
	BytesSent      int64   `json:"bytes_sent"`
	BytesRecv      int64   `json:"bytes_recv"`
	BlockedSeconds float64 `json:"blocked_seconds"`
}

// Stats returns a snapshot of this rank's figures, one OpStats per operation
// kind in a fixed order (barrier, bcast, reduce, allreduce, gather, gatherv,
// allgatherv, alltoallv, send, recv), including kinds never called.
func (c *Counted) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Stats{Rank: c.inner.Rank(), Ops: make([]OpStats, numOps)}
	for k, t := range c.ops {
		s.Ops[k] = OpStats{
			Op:             opKind(k).String(),
			Calls:          t.calls,
			Messages:       t.messages,
			BytesSent:      t.sent,
			BytesRecv:      t.recv,
			BlockedSeconds: t.blocked.Seconds(),
		}
	}
	return s
}

// CollectiveSeconds returns the time spent in the collectives and
// barriers (every operation but Send and Recv): a rank waiting there for
// the others, or moving the data of a collective.
func (s Stats) CollectiveSeconds() float64 {
	t := 0.0
	for _, o := range s.Ops {
		if o.Op != opSend.String() && o.Op != opRecv.String() {
			t += o.BlockedSeconds
		}
	}
	return t
}

// inFlight is one operation being timed and watched.
type inFlight struct {
	op    opKind
	start time.Time
	timer *time.Timer
}

// begin starts timing op; peer and tag describe a Send or Recv in the
// watchdog's message.
func (c *Counted) begin(op opKind, peer, tag int, watch bool) inFlight {
	f := inFlight{op: op, start: time.Now()}
	if c.watchdog > 0 && watch {
		f.timer = time.AfterFunc(c.watchdog, func() { c.fire(op, peer, tag, f.start) })
	}
	return f
}

// end records f; messages and bytes only when the operation succeeded.
func (c *Counted) end(f inFlight, err error, messages, sent, recv int64) {
	if f.timer != nil {
		f.timer.Stop()
	}
	d := time.Since(f.start)
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &c.ops[f.op]
	t.blocked += d
	if err != nil {
		return
	}
	t.calls++
	t.messages += messages
	t.sent += sent
	t.recv += recv
}

// fire aborts the job for an operation blocked past the watchdog duration.
func (c *Counted) fire(op opKind, peer, tag int, start time.Time) {
	if !c.fired.CompareAndSwap(false, true) {
		return
	}
	what := op.String()
	switch op {
	case opSend:
		what = fmt.Sprintf("send to rank %d (tag %d)", peer, tag)
	case opRecv:
		what = fmt.Sprintf("recv from rank %d (tag %d)", peer, tag)
	}
	msg := fmt.Sprintf("watchdog: rank %d of %d has been blocked in %s for %s (limit %s). "+
		"Another rank has probably died or its node has become unreachable; if the work between "+
		"collectives is legitimately that uneven across ranks, raise --comm-timeout.",
		c.inner.Rank(), c.inner.Size(), what, time.Since(start).Round(time.Millisecond), c.watchdog)
	c.inner.Abort(3, msg)
}

// others is P-1 as an int64, the fan-in or fan-out of a flat collective.
func (c *Counted) others() int64 { return int64(c.inner.Size() - 1) }

// Rank returns the wrapped Comm's rank.
func (c *Counted) Rank() int { return c.inner.Rank() }

// Size returns the wrapped Comm's size.
func (c *Counted) Size() int { return c.inner.Size() }

// Barrier is the wrapped Barrier, counted and watched.
func (c *Counted) Barrier() error {
	f := c.begin(opBarrier, 0, 0, true)
	err := c.inner.Barrier()
	msgs := int64(2)
	if c.Rank() == 0 {
		msgs = 2 * c.others()
	}
	c.end(f, err, msgs, 0, 0)
	return err
}

// Bcast is the wrapped Bcast, counted and watched.
func (c *Counted) Bcast(buf []byte, root int) ([]byte, error) {
	f := c.begin(opBcast, 0, 0, true)
	out, err := c.inner.Bcast(buf, root)
	if c.Rank() == root {
		p := c.others()
		c.end(f, err, p, int64(len(buf))*p, 0)
	} else {
		c.end(f, err, 1, 0, int64(len(out)))
	}
	return out, err
}

// ReduceFloat64 is the wrapped ReduceFloat64, counted and watched.
func (c *Counted) ReduceFloat64(data []float64, op Op, root int) error {
	f := c.begin(opReduce, 0, 0, true)
	err := c.inner.ReduceFloat64(data, op, root)
	c.endReduce(f, err, len(data), root)
	return err
}

// ReduceInt64 is the wrapped ReduceInt64, counted and watched.
func (c *Counted) ReduceInt64(data []int64, op Op, root int) error {
	f := c.begin(opReduce, 0, 0, true)
	err := c.inner.ReduceInt64(data, op, root)
	c.endReduce(f, err, len(data), root)
	return err
}

func (c *Counted) endReduce(f inFlight, err error, elems, root int) {
	n := 8 * int64(elems)
	if c.Rank() == root {
		p := c.others()
		c.end(f, err, p, 0, n*p)
		return
	}
	c.end(f, err, 1, n, 0)
}

// AllreduceFloat64 is the wrapped AllreduceFloat64, counted and watched.
func (c *Counted) AllreduceFloat64(data []float64, op Op) error {
	f := c.begin(opAllreduce, 0, 0, true)
	err := c.inner.AllreduceFloat64(data, op)
	c.endAllreduce(f, err, len(data))
	return err
}

// AllreduceInt64 is the wrapped AllreduceInt64, counted and watched.
func (c *Counted) AllreduceInt64(data []int64, op Op) error {
	f := c.begin(opAllreduce, 0, 0, true)
	err := c.inner.AllreduceInt64(data, op)
	c.endAllreduce(f, err, len(data))
	return err
}

func (c *Counted) endAllreduce(f inFlight, err error, elems int) {
	n := 8 * int64(elems)
	if c.Rank() == 0 {
		p := c.others()
		c.end(f, err, 2*p, n*p, n*p)
		return
	}
	c.end(f, err, 2, n, n)
}

// Gather is the wrapped Gather, counted and watched.
func (c *Counted) Gather(buf []byte, root int) ([][]byte, error) {
	f := c.begin(opGather, 0, 0, true)
	out, err := c.inner.Gather(buf, root)
	c.endGather(f, err, buf, out, root)
	return out, err
}

// Gatherv is the wrapped Gatherv, counted and watched.
func (c *Counted) Gatherv(buf []byte, root int, into []byte) ([][]byte, error) {
	f := c.begin(opGatherv, 0, 0, true)
	out, err := c.inner.Gatherv(buf, root, into)
	c.endGather(f, err, buf, out, root)
	return out, err
}

func (c *Counted) endGather(f inFlight, err error, buf []byte, out [][]byte, root int) {
	if c.Rank() != root {
		c.end(f, err, 1, int64(len(buf)), 0)
		return
	}
	var recv int64
	for q, b := range out {
		if q != root {
			recv += int64(len(b))
		}
	}
	c.end(f, err, c.others(), 0, recv)
}

// Allgatherv is the wrapped Allgatherv, counted and watched as if every
// rank sent its buffer to each other rank and received each other's.
func (c *Counted) Allgatherv(buf []byte, into []byte) ([][]byte, error) {
	f := c.begin(opAllgatherv, 0, 0, true)
	out, err := c.inner.Allgatherv(buf, into)
	var recv int64
	for q, b := range out {
		if q != c.Rank() {
			recv += int64(len(b))
		}
	}
	p := c.others()
	c.end(f, err, 2*p, int64(len(buf))*p, recv)
	return out, err
}

// Alltoallv is the wrapped Alltoallv, counted and watched as if every rank
// sent each other rank its part and received theirs.
func (c *Counted) Alltoallv(buf []byte, counts []int, into []byte) ([][]byte, error) {
	f := c.begin(opAlltoallv, 0, 0, true)
	out, err := c.inner.Alltoallv(buf, counts, into)
	var sent, recv int64
	for q, n := range counts {
		if q != c.Rank() {
			sent += int64(n)
		}
	}
	for q, b := range out {
		if q != c.Rank() {
			recv += int64(len(b))
		}
	}
	c.end(f, err, 2*c.others(), sent, recv)
	return out, err
}

// Send is the wrapped Send, counted and watched.
func (c *Counted) Send(buf []byte, dest, tag int) error {
	f := c.begin(opSend, dest, tag, true)
	err := c.inner.Send(buf, dest, tag)
	c.end(f, err, 1, int64(len(buf)), 0)
	return err
}

// Recv is the wrapped Recv, counted, and watched unless src is AnySource.
func (c *Counted) Recv(src, tag int) ([]byte, int, error) {
	f := c.begin(opRecv, src, tag, src != AnySource)
	buf, from, err := c.inner.Recv(src, tag)
	c.end(f, err, 1, 0, int64(len(buf)))
	return buf, from, err
}

// Abort calls the wrapped Abort.
func (c *Counted) Abort(code int, msg string) { c.inner.Abort(code, msg) }

// GatherStats collects every rank's s on rank 0, indexed by rank; other
// ranks get nil. It is a collective over c. When c is the Counted that s was
// taken from, the gather itself is counted there (as one gatherv) but not in
// s, which was taken before.
func GatherStats(c Comm, s Stats) ([]Stats, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("gather stats: encode rank %d: %w", s.Rank, err)
	}
	parts, err := c.Gatherv(b, 0, nil)
	if err != nil {
		return nil, fmt.Errorf("gather stats: %w", err)
	}
	if parts == nil {
		return nil, nil
	}
	all := make([]Stats, len(parts))
	for r, p := range parts {
		if err := json.Unmarshal(p, &all[r]); err != nil {
			return nil, fmt.Errorf("gather stats: decode rank %d: %w", r, err)
		}
	}
	return all, nil
}

// WriteReport writes a table of all ranks' figures: one row per rank and
// operation that was called, then one row per operation summed over ranks
// (rank "all"), then the grand total.
func WriteReport(w io.Writer, all []Stats) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "rank\top\tcalls\tmsgs\tsent\treceived\tblocked s\t")
	row := func(rank, op string, s OpStats) {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%.3f\t\n", rank, op, s.Calls, s.Messages,
			humanize.IBytes(uint64(s.BytesSent)), humanize.IBytes(uint64(s.BytesRecv)), s.BlockedSeconds)
	}
	var byOp []OpStats // in order of first appearance
	var total OpStats
	for _, rs := range all {
		for _, s := range rs.Ops {
			if s.Calls == 0 && s.BlockedSeconds == 0 {
				continue
			}
			row(fmt.Sprint(rs.Rank), s.Op, s)
			i := 0
			for i < len(byOp) && byOp[i].Op != s.Op {
				i++
			}
			if i == len(byOp) {
				byOp = append(byOp, OpStats{Op: s.Op})
			}
			byOp[i].add(s)
			total.add(s)
		}
	}
	for _, s := range byOp {
		row("all", s.Op, s)
	}
	row("all", "total", total)
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write communication report: %w", err)
	}
	return nil
}

func (s *OpStats) add(o OpStats) {
	s.Calls += o.Calls
	s.Messages += o.Messages
	s.BytesSent += o.BytesSent
	s.BytesRecv += o.BytesRecv
	s.BlockedSeconds += o.BlockedSeconds
}
