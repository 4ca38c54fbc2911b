package runner

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"xmc/mpi"
)

// sizeRecorder is a communicator that records the largest buffer this rank
// passed to Gatherv.
type sizeRecorder struct {
	mpi.Comm
	largest int
}

func (c *sizeRecorder) Gatherv(buf []byte, root int, into []byte) ([][]byte, error) {
	c.largest = max(c.largest, len(buf))
	return c.Comm.Gatherv(buf, root, into)
}

// TestGatherBatches gathers results of uneven sizes (none on some ranks,
// some larger than a batch) in rounds of several batch sizes, to every
// root, and checks that every result arrives intact and that no rank sent
// more than a batch in a round, unless a single result was larger.
func TestGatherBatches(t *testing.T) {
	const units = 23
	result := func(u int) []byte { return []byte(strings.Repeat(string(rune('a'+u%26)), u*u%37)) }
	for _, ranks := range []int{1, 2, 3, 4} {
		for _, batch := range []int{1, 40, 100, 1 << 20} {
			for root := range ranks {
				var gathered [][]byte
				largest := make([]int, ranks)
				err := mpi.Launch(ranks, mpi.MaxMessage, func(c mpi.Comm) error {
					// Rank r holds the units u ≡ r (mod ranks+1); the
					// units u ≡ ranks are held by no rank.
					var own []Result
					for u := c.Rank(); u < units; u += ranks + 1 {
						own = append(own, Result{Unit: u, Data: result(u)})
					}
					rec := &sizeRecorder{Comm: c}
					all, err := gatherBatched(rec, units, own, root, batch)
					largest[c.Rank()] = rec.largest
					if c.Rank() == root {
						gathered = all
					}
					return err
				})
				name := fmt.Sprintf("%d ranks, batch %d, root %d", ranks, batch, root)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				for u := range units {
					var want []byte
					if u%(ranks+1) < ranks {
						want = result(u)
					}
					if string(gathered[u]) != string(want) || (want != nil) != (gathered[u] != nil) {
						t.Errorf("%s: unit %d gathered %q, want %q", name, u, gathered[u], want)
					}
				}
				for r, n := range largest {
					if limit := max(batch, 12+36); n > limit {
						t.Errorf("%s: rank %d sent %d bytes in one round, more than %d", name, r, n, limit)
					}
				}
			}
		}
	}
}

// TestGatherBadUnitOnRoot gives root a result for a unit out of range: root
// reports it, and the other ranks still finish every round of the gather
// rather than waiting for a root that left.
func TestGatherBadUnitOnRoot(t *testing.T) {
	errs := make([]error, 3)
	mpi.Launch(3, mpi.MaxMessage, func(c mpi.Comm) error {
		own := []Result{{Unit: c.Rank(), Data: []byte("ok")}}
		if c.Rank() == 0 {
			own = append(own, Result{Unit: 99, Data: []byte("bad")})
		}
		_, errs[c.Rank()] = gatherBatched(c, 5, own, 0, 1)
		return nil
	})
	if errs[0] == nil || !strings.Contains(errs[0].Error(), "unit 99 out of range") {
		t.Errorf("root: %v, want unit 99 out of range", errs[0])
	}
	for r, err := range errs[1:] {
		if err != nil {
			t.Errorf("rank %d: %v, want a complete gather", r+1, err)
		}
	}
}

// rootRecorder records the largest round root receives in a Gatherv, and
// the rounds after the first (Stream's lists of units) that did not fit in
// the buffer root offered to receive them.
type rootRecorder struct {
	mpi.Comm
	calls, largest, unfit int
}

func (c *rootRecorder) Gatherv(buf []byte, root int, into []byte) ([][]byte, error) {
	parts, err := c.Comm.Gatherv(buf, root, into)
	total := 0
	for _, p := range parts {
		total += len(p)
	}
	c.largest = max(c.largest, total)
	if c.calls++; c.calls > 1 && c.Rank() == root && total > 0 && cap(into) < total {
		c.unfit++
	}
	return parts, err
}

// TestStream streams results of uneven sizes, dealt statically or
// unevenly, through budgets smaller and larger than a result, to every
// root: root must write every unit once, in id order, never receive much
// more than the budget in a round, and receive every round into the one
// buffer it allocated (the lists of units announced first aside).
func TestStream(t *testing.T) {
	size := func(u int) int { return 1 + (u*37)%90 }
	for _, c := range []struct {
		name                 string
		units, ranks, budget int
		owner                func(u, ranks int) int
	}{
		{"static", 40, 3, 200, Owner},
		{"one rank holds all", 25, 4, 150, func(u, ranks int) int { return ranks - 1 }},
		{"budget below a result", 20, 2, 10, Owner},
		{"one round", 30, 3, 1 << 20, Owner},
		{"blocks of ids", 30, 3, 100, func(u, ranks int) int { return u * ranks / 30 }},
		{"no units", 0, 2, 100, Owner},
	} {
		for root := range c.ranks {
			var got []int
			var largest, unfit int
			err := mpi.Launch(c.ranks, mpi.MaxMessage, func(comm mpi.Comm) error {
				rec := &rootRecorder{Comm: comm}
				var own []Result
				for u := range c.units {
					if c.owner(u, c.ranks) == comm.Rank() {
						own = append(own, Result{Unit: u, Data: []byte(strings.Repeat(string(rune('a'+u%26)), size(u)))})
					}
				}
				err := Stream(rec, own, root, c.budget, func(u int, data []byte) error {
					if len(data) != size(u) || data[0] != byte('a'+u%26) {
						return fmt.Errorf("unit %d: %d bytes %q", u, len(data), data[:1])
					}
					got = append(got, u)
					return nil
				})
				if comm.Rank() == root {
					largest, unfit = rec.largest, rec.unfit
				}
				return err
			})
			if err != nil {
				t.Fatalf("%s, root %d: %v", c.name, root, err)
			}
			if len(got) != c.units || !slices.IsSorted(got) || (c.units > 0 && got[len(got)-1] != c.units-1) {
				t.Errorf("%s, root %d: wrote units %v", c.name, root, got)
			}
			// A round holds at most the budget, or one result, plus 12
			// bytes of framing per result.
			if limit := max(c.budget, 90) + 12*c.units; largest > limit {
				t.Errorf("%s, root %d: a round brought %d bytes, budget %d", c.name, root, largest, c.budget)
			}
			if unfit > 0 {
				t.Errorf("%s, root %d: %d rounds did not fit the receive buffer", c.name, root, unfit)
			}
		}
	}
}

// TestStreamErrors checks that a failing write and a unit held twice end
// Stream on root with the error, every rank returning.
func TestStreamErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		dup  bool
		fail int // the unit whose write fails, or -1
		want string
	}{
		{"write fails", false, 3, "disk full"},
		{"unit twice", true, -1, "held by ranks"},
	} {
		err := mpi.Launch(3, mpi.MaxMessage, func(comm mpi.Comm) error {
			own := []Result{{Unit: comm.Rank(), Data: []byte{1}}, {Unit: comm.Rank() + 3, Data: []byte{2}}}
			if c.dup && comm.Rank() == 2 {
				own = append(own, Result{Unit: 0, Data: []byte{3}})
			}
			return Stream(comm, own, 0, 1, func(u int, _ []byte) error {
				if u == c.fail {
					return errors.New("disk full")
				}
				return nil
			})
		})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error about %q", c.name, err, c.want)
		}
	}
}
