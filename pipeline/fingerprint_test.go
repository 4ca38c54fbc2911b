package pipeline

import (
	"encoding/binary"
	"fmt"
	"testing"

	"xmc/checksum"
	"xmc/data"
)

// TestFingerprint checks that dataCRC hashes what binary.Write of the
// matrices gives, whatever the size against its buffer, and that the
// fingerprint tells datasets, parameters and units apart.
func TestFingerprint(t *testing.T) {
	reference := func(d *data.Dataset) uint32 {
		h := checksum.New()
		for _, m := range []*data.CSR{&d.X, &d.Y} {
			fmt.Fprintf(h, "%d %d %d;", m.Rows, m.Cols, m.NNZ())
			binary.Write(h, binary.LittleEndian, m.Indices)
			binary.Write(h, binary.LittleEndian, m.Values)
		}
		return h.Sum32()
	}
	params := map[string]int{"trees": 3}
	seen := map[string]bool{}
	for _, size := range []struct{ rows, nnz int }{{0, 0}, {1, 1}, {3, 5}, {100, 200}, {9, 16384}} {
		d := fingerprintData(size.rows, size.nnz)
		if got, want := dataCRC(d), reference(d); got != want {
			t.Errorf("%d rows x %d: data CRC %08x, binary.Write gives %08x", size.rows, size.nnz, got, want)
		}
		got := fingerprint("forest", params, 3, 0, dataCRC(d))
		if seen[got] {
			t.Errorf("%d rows x %d: fingerprint %q repeats another dataset's", size.rows, size.nnz, got)
		}
		seen[got] = true
	}
	if fingerprint("forest", params, 3, 0, 1) == fingerprint("forest", map[string]int{"trees": 4}, 3, 0, 1) {
		t.Error("the fingerprint does not depend on the parameters")
	}
	if fingerprint("pdsparse", params, 73, 0, 1) == fingerprint("pdsparse", params, 128, 0, 1) {
		t.Error("the fingerprint does not depend on the units")
	}
}

// TestUnitLayout checks that label blocks of the same number but other
// sizes give another layout, and that the layout hashes every unit, the
// last of many too, as binary.Write of their weights does.
func TestUnitLayout(t *testing.T) {
	sizes := func(s ...int) func(int) int { return func(u int) int { return s[u] } }
	if unitLayout(3, nil) != 0 {
		t.Error("units without weights: want layout 0")
	}
	if unitLayout(3, sizes(8, 8, 5)) == unitLayout(3, sizes(8, 7, 6)) {
		t.Error("blocks of 8, 8, 5 and of 8, 7, 6 labels have the same layout")
	}
	if fingerprint("ppdsparse", nil, 3, unitLayout(3, sizes(8, 8, 5)), 1) == fingerprint("ppdsparse", nil, 3, unitLayout(3, sizes(8, 7, 6)), 1) {
		t.Error("the fingerprint does not depend on the units' layout")
	}
	const many = 20000
	ones := func(last int) func(int) int {
		return func(u int) int {
			if u == many-1 {
				return last
			}
			return 1
		}
	}
	if unitLayout(many, ones(1)) == unitLayout(many, ones(2)) {
		t.Errorf("%d units: the last unit's weight is not in the layout", many)
	}
	want := checksum.New()
	for range many {
		binary.Write(want, binary.LittleEndian, uint64(1))
	}
	if got := unitLayout(many, ones(1)); got != want.Sum32() {
		t.Errorf("%d units of weight 1: layout %08x, binary.Write gives %08x", many, got, want.Sum32())
	}
}

// BenchmarkDataCRC times the data's CRC, which every rank computes when it
// starts: 4M feature entries here, 37M at Amazon-670K's real size.
func BenchmarkDataCRC(b *testing.B) {
	d := fingerprintData(200_000, 20)
	b.SetBytes(int64(8 * (len(d.X.Indices) + len(d.Y.Indices))))
	for b.Loop() {
		dataCRC(d)
	}
}

// fingerprintData returns rows rows of nnz features each and one of 3
// labels.
func fingerprintData(rows, nnz int) *data.Dataset {
	d := &data.Dataset{X: data.CSR{Rows: rows, Cols: nnz + 1, Indptr: make([]int64, rows+1)},
		Y: data.CSR{Rows: rows, Cols: 3, Indptr: make([]int64, rows+1)}}
	for i := range rows {
		for k := range nnz {
			d.X.Indices = append(d.X.Indices, int32(k))
			d.X.Values = append(d.X.Values, float32(i*nnz+k)/7)
		}
		d.X.Indptr[i+1] = int64(len(d.X.Indices))
		d.Y.Indices = append(d.Y.Indices, int32(i%3))
		d.Y.Values = append(d.Y.Values, 1)
		d.Y.Indptr[i+1] = int64(len(d.Y.Indices))
	}
	return d
}

// BenchmarkUnitLayout times the layout of a million units, one label each.
func BenchmarkUnitLayout(b *testing.B) {
	weight := func(u int) int { return 1 + u%3 }
	for b.Loop() {
		unitLayout(1_000_000, weight)
	}
}
