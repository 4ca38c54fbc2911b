package forest

import "math/bits"

// Projection is the hashing-trick random projection CRAFTML applies per tree
// to features and to labels: column j goes to bucket Murmur3(j, BucketSeed)
// mod Dim with sign ±1 from Murmur3(j, SignSeed). Two seeds make bucket and
// sign independent; both are drawn per tree from the forest seed, so no two
// trees share a projection (unlike the C++ DXML program, whose trees seeded
// in the same second do).
//
// An Identity projection keeps every column in its own bucket, j, with a
// random sign: what a projection to at least as many buckets as columns
// is best made of, as hashing would still make columns collide (1,836
// Bibtex features hashed into 10,000 buckets share 9% of them) and spread
// them over tables larger than the data needs.
type Projection struct {
	Dim        int32
	BucketSeed uint32
	SignSeed   uint32
	Identity   bool
}

// Map returns the bucket of column j and its sign (+1 or -1).
func (p Projection) Map(j int32) (bucket int32, sign float32) {
	h := Murmur3(uint32(j), p.BucketSeed)
	bucket = int32(h % uint32(p.Dim))
	if p.Identity {
		bucket = j
	}
	if Murmur3(uint32(j), p.SignSeed)&1 == 0 {
		return bucket, 1
	}
	return bucket, -1
}

// Table precomputes Map for columns 0..n-1, as a bucket slice and a sign
// slice; trainers use it to avoid re-hashing each non-zero at every node.
func (p Projection) Table(n int) (buckets []int32, signs []float32) {
	buckets = make([]int32, n)
	signs = make([]float32, n)
	for j := range n {
		buckets[j], signs[j] = p.Map(int32(j))
	}
	return buckets, signs
}

// Project writes the projected (bucket, signed value) pairs of an instance
// into buckets and signed, which must have len(idx) room, and returns them.
func (p Projection) Project(idx []int32, val []float32, buckets []int32, signed []float32) ([]int32, []float32) {
	buckets, signed = buckets[:len(idx)], signed[:len(idx)]
	for i, j := range idx {
		b, s := p.Map(j)
		buckets[i], signed[i] = b, s*val[i]
	}
	return buckets, signed
}

// Murmur3 is MurmurHash3 x86_32 of the 4-byte little-endian encoding of key.
// It is written out here because the standard library has no Murmur3 and the
// algorithm is a dozen lines; it matches the reference implementation (tested
// against published vectors).
func Murmur3(key, seed uint32) uint32 {
	const c1, c2 = 0xcc9e2d51, 0x1b873593
	k := key * c1
	k = bits.RotateLeft32(k, 15)
	k *= c2
	h := seed ^ k
	h = bits.RotateLeft32(h, 13)
	h = h*5 + 0xe6546b64
	h ^= 4 // length in bytes
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}
