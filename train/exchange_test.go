package train

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"

	"xmc/data"
	"xmc/mpi"
	"xmc/numa"
)

// TestDecodeEntries checks that the reports of several ranks, each in row
// order, decode ordered by row and, within a row, in rank order: as a
// stable sort of the whole by row, and that a share of the rows decodes
// as those rows of the whole. Rows of a batch are counted, rows far apart
// (held-out rows) merged.
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
		{"more rows than counted on the stack", 3, 3000, 2000},
		{"rows far apart", 3, 100000, 5},
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
			// A share of the rows, as a rank that solves it decodes them.
			for _, share := range [][2]int{{0, 1}, {tc.rows / 3, 2 * tc.rows / 3}, {tc.rows - 1, tc.rows}, {5, 5}} {
				lo, hi := share[0], share[1]
				wantOf := slices.DeleteFunc(slices.Clone(want), func(e RoundEntry) bool { return int(e.Row) < lo || int(e.Row) >= hi })
				got, err := DecodeEntriesOf(msg, lo, hi, make([]RoundEntry, 3))
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, wantOf) {
					t.Errorf("rows %d to %d: got %v\nwant %v", lo, hi, got, wantOf)
				}
			}
		})
	}
	// Rows at the ends of int32 decode too.
	var ends []byte
	for _, q := range []int32{math.MaxInt32, -5, math.MinInt32} {
		ends = AppendEntry(ends, RoundEntry{Row: q})
	}
	if got, err := DecodeEntries(ends, nil); err != nil || len(got) != 3 || got[0].Row != math.MinInt32 || got[2].Row != math.MaxInt32 {
		t.Errorf("rows at the ends of int32: %v, %v", got, err)
	}
	if _, err := DecodeEntries(make([]byte, RoundEntryBytes+1), nil); err == nil {
		t.Error("a report of a partial entry decoded without error")
	}
}

// TestBatchReports checks that the rows' reports come back in row order
// whatever the workers, joined as a message, that each row's report,
// decoded where it was written, holds the message's entries of the row,
// that Bytes counts them, that one worker takes the rows of more features
// first (ties in row order), and, for rows searched in pieces, that every
// piece is searched once and a row reported only after all of its pieces.
func TestBatchReports(t *testing.T) {
	topo, err := numa.Detect()
	if err != nil {
		t.Fatal(err)
	}
	// Rows of 0 to 5 features; the round takes rows 7, 2, 5, 0, 3, 6.
	x := data.CSR{Rows: 8, Cols: 5, Indptr: []int64{0, 1, 3, 3, 8, 11, 13, 13, 17}}
	x.Indices = make([]int32, x.Indptr[x.Rows])
	x.Values = make([]float32, x.Indptr[x.Rows])
	rows := []int32{7, 2, 5, 0, 3, 6}
	for _, parts := range []int{1, 3} {
		for _, workers := range []int{1, 2, 3} {
			pool, err := numa.NewPool(topo, workers, numa.Options{})
			if err != nil {
				t.Fatal(err)
			}
			reports := make([]RowReports, workers)
			var dealt []int32 // by worker 0 alone, where there is one
			var b BatchReports
			var got, grouped []byte
			var bytes int
			counts := make([]int, 3)                   // JoinTo's bytes for each of 3 ranks
			decoded := make([][]RoundEntry, len(rows)) // per row, its report decoded by its worker
			pieces := make([]atomic.Int32, len(rows))  // per row, its pieces searched
			var early atomic.Bool                      // a row reported before all its pieces
			err = pool.Together(func(team *numa.Team) error {
				for range 2 { // a second round reuses the memory
					dealt = dealt[:0]
					for q := range pieces {
						pieces[q].Store(0)
					}
					err := b.RunPieces(team, &x, rows, parts,
						func(_ numa.Worker, q, _ int) { pieces[q].Add(1) },
						func(w numa.Worker) *RowReports { return &reports[w.ID] },
						func(w numa.Worker, q int, r *RowReports) {
							if parts > 1 && pieces[q].Load() != int32(parts) {
								early.Store(true)
							}
							if workers == 1 {
								dealt = append(dealt, rows[q])
							}
							start := len(r.Msg)
							for k := range q % 3 { // 0 to 2 entries a row
								r.Msg = AppendEntry(r.Msg, RoundEntry{Row: int32(q), Class: int32(k)})
							}
							decoded[q] = AppendDecoded(decoded[q][:0], r.Msg[start:])
						})
					if err != nil {
						return err
					}
					got, bytes = b.Join(got), b.Bytes()
					grouped = b.JoinTo(grouped, counts, func(q int) int { return (3 - q%3) % 3 })
				}
				return nil
			})
			pool.Close()
			if err != nil {
				t.Fatal(err)
			}
			var want []byte
			for q := range rows {
				for k := range q % 3 {
					want = AppendEntry(want, RoundEntry{Row: int32(q), Class: int32(k)})
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("%d parts, %d workers: the reports are not in row order", parts, workers)
			}
			if message, err := DecodeEntries(want, nil); err != nil || !slices.Equal(slices.Concat(decoded...), message) {
				t.Errorf("%d parts, %d workers: rows decoded %v, want the message's %v (%v)", parts, workers, decoded, message, err)
			}
			// Rows q of q%3 == 0 go to rank 0 with no entries, rows of
			// q%3 == 1 to rank 2 with one, q%3 == 2 to rank 1 with two.
			var wantGrouped []byte
			for _, k := range []int{0, 2, 1} {
				for q := range rows {
					if q%3 == k {
						for c := range k {
							wantGrouped = AppendEntry(wantGrouped, RoundEntry{Row: int32(q), Class: int32(c)})
						}
					}
				}
			}
			if !slices.Equal(grouped, wantGrouped) || !slices.Equal(counts, []int{0, 4 * RoundEntryBytes, 2 * RoundEntryBytes}) {
				t.Errorf("%d parts, %d workers: JoinTo gave %v bytes for the ranks, not each rank's rows in row order", parts, workers, counts)
			}
			if bytes != len(want) {
				t.Errorf("%d parts, %d workers: Bytes %d, want %d", parts, workers, bytes, len(want))
			}
			if workers == 1 && !slices.Equal(dealt, []int32{3, 7, 5, 0, 2, 6}) {
				t.Errorf("%d parts: one worker took the rows %v, want those of more features first", parts, dealt)
			}
			for q := range pieces {
				if n, want := pieces[q].Load(), int32(parts); parts > 1 && n != want {
					t.Errorf("%d parts, %d workers: row %d searched in %d pieces", parts, workers, q, n)
				}
			}
			if early.Load() {
				t.Errorf("%d parts, %d workers: a row reported before all its pieces were searched", parts, workers)
			}
		}
	}
}

// TestRowOrder checks the dealing order: places in the round, the rows
// of more features first, ties in row order, the memory reused.
func TestRowOrder(t *testing.T) {
	// Rows 0-7 of 1, 2, 0, 5, 3, 2, 0 and 4 features.
	x := data.CSR{Rows: 8, Cols: 5, Indptr: []int64{0, 1, 3, 3, 8, 11, 13, 13, 17}}
	tests := []struct {
		rows []int32
		want []int32
	}{
		{nil, []int32{}},
		{[]int32{2}, []int32{0}},
		{[]int32{7, 2, 5, 0, 3, 6}, []int32{4, 0, 2, 3, 1, 5}},
		{[]int32{6, 1, 2, 5}, []int32{1, 3, 0, 2}},
		{[]int32{6, 2}, []int32{0, 1}},
	}
	var o RowOrder
	for _, tt := range tests {
		if got := o.Of(&x, tt.rows); !slices.Equal(got, tt.want) {
			t.Errorf("rows %v dealt as %v, want %v", tt.rows, got, tt.want)
		}
	}
}

// TestRowShares checks that each rank receives, of every rank's entries in
// row order, those of its share of the rows (RowShare), in rank order,
// each rank's behind its common entries where it sends some
// (ExchangeWith); with ranks of no rows, rows of no entries, entries
// before the first row and after the last, and buffers kept over rounds.
func TestRowShares(t *testing.T) {
	const ranks, rows = 4, 3 // one rank takes no row
	shareOf := func(row int32) int {
		for s := range ranks {
			if _, hi := RowShare(rows, s, ranks); int(row) < hi || s == ranks-1 {
				return s
			}
		}
		return -1
	}
	message := func(rank, round int) []byte {
		rng := rand.New(rand.NewPCG(uint64(rank), uint64(round)))
		var msg []byte
		for q := int32(-1); q <= rows; q++ {
			for k := range rng.IntN(3) {
				msg = AppendEntry(msg, RoundEntry{Row: q, Class: int32(100*rank + k), Score: rng.Float64()})
			}
		}
		return msg
	}
	err := mpi.Launch(ranks, mpi.MaxMessage, func(c mpi.Comm) error {
		// Every other round, each rank sends r+1 common entries.
		common := func(rank, round int) []byte {
			var msg []byte
			for k := range (round % 2) * (rank + 1) {
				msg = AppendEntry(msg, RoundEntry{Row: -7, Class: int32(100*rank + k), Kind: 3, Score: float64(round)})
			}
			return msg
		}
		var g RowShares
		for round := range 5 {
			got, err := g.ExchangeWith(c, common(c.Rank(), round), message(c.Rank(), round), rows)
			if err != nil {
				return err
			}
			var want []byte
			for r := range ranks {
				want = append(want, common(r, round)...)
				msg := message(r, round)
				for k := 0; k < len(msg); k += RoundEntryBytes {
					if e := DecodeEntry(msg[k:]); shareOf(e.Row) == c.Rank() {
						want = append(want, msg[k:k+RoundEntryBytes]...)
					}
				}
			}
			if !bytes.Equal(got, want) {
				return fmt.Errorf("rank %d, round %d: got %d bytes, want %d", c.Rank(), round, len(got), len(want))
			}
		}
		if _, err := g.Exchange(c, make([]byte, RoundEntryBytes+1), rows); err == nil {
			return errors.New("a report of a partial entry was sent")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestOutranks checks the order of a row's best class: a higher score
// first, ties to the lower class, never class −1, from a start of class −1
// and score −∞.
func TestOutranks(t *testing.T) {
	start := RoundEntry{Class: -1, Score: math.Inf(-1)}
	for _, tc := range []struct {
		name    string
		e, best RoundEntry
		want    bool
	}{
		{"any class beats the start", RoundEntry{Class: 7, Score: -1e300}, start, true},
		{"a class of score −∞ does not", RoundEntry{Class: 7, Score: math.Inf(-1)}, start, false},
		{"class −1 never", RoundEntry{Class: -1, Score: 5}, RoundEntry{Class: 3, Score: 1}, false},
		{"higher score", RoundEntry{Class: 9, Score: 2}, RoundEntry{Class: 3, Score: 1}, true},
		{"lower score", RoundEntry{Class: 1, Score: 0.5}, RoundEntry{Class: 3, Score: 1}, false},
		{"tie, lower class", RoundEntry{Class: 2, Score: 1}, RoundEntry{Class: 3, Score: 1}, true},
		{"tie, higher class", RoundEntry{Class: 4, Score: 1}, RoundEntry{Class: 3, Score: 1}, false},
	} {
		if got := Outranks(tc.e, tc.best); got != tc.want {
			t.Errorf("%s: Outranks(%v, %v) = %v, want %v", tc.name, tc.e, tc.best, got, tc.want)
		}
	}
}

// TestRowShare checks that the ranks' shares of a round's rows follow one
// another, cover the rows, and that the largest is MaxRowShare.
func TestRowShare(t *testing.T) {
	for rows := range 70 {
		for ranks := 1; ranks <= 17; ranks++ {
			next, most := 0, 0
			for r := range ranks {
				lo, hi := RowShare(rows, r, ranks)
				if lo != next || hi < lo {
					t.Fatalf("%d rows, %d ranks: rank %d takes [%d, %d), want from %d", rows, ranks, r, lo, hi, next)
				}
				next, most = hi, max(most, hi-lo)
			}
			if next != rows || most != MaxRowShare(rows, ranks) {
				t.Errorf("%d rows, %d ranks: shares end at %d, the largest %d; MaxRowShare %d", rows, ranks, next, most, MaxRowShare(rows, ranks))
			}
		}
	}
}
