package runner

import (
	"encoding/binary"
	"fmt"

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
		parts, err := c.Gatherv(buf, root)
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
