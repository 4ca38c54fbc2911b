package mpi

import "fmt"

// opKind names a Comm operation in statistics, watchdog messages and errors.
type opKind int

const (
	opBarrier opKind = iota
	opBcast
	opReduce
	opAllreduce
	opGather
	opGatherv
	opAllgatherv
	opAlltoallv
	opSend
	opRecv
	numOps
)

var opNames = [numOps]string{"barrier", "bcast", "reduce", "allreduce", "gather", "gatherv", "allgatherv", "alltoallv", "send", "recv"}

func (k opKind) String() string { return opNames[k] }

// rooted reports whether the operation has a root rank.
func (k opKind) rooted() bool {
	return k == opBcast || k == opReduce || k == opGather || k == opGatherv
}

// checkRoot validates the root argument of a rooted collective. Every rank
// passes the same root, so every rank returns the same error without
// communicating.
func checkRoot(op opKind, root, size int) error {
	if root < 0 || root >= size {
		return fmt.Errorf("mpi: %s: root %d out of range [0, %d)", op, root, size)
	}
	return nil
}

// checkSend validates the destination and tag of a Send.
func checkSend(dest, tag, size int) error {
	if dest < 0 || dest >= size {
		return fmt.Errorf("mpi: send: destination rank %d out of range [0, %d)", dest, size)
	}
	if tag < 0 {
		return fmt.Errorf("mpi: send to rank %d: negative tag %d", dest, tag)
	}
	return nil
}

// checkRecv validates the source and tag of a Recv.
func checkRecv(src, tag, size int) error {
	if src != AnySource && (src < 0 || src >= size) {
		return fmt.Errorf("mpi: recv: source rank %d out of range [0, %d)", src, size)
	}
	if tag < 0 {
		return fmt.Errorf("mpi: recv: negative tag %d", tag)
	}
	return nil
}

// checkCounts validates an Alltoallv's counts: one per rank, none
// negative, together the length n of the buffer they cut. Every rank checks
// its own, without communicating.
func checkCounts(counts []int, size, n int) error {
	if len(counts) != size {
		return fmt.Errorf("mpi: %s: %d counts for %d ranks", opAlltoallv, len(counts), size)
	}
	total := 0
	for q, c := range counts {
		if c < 0 {
			return fmt.Errorf("mpi: %s: negative count %d for rank %d", opAlltoallv, c, q)
		}
		total += c
	}
	if total != n {
		return fmt.Errorf("mpi: %s: counts sum to %d bytes, the buffer holds %d", opAlltoallv, total, n)
	}
	return nil
}
