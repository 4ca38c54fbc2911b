// Package mpitest checks that a backend of package mpi behaves as specified:
// results of every operation, argument errors, message ordering and
// isolation, concurrent use, and Counted's figures, exactly.
//
// The same check runs on the in-process backend (mpi's tests) and under
// mpirun (mpi/internal/mpicheck), so both backends are held to one
// specification.
package mpitest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"

	"xmc/mpi"
)

// smallBytes is the size of the suite's small buffers, besides empty and
// tiny ones.
const smallBytes = 1 << 10

// BigBytes is the size of the suite's largest buffers (see Conformance).
const BigBytes = 8 << 20

// Conformance runs the conformance suite on every rank of c's job; every rank
// must call it. It returns the first discrepancy this rank found. big is the
// size of the largest buffers it moves: BigBytes, or less where every byte
// costs much more (the race detector checks each), at least 64 KiB. c must
// have no watchdog shorter than a few seconds: the suite moves big bytes to
// every rank. Figures are checked as differences, so c may have been used
// before.
func Conformance(c *mpi.Counted, big int) error {
	if big < 64<<10 {
		return fmt.Errorf("conformance: buffers of %d bytes at most, want at least 64 KiB", big)
	}
	s := &suite{c: c, rank: c.Rank(), size: c.Size(), big: big, want: expect{rank: c.Rank(), size: c.Size()}}
	before := c.Stats()
	steps := []struct {
		name string
		run  func() error
	}{
		{"barrier", s.barrier},
		{"argument errors", s.argumentErrors},
		{"bcast", s.bcast},
		{"reduce and allreduce", s.reductions},
		{"gather", s.gather},
		{"gatherv", s.gatherv},
		{"allgatherv", s.allgatherv},
		{"alltoallv", s.alltoallv},
		{"small allgathervs and alltoallvs in a row", s.smallInARow},
		{"send and recv", s.pointToPoint},
		{"ordering", s.ordering},
		{"any source", s.anySource},
		{"concurrent send and recv", s.concurrent},
	}
	for _, st := range steps {
		if err := st.run(); err != nil {
			return fmt.Errorf("conformance on rank %d of %d: %s: %w", s.rank, s.size, st.name, err)
		}
	}
	if err := s.figures(before, c.Stats()); err != nil {
		return fmt.Errorf("conformance on rank %d of %d: counted figures: %w", s.rank, s.size, err)
	}
	if err := s.gatherStats(); err != nil {
		return fmt.Errorf("conformance on rank %d of %d: gather stats: %w", s.rank, s.size, err)
	}
	return nil
}

type suite struct {
	c          *mpi.Counted
	rank, size int
	big        int // the largest buffers' bytes
	want       expect
}

// fill writes a pattern that depends on seed and on every byte's offset, so
// that shifted, truncated or mixed-up buffers are detected.
func fill(b []byte, seed int) []byte {
	for i := range b {
		b[i] = byte(uint32(i)*2654435761>>24) ^ byte(seed) ^ byte(seed>>8)
	}
	return b
}

func pattern(n, seed int) []byte { return fill(make([]byte, n), seed) }

// diff describes the first difference between got and want, or returns nil.
func diff(got, want []byte) error {
	if len(got) != len(want) {
		return fmt.Errorf("got %d bytes, want %d", len(got), len(want))
	}
	if bytes.Equal(got, want) {
		return nil
	}
	i := 0
	for got[i] == want[i] {
		i++
	}
	return fmt.Errorf("byte %d of %d is %#x, want %#x", i, len(got), got[i], want[i])
}

func (s *suite) barrier() error {
	for range 3 {
		if err := s.c.Barrier(); err != nil {
			return err
		}
		s.want.barrier()
	}
	return nil
}

// argumentErrors checks that invalid arguments are rejected, identically on
// every rank and without communicating (so they are not counted).
func (s *suite) argumentErrors() error {
	checks := []struct {
		name string
		call func() error
	}{
		{"bcast root -1", func() error { _, err := s.c.Bcast(nil, -1); return err }},
		{"bcast root size", func() error { _, err := s.c.Bcast(nil, s.size); return err }},
		{"reduce root size", func() error { return s.c.ReduceFloat64([]float64{1}, mpi.Sum, s.size) }},
		{"reduce op 7", func() error { return s.c.ReduceInt64([]int64{1}, mpi.Op(7), 0) }},
		{"allreduce op -1", func() error { return s.c.AllreduceFloat64([]float64{1}, mpi.Op(-1)) }},
		{"gather root -2", func() error { _, err := s.c.Gather(nil, -2); return err }},
		{"gatherv root size", func() error { _, err := s.c.Gatherv(nil, s.size, nil); return err }},
		{"alltoallv counts short", func() error { _, err := s.c.Alltoallv(nil, make([]int, s.size-1), nil); return err }},
		{"alltoallv count -1", func() error {
			counts := make([]int, s.size)
			counts[0] = -1
			_, err := s.c.Alltoallv(nil, counts, nil)
			return err
		}},
		{"alltoallv counts over the buffer", func() error { _, err := s.c.Alltoallv([]byte{1}, make([]int, s.size), nil); return err }},
		{"send to size", func() error { return s.c.Send([]byte{1}, s.size, 0) }},
		{"send to -1", func() error { return s.c.Send([]byte{1}, -1, 0) }},
		{"send tag -1", func() error { return s.c.Send([]byte{1}, 0, -1) }},
		{"recv from size", func() error { _, _, err := s.c.Recv(s.size, 0); return err }},
		{"recv tag -1", func() error { _, _, err := s.c.Recv(mpi.AnySource, -1); return err }},
	}
	for _, ch := range checks {
		err := ch.call()
		if err == nil {
			return fmt.Errorf("%s: no error", ch.name)
		}
		if errors.Is(err, mpi.ErrAborted) {
			return fmt.Errorf("%s: %w", ch.name, err)
		}
	}
	return nil
}

func (s *suite) bcast() error {
	for _, n := range []int{0, 1, 1000, smallBytes} {
		for root := range s.size {
			if err := s.bcastOne(n, root); err != nil {
				return err
			}
		}
	}
	if err := s.bcastOne(s.big, s.size-1); err != nil {
		return err
	}
	return s.bcastIsolation()
}

func (s *suite) bcastOne(n, root int) error {
	seed := n + 7*root
	var buf []byte
	if s.rank == root {
		buf = pattern(n, seed)
	} else {
		// Non-root buffers are ignored; pass one of the wrong length.
		buf = pattern(3, 99)
	}
	got, err := s.c.Bcast(buf, root)
	if err != nil {
		return fmt.Errorf("%d bytes from root %d: %w", n, root, err)
	}
	s.want.bcast(root, n)
	if err := diff(got, pattern(n, seed)); err != nil {
		return fmt.Errorf("%d bytes from root %d: %w", n, root, err)
	}
	if got == nil {
		return fmt.Errorf("%d bytes from root %d: nil result, want an empty buffer", n, root)
	}
	return nil
}

// bcastIsolation checks that received buffers are copies: every rank marks
// its result, and no rank may see another's mark.
func (s *suite) bcastIsolation() error {
	const root = 0
	buf := pattern(smallBytes, 5)
	got, err := s.c.Bcast(buf, root)
	if err != nil {
		return err
	}
	s.want.bcast(root, smallBytes)
	if s.rank != root {
		got[0] = byte(100 + s.rank)
	}
	if err := s.c.Barrier(); err != nil {
		return err
	}
	s.want.barrier()
	if s.rank == root {
		if err := diff(buf, pattern(smallBytes, 5)); err != nil {
			return fmt.Errorf("root's buffer changed by a receiver: %w", err)
		}
	} else if got[0] != byte(100+s.rank) {
		return fmt.Errorf("received buffer shared with another rank: mark %d, want %d", got[0], 100+s.rank)
	}
	return nil
}

// value is element i of rank's reduction input: multiples of 2^33, so that
// int64 results exceed 32 bits, and exact as float64 (quartered) sums.
func value(rank, i int) int64 {
	return int64((i*7+rank*13)%1001-500) << 33
}

func valueFloat(rank, i int) float64 { return float64(value(rank, i)) * 0.25 }

// reduced is the expected reduction of element i over size ranks.
func reduced[T float64 | int64](v func(rank, i int) T, op mpi.Op, size, i int) T {
	acc := v(0, i)
	for q := 1; q < size; q++ {
		x := v(q, i)
		switch op {
		case mpi.Sum:
			acc += x
		case mpi.Min:
			acc = min(acc, x)
		case mpi.Max:
			acc = max(acc, x)
		}
	}
	return acc
}

func (s *suite) reductions() error {
	ops := []mpi.Op{mpi.Sum, mpi.Min, mpi.Max}
	bigElems := s.big / 8
	k := 0
	for _, n := range []int{0, 1, smallBytes / 8, 1000} {
		for _, op := range ops {
			root := k % s.size
			k++
			if err := reduceCase(s, s.c.ReduceFloat64, valueFloat, n, op, root); err != nil {
				return err
			}
			if err := reduceCase(s, s.c.ReduceInt64, value, n, op, root); err != nil {
				return err
			}
			if err := allreduceCase(s, s.c.AllreduceFloat64, valueFloat, n, op); err != nil {
				return err
			}
			if err := allreduceCase(s, s.c.AllreduceInt64, value, n, op); err != nil {
				return err
			}
		}
	}
	if err := reduceCase(s, s.c.ReduceFloat64, valueFloat, bigElems, mpi.Sum, s.size-1); err != nil {
		return err
	}
	if err := reduceCase(s, s.c.ReduceInt64, value, bigElems, mpi.Min, 0); err != nil {
		return err
	}
	if err := allreduceCase(s, s.c.AllreduceFloat64, valueFloat, bigElems, mpi.Sum); err != nil {
		return err
	}
	return allreduceCase(s, s.c.AllreduceInt64, value, bigElems, mpi.Max)
}

func input[T float64 | int64](v func(rank, i int) T, rank, n int) []T {
	data := make([]T, n)
	for i := range data {
		data[i] = v(rank, i)
	}
	return data
}

func reduceCase[T float64 | int64](s *suite, reduce func([]T, mpi.Op, int) error, v func(rank, i int) T, n int, op mpi.Op, root int) error {
	data := input(v, s.rank, n)
	if err := reduce(data, op, root); err != nil {
		return fmt.Errorf("reduce %T %s of %d elements to root %d: %w", data, op, n, root, err)
	}
	s.want.reduce(root, n)
	for i, got := range data {
		want := v(s.rank, i) // other ranks' data is left unchanged
		if s.rank == root {
			want = reduced(v, op, s.size, i)
		}
		if got != want {
			return fmt.Errorf("reduce %T %s of %d elements to root %d: element %d is %v, want %v", data, op, n, root, i, got, want)
		}
	}
	return nil
}

func allreduceCase[T float64 | int64](s *suite, allreduce func([]T, mpi.Op) error, v func(rank, i int) T, n int, op mpi.Op) error {
	data := input(v, s.rank, n)
	if err := allreduce(data, op); err != nil {
		return fmt.Errorf("allreduce %T %s of %d elements: %w", data, op, n, err)
	}
	s.want.allreduce(n)
	for i, got := range data {
		if want := reduced(v, op, s.size, i); got != want {
			return fmt.Errorf("allreduce %T %s of %d elements: element %d is %v, want %v", data, op, n, i, got, want)
		}
	}
	return nil
}

// exchange sends buf to dest in the background while receiving from src, so
// that blocking sends of large messages cannot deadlock a ring.
func (s *suite) exchange(buf []byte, dest, src, tag int) ([]byte, int, error) {
	sent := make(chan error, 1)
	go func() { sent <- s.c.Send(buf, dest, tag) }()
	got, from, err := s.c.Recv(src, tag)
	if serr := <-sent; serr != nil {
		return nil, 0, fmt.Errorf("send to rank %d tag %d: %w", dest, tag, serr)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("recv from rank %d tag %d: %w", src, tag, err)
	}
	s.want.send(len(buf))
	s.want.recv(len(got))
	return got, from, nil
}

func (s *suite) pointToPoint() error {
	next, prev := (s.rank+1)%s.size, (s.rank+s.size-1)%s.size
	for k, n := range []int{0, 1, smallBytes, s.big} {
		tag := 10 + k
		got, from, err := s.exchange(pattern(n, 1000*s.rank+n), next, prev, tag)
		if err != nil {
			return err
		}
		if from != prev {
			return fmt.Errorf("%d bytes from rank %d: reported source %d", n, prev, from)
		}
		if err := diff(got, pattern(n, 1000*prev+n)); err != nil {
			return fmt.Errorf("%d bytes from rank %d: %w", n, prev, err)
		}
		if got == nil {
			return fmt.Errorf("%d bytes from rank %d: nil buffer, want an empty one", n, prev)
		}
	}
	// A message to oneself.
	got, _, err := s.exchange(pattern(smallBytes, 77), s.rank, s.rank, 20)
	if err != nil {
		return err
	}
	if err := diff(got, pattern(smallBytes, 77)); err != nil {
		return fmt.Errorf("message to oneself: %w", err)
	}

	// Once Send has returned, the sender may reuse its buffer. The message
	// is small, so that MPI sends it eagerly and Send returns before the
	// receiver has asked for it.
	buf := pattern(100, s.rank)
	if err := s.c.Send(buf, next, 21); err != nil {
		return err
	}
	s.want.send(len(buf))
	fill(buf, 255)
	if err := s.syncRound(); err != nil {
		return err
	}
	got, _, err = s.c.Recv(prev, 21)
	if err != nil {
		return err
	}
	s.want.recv(len(got))
	if err := diff(got, pattern(100, prev)); err != nil {
		return fmt.Errorf("message changed by its sender after Send returned: %w", err)
	}
	return nil
}

// ordering checks that messages with one (source, tag) arrive in sending
// order whatever their sizes, and that a receive picks its tag even when
// another tag's message came first.
func (s *suite) ordering() error {
	next, prev := (s.rank+1)%s.size, (s.rank+s.size-1)%s.size
	sizes := []int{100, 200 << 10, 0, 10, 1 << 20}
	sent := make(chan error, 1)
	go func() {
		for k, n := range sizes {
			if err := s.c.Send(pattern(n, 10*s.rank+k), next, 30); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	for k, n := range sizes {
		got, _, err := s.c.Recv(prev, 30)
		if err != nil {
			return err
		}
		if err := diff(got, pattern(n, 10*prev+k)); err != nil {
			return fmt.Errorf("message %d of %d from rank %d: %w", k, len(sizes), prev, err)
		}
		s.want.recv(n)
	}
	if err := <-sent; err != nil {
		return err
	}
	for _, n := range sizes {
		s.want.send(n)
	}

	// Tags 31 and 32 are sent concurrently, then received in reverse order.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, tag := range []int{31, 32} {
		wg.Go(func() { errs[i] = s.c.Send([]byte{byte(tag)}, next, tag) })
	}
	for _, tag := range []int{32, 31} {
		got, from, err := s.c.Recv(prev, tag)
		if err != nil {
			return err
		}
		if from != prev || len(got) != 1 || got[0] != byte(tag) {
			return fmt.Errorf("recv tag %d from rank %d: got %v from rank %d", tag, prev, got, from)
		}
		s.want.recv(1)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	s.want.send(1)
	s.want.send(1)
	return s.syncRound()
}

// syncRound ends a point-to-point step with a barrier, so that the next
// step's messages cannot be confused with late ones of this step.
func (s *suite) syncRound() error {
	if err := s.c.Barrier(); err != nil {
		return err
	}
	s.want.barrier()
	return nil
}

// anySource has every rank send its rank number to rank 0, which receives
// them from AnySource and checks every sender exactly once.
func (s *suite) anySource() error {
	const tag = 40
	msg := bytes.Repeat([]byte{byte(s.rank)}, s.rank+1)
	sent := make(chan error, 1)
	go func() { sent <- s.c.Send(msg, 0, tag) }()
	if s.rank == 0 {
		seen := make([]bool, s.size)
		for range s.size {
			got, from, err := s.c.Recv(mpi.AnySource, tag)
			if err != nil {
				return err
			}
			if from < 0 || from >= s.size || seen[from] {
				return fmt.Errorf("unexpected or repeated source %d", from)
			}
			seen[from] = true
			if !bytes.Equal(got, bytes.Repeat([]byte{byte(from)}, from+1)) {
				return fmt.Errorf("message from rank %d is %v", from, got)
			}
			s.want.recv(from + 1)
		}
	}
	if err := <-sent; err != nil {
		return err
	}
	s.want.send(len(msg))
	return s.syncRound()
}

// concurrent runs several sending and receiving goroutines per rank: sender
// g sends one message to every rank with tag 100+g, receiver g receives one
// from every rank, from AnySource for even g and by source for odd g.
func (s *suite) concurrent() error {
	const goroutines = 4
	message := func(src, dst, g int) []byte { return pattern(64+16*g+src, 1000*src+10*dst+g) }
	var wg sync.WaitGroup
	errs := make(chan error, 2*goroutines)
	var mu sync.Mutex
	var recvBytes int
	for g := range goroutines {
		wg.Go(func() {
			for d := range s.size {
				if err := s.c.Send(message(s.rank, d, g), d, 100+g); err != nil {
					errs <- fmt.Errorf("sender %d to rank %d: %w", g, d, err)
					return
				}
			}
		})
		wg.Go(func() {
			seen := make([]bool, s.size)
			for q := range s.size {
				src := q
				if g%2 == 0 {
					src = mpi.AnySource
				}
				got, from, err := s.c.Recv(src, 100+g)
				if err != nil {
					errs <- fmt.Errorf("receiver %d: %w", g, err)
					return
				}
				if from < 0 || from >= s.size || seen[from] || (src != mpi.AnySource && from != src) {
					errs <- fmt.Errorf("receiver %d: unexpected source %d", g, from)
					return
				}
				seen[from] = true
				if err := diff(got, message(from, s.rank, g)); err != nil {
					errs <- fmt.Errorf("receiver %d, message from rank %d: %w", g, from, err)
					return
				}
				mu.Lock()
				recvBytes += len(got)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	for g := range goroutines {
		for q := range s.size {
			s.want.send(len(message(s.rank, q, g)))
			s.want.recv(len(message(q, s.rank, g)))
		}
	}
	return s.syncRound()
}

// figures compares the difference between two snapshots with the model.
func (s *suite) figures(before, after mpi.Stats) error {
	if after.Rank != s.rank {
		return fmt.Errorf("stats of rank %d, want %d", after.Rank, s.rank)
	}
	if len(before.Ops) != len(after.Ops) {
		return fmt.Errorf("%d operation kinds before, %d after", len(before.Ops), len(after.Ops))
	}
	for i, a := range after.Ops {
		b := before.Ops[i]
		got := tally{a.Calls - b.Calls, a.Messages - b.Messages, a.BytesSent - b.BytesSent, a.BytesRecv - b.BytesRecv}
		if want := s.want.ops[a.Op]; got != want {
			return fmt.Errorf("%s: got calls/messages/sent/received %v, want %v", a.Op, got, want)
		}
		if a.BlockedSeconds < b.BlockedSeconds {
			return fmt.Errorf("%s: blocked time went down from %g to %g s", a.Op, b.BlockedSeconds, a.BlockedSeconds)
		}
		delete(s.want.ops, a.Op)
	}
	for op, t := range s.want.ops {
		return fmt.Errorf("%s: no figures reported, want %v", op, t)
	}
	return nil
}

// gatherStats checks GatherStats: rank 0 gets every rank's snapshot, in rank
// order, and its own entry is the snapshot it passed.
func (s *suite) gatherStats() error {
	mine := s.c.Stats()
	all, err := mpi.GatherStats(s.c, mine)
	if err != nil {
		return err
	}
	if s.rank != 0 {
		if all != nil {
			return fmt.Errorf("rank %d got %d stats, want nil", s.rank, len(all))
		}
		return nil
	}
	if len(all) != s.size {
		return fmt.Errorf("got %d stats, want %d", len(all), s.size)
	}
	for r, st := range all {
		if st.Rank != r {
			return fmt.Errorf("entry %d holds rank %d's stats", r, st.Rank)
		}
		if len(st.Ops) != len(mine.Ops) {
			return fmt.Errorf("rank %d reports %d operation kinds, want %d", r, len(st.Ops), len(mine.Ops))
		}
	}
	if !slices.Equal(all[0].Ops, mine.Ops) {
		return fmt.Errorf("rank 0's gathered stats %v differ from its snapshot %v", all[0].Ops, mine.Ops)
	}
	return nil
}
