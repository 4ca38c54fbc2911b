package mips

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkDotShapes compares Dot with dotScattered on short class vectors
// (5-75 coordinates, as wordnet-mc's) and queries of 8 coordinates, and
// times Dot's search of long vectors (1,000-9,000 coordinates) by queries
// of 8 ("search"): go test ./mips -run '^$' -bench DotShapes.
func BenchmarkDotShapes(b *testing.B) {
	const d = 42000
	rng := rand.New(rand.NewPCG(3, 4))
	v := NewVectors(4000)
	for k := range 4000 {
		n := 5 + rng.IntN(70)
		xi, xv := sparse(rng, d, n)
		v.Add(k, 1, xi, xv)
	}
	qs := make([][]int32, 256)
	qv := make([][]float32, 256)
	for i := range qs {
		qs[i], qv[i] = sparse(rng, d, 8)
	}
	var q scattered
	b.Run("dot", func(b *testing.B) {
		s := 0.0
		for i := range b.N {
			q := i % 256
			for k := 0; k < 4000; k += 13 {
				s += v.Dot(k, qs[q], qv[q])
			}
		}
		_ = s
	})
	long := NewVectors(64)
	for k := range 64 {
		xi, xv := sparse(rng, d, 1000+rng.IntN(8000))
		long.Add(k, 1, xi, xv)
	}
	b.Run("search", func(b *testing.B) {
		s := 0.0
		for i := range b.N {
			q := i % 256
			for k := range 64 {
				s += long.Dot(k, qs[q], qv[q])
			}
		}
		_ = s
	})
	b.Run("scattered", func(b *testing.B) {
		s := 0.0
		for i := range b.N {
			n := i % 256
			q.set(qs[n], qv[n])
			for k := 0; k < 4000; k += 13 {
				s += v.dotScattered(k, qs[n], qv[n], q.dense)
			}
			q.clear(qs[n])
		}
		_ = s
	})
}
