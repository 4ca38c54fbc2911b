package train

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestDecodeEntries checks that the reports of several ranks, each in row
// order, decode ordered by row and, within a row, in rank order: as a
// stable sort of the whole by row.
func TestDecodeEntries(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name         string
		ranks, rows  int
		perRankEntry int
	}{
		{"none", 3, 4, 0},
		{"one rank", 1, 64, 100},
		{"two ranks", 2, 64, 100},
		{"odd ranks", 5, 16, 40},
		{"many ranks, few rows", 17, 2, 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var msg []byte
			var want []RoundEntry
			for r := range tc.ranks {
				rows := make([]int32, tc.perRankEntry)
				for k := range rows {
					rows[k] = int32(rng.IntN(tc.rows))
				}
				slices.Sort(rows)
				for k, q := range rows {
					e := RoundEntry{Row: q, Class: int32(r*1000 + k), Kind: int32(k % 3), Score: rng.Float64()}
					msg = AppendEntry(msg, e)
					want = append(want, e)
				}
			}
			slices.SortStableFunc(want, func(a, b RoundEntry) int { return cmp.Compare(a.Row, b.Row) })
			got, err := DecodeEntries(msg, make([]RoundEntry, 3))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("got %v\nwant %v", got, want)
			}
		})
	}
	if _, err := DecodeEntries(make([]byte, RoundEntryBytes+1), nil); err == nil {
		t.Error("a report of a partial entry decoded without error")
	}
}
