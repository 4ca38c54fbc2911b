package runner

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"xmc/mpi"
	"xmc/numa"
)

// gatherBatchBytes bounds the bytes of results a rank sends in one round of
// Gather. A rank then holds, beside its results, a copy of at most this much
// rather than of all of them: for a forest of 100 MB per rank, the
// difference is most of the rank's peak memory.
const gatherBatchBytes = 16 << 20

// Gather collects the results of every rank on root, indexed by unit (nil
// for a unit no rank finished); other ranks get nil. Results travel in
// rounds of one Gatherv, each rank sending in a round the next of its
// results that fit in gatherBatchBytes (at least one), each as unit id,
// length and bytes; root keeps its own results where they are rather than
// sending itself a copy.
func Gather(c mpi.Comm, units int, own []Result, root int) ([][]byte, error) {
	return gatherBatched(c, units, own, root, gatherBatchBytes)
}

// gatherBatched is Gather with rounds of at most batch bytes per rank.
func gatherBatched(c mpi.Comm, units int, own []Result, root, batch int) ([][]byte, error) {
	const header = 12 // unit id and length
	// own[cuts[b]:cuts[b+1]] is the b-th batch of a rank other than root.
	// The buffer a round is packed into is allocated once, for the
	// largest round, in huge pages where the system has them: first
	// touching memory is costly (on the development VM, about 11 µs a
	// 4 KiB page), so it is reused rather than grown.
	cuts, largest := []int{0}, 0
	if c.Rank() != root {
		size := 0
		for i, r := range own {
			if size > 0 && size+header+len(r.Data) > batch {
				cuts, size = append(cuts, i), 0
			}
			size += header + len(r.Data)
			largest = max(largest, size)
		}
		if len(own) > 0 {
			cuts = append(cuts, len(own))
		}
	}
	rounds := []int64{int64(len(cuts) - 1)}
	if err := c.AllreduceInt64(rounds, mpi.Max); err != nil {
		return nil, err
	}
	// Root records the first malformed result, its own or another rank's,
	// and goes on taking part in every round, so that no rank is left
	// waiting in a Gatherv.
	var bad error
	var all [][]byte
	if c.Rank() == root {
		all = make([][]byte, units)
		for _, r := range own {
			if r.Unit < 0 || r.Unit >= units {
				bad = fmt.Errorf("gather: unit %d out of range", r.Unit)
				break
			}
			all[r.Unit] = r.Data
		}
	}
	buf := numa.LargeBytes(largest)[:0]
	for b := range int(rounds[0]) {
		buf = buf[:0]
		if b+1 < len(cuts) {
			for _, r := range own[cuts[b]:cuts[b+1]] {
				buf = binary.LittleEndian.AppendUint32(buf, uint32(r.Unit))
				buf = binary.LittleEndian.AppendUint64(buf, uint64(len(r.Data)))
				buf = append(buf, r.Data...)
			}
		}
		parts, err := c.Gatherv(buf, root, nil)
		if err != nil {
			return nil, err
		}
		for rank, p := range parts {
			if bad == nil {
				bad = unpackResults(all, rank, p)
			}
		}
	}
	if bad != nil {
		return nil, bad
	}
	return all, nil
}

// unpackResults sets all[u] to each result u packed in p by Gather on rank.
func unpackResults(all [][]byte, rank int, p []byte) error {
	for len(p) > 0 {
		if len(p) < 12 {
			return fmt.Errorf("gather: rank %d sent a truncated result", rank)
		}
		u, n := int(binary.LittleEndian.Uint32(p)), binary.LittleEndian.Uint64(p[4:])
		p = p[12:]
		if u >= len(all) || n > uint64(len(p)) || all[u] != nil {
			return fmt.Errorf("gather: rank %d sent a malformed result for unit %d", rank, u)
		}
		all[u] = p[:n:n]
		p = p[n:]
	}
	return nil
}

// StreamBytes is the budget of Stream in the training pipeline: rank 0,
// writing the model, holds at most about this many bytes of other ranks'
// units at once, whatever the size of the model.
const StreamBytes = 64 << 20

// Stream hands every rank's results to write on root, one unit at a time
// in increasing unit order (so that the model file is the same on any
// number of ranks), holding at once at most budget bytes of other ranks'
// results beside its own (a single result larger than budget travels
// alone), each other rank sending at most gatherBatchBytes (16 MiB) in a
// round but for a single larger result. The ranks first send root the ids and sizes of their results;
// root cuts the units into rounds, each the next units in id order whose
// results held by other ranks fit in budget, and broadcasts the cuts; in
// each round every rank sends root its results of the round (one Gatherv).
//
// Stream returns on root the first error of write or of a malformed
// message, having taken part in every round all the same so that no rank
// is left waiting; the other ranks return nil unless the communicator
// fails. Callers agree on the outcome themselves.
func Stream(c mpi.Comm, own []Result, root, budget int, write func(unit int, data []byte) error) error {
	cuts, entries, bad, err := planStream(c, own, root, budget)
	if err != nil {
		return err
	}
	// A rank packs each round into one buffer sized for its largest round
	// and reused, in huge pages where the system has them, as Gather does:
	// growing a fresh buffer per round left twice its size in garbage and
	// first-touch page faults. Root likewise receives every round into one
	// buffer: a fresh one per round left the rounds' garbage to the
	// collector, 140 MiB more at rank 0's peak on the Amazon-670K shape.
	var buf, recv []byte
	if c.Rank() == root {
		recv = numa.LargeBytes(cuts.largest(len(entries), func(i int) int { return entries[i].unit }, func(i int) int {
			if entries[i].owner == root {
				return 0 // root's own results are not received
			}
			return 12 + entries[i].size
		}))[:0]
	} else {
		buf = numa.LargeBytes(cuts.largest(len(own), func(i int) int { return own[i].Unit },
			func(i int) int { return 12 + len(own[i].Data) }))[:0]
	}
	w := &streamWriter{own: own, entries: entries, mine: make(map[int][]byte, len(own)), write: write, bad: bad}
	for k := range cuts.rounds() {
		lo, hi := cuts.bounds(k)
		buf = buf[:0]
		for _, r := range own {
			if r.Unit >= lo && r.Unit < hi && c.Rank() != root {
				buf = binary.LittleEndian.AppendUint32(buf, uint32(r.Unit))
				buf = binary.LittleEndian.AppendUint64(buf, uint64(len(r.Data)))
				buf = append(buf, r.Data...)
			}
		}
		parts, err := c.Gatherv(buf, root, recv)
		if err != nil {
			return err
		}
		if c.Rank() == root {
			w.round(parts, lo, hi)
		}
	}
	if w.bad == nil && w.next < len(entries) {
		w.bad = fmt.Errorf("stream: %d units never arrived", len(entries)-w.next)
	}
	return w.bad
}

// planStream gathers on root the ids and sizes of every rank's results,
// cuts the units into rounds there and broadcasts the cuts. It returns the
// cuts, and on root the results announced, in unit order, and the error
// of a malformed announcement, for which the cuts are one empty round.
func planStream(c mpi.Comm, own []Result, root, budget int) (streamCuts, []streamEntry, error, error) {
	var list []byte
	for _, r := range own {
		list = binary.LittleEndian.AppendUint32(list, uint32(r.Unit))
		list = binary.LittleEndian.AppendUint64(list, uint64(len(r.Data)))
	}
	lists, err := c.Gatherv(list, root, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	var bad error
	var cuts []byte
	var entries []streamEntry
	if c.Rank() == root {
		if entries, bad = streamEntries(lists, root); bad == nil {
			cuts = cutStream(entries, root, budget)
		} else {
			cuts = binary.LittleEndian.AppendUint32(nil, 0) // one empty round
		}
	}
	if cuts, err = c.Bcast(cuts, root); err != nil {
		return nil, nil, nil, err
	}
	if len(cuts)%4 != 0 {
		return nil, nil, nil, fmt.Errorf("stream: malformed cuts of %d bytes", len(cuts))
	}
	return streamCuts(cuts), entries, bad, nil
}

// streamCuts is the first unit of every round of a Stream, 4 bytes each.
type streamCuts []byte

// rounds returns the number of rounds.
func (s streamCuts) rounds() int { return len(s) / 4 }

// bounds returns the units of round k: [lo, hi).
func (s streamCuts) bounds(k int) (lo, hi int) {
	lo, hi = int(binary.LittleEndian.Uint32(s[4*k:])), math.MaxInt
	if k+1 < s.rounds() {
		hi = int(binary.LittleEndian.Uint32(s[4*(k+1):]))
	}
	return lo, hi
}

// largest returns the most bytes a round carries of n results in unit
// order, result i being of unit unitOf(i) and framed in bytesOf(i).
func (s streamCuts) largest(n int, unitOf, bytesOf func(i int) int) int {
	most, k, size := 0, 0, 0
	for i := range n {
		for k+1 < s.rounds() {
			if _, hi := s.bounds(k); unitOf(i) < hi {
				break
			}
			most, k, size = max(most, size), k+1, 0
		}
		size += bytesOf(i)
	}
	return max(most, size)
}

// streamWriter is root's side of a Stream: it writes the units of each
// round in unit order, its own and those the other ranks sent, and keeps
// the first error, after which it writes nothing more.
type streamWriter struct {
	own     []Result
	entries []streamEntry
	mine    map[int][]byte // the round's results by unit
	next    int            // the next entry to write
	write   func(unit int, data []byte) error
	bad     error
}

// round writes the units [lo, hi) of the round whose other ranks' results
// came in parts.
func (w *streamWriter) round(parts [][]byte, lo, hi int) {
	if w.bad != nil {
		return
	}
	clear(w.mine)
	for _, r := range w.own {
		if r.Unit >= lo && r.Unit < hi {
			w.mine[r.Unit] = r.Data
		}
	}
	for rank, p := range parts {
		if w.bad = unpackInto(w.mine, rank, p); w.bad != nil {
			return
		}
	}
	for ; w.next < len(w.entries) && w.entries[w.next].unit < hi; w.next++ {
		u := w.entries[w.next].unit
		data, ok := w.mine[u]
		if !ok {
			w.bad = fmt.Errorf("stream: rank %d did not send unit %d", w.entries[w.next].owner, u)
			return
		}
		if w.bad = w.write(u, data); w.bad != nil {
			return
		}
	}
}

// streamEntry is a unit's result as a rank announced it to Stream's root.
type streamEntry struct {
	unit, owner, size int
}

// streamEntries decodes the ranks' lists of (unit, size) and returns them
// in unit order; a unit announced twice is an error.
func streamEntries(lists [][]byte, root int) ([]streamEntry, error) {
	var entries []streamEntry
	for rank, l := range lists {
		if len(l)%12 != 0 {
			return nil, fmt.Errorf("stream: rank %d sent a malformed list of %d bytes", rank, len(l))
		}
		for ; len(l) > 0; l = l[12:] {
			entries = append(entries, streamEntry{unit: int(binary.LittleEndian.Uint32(l)), owner: rank, size: int(binary.LittleEndian.Uint64(l[4:]))})
		}
	}
	slices.SortFunc(entries, func(a, b streamEntry) int { return cmp.Compare(a.unit, b.unit) })
	for i := 1; i < len(entries); i++ {
		if entries[i].unit == entries[i-1].unit {
			return nil, fmt.Errorf("stream: unit %d held by ranks %d and %d", entries[i].unit, entries[i-1].owner, entries[i].owner)
		}
	}
	return entries, nil
}

// cutStream returns the first unit of every round, encoded: a round takes
// units in id order while the results other ranks than root send for it
// fit in budget, and those of each rank in gatherBatchBytes (each rank
// packs its part of a round into one buffer), and at least one unit.
func cutStream(entries []streamEntry, root, budget int) []byte {
	cuts := binary.LittleEndian.AppendUint32(nil, 0)
	held := 0
	perRank := map[int]int{}
	for _, e := range entries {
		if e.owner == root {
			continue
		}
		if held > 0 && (held+e.size > budget || perRank[e.owner]+e.size > gatherBatchBytes) {
			cuts = binary.LittleEndian.AppendUint32(cuts, uint32(e.unit))
			held = 0
			clear(perRank)
		}
		held += e.size
		perRank[e.owner] += e.size
	}
	return cuts
}

// unpackInto adds to into each result u packed in p by Stream on rank.
func unpackInto(into map[int][]byte, rank int, p []byte) error {
	for len(p) > 0 {
		if len(p) < 12 {
			return fmt.Errorf("stream: rank %d sent a truncated result", rank)
		}
		u, n := int(binary.LittleEndian.Uint32(p)), binary.LittleEndian.Uint64(p[4:])
		p = p[12:]
		if _, dup := into[u]; dup || n > uint64(len(p)) {
			return fmt.Errorf("stream: rank %d sent a malformed result for unit %d", rank, u)
		}
		into[u] = p[:n:n]
		p = p[n:]
	}
	return nil
}
