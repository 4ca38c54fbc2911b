package mpi

// The in-process backend's point-to-point messages: a mailbox per rank.

import (
	"fmt"
	"slices"
	"sync"
)

// mailbox holds the messages sent to one rank, in arrival order.
type mailbox struct {
	mu      sync.Mutex
	queue   []message
	arrival chan struct{} // closed and replaced when a message arrives or a rank returns
}

type message struct {
	src, tag int
	data     []byte
}

func (b *mailbox) notifyLocked() {
	close(b.arrival)
	b.arrival = make(chan struct{})
}

func (c *inprocComm) Send(buf []byte, dest, tag int) error {
	if err := checkSend(dest, tag, c.w.size); err != nil {
		return err
	}
	if err := c.w.check(); err != nil {
		return err
	}
	if err := c.w.checkSize(opSend, len(buf)); err != nil {
		return err
	}
	data := make([]byte, len(buf))
	copy(data, buf)
	b := &c.w.boxes[dest]
	b.mu.Lock()
	b.queue = append(b.queue, message{src: c.rank, tag: tag, data: data})
	b.notifyLocked()
	b.mu.Unlock()
	return nil
}

// Recv takes the oldest matching message; the queue keeps arrival order, so
// messages of one (source, tag) are received in the order they were sent.
func (c *inprocComm) Recv(src, tag int) ([]byte, int, error) {
	if err := checkRecv(src, tag, c.w.size); err != nil {
		return nil, 0, err
	}
	b := &c.w.boxes[c.rank]
	for {
		if err := c.w.check(); err != nil {
			return nil, 0, err
		}
		b.mu.Lock()
		i := slices.IndexFunc(b.queue, func(m message) bool {
			return m.tag == tag && (src == AnySource || m.src == src)
		})
		if i >= 0 {
			m := b.queue[i]
			b.queue = slices.Delete(b.queue, i, i+1)
			b.mu.Unlock()
			return m.data, m.src, nil
		}
		if err := c.w.recvDeadlock(c.rank, src, tag); err != nil {
			b.mu.Unlock()
			c.w.fail(c.rank, err)
			return nil, 0, err
		}
		arrival := b.arrival
		b.mu.Unlock()
		select {
		case <-arrival:
		case <-c.w.aborted:
			return nil, 0, ErrAborted
		}
	}
}

// recvDeadlock reports a Recv that no rank can satisfy any more because its
// source (or, for AnySource, every other rank) has returned. Messages a rank
// sends to itself from another goroutine are not foreseen.
func (w *world) recvDeadlock(rank, src, tag int) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case src == AnySource && w.size > 1 && int(w.nReturned.Load()) == w.size-1:
		return fmt.Errorf("mpi: recv from any rank with tag %d can never complete: every other rank has returned", tag)
	case src != AnySource && src != rank && w.returned[src]:
		return fmt.Errorf("mpi: recv from rank %d with tag %d can never complete: rank %d has returned", src, tag, src)
	}
	return nil
}
