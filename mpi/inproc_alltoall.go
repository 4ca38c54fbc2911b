package mpi

import "fmt"

// Alltoallv has every rank stage its buffer, as Allgatherv does, and copy
// its own part of every rank's staged buffer after the one wait.
func (c *inprocComm) Alltoallv(buf []byte, counts []int, into []byte) ([][]byte, error) {
	if err := checkCounts(counts, c.w.size, len(buf)); err != nil {
		return nil, err
	}
	if err := c.w.checkSize(opAlltoallv, len(buf)); err != nil {
		return nil, err
	}
	// No part can pass the world's limit, which the whole buffer does not
	// (the total received is checked once the parts are known).
	parts, _, _, err := c.alltoallvUpTo(buf, counts, into, c.w.size*c.w.limit)
	return parts, err
}

// alltoallvUpTo is Alltoallv where no rank's part for another is longer
// than limit/P bytes, P the ranks; otherwise it returns the longest part,
// the same on every rank, having moved nothing (see boundedAlltoaller).
// counts must be valid (checkCounts).
func (c *inprocComm) alltoallvUpTo(buf []byte, counts []int, into []byte, limit int) ([][]byte, int, bool, error) {
	longest := 0
	for _, n := range counts {
		longest = max(longest, n)
	}
	p := part{op: opAlltoallv, n: len(buf), longest: longest}
	if longest <= limit/c.w.size { // else no rank reads it
		p.bytes = c.stage(buf)
		parity := c.seq & 1
		at := append(c.stagedAt[parity][:0], 0)
		for _, n := range counts {
			at = append(at, at[len(at)-1]+n)
		}
		c.stagedAt[parity], p.at = at, at
	}
	parts, _, err := c.enter(p, nil)
	if err != nil {
		return nil, 0, false, err
	}
	longest = 0
	for _, p := range parts {
		longest = max(longest, p.longest)
	}
	if longest > limit/c.w.size {
		return nil, longest, false, nil
	}
	total := 0
	for _, p := range parts {
		total += p.at[c.rank+1] - p.at[c.rank]
	}
	if err := c.w.checkSize(opAlltoallv, total); err != nil {
		return nil, 0, false, fmt.Errorf("%w (the total rank %d receives)", err, c.rank)
	}
	if cap(into) < total {
		into = make([]byte, 0, total)
	}
	out := make([][]byte, len(parts))
	for q, p := range parts {
		// Capacity cut to the length, as stage does: where nothing moves,
		// the parts are the result.
		lo, hi := p.at[c.rank], p.at[c.rank+1]
		out[q] = p.bytes[lo:hi:hi]
	}
	return packInto(into, out), longest, true, nil
}
