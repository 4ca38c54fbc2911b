package mpitest

import "fmt"

// gather checks Gather of equal lengths, from empty to s.big, to every
// root (s.big to one root only).
func (s *suite) gather() error {
	k := 0
	for _, n := range []int{0, 1, smallBytes, s.big} {
		for root := range s.size {
			if n == s.big && root != 1%s.size {
				continue
			}
			k++
			lens := make([]int, s.size)
			for q := range lens {
				lens[q] = n
			}
			if err := s.gatherOne(false, lens, root, k, nil); err != nil {
				return fmt.Errorf("%d bytes to root %d: %w", n, root, err)
			}
		}
	}
	return nil
}

// lengthCases returns the contributions, by rank, of the variable-length
// gathers: rank 0 sending nothing, nobody sending anything, large
// contributions (big bytes times the rank), only the last rank sending.
func (s *suite) lengthCases(big int) [][]int {
	cases := [][]int{make([]int, s.size), make([]int, s.size), make([]int, s.size), make([]int, s.size)}
	for q := range s.size {
		cases[0][q] = 100 * q
		cases[2][q] = big * q
		if q == s.size-1 {
			cases[3][q] = smallBytes + 3
		}
	}
	return cases
}

// gatherv checks Gatherv of the length cases to every root (the large case
// to root 0), into nothing, into a buffer one byte short and into one large
// enough.
func (s *suite) gatherv() error {
	for k, lens := range s.lengthCases(s.big / 4) {
		for root := range s.size {
			if k == 2 && root != 0 {
				continue // one root for the large case
			}
			// Root receives into nothing, into a buffer one byte
			// short, and into one large enough.
			total := 0
			for _, n := range lens {
				total += n
			}
			for _, into := range [][]byte{nil, make([]byte, 0, max(total-1, 0)), make([]byte, 3, total+7)} {
				if err := s.gatherOne(true, lens, root, 50+k, into); err != nil {
					return fmt.Errorf("lengths %v to root %d, into of capacity %d: %w", lens, root, cap(into), err)
				}
			}
		}
	}
	return nil
}

// gatherOne gathers pattern(lens[q], seed+q) from every rank q, by Gatherv
// into into where variable; where into holds them all, the buffers must lie
// in it.
func (s *suite) gatherOne(variable bool, lens []int, root, seed int, into []byte) error {
	gather := s.c.Gather
	if variable {
		gather = func(buf []byte, root int) ([][]byte, error) { return s.c.Gatherv(buf, root, into) }
	}
	buf := pattern(lens[s.rank], seed+s.rank)
	got, err := gather(buf, root)
	if err != nil {
		return err
	}
	s.want.gather(variable, root, lens)
	if s.rank != root {
		if got != nil {
			return fmt.Errorf("non-root rank got %d buffers, want nil", len(got))
		}
		return nil
	}
	fill(buf, seed+s.rank+1) // the root's own entry must be a copy
	if err := s.gathered(got, lens, seed); err != nil {
		return err
	}
	if variable {
		if err := inPlace(got, into); err != nil {
			return err
		}
	}
	// Appending to one rank's buffer must not overwrite the next one's.
	for q := 0; q+1 < s.size; q++ {
		got[q] = append(got[q], 0xAA, 0xBB, 0xCC)
		if err := diff(got[q+1], pattern(lens[q+1], seed+q+1)); err != nil {
			return fmt.Errorf("append to the buffer of rank %d changed rank %d's: %w", q, q+1, err)
		}
	}
	return nil
}

// allgatherv gives every rank pattern(lens[q], seed+q) of every rank q,
// into nothing, into a buffer one byte short and into one large enough,
// where the buffers must then lie one after another.
func (s *suite) allgatherv() error {
	for k, lens := range s.lengthCases(s.big / 8) {
		total := 0
		for _, n := range lens {
			total += n
		}
		for _, into := range [][]byte{nil, make([]byte, 0, max(total-1, 0)), make([]byte, 3, total+7)} {
			if err := s.allgatherOne(lens, 70+k, into); err != nil {
				return fmt.Errorf("lengths %v, into of capacity %d: %w", lens, cap(into), err)
			}
		}
	}
	return nil
}

func (s *suite) allgatherOne(lens []int, seed int, into []byte) error {
	buf := pattern(lens[s.rank], seed+s.rank)
	got, err := s.c.Allgatherv(buf, into)
	if err != nil {
		return err
	}
	s.want.allgatherv(lens)
	fill(buf, seed+s.rank+1) // this rank's own entry must be a copy
	if err := s.gathered(got, lens, seed); err != nil {
		return err
	}
	if err := inPlace(got, into); err != nil {
		return err
	}
	// No rank may see another's result: each rank overwrites its own with
	// a pattern of its own and, after a barrier, finds it unchanged.
	mine := 200 + s.rank
	for _, b := range got {
		fill(b, mine)
	}
	if err := s.barrier(); err != nil {
		return err
	}
	for q, b := range got {
		if err := diff(b, pattern(lens[q], mine)); err != nil {
			return fmt.Errorf("buffer of rank %d shared with another rank's result: %w", q, err)
		}
	}
	for q := 0; q+1 < s.size; q++ {
		got[q] = append(got[q], 0xAA, 0xBB, 0xCC)
		if err := diff(got[q+1], pattern(lens[q+1], mine)); err != nil {
			return fmt.Errorf("append to the buffer of rank %d changed rank %d's: %w", q, q+1, err)
		}
	}
	return nil
}

// gathered checks the buffers got of every rank q: pattern(lens[q], seed+q),
// never nil.
func (s *suite) gathered(got [][]byte, lens []int, seed int) error {
	if len(got) != s.size {
		return fmt.Errorf("got %d buffers, want %d", len(got), s.size)
	}
	for q, b := range got {
		if err := diff(b, pattern(lens[q], seed+q)); err != nil {
			return fmt.Errorf("buffer of rank %d: %w", q, err)
		}
		if b == nil {
			return fmt.Errorf("buffer of rank %d is nil, want an empty buffer", q)
		}
	}
	return nil
}

// inPlace checks that buffers received into into lie in it one after
// another, where its capacity holds them all.
func inPlace(got [][]byte, into []byte) error {
	total := 0
	for _, b := range got {
		total += len(b)
	}
	if cap(into) < total || total == 0 {
		return nil
	}
	whole := into[:total]
	off := 0
	for q, b := range got {
		if len(b) > 0 && &b[0] != &whole[off] {
			return fmt.Errorf("buffer of rank %d is not at offset %d of into (capacity %d)", q, off, cap(into))
		}
		off += len(b)
	}
	return nil
}

// alltoallCases returns, per case, the bytes each rank sends each rank
// (counts[r][q] from r to q): nothing at all, lengths that differ by
// sender and receiver (none from rank 0 to itself), large parts that a split
// backend moves in rounds, and only the last rank sending, to rank 0.
func (s *suite) alltoallCases(big int) [][][]int {
	cases := make([][][]int, 4)
	for k := range cases {
		cases[k] = make([][]int, s.size)
		for r := range s.size {
			cases[k][r] = make([]int, s.size)
		}
	}
	for r := range s.size {
		for q := range s.size {
			cases[1][r][q] = 100*r + 7*q
			cases[2][r][q] = big * ((r + q) % 3)
		}
	}
	cases[3][s.size-1][0] = smallBytes + 3
	return cases
}

// alltoallv has every rank r send pattern(counts[r][q], seed(r, q)) to every
// rank q, into nothing, into a buffer one byte short and into one large
// enough, where the parts must then lie one after another.
func (s *suite) alltoallv() error {
	for k, counts := range s.alltoallCases(s.big / (4 * s.size)) {
		total := 0
		for r := range s.size {
			total += counts[r][s.rank]
		}
		for _, into := range [][]byte{nil, make([]byte, 0, max(total-1, 0)), make([]byte, 3, total+7)} {
			if err := s.alltoallOne(counts, 90+10*k, into); err != nil {
				return fmt.Errorf("case %d, into of capacity %d: %w", k, cap(into), err)
			}
		}
	}
	return nil
}

func (s *suite) alltoallOne(counts [][]int, seed int, into []byte) error {
	partSeed := func(r, q int) int { return seed + r*s.size + q }
	var buf []byte
	for q, n := range counts[s.rank] {
		buf = append(buf, pattern(n, partSeed(s.rank, q))...)
	}
	got, err := s.c.Alltoallv(buf, counts[s.rank], into)
	if err != nil {
		return err
	}
	lens := make([]int, s.size)
	for r := range s.size {
		lens[r] = counts[r][s.rank]
	}
	s.want.alltoallv(counts)
	fill(buf, seed+1000) // this rank's part for itself must be a copy
	if len(got) != s.size {
		return fmt.Errorf("got %d parts, want %d", len(got), s.size)
	}
	for r, b := range got {
		if err := diff(b, pattern(lens[r], partSeed(r, s.rank))); err != nil {
			return fmt.Errorf("part from rank %d: %w", r, err)
		}
		if b == nil {
			return fmt.Errorf("part from rank %d is nil, want an empty buffer", r)
		}
	}
	if err := inPlace(got, into); err != nil {
		return err
	}
	// No rank may see another's result, nor a sender's buffer: each rank
	// overwrites its parts and, after a barrier, finds them unchanged.
	mine := 300 + s.rank
	for _, b := range got {
		fill(b, mine)
	}
	if err := s.barrier(); err != nil {
		return err
	}
	for r, b := range got {
		if err := diff(b, pattern(lens[r], mine)); err != nil {
			return fmt.Errorf("part from rank %d shared with another rank's: %w", r, err)
		}
	}
	for r := 0; r+1 < s.size; r++ {
		got[r] = append(got[r], 0xAA, 0xBB, 0xCC)
		if err := diff(got[r+1], pattern(lens[r+1], mine)); err != nil {
			return fmt.Errorf("append to the part from rank %d changed rank %d's: %w", r, r+1, err)
		}
	}
	return nil
}

// smallInARow runs Allgathervs and Alltoallvs of small parts one after
// another, their lengths growing, shrinking and alternating between two
// sizes, as a trainer's rounds exchange them: a backend that carries small
// parts with their lengths in one collective, sized from the exchanges
// before (the MPI one's slots), must give the same bytes whether a part
// fits, just fits, just misses or far exceeds what the last ones sized.
func (s *suite) smallInARow() error {
	sizes := []int{1, 48, 49, 112, 113, 1008, 1009, 40, 600, 40, 600, 5000, 3, 0, 48}
	for k, n := range sizes {
		lens := make([]int, s.size)
		counts := make([][]int, s.size)
		for r := range s.size {
			lens[r] = max(0, n-r%2)
			counts[r] = make([]int, s.size)
			for q := range s.size {
				counts[r][q] = max(0, n-(r+q)%3)
			}
		}
		if err := s.allgatherOne(lens, 300+k, nil); err != nil {
			return fmt.Errorf("allgatherv %d of parts of %d bytes: %w", k, n, err)
		}
		if err := s.alltoallOne(counts, 400+10*k, nil); err != nil {
			return fmt.Errorf("alltoallv %d of parts of %d bytes: %w", k, n, err)
		}
	}
	return nil
}
