// Package mips finds, among sparse vectors that keep changing, the one of
// greatest inner product with a sparse query: maximum inner product search
// (MIPS). A multi-class trainer such as MEMOIR asks it, for every training
// row, which class scores highest, while every step of training moves the
// class vectors; exact search would cost a pass over all classes per row.
//
// Vectors holds the sparse vectors (of classes); LSH (SimpleLSH with norm
// ranging) and Graph (a small-world graph of inner products) are
// approximate indexes over them that follow their changes; Inverted is
// exact search over a snapshot of them, for prediction and for measuring
// the recall of an index.
//
// No Go library does MIPS over sparse vectors with incremental updates (the
// graph and hashing libraries index dense, fixed vectors), hence this
// package.
package mips

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// Vectors is a set of sparse vectors v_0..v_{n-1} in R^D: per vector, its
// non-zero coordinates in increasing order and their values, and its
// squared norm. Memory is O(n + non-zeros), whatever D.
type Vectors struct {
	idx [][]int32
	val [][]float64
	sq  []float64
}

// NewVectors returns n zero vectors.
func NewVectors(n int) *Vectors {
	return &Vectors{idx: make([][]int32, n), val: make([][]float64, n), sq: make([]float64, n)}
}

// Len is the number of vectors.
func (v *Vectors) Len() int { return len(v.idx) }

// Vector returns the coordinates and values of v_k, owned by v.
func (v *Vectors) Vector(k int) ([]int32, []float64) { return v.idx[k], v.val[k] }

// SquaredNorm returns ‖v_k‖².
func (v *Vectors) SquaredNorm(k int) float64 { return v.sq[k] }

// IsZero reports whether v_k has no non-zero coordinate.
func (v *Vectors) IsZero(k int) bool { return len(v.idx[k]) == 0 }

// NNZ is the number of stored coordinates of all vectors.
func (v *Vectors) NNZ() int {
	n := 0
	for _, idx := range v.idx {
		n += len(idx)
	}
	return n
}

// Bytes is the memory the vectors hold, headers included.
func (v *Vectors) Bytes() int {
	n := 56 * len(v.idx) // two slice headers and a squared norm
	for k := range v.idx {
		n += 4*cap(v.idx[k]) + 8*cap(v.val[k])
	}
	return n
}

// Dot returns ⟨v_k, x⟩ for x given by its increasing coordinates xi and
// values xv. The terms are summed in increasing coordinate order, so the
// result does not depend on how the common coordinates are found.
func (v *Vectors) Dot(k int, xi []int32, xv []float32) float64 {
	idx := v.idx[k]
	if len(xi)*bits.Len(uint(len(idx))) < len(idx) {
		return v.dotSearch(k, xi, xv)
	}
	return mergeDot(idx, v.val[k], xi, xv)
}

// mergeDot returns ⟨v, x⟩ for v and x given by increasing coordinates and
// their values, by a merge of the two: x's values are float32 for a data
// row, float64 for another class vector.
func mergeDot[T float32 | float64](idx []int32, val []float64, xi []int32, xv []T) float64 {
	s := 0.0
	for a, b := 0, 0; a < len(idx) && b < len(xi); {
		switch {
		case idx[a] < xi[b]:
			a++
		case idx[a] > xi[b]:
			b++
		default:
			s += val[a] * float64(xv[b])
			a++
			b++
		}
	}
	return s
}

// dotSearch is Dot by a binary search of v_k per coordinate of x: for a
// long vector and a short query.
func (v *Vectors) dotSearch(k int, xi []int32, xv []float32) float64 {
	idx, val := v.idx[k], v.val[k]
	s := 0.0
	lo := 0
	for e, j := range xi {
		p, ok := slices.BinarySearch(idx[lo:], j)
		lo += p
		if lo == len(idx) {
			break
		}
		if ok {
			s += val[lo] * float64(xv[e])
		}
	}
	return s
}

// scattered is a query written into a dense array, zero elsewhere, for
// dotScattered: a searcher's, kept from query to query.
type scattered struct {
	dense []float32
}

// set writes x into s.dense, growing it as needed.
func (s *scattered) set(xi []int32, xv []float32) {
	if len(xi) > 0 && int(xi[len(xi)-1]) >= len(s.dense) {
		s.dense = slices.Grow(s.dense, int(xi[len(xi)-1])+1-len(s.dense))[:xi[len(xi)-1]+1]
	}
	for e, j := range xi {
		s.dense[j] = xv[e]
	}
}

// clear zeroes what set wrote.
func (s *scattered) clear(xi []int32) {
	for _, j := range xi {
		s.dense[j] = 0
	}
}

// denseFactor is how much longer than a query a vector may be for
// dotScattered to read it straight through rather than merge or search.
// With a factor of 32, vectors of 5-75 coordinates against queries of 8 took
// 0.35 of Dot's time (BenchmarkDotShapes; with 2, about as long, since Dot
// then scores most of them), but a search's candidates are longer, and
// reading them whole from memory costs more than the comparisons it saves:
// on wordnet-mc's first MEMOIR epoch (1 rank, 2 threads, 3 interleaved
// runs) 2 trained in 5.6-6.1 s, reading none through 6.2-6.9 s, and 32 was
// no faster than none.
const denseFactor = 2

// l1Coordinates is the most coordinates of a scattered query that leave
// room in a core's first-level data cache (32 KiB or more on the x86 cores
// of today's clusters) for the vector read through: 16 KiB of float32.
const l1Coordinates = 4096

// searchFactor is, where the scattered query sits in the first-level
// cache, how many times the comparisons of Dot's search (the query's
// coordinates times the bits of the vector's length) a vector may have
// for dotScattered to read it straight through: a load from that cache
// per coordinate and no branch, against comparisons whose branches the
// processor mispredicts. Such queries are those of data of few features
// (Bibtex's 1,836), whose class vectors are long beside them.
const searchFactor = 4

// dotScattered is Dot with x also given scattered into dense (zero
// elsewhere, any length): a vector not much longer than x, or not much
// longer than Dot's search would read where dense is small enough to stay
// in the first-level cache, is read straight through, its coordinates
// looked up in dense, without the comparisons of a merge or a search. The
// sum is the same: the terms of the common coordinates in increasing
// order, and zeros.
func (v *Vectors) dotScattered(k int, xi []int32, xv []float32, dense []float32) float64 {
	idx, val := v.idx[k], v.val[k]
	longest := denseFactor * len(xi)
	if len(dense) <= l1Coordinates {
		longest = searchFactor * len(xi) * bits.Len(uint(len(idx)))
	}
	if len(idx) > longest {
		return v.Dot(k, xi, xv)
	}
	s := 0.0
	for e, j := range idx {
		if int(j) < len(dense) {
			s += val[e] * float64(dense[j])
		}
	}
	return s
}

// Add sets v_k += c·x. Its squared norm follows by the change of the
// coordinates of x alone, so the cost is O(nnz(x) log nnz(v_k)) when x adds
// no coordinate and O(nnz(v_k) + nnz(x)) when it does.
func (v *Vectors) Add(k int, c float64, xi []int32, xv []float32) {
	idx, val := v.idx[k], v.val[k]
	missing := 0
	for a, b := 0, 0; b < len(xi); b++ {
		for a < len(idx) && idx[a] < xi[b] {
			a++
		}
		if a == len(idx) || idx[a] != xi[b] {
			missing++
		}
	}
	sq := v.sq[k]
	if missing == 0 {
		lo := 0
		for e, j := range xi {
			p, _ := slices.BinarySearch(idx[lo:], j)
			lo += p
			old := val[lo]
			val[lo] = old + c*float64(xv[e])
			sq += val[lo]*val[lo] - old*old
		}
		v.sq[k] = max(sq, 0)
		return
	}
	// Merge from the back, so that the old entries move at most once.
	m := len(idx)
	idx = slices.Grow(idx, missing)[:m+missing]
	val = slices.Grow(val, missing)[:m+missing]
	a, b := m-1, len(xi)-1
	for o := m + missing - 1; b >= 0; o-- {
		switch {
		case a >= 0 && idx[a] > xi[b]:
			idx[o], val[o] = idx[a], val[a]
			a--
		case a >= 0 && idx[a] == xi[b]:
			old := val[a]
			idx[o], val[o] = idx[a], old+c*float64(xv[b])
			sq += val[o]*val[o] - old*old
			a--
			b--
		default:
			idx[o], val[o] = xi[b], c*float64(xv[b])
			sq += val[o] * val[o]
			b--
		}
	}
	v.idx[k], v.val[k], v.sq[k] = idx, val, max(sq, 0)
}

// Shrink soft-thresholds every coordinate of v_k by g ≥ 0 (each value moves
// g towards zero, and stops there), drops those that reach zero, and
// appends the change of each coordinate to di and dv (for an index that
// follows v_k), which it returns.
func (v *Vectors) Shrink(k int, g float64, di []int32, dv []float64) ([]int32, []float64) {
	idx, val := v.idx[k], v.val[k]
	sq := 0.0
	o := 0
	for e, j := range idx {
		old := val[e]
		nv := math.Copysign(max(math.Abs(old)-g, 0), old)
		if nv != old {
			di, dv = append(di, j), append(dv, nv-old)
		}
		if nv != 0 {
			idx[o], val[o] = j, nv
			sq += nv * nv
			o++
		}
	}
	v.idx[k], v.val[k], v.sq[k] = idx[:o], val[:o], sq
	return di, dv
}

// Scale multiplies every vector by f and recomputes the squared norms.
func (v *Vectors) Scale(f float64) {
	for k, val := range v.val {
		sq := 0.0
		for e := range val {
			val[e] *= f
			sq += val[e] * val[e]
		}
		v.sq[k] = sq
	}
}

// Clone returns a deep copy of v.
func (v *Vectors) Clone() *Vectors {
	c := NewVectors(v.Len())
	for k := range v.idx {
		c.idx[k], c.val[k], c.sq[k] = slices.Clone(v.idx[k]), slices.Clone(v.val[k]), v.sq[k]
	}
	return c
}

// AppendBinary appends v's encoding to b: per vector its squared norm, its
// number of coordinates and the coordinates with their values, all
// little-endian; the squared norms are kept as they are (not recomputed on
// decoding), so that a decoded set continues exactly as v would.
func (v *Vectors) AppendBinary(b []byte) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(v.Len()))
	for k, idx := range v.idx {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v.sq[k]))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(idx)))
		for e, j := range idx {
			b = binary.LittleEndian.AppendUint32(b, uint32(j))
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v.val[k][e]))
		}
	}
	return b
}

// errTruncated reports an encoding that ends early.
var errTruncated = errors.New("mips: encoding truncated")

// DecodeVectors decodes vectors encoded by AppendBinary from the start of b
// and returns them with the rest of b. Coordinates must be increasing and
// below d.
func DecodeVectors(b []byte, d int) (*Vectors, []byte, error) {
	if len(b) < 4 {
		return nil, nil, errTruncated
	}
	n := int(binary.LittleEndian.Uint32(b))
	b = b[4:]
	if n > len(b)/12 {
		return nil, nil, errTruncated
	}
	v := NewVectors(n)
	for k := range n {
		if len(b) < 12 {
			return nil, nil, errTruncated
		}
		v.sq[k] = math.Float64frombits(binary.LittleEndian.Uint64(b))
		m := int(binary.LittleEndian.Uint32(b[8:]))
		b = b[12:]
		if m > len(b)/12 {
			return nil, nil, errTruncated
		}
		v.idx[k], v.val[k] = make([]int32, m), make([]float64, m)
		for e := range m {
			j := int32(binary.LittleEndian.Uint32(b))
			if j < 0 || int(j) >= d || (e > 0 && j <= v.idx[k][e-1]) {
				return nil, nil, fmt.Errorf("mips: vector %d: coordinate %d out of order or not below %d", k, j, d)
			}
			v.idx[k][e], v.val[k][e] = j, math.Float64frombits(binary.LittleEndian.Uint64(b[4:]))
			b = b[12:]
		}
	}
	return v, b, nil
}
