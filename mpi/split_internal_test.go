package mpi

import (
	"bytes"
	"fmt"
	"testing"
)

// TestSplitAllgathervWaits checks that Split's Allgatherv on the
// in-process backend waits for the other ranks once where the buffers
// total at most the limit, and otherwise once for their lengths, then
// once a round of at most limit/P bytes from each rank; with the same
// parts, in rank order, either way.
func TestSplitAllgathervWaits(t *testing.T) {
	const limit = MinMessage
	tests := []struct {
		name      string
		lens      []int
		wantWaits uint64
	}{
		{"small", []int{10, 0, 300}, 1},
		{"at the limit", []int{limit - 2, 1, 1}, 1},
		{"one byte over", []int{limit / 3, limit / 3, limit/3 + 2}, 1 + 2}, // rounds of 1365 bytes
		{"one buffer over the limit", []int{2 * limit, 5, 0}, 1 + 7},       // 8192 bytes in rounds of 1365
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			part := func(q int) []byte { return bytes.Repeat([]byte{byte(q + 1)}, tc.lens[q]) }
			err := Launch(len(tc.lens), limit, func(raw Comm) error {
				c, err := Split(raw, limit)
				if err != nil {
					return err
				}
				in := raw.(*inprocComm)
				before := in.seq
				got, err := c.Allgatherv(part(c.Rank()), nil)
				if err != nil {
					return err
				}
				if waits := in.seq - before; waits != tc.wantWaits {
					return fmt.Errorf("rank %d: %d waits, want %d", c.Rank(), waits, tc.wantWaits)
				}
				for q := range tc.lens {
					if !bytes.Equal(got[q], part(q)) {
						return fmt.Errorf("rank %d: part %d is %d bytes, want %d of %d", c.Rank(), q, len(got[q]), tc.lens[q], q+1)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestSplitAlltoallvWaits checks that Split's Alltoallv on the in-process
// backend waits once where no part is longer than limit/P bytes, and
// otherwise once for the parts' lengths, then once a round of at most
// limit/P bytes a part; with the same parts either way.
func TestSplitAlltoallvWaits(t *testing.T) {
	const limit = MinMessage // rounds of 1365 bytes a part at 3 ranks
	tests := []struct {
		name      string
		counts    [][]int // counts[r][q]: from rank r to rank q
		wantWaits uint64
	}{
		{"small", [][]int{{10, 0, 300}, {0, 0, 0}, {5, 6, 7}}, 1},
		{"at the limit", [][]int{{limit / 3, limit / 3, limit / 3}, {1, 2, 3}, {0, limit / 3, 0}}, 1},
		{"one byte over", [][]int{{0, 0, 0}, {0, 0, limit/3 + 1}, {0, 0, 0}}, 1 + 2},
		{"one part over the limit", [][]int{{2 * limit, 0, 5}, {0, 0, 0}, {1, 1, 1}}, 1 + 7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			part := func(r, q int) []byte { return bytes.Repeat([]byte{byte(3*r + q + 1)}, tc.counts[r][q]) }
			err := Launch(len(tc.counts), limit, func(raw Comm) error {
				c, err := Split(raw, limit)
				if err != nil {
					return err
				}
				var buf []byte
				for q := range tc.counts {
					buf = append(buf, part(c.Rank(), q)...)
				}
				in := raw.(*inprocComm)
				before := in.seq
				got, err := c.Alltoallv(buf, tc.counts[c.Rank()], nil)
				if err != nil {
					return err
				}
				if waits := in.seq - before; waits != tc.wantWaits {
					return fmt.Errorf("rank %d: %d waits, want %d", c.Rank(), waits, tc.wantWaits)
				}
				for r := range tc.counts {
					if want := part(r, c.Rank()); !bytes.Equal(got[r], want) {
						return fmt.Errorf("rank %d: part from %d is %d bytes, want %d", c.Rank(), r, len(got[r]), len(want))
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
