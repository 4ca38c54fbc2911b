package mips

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// Hasher draws the random projections of SimpleLSH (Neyshabur and Srebro,
// "On Symmetric and Asymmetric LSHs for Inner Product Search", ICML 2015):
// Tables × Bits signed random projections of R^{D+1}, with entries ±1 drawn
// from the seed and the coordinate alone, so that they take no memory and
// are the same on every rank. One Hasher serves every LSH of a trainer, and
// a query is projected once for all of them.
type Hasher struct {
	tables, bits int
	seed         uint64
	extra        []float64 // the projections' entry on coordinate D+1
}

// MaxBits bounds the bits of a table: a table has 2^Bits buckets.
const MaxBits = 16

// NewHasher returns the projections of tables tables of bits bits each.
func NewHasher(tables, bits int, seed uint64) (*Hasher, error) {
	if tables < 1 || bits < 1 || bits > MaxBits {
		return nil, fmt.Errorf("mips: want at least 1 table and 1 to %d bits, got %d tables of %d bits", MaxBits, tables, bits)
	}
	h := &Hasher{tables: tables, bits: bits, seed: seed, extra: make([]float64, tables*bits)}
	for i := range h.extra {
		h.extra[i] = 1
		if splitMix64(seed^0x632be59bd9b4e019^uint64(i))&1 == 0 {
			h.extra[i] = -1
		}
	}
	return h, nil
}

// Projections is the number of projections, Tables × Bits: the length of
// what Project writes.
func (h *Hasher) Projections() int { return h.tables * h.bits }

// Project writes into out (of length Projections) the projections ⟨a_i, x⟩
// of the sparse vector x on the first D coordinates, in increasing
// coordinate order. A vector's projections are linear in it: those of a
// change of it add to its own.
func (h *Hasher) Project(xi []int32, xv []float32, out []float64) { project(h, xi, xv, out) }

// ProjectDense is Project for x given by coordinates and float64 values.
func (h *Hasher) ProjectDense(xi []int32, xv []float64, out []float64) { project(h, xi, xv, out) }

func project[T float32 | float64](h *Hasher, xi []int32, xv []T, out []float64) {
	clear(out)
	for e, j := range xi {
		x := math.Float64bits(float64(xv[e]))
		for lo := 0; lo < len(out); lo += 64 {
			// One hash gives the signs of 64 projections. A clear bit
			// flips x's sign bit: x or −x is added without a branch on
			// the bit, which the processor mispredicted half the time,
			// and adding −x is subtracting x, to the bit.
			flips := ^splitMix64(h.seed ^ uint64(j)<<8 ^ uint64(lo>>6))
			o := out[lo:min(lo+64, len(out))]
			for k := range o {
				o[k] += math.Float64frombits(x ^ (flips>>k&1)<<63)
			}
		}
	}
}

func splitMix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// LSH is SimpleLSH over the non-zero vectors of a Vectors, in Tables hash
// tables, with the norm ranging of Yan et al. ("Norm-Ranging LSH for Maximum
// Inner Product Search", NeurIPS 2018). A vector v with ‖v‖ ≤ M is hashed as
// P(v) = (v/M, √(1 − ‖v‖²/M²)) and a query x as Q(x) = (x, 0), so that the
// angle between P(v) and Q(x) falls as ⟨v, x⟩ grows: a vector of large inner
// product shares a query's bucket in some table with high probability. M is
// not one bound for all vectors (where a few long vectors would leave the
// others' P(v) almost all in the extra coordinate, and their buckets
// meaningless) but the power of two at or above each vector's norm: the
// vectors of each such range have their own tables, and a query visits the
// ranges that hold vectors. The index keeps each vector's projections, so a
// change c·x of a vector costs O(Tables × Bits) once x is projected (Shift),
// whatever the number of vectors. Buckets are intrusive lists over flat
// arrays, so that updates allocate nothing once a range's tables exist.
type LSH struct {
	h    *Hasher
	vec  *Vectors
	proj []float64 // per vector, its Projections
	// rng is, per vector, the exponent of its M (normRanges: zero), and
	// key, per vector and table, its bucket (−1: none).
	rng  []int32
	key  []int32
	next []int32 // per vector and table, the next vector of its bucket
	prev []int32 // per vector and table, the previous one (−1: first)
	// head is, per norm range (exponent + rangeBias), per table and
	// bucket, its first vector (−1: empty); nil for a range never used.
	// count is the vectors of each range.
	head  [][]int32
	count []int32
	live  []int32 // the ranges of count > 0, increasing
}

// Norm ranges: exponents of M from −rangeBias to normRanges − rangeBias − 1;
// norms beyond share the first or last range.
const (
	normRanges = 128
	rangeBias  = 64
)

// NewLSH indexes the vectors of vec, which it keeps and follows: a caller
// that changes a vector tells the index by Shift.
func NewLSH(h *Hasher, vec *Vectors) *LSH {
	x := &LSH{h: h, vec: vec, proj: make([]float64, vec.Len()*h.Projections())}
	for k := range vec.Len() {
		idx, val := vec.Vector(k)
		h.ProjectDense(idx, val, x.proj[k*h.Projections():(k+1)*h.Projections()])
	}
	x.link()
	return x
}

// link allocates the bucket lists and puts every vector in its buckets.
func (x *LSH) link() {
	n, t := x.vec.Len(), x.h.tables
	x.rng, x.key = make([]int32, n), make([]int32, n*t)
	x.next, x.prev = make([]int32, n*t), make([]int32, n*t)
	x.head, x.count, x.live = make([][]int32, normRanges), make([]int32, normRanges), nil
	for i := range x.key {
		x.key[i] = -1
	}
	for k := range n {
		x.rekey(k)
	}
}

// Bytes is the memory the index holds beyond its vectors.
func (x *LSH) Bytes() int {
	n := 8*len(x.proj) + 4*(len(x.rng)+len(x.key)+len(x.next)+len(x.prev)+len(x.count)+len(x.live))
	for _, h := range x.head {
		n += 4 * len(h)
	}
	return n
}

// Shift tells the index that vector k changed by a vector whose projections
// (by the index's Hasher) are d.
func (x *LSH) Shift(k int, d []float64) {
	p := x.proj[k*len(d) : (k+1)*len(d)]
	for i, v := range d {
		p[i] += v
	}
	x.rekey(k)
}

// Scale tells the index that every vector was multiplied by f > 0 (as by
// Vectors.Scale).
func (x *LSH) Scale(f float64) {
	for i := range x.proj {
		x.proj[i] *= f
	}
	for k := range x.vec.Len() {
		x.rekey(k)
	}
}

// normRange returns the range of a vector of squared norm sq: the
// exponent e of M = 2^e ≥ ‖v‖, biased and clamped to [0, normRanges).
func normRange(sq float64) int {
	frac, exp := math.Frexp(math.Sqrt(sq)) // ‖v‖ = frac·2^exp, frac in [0.5, 1)
	if frac == 0.5 {
		exp--
	}
	return min(max(exp+rangeBias, 0), normRanges-1)
}

// rekey moves vector k to the buckets of its hash, or out of the tables if
// it is zero.
func (x *LSH) rekey(k int) {
	t, b := x.h.tables, x.h.bits
	zero := x.vec.IsZero(k)
	r, ex := 0, 0.0
	if !zero {
		// √(M² − ‖v‖²): the extra coordinate of P(v), times M, as the
		// projections are kept unscaled.
		sq := x.vec.SquaredNorm(k)
		r = normRange(sq)
		m := math.Ldexp(1, r-rangeBias)
		ex = math.Sqrt(max(m*m-sq, 0))
		if x.head[r] == nil {
			x.head[r] = make([]int32, t<<b)
			for i := range x.head[r] {
				x.head[r][i] = -1
			}
		}
	}
	p := x.proj[k*t*b : (k+1)*t*b]
	for tab := range t {
		key := int32(-1)
		if !zero {
			key = 0
			for i := range b {
				if p[tab*b+i]+x.h.extra[tab*b+i]*ex > 0 {
					key |= 1 << i
				}
			}
		}
		s := k*t + tab
		if x.key[s] == key && (key < 0 || x.rng[k] == int32(r)) {
			continue
		}
		if old := x.key[s]; old >= 0 { // unlink
			head := x.head[x.rng[k]]
			if x.prev[s] >= 0 {
				x.next[int(x.prev[s])*t+tab] = x.next[s]
			} else {
				head[tab<<b|int(old)] = x.next[s]
			}
			if x.next[s] >= 0 {
				x.prev[int(x.next[s])*t+tab] = x.prev[s]
			}
			if tab == 0 {
				x.count[x.rng[k]]--
				if x.count[x.rng[k]] == 0 {
					i, _ := slices.BinarySearch(x.live, x.rng[k])
					x.live = slices.Delete(x.live, i, i+1)
				}
			}
		}
		x.key[s] = key
		if key >= 0 { // link first
			head := x.head[r]
			h := tab<<b | int(key)
			x.next[s], x.prev[s] = head[h], -1
			if head[h] >= 0 {
				x.prev[int(head[h])*t+tab] = int32(k)
			}
			head[h] = int32(k)
			if tab == 0 {
				x.count[r]++
				if x.count[r] == 1 {
					i, _ := slices.BinarySearch(x.live, int32(r))
					x.live = slices.Insert(x.live, i, int32(r))
				}
			}
		}
	}
	x.rng[k] = int32(r)
}

// Scratch is a searcher's memory, one per goroutine: it may serve several
// indexes in turn.
type Scratch struct {
	stamp []uint32
	now   uint32
	query scattered
}

// QueryKeys writes into keys, for each table in turn, the bucket of a
// query of projections proj (Project) and the buckets of its key with one
// of its probes least certain bits flipped, and returns them: what Search
// visits, the same for every index of the Hasher, so computed once per
// query.
func (h *Hasher) QueryKeys(proj []float64, probes int, keys []int) []int {
	keys = keys[:0]
	b := h.bits
	probes = min(probes, b)
	for tab := range h.tables {
		p := proj[tab*b : (tab+1)*b]
		key := 0
		for i, v := range p {
			if v > 0 {
				key |= 1 << i
			}
		}
		keys = append(keys, tab<<b|key)
		var used uint32
		for range probes {
			flip, margin := -1, math.Inf(1)
			for i, v := range p {
				if used&(1<<i) == 0 && math.Abs(v) < margin {
					flip, margin = i, math.Abs(v)
				}
			}
			used |= 1 << flip
			keys = append(keys, tab<<b|key^(1<<flip))
		}
	}
	return keys
}

// QueryKeyCount returns the number of keys QueryKeys returns for probes
// probes, so that callers keep the keys of several queries side by side.
func (h *Hasher) QueryKeyCount(probes int) int { return h.tables * (1 + min(max(probes, 0), h.bits)) }

// Search returns, among the vectors sharing a bucket of keys (QueryKeys)
// in their norm range, the one of greatest inner product with x other
// than those of skip (ties to the lower), with its inner product and how
// many vectors it scored; ok is false when there is none.
func (x *LSH) Search(xi []int32, xv []float32, keys []int, skip []int, s *Scratch) (best int, score float64, scored int, ok bool) {
	if len(s.stamp) < x.vec.Len() {
		s.stamp = make([]uint32, x.vec.Len())
		s.now = 0
	}
	s.now++
	if s.now == 0 { // wrapped: forget every stamp
		clear(s.stamp)
		s.now = 1
	}
	t, b := x.h.tables, x.h.bits
	best, score = -1, math.Inf(-1)
	s.query.set(xi, xv)
	defer s.query.clear(xi)
	for _, bucket := range keys {
		tab := bucket >> b
		for _, r := range x.live {
			for k := x.head[r][bucket]; k >= 0; k = x.next[int(k)*t+tab] {
				if s.stamp[k] == s.now {
					continue
				}
				s.stamp[k] = s.now
				if slices.Contains(skip, int(k)) {
					continue
				}
				scored++
				if d := x.vec.dotScattered(int(k), xi, xv, s.query.dense); d > score || (d == score && int(k) < best) {
					best, score = int(k), d
				}
			}
		}
	}
	return best, score, scored, best >= 0
}

// AppendBinary appends the index's state that its vectors do not give: the
// projections, which are sums kept step by step and would differ in their
// last bits if recomputed, changing buckets.
func (x *LSH) AppendBinary(b []byte) []byte {
	for _, p := range x.proj {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(p))
	}
	return b
}

// DecodeLSH rebuilds the index that AppendBinary encoded over vec, from the
// start of b, and returns the rest of b. Its buckets list their vectors in
// another order than the original's, which changes no answer: ties go to
// the lower vector.
func DecodeLSH(h *Hasher, vec *Vectors, b []byte) (*LSH, []byte, error) {
	np := vec.Len() * h.Projections()
	if len(b) < 8*np {
		return nil, nil, errTruncated
	}
	x := &LSH{h: h, vec: vec, proj: make([]float64, np)}
	for i := range x.proj {
		x.proj[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	x.link()
	return x, b[8*np:], nil
}

// BitsFor is the default number of bits of a table over n vectors: about
// four vectors a bucket, within [1, MaxBits].
func BitsFor(n int) int {
	return min(max(bits.Len(uint(n/4)), 1), MaxBits)
}
