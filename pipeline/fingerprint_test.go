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
	dataset := func(rows, nnz int) *data.Dataset {
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
	params := map[string]int{"trees": 3}
	seen := map[string]bool{}
	for _, size := range []struct{ rows, nnz int }{{0, 0}, {1, 1}, {3, 5}, {100, 200}, {9, 16384}} {
		d := dataset(size.rows, size.nnz)
		if got, want := dataCRC(d), reference(d); got != want {
			t.Errorf("%d rows x %d: data CRC %08x, binary.Write gives %08x", size.rows, size.nnz, got, want)
		}
		got := fingerprint("forest", params, 3, dataCRC(d))
		if seen[got] {
			t.Errorf("%d rows x %d: fingerprint %q repeats another dataset's", size.rows, size.nnz, got)
		}
		seen[got] = true
	}
	if fingerprint("forest", params, 3, 1) == fingerprint("forest", map[string]int{"trees": 4}, 3, 1) {
		t.Error("the fingerprint does not depend on the parameters")
	}
	if fingerprint("pdsparse", params, 73, 1) == fingerprint("pdsparse", params, 128, 1) {
		t.Error("the fingerprint does not depend on the units")
	}
}
