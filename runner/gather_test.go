package runner

import (
	"fmt"
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

func (c *sizeRecorder) Gatherv(buf []byte, root int) ([][]byte, error) {
	c.largest = max(c.largest, len(buf))
	return c.Comm.Gatherv(buf, root)
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
				err := mpi.Launch(ranks, func(c mpi.Comm) error {
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
	mpi.Launch(3, func(c mpi.Comm) error {
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
