package mpi

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sync"
)

// MaxMessage is the most bytes one MPI message can carry: MPI counts are C
// ints. It is Split's default limit, and the in-process backend's.
const MaxMessage = math.MaxInt32

// MinMessage is the smallest limit Split accepts: below it, the per-message
// overhead of splitting would swamp any transfer.
const MinMessage = 4096

// Split returns c with every transfer that could exceed limit bytes split
// into transfers of at most limit bytes: a Send into pieces, a Bcast into
// rounds, a Gather or Gatherv into rounds in which each rank sends at most
// limit/P bytes (so that the root receives at most limit), reductions into
// chunks. Results are the same as c's, byte for byte; only the number of
// underlying calls grows. The MPI backend refuses a single transfer of more
// than MaxMessage bytes, and the in-process one (Launch) more than its
// limit, so every transfer of xmc goes through Split.
//
// Gatherv costs one small Allreduce more than c's (the ranks agree on the
// longest contribution), and Bcast a small Bcast more (the length);
// Allgatherv and Alltoallv cost nothing more on the MPI and in-process
// backends, which learn every rank's length first (boundedAllgatherer,
// boundedAlltoaller). An Alltoallv is split into rounds in which each rank
// sends each other at most limit/P bytes.
// A split Send travels as pieces of exactly limit bytes and a last, shorter
// one (maybe empty), which Recv reassembles; the pieces of one message are
// never interleaved with another message to the same rank and tag, as
// sends and receives of a tag are serialised within a rank.
func Split(c Comm, limit int) (Comm, error) {
	if limit < MinMessage || limit > MaxMessage {
		return nil, fmt.Errorf("mpi: message limit %d outside [%d, %d]", limit, MinMessage, MaxMessage)
	}
	return &splitComm{Comm: c, limit: limit}, nil
}

// splitComm is the Comm Split returns.
type splitComm struct {
	Comm
	limit int

	mu    sync.Mutex
	sends map[[2]int]*sync.Mutex // by destination and tag
	recvs map[int]*sync.Mutex    // by tag
}

// lock returns the mutex of key in m, made on first use.
func lock[K comparable](mu *sync.Mutex, m *map[K]*sync.Mutex, key K) *sync.Mutex {
	mu.Lock()
	defer mu.Unlock()
	if *m == nil {
		*m = map[K]*sync.Mutex{}
	}
	l, ok := (*m)[key]
	if !ok {
		l = new(sync.Mutex)
		(*m)[key] = l
	}
	return l
}

func (s *splitComm) Bcast(buf []byte, root int) ([]byte, error) {
	if err := checkRoot(opBcast, root, s.Size()); err != nil {
		return nil, err
	}
	head, err := s.Comm.Bcast(binary.LittleEndian.AppendUint64(nil, uint64(len(buf))), root)
	if err != nil {
		return nil, err
	}
	if len(head) != 8 {
		return nil, fmt.Errorf("mpi: bcast: malformed length of %d bytes", len(head))
	}
	n := int(binary.LittleEndian.Uint64(head))
	if n <= s.limit {
		return s.Comm.Bcast(buf, root)
	}
	var out []byte
	if s.Rank() == root {
		out = buf
	} else {
		out = make([]byte, n)
	}
	for lo := 0; lo < n; lo += s.limit {
		hi := min(lo+s.limit, n)
		var piece []byte
		if s.Rank() == root {
			piece = buf[lo:hi]
		}
		got, err := s.Comm.Bcast(piece, root)
		if err != nil {
			return nil, err
		}
		if s.Rank() != root {
			if len(got) != hi-lo {
				return nil, fmt.Errorf("mpi: bcast: piece of %d bytes, want %d", len(got), hi-lo)
			}
			copy(out[lo:], got)
		}
	}
	return out, nil
}

// chunks calls f on consecutive chunks of data of at most limit bytes, at
// least once.
func chunks[T any](data []T, size, limit int, f func([]T) error) error {
	per := max(1, limit/size)
	for lo := 0; ; lo += per {
		hi := min(lo+per, len(data))
		if err := f(data[lo:hi]); err != nil {
			return err
		}
		if hi == len(data) {
			return nil
		}
	}
}

func (s *splitComm) ReduceFloat64(data []float64, op Op, root int) error {
	return chunks(data, 8, s.limit, func(d []float64) error { return s.Comm.ReduceFloat64(d, op, root) })
}

func (s *splitComm) ReduceInt64(data []int64, op Op, root int) error {
	return chunks(data, 8, s.limit, func(d []int64) error { return s.Comm.ReduceInt64(d, op, root) })
}

func (s *splitComm) AllreduceFloat64(data []float64, op Op) error {
	return chunks(data, 8, s.limit, func(d []float64) error { return s.Comm.AllreduceFloat64(d, op) })
}

func (s *splitComm) AllreduceInt64(data []int64, op Op) error {
	return chunks(data, 8, s.limit, func(d []int64) error { return s.Comm.AllreduceInt64(d, op) })
}

// Gather needs no agreement: every rank contributes len(buf) bytes.
func (s *splitComm) Gather(buf []byte, root int) ([][]byte, error) {
	if err := checkRoot(opGather, root, s.Size()); err != nil {
		return nil, err
	}
	if len(buf)*s.Size() <= s.limit {
		return s.Comm.Gather(buf, root)
	}
	return s.gatherRounds(s.Comm.Gather, buf, len(buf), root)
}

func (s *splitComm) Gatherv(buf []byte, root int, into []byte) ([][]byte, error) {
	if err := checkRoot(opGatherv, root, s.Size()); err != nil {
		return nil, err
	}
	longest := []int64{int64(len(buf))}
	if err := s.Comm.AllreduceInt64(longest, Max); err != nil {
		return nil, err
	}
	if int(longest[0])*s.Size() <= s.limit {
		return s.Comm.Gatherv(buf, root, into)
	}
	// A split gather assembles the buffers from its rounds, then moves
	// them into into: it leaves garbage, but a gather of more than the
	// message limit is rare.
	gatherv := func(b []byte, root int) ([][]byte, error) { return s.Comm.Gatherv(b, root, nil) }
	out, err := s.gatherRounds(gatherv, buf, int(longest[0]), root)
	if err != nil || s.Rank() != root {
		return out, err
	}
	return packInto(into, out), nil
}

// boundedAllgatherer is a backend whose Allgatherv learns every rank's
// length in its first collective (MPI's lengths gather, which carries small
// buffers too, see slots.go; the in-process backend's one wait): it
// gathers the ranks' buffers where they total at most limit bytes, and
// otherwise moves none and returns their lengths, the same on every rank.
// Split's Allgatherv then needs no collective of its own to agree on
// gathering in rounds: a trainer of rounds pays one synchronisation less
// every round.
type boundedAllgatherer interface {
	allgathervUpTo(buf, into []byte, limit int) (parts [][]byte, lens []int64, gathered bool, err error)
}

func (s *splitComm) Allgatherv(buf []byte, into []byte) ([][]byte, error) {
	var longest int64
	if b, ok := s.Comm.(boundedAllgatherer); ok {
		parts, lens, gathered, err := b.allgathervUpTo(buf, into, s.limit)
		if err != nil || gathered {
			return parts, err
		}
		for _, n := range lens {
			longest = max(longest, n)
		}
	} else {
		max1 := []int64{int64(len(buf))}
		if err := s.Comm.AllreduceInt64(max1, Max); err != nil {
			return nil, err
		}
		if longest = max1[0]; int(longest)*s.Size() <= s.limit {
			return s.Comm.Allgatherv(buf, into)
		}
	}
	// As a split Gatherv: every rank assembles the rounds, as a root.
	allgatherv := func(b []byte, _ int) ([][]byte, error) { return s.Comm.Allgatherv(b, nil) }
	out, err := s.gatherRounds(allgatherv, buf, int(longest), s.Rank())
	if err != nil {
		return nil, err
	}
	return packInto(into, out), nil
}

// boundedAlltoaller is a backend whose Alltoallv learns every rank's
// longest part in its first collective (MPI's lengths exchange, which
// carries small parts too; the in-process backend's one wait): it moves
// the parts where none is longer than limit/P bytes, P the ranks, and
// otherwise moves none and returns the longest, the same on every rank, as
// boundedAllgatherer does for Allgatherv.
type boundedAlltoaller interface {
	alltoallvUpTo(buf []byte, counts []int, into []byte, limit int) (parts [][]byte, longest int, moved bool, err error)
}

// Alltoallv moves the parts in rounds where one is longer than limit/P
// bytes: in each round every rank sends each rank the next limit/P bytes
// of its part, so that no rank sends or receives more than limit bytes in
// one.
func (s *splitComm) Alltoallv(buf []byte, counts []int, into []byte) ([][]byte, error) {
	if err := checkCounts(counts, s.Size(), len(buf)); err != nil {
		return nil, err
	}
	per := max(1, s.limit/s.Size())
	var longest int
	if b, ok := s.Comm.(boundedAlltoaller); ok {
		parts, l, moved, err := b.alltoallvUpTo(buf, counts, into, s.limit)
		if err != nil || moved {
			return parts, err
		}
		longest = l
	} else {
		max1 := []int64{int64(slices.Max(counts))}
		if err := s.Comm.AllreduceInt64(max1, Max); err != nil {
			return nil, err
		}
		if longest = int(max1[0]); longest <= per {
			return s.Comm.Alltoallv(buf, counts, into)
		}
	}
	at := make([]int, len(counts)+1)
	for q, n := range counts {
		at[q+1] = at[q] + n
	}
	out := make([][]byte, s.Size())
	var piece []byte
	pieceCounts := make([]int, s.Size())
	for lo := 0; lo < longest; lo += per {
		piece = piece[:0]
		for q, n := range counts {
			from, to := at[q]+min(lo, n), at[q]+min(lo+per, n)
			piece = append(piece, buf[from:to]...)
			pieceCounts[q] = to - from
		}
		got, err := s.Comm.Alltoallv(piece, pieceCounts, nil)
		if err != nil {
			return nil, err
		}
		for r, g := range got {
			out[r] = append(out[r], g...)
		}
	}
	return packInto(into, nonNil(out)), nil
}

// gatherRounds gathers buf in rounds with gather, each rank sending the
// next limit/P bytes of it in each, until the longest contribution, of
// longest bytes, is through.
func (s *splitComm) gatherRounds(gather func([]byte, int) ([][]byte, error), buf []byte, longest, root int) ([][]byte, error) {
	per := max(1, s.limit/s.Size())
	var out [][]byte
	if s.Rank() == root {
		out = make([][]byte, s.Size())
	}
	for lo := 0; lo < longest; lo += per {
		got, err := gather(buf[min(lo, len(buf)):min(lo+per, len(buf))], root)
		if err != nil {
			return nil, err
		}
		for r, g := range got {
			out[r] = append(out[r], g...)
		}
	}
	return nonNil(out), nil
}

// nonNil returns parts with every nil part made empty: a received buffer
// is never nil.
func nonNil(parts [][]byte) [][]byte {
	for r := range parts {
		if parts[r] == nil {
			parts[r] = []byte{}
		}
	}
	return parts
}

func (s *splitComm) Send(buf []byte, dest, tag int) error {
	if err := checkSend(dest, tag, s.Size()); err != nil {
		return err
	}
	l := lock(&s.mu, &s.sends, [2]int{dest, tag})
	l.Lock()
	defer l.Unlock()
	for len(buf) >= s.limit {
		if err := s.Comm.Send(buf[:s.limit], dest, tag); err != nil {
			return err
		}
		buf = buf[s.limit:]
	}
	return s.Comm.Send(buf, dest, tag)
}

func (s *splitComm) Recv(src, tag int) ([]byte, int, error) {
	if err := checkRecv(src, tag, s.Size()); err != nil {
		return nil, 0, err
	}
	l := lock(&s.mu, &s.recvs, tag)
	l.Lock()
	defer l.Unlock()
	msg, from, err := s.Comm.Recv(src, tag)
	if err != nil || len(msg) < s.limit {
		return msg, from, err
	}
	whole := msg
	for len(msg) == s.limit {
		if msg, _, err = s.Comm.Recv(from, tag); err != nil {
			return nil, 0, err
		}
		whole = append(whole, msg...)
	}
	return whole, from, nil
}

// packInto moves parts one after another into into when its capacity
// holds them all (and there are any), each with its capacity capped so that appending to one
// never overwrites the next, and returns them; otherwise it returns parts.
func packInto(into []byte, parts [][]byte) [][]byte {
	total := 0
	for _, p := range parts {
		total += len(p)
	}
	if total == 0 || cap(into) < total {
		return parts
	}
	all := into[:0]
	for q, p := range parts {
		all = append(all, p...)
		parts[q] = all[len(all)-len(p) : len(all) : len(all)]
	}
	return parts
}
