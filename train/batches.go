package train

import (
	"math/rand/v2"

	"xmc/data"
)

// EpochBatches deals the rows of every epoch, in an order drawn from the
// seed and the epoch alone, into batches of a fixed size: the rows of each
// round of a trainer of synchronous rounds, the same on every rank.
type EpochBatches struct {
	n, size int
	seed    uint64
	// Batches is the number of rounds per epoch.
	Batches int
	perm    []int32 // the rows of epoch permFor, in the order of its batches
	permFor int
}

// NewEpochBatches returns the batches of size rows of n rows, in an order
// drawn afresh every epoch from seed.
func NewEpochBatches(n, size int, seed uint64) *EpochBatches {
	return &EpochBatches{n: n, size: size, seed: seed, Batches: (n + size - 1) / size, permFor: -1}
}

// Rows returns the rows of round r. The slice is valid until the next call
// for another epoch.
func (e *EpochBatches) Rows(r int) []int32 {
	epoch, b := r/e.Batches, r%e.Batches
	if e.permFor != epoch {
		if e.perm == nil {
			e.perm = make([]int32, e.n)
		}
		for i := range e.perm {
			e.perm[i] = int32(i)
		}
		rng := rand.New(rand.NewPCG(data.SplitMix64(e.seed), data.SplitMix64(uint64(epoch)+1)))
		rng.Shuffle(e.n, func(i, j int) { e.perm[i], e.perm[j] = e.perm[j], e.perm[i] })
		e.permFor = epoch
	}
	return e.perm[b*e.size : min((b+1)*e.size, e.n)]
}

// LastOfEpoch reports whether round r ends an epoch.
func (e *EpochBatches) LastOfEpoch(r int) bool { return r%e.Batches == e.Batches-1 }
