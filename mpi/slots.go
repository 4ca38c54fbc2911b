package mpi

import (
	"encoding/binary"
	"slices"
)

// Slots carry a small Allgatherv or Alltoallv in one MPI collective.
//
// An exchange of parts of variable length takes two collectives: one for
// the lengths, then one for the data. A trainer of rounds exchanges tens
// to hundreds of bytes a rank every round, and then the first collective's
// latency is half the exchange's. The MPI backend therefore sends every
// part in a slot of fixed size, behind a header with its length, in one
// MPI_Allgather or MPI_Alltoall, and sends the data again by
// MPI_Allgatherv or MPI_Alltoallv only when some part did not fit its slot.
//
// Every rank must use the same slot size, so each chooses it alike from
// what all ranks learn from the headers: the longest parts of the last few
// exchanges of the same kind (slotSizer).
//
// Counted reports the parts' bytes, as for the in-process backend; the
// headers and the slots' padding that MPI moves besides are not counted.
// They are bounded: a slot is at most twice a header and the longest
// recent part, or minSlot, and at most maxSlot bytes.

const (
	// slotHeader is a slot's header: the part's length and the longest
	// part its sender sends in the exchange, an int64 each.
	slotHeader = 16
	// minSlot and maxSlot bound a slot's size. A slot larger than maxSlot
	// is not used: the exchange sends the headers alone, then the data.
	// Bounding the slot bounds the padding that every rank sends: at most
	// P × maxSlot bytes an exchange, P the ranks.
	minSlot = 64
	maxSlot = 1024
	// slotMemory is how many exchanges' longest parts size the next slot:
	// enough to hold the sizes of a round's several recurring exchanges,
	// so that alternating ones do not each size the other's slot.
	slotMemory = 4
)

// slotSizer chooses the slot size of a communicator's next exchange of
// one kind (Allgatherv or Alltoallv) from the longest parts of its last
// slotMemory exchanges of that kind, which every rank learns alike.
type slotSizer struct {
	recent [slotMemory]int
	next   int
}

// size returns the next exchange's slot size: a power of two in [minSlot,
// maxSlot] that holds the header and the longest recent part, or
// slotHeader, for the headers alone, where no such slot holds it.
func (s *slotSizer) size() int {
	need := slotHeader + slices.Max(s.recent[:])
	if need > maxSlot {
		return slotHeader
	}
	size := minSlot
	for size < need {
		size *= 2
	}
	return size
}

// saw records the longest part of an exchange, the same on every rank.
func (s *slotSizer) saw(longest int) {
	s.recent[s.next] = longest
	s.next = (s.next + 1) % slotMemory
}

// putSlot writes part into slot, behind its header, where the part fits;
// longest is the sender's longest part of the exchange.
func putSlot(slot, part []byte, longest int) {
	binary.LittleEndian.PutUint64(slot, uint64(len(part)))
	binary.LittleEndian.PutUint64(slot[8:], uint64(longest))
	if len(part) <= len(slot)-slotHeader {
		copy(slot[slotHeader:], part)
	}
}

// readSlots returns the lengths of the parts in recv's slots of size
// bytes, one a rank, their total and the longest part any rank sent.
func readSlots(recv []byte, size, ranks int) (lens []int64, total int64, longest int) {
	lens = make([]int64, ranks)
	for q := range lens {
		slot := recv[q*size:]
		lens[q] = int64(binary.LittleEndian.Uint64(slot))
		total += lens[q]
		longest = max(longest, int(binary.LittleEndian.Uint64(slot[8:])))
	}
	return lens, total, longest
}

// copySlots copies the parts that recv's slots of size bytes carry,
// lens[q] bytes from rank q's, one after another into all.
func copySlots(all, recv []byte, size int, lens []int64) {
	off := 0
	for q, n := range lens {
		off += copy(all[off:off+int(n)], recv[q*size+slotHeader:])
	}
}

// slotBuffers returns kept buffers of at least send and recv bytes.
func slotBuffers(keep *[2][]byte, send, recv int) ([]byte, []byte) {
	for i, n := range [2]int{send, recv} {
		if cap(keep[i]) < n {
			keep[i] = make([]byte, n)
		}
		keep[i] = keep[i][:n]
	}
	return keep[0], keep[1]
}
