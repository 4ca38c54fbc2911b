package mpitest

// tally is the part of mpi.OpStats that the accounting model predicts
// exactly.
type tally struct{ calls, messages, sent, recv int64 }

// expect accumulates the figures that mpi.Counted must report for the
// operations one rank performed. It restates Counted's accounting model (a
// flat algorithm rooted at the root, or at rank 0 for barrier and allreduce)
// independently of its implementation.
type expect struct {
	rank, size int
	ops        map[string]tally
}

func (e *expect) add(op string, messages, sent, recv int) {
	if e.ops == nil {
		e.ops = make(map[string]tally)
	}
	t := e.ops[op]
	t.calls++
	t.messages += int64(messages)
	t.sent += int64(sent)
	t.recv += int64(recv)
	e.ops[op] = t
}

func (e *expect) barrier() {
	if e.rank == 0 {
		e.add("barrier", 2*(e.size-1), 0, 0)
		return
	}
	e.add("barrier", 2, 0, 0)
}

func (e *expect) bcast(root, n int) {
	if e.rank == root {
		e.add("bcast", e.size-1, n*(e.size-1), 0)
		return
	}
	e.add("bcast", 1, 0, n)
}

func (e *expect) reduce(root, elems int) {
	n := 8 * elems
	if e.rank == root {
		e.add("reduce", e.size-1, 0, n*(e.size-1))
		return
	}
	e.add("reduce", 1, n, 0)
}

func (e *expect) allreduce(elems int) {
	n := 8 * elems
	if e.rank == 0 {
		e.add("allreduce", 2*(e.size-1), n*(e.size-1), n*(e.size-1))
		return
	}
	e.add("allreduce", 2, n, n)
}

// gather accounts a Gather (or Gatherv if variable) where rank q contributed
// lens[q] bytes.
func (e *expect) gather(variable bool, root int, lens []int) {
	op := "gather"
	if variable {
		op = "gatherv"
	}
	if e.rank != root {
		e.add(op, 1, lens[e.rank], 0)
		return
	}
	recv := 0
	for q, n := range lens {
		if q != root {
			recv += n
		}
	}
	e.add(op, e.size-1, 0, recv)
}

// allgatherv accounts an Allgatherv where rank q contributed lens[q] bytes:
// each rank sends its own to every other rank and receives theirs.
func (e *expect) allgatherv(lens []int) {
	recv := 0
	for q, n := range lens {
		if q != e.rank {
			recv += n
		}
	}
	e.add("allgatherv", 2*(e.size-1), lens[e.rank]*(e.size-1), recv)
}

// alltoallv accounts an Alltoallv where rank r sent counts[r][q] bytes to
// rank q: each rank sends its parts for the others and receives theirs.
func (e *expect) alltoallv(counts [][]int) {
	sent, recv := 0, 0
	for q := range e.size {
		if q != e.rank {
			sent += counts[e.rank][q]
			recv += counts[q][e.rank]
		}
	}
	e.add("alltoallv", 2*(e.size-1), sent, recv)
}

func (e *expect) send(n int) { e.add("send", 1, n, 0) }
func (e *expect) recv(n int) { e.add("recv", 1, 0, n) }
