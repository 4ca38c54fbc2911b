package mips

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// sparse draws a sparse vector of about nnz coordinates below d, with
// coordinates drawn from a skewed distribution (as words are), so that
// vectors share coordinates.
func sparse(rng *rand.Rand, d, nnz int) ([]int32, []float32) {
	set := map[int32]bool{}
	for range nnz {
		set[int32(float64(d)*math.Pow(rng.Float64(), 2))] = true
	}
	idx := make([]int32, 0, len(set))
	for j := range set {
		idx = append(idx, j)
	}
	slices.Sort(idx)
	val := make([]float32, len(idx))
	for e := range val {
		val[e] = float32(rng.NormFloat64())
	}
	return idx, val
}

func dense(idx []int32, val []float64, d int) []float64 {
	out := make([]float64, d)
	for e, j := range idx {
		out[j] = val[e]
	}
	return out
}

// TestVectorsAgainstDense checks Add, Shrink, Dot and the kept squared
// norms against dense arithmetic, and the encoding round trip.
func TestVectorsAgainstDense(t *testing.T) {
	const d, n = 200, 5
	rng := rand.New(rand.NewPCG(1, 2))
	v := NewVectors(n)
	want := make([][]float64, n)
	for k := range want {
		want[k] = make([]float64, d)
	}
	for step := range 400 {
		k := rng.IntN(n)
		xi, xv := sparse(rng, d, 1+rng.IntN(20))
		switch step % 3 {
		case 0, 1:
			c := rng.NormFloat64()
			v.Add(k, c, xi, xv)
			for e, j := range xi {
				want[k][j] += c * float64(xv[e])
			}
		case 2:
			g := 0.3 * rng.Float64()
			before := slices.Clone(want[k])
			di, dv := v.Shrink(k, g, nil, nil)
			for e, j := range di {
				want[k][j] += dv[e]
			}
			for j, w := range before {
				// Each value moved g towards zero or stopped there.
				if math.Abs(want[k][j]-math.Copysign(max(math.Abs(w)-g, 0), w)) > 1e-12 {
					t.Fatalf("step %d: coordinate %d of %d: %v shrunk by %v to %v", step, j, k, w, g, want[k][j])
				}
			}
		}
		idx, val := v.Vector(k)
		got := dense(idx, val, d)
		sq := 0.0
		for j := range d {
			if math.Abs(got[j]-want[k][j]) > 1e-9 {
				t.Fatalf("step %d: vector %d coordinate %d = %v, want %v", step, k, j, got[j], want[k][j])
			}
			sq += want[k][j] * want[k][j]
		}
		if slices.Contains(val, 0) || !slices.IsSorted(idx) {
			t.Fatalf("step %d: vector %d stores a zero or unsorted coordinates", step, k)
		}
		if math.Abs(v.SquaredNorm(k)-sq) > 1e-8*(1+sq) {
			t.Fatalf("step %d: squared norm %v, want %v", step, v.SquaredNorm(k), sq)
		}
		qi, qv := sparse(rng, d, 1+rng.IntN(60))
		dot := 0.0
		for e, j := range qi {
			dot += want[k][j] * float64(qv[e])
		}
		if got := v.Dot(k, qi, qv); math.Abs(got-dot) > 1e-9 {
			t.Fatalf("step %d: dot %v, want %v", step, got, dot)
		}
	}
	dec, rest, err := DecodeVectors(v.AppendBinary(nil), d)
	if err != nil || len(rest) != 0 {
		t.Fatalf("decode: %v, %d bytes left", err, len(rest))
	}
	for k := range n {
		a, b := dec.Clone(), v
		ai, av := a.Vector(k)
		bi, bv := b.Vector(k)
		if !slices.Equal(ai, bi) || !slices.Equal(av, bv) || a.SquaredNorm(k) != b.SquaredNorm(k) {
			t.Fatalf("vector %d differs after encoding", k)
		}
	}
	if _, _, err := DecodeVectors(v.AppendBinary(nil)[:30], d); err == nil {
		t.Fatal("a truncated encoding decoded")
	}
}

// TestDotWaysAgree checks that every way of taking a dot product (a merge,
// a search, and reading the vector through against a scattered query, the
// query's coordinates in or beyond the first-level cache's share) gives
// the same bits: the models must not depend on which way a length took.
func TestDotWaysAgree(t *testing.T) {
	for _, d := range []int{500, l1Coordinates, 50000} {
		t.Run(fmt.Sprint("d=", d), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(d), 5))
			v := NewVectors(40)
			for k := range 40 {
				for range 1 + k*k/8 {
					xi, xv := sparse(rng, d, 10)
					v.Add(k, rng.NormFloat64(), xi, xv)
				}
			}
			var q scattered
			for range 200 {
				xi, xv := sparse(rng, d, 1+rng.IntN(100))
				q.set(xi, xv)
				for k := range 40 {
					idx, val := v.Vector(k)
					want := mergeDot(idx, val, xi, xv)
					for name, got := range map[string]float64{"Dot": v.Dot(k, xi, xv), "dotSearch": v.dotSearch(k, xi, xv),
						"dotScattered": v.dotScattered(k, xi, xv, q.dense)} {
						if got != want {
							t.Fatalf("vector %d of %d coordinates, query of %d: %s %v, merge %v", k, len(idx), len(xi), name, got, want)
						}
					}
				}
				q.clear(xi)
			}
		})
	}
}

// trained makes n vectors by adding random rows, as a trainer does, keeping
// an LSH in step by Shift.
func trained(t testing.TB, n, d, steps int, h *Hasher) (*Vectors, *LSH) {
	rng := rand.New(rand.NewPCG(uint64(n), 3))
	v := NewVectors(n)
	x := NewLSH(h, v)
	proj := make([]float64, h.Projections())
	for range steps {
		k := rng.IntN(n)
		xi, xv := sparse(rng, d, 30)
		c := rng.Float64()
		v.Add(k, c, xi, xv)
		h.Project(xi, xv, proj)
		for i := range proj {
			proj[i] *= c
		}
		x.Shift(k, proj)
	}
	return v, x
}

// TestLSHRecallAndState checks that SimpleLSH finds the exact best vector
// of most queries while scoring a small part of the vectors, that the
// projections it keeps by Shift match projections recomputed from the
// vectors, and that a decoded index answers as the original.
func TestLSHRecallAndState(t *testing.T) {
	const n, d = 2000, 5000
	h, err := NewHasher(16, 7, 7) // about 16 vectors a bucket
	if err != nil {
		t.Fatal(err)
	}
	v, x := trained(t, n, d, 6*n, h)
	np := h.Projections()
	for _, k := range []int{0, 17, n - 1} {
		idx, val := v.Vector(k)
		want := make([]float64, np)
		h.ProjectDense(idx, val, want)
		for i := range want {
			if math.Abs(want[i]-x.proj[k*np+i]) > 1e-9*(1+math.Abs(want[i])) {
				t.Fatalf("vector %d projection %d kept as %v, recomputed %v", k, i, x.proj[k*np+i], want[i])
			}
		}
	}
	dec, rest, err := DecodeLSH(h, v, x.AppendBinary(nil))
	if err != nil || len(rest) != 0 {
		t.Fatalf("decode: %v, %d bytes left", err, len(rest))
	}
	var s Scratch
	proj := make([]float64, np)
	search := func(x *LSH) searchFunc {
		return func(qi []int32, qv []float32) (int, float64, int, bool) {
			h.Project(qi, qv, proj)
			return x.Search(qi, qv, h.QueryKeys(proj, 1, nil), nil, &s)
		}
	}
	checkRecall(t, rand.New(rand.NewPCG(5, 6)), v, d, search(x), search(dec))
}

// searchFunc answers a query as an index's Search does: the best vector,
// its score, how many vectors it scored, and whether it found one.
type searchFunc func(qi []int32, qv []float32) (best int, score float64, scored int, ok bool)

// checkRecall asks search, and decoded (the same index decoded from its
// encoding), 300 queries near vectors of v drawn by rng: decoded must give
// the same answers, and search must find the exact best vector (or one of
// its score) of at least 70% of them, scoring at most 30% of the vectors.
func checkRecall(t *testing.T, rng *rand.Rand, v *Vectors, d int, search, decoded searchFunc) {
	t.Helper()
	n := v.Len()
	exact := NewInverted(d, []*Vectors{v}, [][]int32{seq(n)}, 1)
	var es InvertedScratch
	const queries = 300
	hits, scored := 0, 0
	for range queries {
		qi, qv := nearQuery(rng, v)
		best, score, c, ok := search(qi, qv)
		want, wscore := exact.Best(qi, qv, &es)
		if ok && (int32(best) == want || score == wscore) {
			hits++
		}
		scored += c
		b2, s2, _, ok2 := decoded(qi, qv)
		if b2 != best || s2 != score || ok2 != ok {
			t.Fatalf("decoded index answers %d %v, the original %d %v", b2, s2, best, score)
		}
	}
	recall, frac := float64(hits)/queries, float64(scored)/queries/float64(n)
	t.Logf("recall@1 %.3f, scoring %.3f of the vectors per query", recall, frac)
	if recall < 0.7 || frac > 0.3 {
		t.Fatalf("recall@1 %.3f (want ≥ 0.7) scoring %.3f of the vectors (want ≤ 0.3)", recall, frac)
	}
}

// nearQuery returns a query near a random vector of v, as a training row is
// near its class: the vector's coordinates, with noise on their values.
func nearQuery(rng *rand.Rand, v *Vectors) ([]int32, []float32) {
	idx, val := v.Vector(rng.IntN(v.Len()))
	qv := make([]float32, len(idx))
	for e := range qv {
		qv[e] = float32(val[e] + 0.3*rng.NormFloat64())
	}
	return slices.Clone(idx), qv
}

func seq(n int) []int32 {
	s := make([]int32, n)
	for i := range s {
		s[i] = int32(i)
	}
	return s
}

// TestInvertedMatchesBruteForce checks exact search, with the scale and
// the untouched vectors scoring 0.
func TestInvertedMatchesBruteForce(t *testing.T) {
	const d = 300
	rng := rand.New(rand.NewPCG(9, 9))
	a, b := NewVectors(20), NewVectors(7)
	for range 60 {
		xi, xv := sparse(rng, d, 5)
		a.Add(rng.IntN(a.Len()-3), rng.NormFloat64(), xi, xv) // the last 3 stay zero
		xi, xv = sparse(rng, d, 5)
		b.Add(rng.IntN(b.Len()), rng.NormFloat64(), xi, xv)
	}
	ids := [][]int32{make([]int32, 20), make([]int32, 7)}
	for k := range 20 {
		ids[0][k] = int32(2 * k)
	}
	for k := range 7 {
		ids[1][k] = int32(2*k + 1)
	}
	x := NewInverted(d, []*Vectors{a, b}, ids, 0.5)
	var s InvertedScratch
	for q := range 200 {
		qi, qv := sparse(rng, d, 10)
		best, score := int32(-1), math.Inf(-1)
		for si, v := range []*Vectors{a, b} {
			for k := range v.Len() {
				sc := 0.5 * v.Dot(k, qi, qv)
				if id := ids[si][k]; sc > score+1e-12 || (math.Abs(sc-score) <= 1e-12 && id < best) {
					best, score = id, sc
				}
			}
		}
		got, gs := x.Best(qi, qv, &s)
		if got != best || math.Abs(gs-score) > 1e-9 {
			t.Fatalf("query %d: best %d (%v), want %d (%v)", q, got, gs, best, score)
		}
	}
}

// BenchmarkIndex measures a query and an update (a vector's change and the
// index following it) of SimpleLSH and of the graph for growing numbers of
// vectors, to show that their cost grows far slower than n: go test ./mips
// -run '^$' -bench Index -benchtime 2000x. A query's cost is mostly the
// vectors it scores, reported as scored/op (the same on every machine).
func BenchmarkIndex(b *testing.B) {
	const d = 50000
	for _, n := range []int{10000, 30000, 100000} {
		h, err := NewHasher(8, BitsFor(n), 7)
		if err != nil {
			b.Fatal(err)
		}
		v, x := trained(b, n, d, 4*n, h)
		g := NewGraph(v.Clone(), 8, 4)
		rng := rand.New(rand.NewPCG(1, 1))
		type query struct {
			xi   []int32
			xv   []float32
			proj []float64
			keys []int
		}
		qs := make([]query, 256)
		for i := range qs {
			qi, qv := nearQuery(rng, v)
			q := query{xi: qi, xv: qv, proj: make([]float64, h.Projections())}
			h.Project(q.xi, q.xv, q.proj)
			q.keys = h.QueryKeys(q.proj, 1, nil)
			qs[i] = q
		}
		b.Run(fmt.Sprintf("lsh/query/n=%d", n), func(b *testing.B) {
			var s Scratch
			scored := 0
			for i := range b.N {
				q := qs[i%len(qs)]
				_, _, c, _ := x.Search(q.xi, q.xv, q.keys, nil, &s)
				scored += c
			}
			b.ReportMetric(float64(scored)/float64(b.N), "scored/op")
		})
		b.Run(fmt.Sprintf("lsh/update/n=%d", n), func(b *testing.B) {
			for i := range b.N {
				q := qs[i%len(qs)]
				k := (i * 7919) % n
				v.Add(k, 0.01, q.xi, q.xv)
				x.Shift(k, q.proj) // not scaled by 0.01: the cost is the same
			}
		})
		b.Run(fmt.Sprintf("graph/query/n=%d", n), func(b *testing.B) {
			var s GraphScratch
			scored := 0
			for i := range b.N {
				q := qs[i%len(qs)]
				_, _, c, _ := g.Search(q.xi, q.xv, nil, &s)
				scored += c
			}
			b.ReportMetric(float64(scored)/float64(b.N), "scored/op")
		})
		b.Run(fmt.Sprintf("graph/update/n=%d", n), func(b *testing.B) {
			for i := range b.N {
				q := qs[i%len(qs)]
				k := (i * 7919) % n
				g.vec.Add(k, 0.01, q.xi, q.xv)
				g.Changed(k)
			}
		})
	}
}

// TestGraphRecallAndState checks that the small-world graph, built as a
// trainer builds it (vectors changing, Changed after each change), finds
// the exact best vector of most queries while scoring a small part of the
// vectors, and that a decoded graph answers as the original.
func TestGraphRecallAndState(t *testing.T) {
	const n, d = 2000, 5000
	rng := rand.New(rand.NewPCG(uint64(n), 3))
	v := NewVectors(n)
	g := NewGraph(v, 16, 64)
	for range 6 * n {
		k := rng.IntN(n)
		xi, xv := sparse(rng, d, 30)
		v.Add(k, rng.Float64(), xi, xv)
		g.Changed(k)
	}
	dec, rest, err := DecodeGraph(v, 16, 64, g.AppendBinary(nil))
	if err != nil || len(rest) != 0 {
		t.Fatalf("decode: %v, %d bytes left", err, len(rest))
	}
	var s, s2 GraphScratch
	checkRecall(t, rng, v, d,
		func(qi []int32, qv []float32) (int, float64, int, bool) { return g.Search(qi, qv, nil, &s) },
		func(qi []int32, qv []float32) (int, float64, int, bool) { return dec.Search(qi, qv, nil, &s2) })
}

// TestQueryKeyCount checks that QueryKeyCount is the length of what
// QueryKeys returns, for probes from none to more than a key's bits.
func TestQueryKeyCount(t *testing.T) {
	for _, c := range []struct{ tables, bits, probes int }{{1, 4, 0}, {8, 9, 1}, {3, 5, 5}, {2, 3, 7}, {4, 6, -1}} {
		h, err := NewHasher(c.tables, c.bits, 1)
		if err != nil {
			t.Fatal(err)
		}
		proj := make([]float64, h.Projections())
		h.Project([]int32{0, 3}, []float32{1, -2}, proj)
		if got, want := h.QueryKeyCount(c.probes), len(h.QueryKeys(proj, c.probes, nil)); got != want {
			t.Errorf("%d tables of %d bits, %d probes: QueryKeyCount %d, QueryKeys gave %d", c.tables, c.bits, c.probes, got, want)
		}
	}
}

// TestProjectSigns checks Project against adding and subtracting each
// coordinate's value by the bits of its hash, bit for bit.
func TestProjectSigns(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	for _, c := range []struct{ tables, bits int }{{1, 1}, {8, 8}, {8, 9}, {3, 16}} {
		h, err := NewHasher(c.tables, c.bits, 11)
		if err != nil {
			t.Fatal(err)
		}
		xi, xv := sparse(rng, 1000, 40)
		got, want := make([]float64, h.Projections()), make([]float64, h.Projections())
		h.Project(xi, xv, got)
		for e, j := range xi {
			for i := range want {
				if splitMix64(h.seed^uint64(j)<<8^uint64(i>>6))&(1<<(i%64)) != 0 {
					want[i] += float64(xv[e])
				} else {
					want[i] -= float64(xv[e])
				}
			}
		}
		for i := range want {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
				t.Fatalf("%d tables of %d bits: projection %d is %v, want %v", c.tables, c.bits, i, got[i], want[i])
			}
		}
	}
}

func BenchmarkProject(b *testing.B) {
	rng := rand.New(rand.NewPCG(8, 9))
	h, err := NewHasher(8, 9, 11)
	if err != nil {
		b.Fatal(err)
	}
	xi, xv := sparse(rng, 100000, 100)
	out := make([]float64, h.Projections())
	for b.Loop() {
		h.Project(xi, xv, out)
	}
}
