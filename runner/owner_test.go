package runner

import (
	"slices"
	"testing"
)

// TestOwnership checks that OwnedUnits lists the units Owner gives each
// rank, every unit to exactly one rank.
func TestOwnership(t *testing.T) {
	for _, c := range []struct{ units, size int }{{0, 1}, {1, 3}, {7, 3}, {10, 10}, {5, 8}} {
		seen := make([]int, c.units)
		for rank := range c.size {
			own := OwnedUnits(c.units, rank, c.size)
			if !slices.IsSorted(own) {
				t.Errorf("%+v rank %d: OwnedUnits %v not in increasing order", c, rank, own)
			}
			for _, u := range own {
				if Owner(u, c.size) != rank {
					t.Errorf("%+v: unit %d listed for rank %d, owned by %d", c, u, rank, Owner(u, c.size))
				}
				seen[u]++
			}
		}
		for u, n := range seen {
			if n != 1 {
				t.Errorf("%+v: unit %d owned %d times", c, u, n)
			}
		}
	}
}
