package pipeline

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"

	"xmc/data"
)

// TestFingerprint checks that fingerprint hashes what binary.Write of the
// matrices gives (the encoding checkpoints were stamped with), whatever
// the size against its buffer, and that it tells datasets apart.
func TestFingerprint(t *testing.T) {
	reference := func(algo string, params any, d *data.Dataset) string {
		h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
		h.Write(mustJSON(params))
		for _, m := range []*data.CSR{&d.X, &d.Y} {
			fmt.Fprintf(h, "%d %d %d;", m.Rows, m.Cols, m.NNZ())
			binary.Write(h, binary.LittleEndian, m.Indices)
			binary.Write(h, binary.LittleEndian, m.Values)
		}
		return fmt.Sprintf("%s %08x", algo, h.Sum32())
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
		got, want := fingerprint("forest", params, d), reference("forest", params, d)
		if got != want {
			t.Errorf("%d rows x %d: fingerprint %q, binary.Write gives %q", size.rows, size.nnz, got, want)
		}
		if seen[got] {
			t.Errorf("%d rows x %d: fingerprint %q repeats another dataset's", size.rows, size.nnz, got)
		}
		seen[got] = true
	}
}
