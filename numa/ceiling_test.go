package numa

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"testing"
)

// BenchmarkCeiling measures what this machine allows a pool of W pinned
// workers, each doing the same fixed work in every op: ns/op at W workers
// over ns/op at one worker is how much slower each core works when W work
// at once (its frequency, a host's sharing of its cores, its caches and
// memory), and W divided by that ratio is the speedup that a perfectly
// parallel loop of this kind reaches. It is the ceiling against which a
// trainer's speedup on the same machine is read (docs/scaling). Kinds:
//
//   - compute: dependent floating-point arithmetic in registers;
//   - gather-cache: random reads of a 1 MiB table shared by the workers,
//     as a one-vs-all solver reads a small set's weights;
//   - gather-memory: random reads of a 512 MiB table, as PD-Sparse's and
//     the forest's sweeps read a large set's rows;
//   - stream: a sequential sum over 64 MiB of the worker's own.
//
// The worker counts are 1, half, all but one and all of the CPUs.
func BenchmarkCeiling(b *testing.B) {
	topo, err := Detect()
	if err != nil {
		b.Fatal(err)
	}
	n := len(topo.CPUs())
	counts := slices.Compact([]int{1, max(1, n/2), max(1, n-1), n})
	small := randomTable(1<<20/4, 1)
	large := randomTable(512<<20/4, 2)
	kinds := []struct {
		name string
		work func(w Worker, own []float32) float32
	}{
		{"compute", func(Worker, []float32) float32 { return compute(1 << 22) }},
		{"gather-cache", func(w Worker, _ []float32) float32 { return gather(small, 1<<20, uint32(w.ID+1)) }},
		{"gather-memory", func(w Worker, _ []float32) float32 { return gather(large, 1<<20, uint32(w.ID+1)) }},
		{"stream", func(_ Worker, own []float32) float32 { return sum(own) }},
	}
	for _, workers := range counts {
		pool, err := NewPool(topo, workers, Options{})
		if err != nil {
			b.Fatal(err)
		}
		own := make([][]float32, workers)
		if err := pool.Run(func(w Worker) error { // first touched by its worker
			own[w.ID] = randomTable(64<<20/4, uint32(w.ID+3))
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		for _, k := range kinds {
			b.Run(fmt.Sprintf("%s/workers=%d", k.name, workers), func(b *testing.B) {
				sink := make([]float32, workers)
				for b.Loop() {
					if err := pool.Run(func(w Worker) error {
						sink[w.ID] += k.work(w, own[w.ID])
						return nil
					}); err != nil {
						b.Fatal(err)
					}
				}
				if math.IsNaN(float64(sink[0])) {
					b.Log(sink) // keeps the work from being optimised away
				}
			})
		}
		pool.Close()
	}
	runtime.KeepAlive(large)
}

// randomTable returns n values drawn from a xorshift stream seeded by seed.
func randomTable(n int, seed uint32) []float32 {
	t := make([]float32, n)
	x := seed*2654435761 | 1
	for i := range t {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		t[i] = float32(x>>8) / (1 << 24)
	}
	return t
}

// compute runs n steps of four independent chains of multiply-adds.
func compute(n int) float32 {
	a, b, c, d := float32(1), float32(1.5), float32(0.5), float32(2)
	for range n {
		a = a*0.999 + 0.001
		b = b*0.999 + 0.001
		c = c*0.999 + 0.001
		d = d*0.999 + 0.001
	}
	return a + b + c + d
}

// gather sums n values of t at xorshift positions seeded by seed; len(t)
// must be a power of two.
func gather(t []float32, n int, seed uint32) float32 {
	x, mask, s := seed*2654435761|1, uint32(len(t)-1), float32(0)
	for range n {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		s += t[x&mask]
	}
	return s
}

// sum adds the values of t in order, four at a time.
func sum(t []float32) float32 {
	var a, b, c, d float32
	for i := 0; i+3 < len(t); i += 4 {
		a += t[i]
		b += t[i+1]
		c += t[i+2]
		d += t[i+3]
	}
	return a + b + c + d
}
