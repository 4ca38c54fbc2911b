package bench

import (
	"fmt"
	"io"
	"math"
	"slices"
	"text/tabwriter"
	"time"

	"xmc/numa"
)

// CeilingKinds are the loops Ceiling times, each the same work on every
// worker:
//
//   - compute: dependent floating-point arithmetic in registers;
//   - gather-cache: random reads of a 1 MiB table shared by the workers,
//     as a one-vs-all solver reads a small set's weights;
//   - gather-memory: random reads of a 512 MiB shared table, as
//     PD-Sparse's and the forest's sweeps read a large set's rows;
//   - stream: a sequential sum over 32 MiB of the worker's own.
var CeilingKinds = []string{"compute", "gather-cache", "gather-memory", "stream"}

// CeilingPoint is how a loop of one kind ran on a pool of Workers pinned
// workers, each doing the same work.
type CeilingPoint struct {
	Kind    string
	Workers int
	// Op is the best time of an op (every worker's work once) over the
	// repeats.
	Op time.Duration
	// Slower is Op over the one-worker Op: how much slower each core
	// works when Workers work at once (its frequency, a host's sharing of
	// its cores, its caches and memory).
	Slower float64
	// Speedup is Workers / Slower: the speedup over one worker that a
	// perfectly parallel loop of this kind reaches, the ceiling against
	// which a trainer's speedup on the same machine is read.
	Speedup float64
}

// Ceiling measures what this machine allows pools of each of workers
// pinned workers (one worker is always measured, first): every kind of
// CeilingKinds, ops ops, the best kept. A strong-scaling study is read
// against it (docs/scaling).
func Ceiling(topo numa.Topology, workers []int, ops int) ([]CeilingPoint, error) {
	if ops < 1 {
		return nil, fmt.Errorf("ceiling: ops must be at least 1, got %d", ops)
	}
	counts := append([]int{1}, workers...)
	for _, w := range counts {
		if w < 1 {
			return nil, fmt.Errorf("ceiling: worker counts must be at least 1, got %d", w)
		}
	}
	slices.Sort(counts)
	counts = slices.Compact(counts)
	small := ceilingTable(1<<20/4, 1)
	large := ceilingTable(512<<20/4, 2)
	work := map[string]func(id int, own []float32) float32{
		"compute":       func(int, []float32) float32 { return ceilingCompute(1 << 22) },
		"gather-cache":  func(id int, _ []float32) float32 { return ceilingGather(small, 1<<20, uint32(id+1)) },
		"gather-memory": func(id int, _ []float32) float32 { return ceilingGather(large, 1<<20, uint32(id+1)) },
		"stream":        func(_ int, own []float32) float32 { return ceilingSum(own) },
	}
	var points []CeilingPoint
	one := map[string]time.Duration{}
	for _, n := range counts {
		pool, err := numa.NewPool(topo, n, numa.Options{})
		if err != nil {
			return nil, err
		}
		best, err := ceilingOps(pool, n, ops, work)
		pool.Close()
		if err != nil {
			return nil, err
		}
		for _, kind := range CeilingKinds {
			if n == 1 {
				one[kind] = best[kind]
			}
			slower := float64(best[kind]) / float64(one[kind])
			points = append(points, CeilingPoint{Kind: kind, Workers: n, Op: best[kind], Slower: slower, Speedup: float64(n) / slower})
		}
	}
	return points, nil
}

// ceilingOps returns the best time of ops ops of each kind's work on the n
// workers of pool, each with a 32 MiB table of its own to stream.
func ceilingOps(pool *numa.Pool, n, ops int, work map[string]func(id int, own []float32) float32) (map[string]time.Duration, error) {
	own := make([][]float32, n)
	if err := pool.Run(func(w numa.Worker) error { // first touched by its worker
		own[w.ID] = ceilingTable(32<<20/4, uint32(w.ID+3))
		return nil
	}); err != nil {
		return nil, err
	}
	sink := make([]float32, n) // the results, stored so that no work is dropped
	best := map[string]time.Duration{}
	for _, kind := range CeilingKinds {
		best[kind] = time.Duration(math.MaxInt64)
		for range ops {
			start := time.Now()
			if err := pool.Run(func(w numa.Worker) error {
				sink[w.ID] += work[kind](w.ID, own[w.ID])
				return nil
			}); err != nil {
				return nil, err
			}
			best[kind] = min(best[kind], time.Since(start))
		}
	}
	return best, nil
}

// WriteCeiling writes points as a table, a row per kind and worker count.
func WriteCeiling(w io.Writer, points []CeilingPoint) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "loop\tworkers\top\tslower\tceiling\t")
	for _, p := range points {
		fmt.Fprintf(tw, "%s\t%d\t%v\t%.2f\t%.1f×\t\n", p.Kind, p.Workers, p.Op.Round(time.Microsecond), p.Slower, p.Speedup)
	}
	return tw.Flush()
}

// ceilingTable returns n values drawn from a xorshift stream seeded by seed.
func ceilingTable(n int, seed uint32) []float32 {
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

// ceilingCompute runs n steps of four independent chains of multiply-adds.
func ceilingCompute(n int) float32 {
	a, b, c, d := float32(1), float32(1.5), float32(0.5), float32(2)
	for range n {
		a = a*0.999 + 0.001
		b = b*0.999 + 0.001
		c = c*0.999 + 0.001
		d = d*0.999 + 0.001
	}
	return a + b + c + d
}

// ceilingGather sums n values of t at xorshift positions seeded by seed; len(t)
// must be a power of two.
func ceilingGather(t []float32, n int, seed uint32) float32 {
	x, mask, s := seed*2654435761|1, uint32(len(t)-1), float32(0)
	for range n {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		s += t[x&mask]
	}
	return s
}

// ceilingSum adds the values of t in order, four at a time.
func ceilingSum(t []float32) float32 {
	var a, b, c, d float32
	for i := 0; i+3 < len(t); i += 4 {
		a += t[i]
		b += t[i+1]
		c += t[i+2]
		d += t[i+3]
	}
	return a + b + c + d
}
