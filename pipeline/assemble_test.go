package pipeline

import (
	"slices"
	"testing"

	"xmc/runner"
)

// TestStaticShard checks that the shard a rank writes under the static
// schedule describes the units runner.OwnedUnits gives it.
func TestStaticShard(t *testing.T) {
	for _, c := range []struct{ units, size int }{{0, 1}, {1, 3}, {7, 3}, {10, 10}, {5, 8}} {
		for rank := range c.size {
			sh := staticShard(rank, c.size, c.units, "labels")
			var described []int
			for u := sh.Lo; u < sh.Hi; u += sh.Stride {
				described = append(described, int(u))
			}
			if own := runner.OwnedUnits(c.units, rank, c.size); !slices.Equal(own, described) {
				t.Errorf("%+v rank %d: OwnedUnits %v, shard describes %v", c, rank, own, described)
			}
		}
	}
}
