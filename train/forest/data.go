package forest

import (
	"hash/maphash"
	"math"
	"slices"

	"xmc/data"
)

// trainingData is the read-only training data a forest worker reads: one copy
// per NUMA domain, built by newTrainingData on a pinned worker of the domain.
type trainingData struct {
	X, Y         data.CSR
	xHash, yHash []uint64 // per-row hashes to detect "all rows equal" quickly
	// yClass numbers the distinct label rows, from 0 to yClasses-1: rows
	// have equal labels exactly when they have the same class, and so the
	// same similarity to any k-means centroid.
	yClass   []int32
	yClasses int
}

// newTrainingData prepares a domain's training data: a copy of d's matrices
// if copyData (first-touched by the calling, pinned, thread, so in its
// domain's memory), else d's matrices themselves, which must not change
// afterwards; and per-row hashes. A rank with one NUMA domain needs no copy:
// all of its memory is local (a copy cost Bibtex 2.7 MB and its page faults).
func newTrainingData(d *data.Dataset, seed maphash.Seed, copyData bool) *trainingData {
	f := &trainingData{X: d.X, Y: d.Y}
	if copyData {
		f.X, f.Y = d.X.Clone(), d.Y.Clone()
	}
	f.xHash = rowHashes(&f.X, seed)
	f.yHash = rowHashes(&f.Y, seed)
	f.yClass, f.yClasses = rowClasses(&f.Y, f.yHash)
	return f
}

// rowClasses numbers the distinct rows of m in order of first appearance,
// given their hashes, and returns each row's number and how many there are.
func rowClasses(m *data.CSR, hash []uint64) ([]int32, int) {
	class := make([]int32, m.Rows)
	first := make(map[uint64][]int32) // by hash, the first row of each class
	n := int32(0)
	for i := range m.Rows {
		idx, val := m.Row(i)
		c := int32(-1)
		for _, r := range first[hash[i]] {
			i0, v0 := m.Row(int(r))
			if slices.Equal(idx, i0) && slices.Equal(val, v0) {
				c = class[r]
				break
			}
		}
		if c < 0 {
			c, n = n, n+1
			first[hash[i]] = append(first[hash[i]], int32(i))
		}
		class[i] = c
	}
	return class, int(n)
}

func rowHashes(m *data.CSR, seed maphash.Seed) []uint64 {
	h := make([]uint64, m.Rows)
	for i := range h {
		idx, val := m.Row(i)
		var mh maphash.Hash
		mh.SetSeed(seed)
		for k, j := range idx {
			var b [8]byte
			b[0], b[1], b[2], b[3] = byte(j), byte(j>>8), byte(j>>16), byte(j>>24)
			v := math.Float32bits(val[k])
			b[4], b[5], b[6], b[7] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
			mh.Write(b[:])
		}
		h[i] = mh.Sum64()
	}
	return h
}
