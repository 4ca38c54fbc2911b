package train

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync/atomic"

	"xmc/data"
	"xmc/mpi"
	"xmc/numa"
)

// RoundEntry is what a rank reports, in a round of a multi-class trainer,
// of one of its classes for row q of the round's batch: a score, and a kind
// that the trainer defines. 20 bytes on the wire.
type RoundEntry struct {
	Row, Class int32
	Kind       int32
	Score      float64
}

// RoundEntryBytes is the size of a roundEntry on the wire.
const RoundEntryBytes = 20

// AppendEntry appends e's wire form to b.
func AppendEntry(b []byte, e RoundEntry) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(e.Row))
	b = binary.LittleEndian.AppendUint32(b, uint32(e.Class))
	b = binary.LittleEndian.AppendUint32(b, uint32(e.Kind))
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(e.Score))
}

// DecodeEntries decodes the entries of b into into[:0], ordered by row
// and, within a row, kept in the order of b (rank order), and returns them.
func DecodeEntries(b []byte, into []RoundEntry) ([]RoundEntry, error) {
	return DecodeEntriesOf(b, math.MinInt, math.MaxInt, into)
}

// DecodeEntriesOf is DecodeEntries for the entries of rows lo to hi
// (excluded) alone: those of a rank that solves a share of the rows.
//
// Where every rank decodes every rank's entries each round, that is work
// more ranks do not share. Where the rows are close together (a batch's
// positions, at most a few times the entries), each entry goes straight to
// its place, found by counting the entries of each row first: O(entries +
// rows), without the merges' data-dependent branches. Other rows fall back
// to merging the ranks' runs.
func DecodeEntriesOf(b []byte, lo, hi int, into []RoundEntry) ([]RoundEntry, error) {
	if len(b)%RoundEntryBytes != 0 {
		return nil, fmt.Errorf("reports of %d bytes, not whole %d-byte entries", len(b), RoundEntryBytes)
	}
	rowAt := func(k int) int { return int(int32(binary.LittleEndian.Uint32(b[k*RoundEntryBytes:]))) }
	n, kept := len(b)/RoundEntryBytes, 0
	first, last := math.MaxInt, math.MinInt
	for k := range n {
		if r := rowAt(k); r >= lo && r < hi {
			kept++
			first, last = min(first, r), max(last, r)
		}
	}
	if kept == 0 {
		return into[:0], nil
	}
	rows := last - first + 1
	if rows > 2*kept+countedRows {
		return decodeMerging(b, lo, hi, kept, into), nil
	}
	var small [countedRows + 1]int32 // on the stack for a batch's rows
	next := small[:]
	if rows+1 > len(small) {
		next = make([]int32, rows+1)
	}
	next = next[:rows+1]
	for k := range n {
		if r := rowAt(k); r >= lo && r < hi {
			next[r-first+1]++
		}
	}
	for r := 1; r < len(next); r++ {
		next[r] += next[r-1]
	}
	into = slices.Grow(into[:0], kept)[:kept]
	for k := range n {
		if r := rowAt(k); r >= lo && r < hi {
			into[next[r-first]] = DecodeEntry(b[k*RoundEntryBytes:])
			next[r-first]++
		}
	}
	return into, nil
}

// countedRows is the rows that DecodeEntries counts on the stack, and the
// rows beyond twice the entries that it still counts rather than merges.
const countedRows = 256

// AppendDecoded appends to into the entries of b, whole entries one after
// another, in their order: a row's report where the rank that wrote it
// reads it back.
func AppendDecoded(into []RoundEntry, b []byte) []RoundEntry {
	for k := 0; k+RoundEntryBytes <= len(b); k += RoundEntryBytes {
		into = append(into, DecodeEntry(b[k:]))
	}
	return into
}

// DecodeEntry decodes the entry that AppendEntry wrote at the start of e.
func DecodeEntry(e []byte) RoundEntry {
	return RoundEntry{Row: int32(binary.LittleEndian.Uint32(e)),
		Class: int32(binary.LittleEndian.Uint32(e[4:])), Kind: int32(binary.LittleEndian.Uint32(e[8:])),
		Score: math.Float64frombits(binary.LittleEndian.Uint64(e[12:]))}
}

// decodeMerging is DecodeEntriesOf for rows far apart: the kept entries
// of rows lo to hi decoded in the order of b, then its runs of increasing
// rows (a rank's) merged.
func decodeMerging(b []byte, lo, hi, kept int, into []RoundEntry) []RoundEntry {
	// The upper half is the merges' scratch.
	into = slices.Grow(into[:0], 2*kept)[:0]
	var runs []int // where each run of rows in increasing order starts
	for k := 0; k < len(b); k += RoundEntryBytes {
		e := DecodeEntry(b[k:])
		if int(e.Row) < lo || int(e.Row) >= hi {
			continue
		}
		if len(into) == 0 || e.Row < into[len(into)-1].Row {
			runs = append(runs, len(into))
		}
		into = append(into, e)
	}
	return mergeRuns(into, into[kept:2*kept], append(runs, kept))
}

// mergeRuns orders entries by row, stably, given the bounds of its runs of
// rows in increasing order (every rank reports its rows in order, so the
// runs are at most the ranks): adjacent runs are merged pairwise into
// scratch, of the same length, and back, O(n log runs), where a stable
// sort of the whole, which every rank makes, cost O(n log² n).
func mergeRuns(entries, scratch []RoundEntry, bounds []int) []RoundEntry {
	src, dst := entries, scratch
	for len(bounds) > 2 {
		// The merged runs' bounds overwrite bounds in place: the r/2-th is
		// written once the r-th and later are read.
		next := bounds[:0]
		for r := 0; r+1 < len(bounds); r += 2 {
			lo, mid, hi := bounds[r], bounds[r+1], bounds[min(r+2, len(bounds)-1)]
			next = append(next, lo)
			i, j, k := lo, mid, lo
			for i < mid && j < hi {
				if src[j].Row < src[i].Row {
					dst[k], j = src[j], j+1
				} else {
					dst[k], i = src[i], i+1
				}
				k++
			}
			k += copy(dst[k:], src[i:mid])
			copy(dst[k:], src[j:hi])
		}
		last := bounds[len(bounds)-1]
		bounds = append(next, last)
		src, dst = dst, src
	}
	if len(entries) > 0 && &src[0] != &entries[0] {
		copy(entries, src)
	}
	return entries
}

// Outranks reports whether entry e comes before best as a row's best
// class: a class (not −1) of a higher score, ties to the lower class. A
// best of class −1 and score −∞ starts the search.
func Outranks(e, best RoundEntry) bool {
	return e.Class >= 0 && (e.Score > best.Score || (e.Score == best.Score && e.Class < best.Class))
}

// CountRows returns how many rows of entries, over all ranks of c (each
// passing the entries of its share of the rows), hit holds for: each rank
// counts its own and an all-reduce sums them.
func CountRows(c mpi.Comm, entries []RoundEntry, hit func(q int32, rowEntries []RoundEntry) bool) (int, error) {
	n := []int64{0}
	err := ForEachRow(entries, func(q int32, rowEntries []RoundEntry) error {
		if hit(q, rowEntries) {
			n[0]++
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if err := c.AllreduceInt64(n, mpi.Sum); err != nil {
		return 0, err
	}
	return int(n[0]), nil
}

// ForEachRow calls f with the entries of each row, in row order.
func ForEachRow(entries []RoundEntry, f func(q int32, rowEntries []RoundEntry) error) error {
	for lo := 0; lo < len(entries); {
		hi := lo
		for hi < len(entries) && entries[hi].Row == entries[lo].Row {
			hi++
		}
		if err := f(entries[lo].Row, entries[lo:hi]); err != nil {
			return err
		}
		lo = hi
	}
	return nil
}

// AllGather gives every rank the messages of all ranks, one after another
// in rank order, by one Allgatherv: a round's exchange is one collective
// (two under MPI, the lengths then the bytes) where a gather to rank 0 and
// its broadcast were two (four). It keeps its buffer from round to round,
// so that rounds leave no garbage behind; the result is valid until the
// next call.
type AllGather struct {
	all []byte
}

// Exchange gives every rank of c the messages msg of all ranks, one after
// another in rank order; the result is valid until the next call.
func (g *AllGather) Exchange(c mpi.Comm, msg []byte) ([]byte, error) {
	parts, err := c.Allgatherv(msg, g.all[:0])
	if err != nil {
		return nil, err
	}
	return joinParts(&g.all, parts), nil
}

// joinParts returns the parts, received into *all where its capacity held
// them all, one after another in *all, moving them there where they are
// not.
func joinParts(all *[]byte, parts [][]byte) []byte {
	total := 0
	for _, p := range parts {
		total += len(p)
	}
	if total <= cap(*all) {
		return (*all)[:total] // the parts lie there, one after another
	}
	*all = slices.Grow((*all)[:0], total)
	for _, p := range parts {
		*all = append(*all, p...)
	}
	return *all
}

// RowShare returns the rows, by place in a round of rows rows, that rank
// takes of ranks ranks: a share each, in rank order, so that what the
// ranks find of their shares, gathered in rank order, comes in row order.
func RowShare(rows, rank, ranks int) (lo, hi int) {
	return rows * rank / ranks, rows * (rank + 1) / ranks
}

// MaxRowShare is the most rows RowShare gives a rank of ranks ranks in a
// round of rows rows.
func MaxRowShare(rows, ranks int) int { return (rows + ranks - 1) / ranks }

// RowShares gives every rank, of a round's entries that every rank
// reports, those of its share of the round's rows (RowShare). By one
// Alltoallv, each rank receives the entries of its rows alone, where an
// AllGather brings every rank's every entry: at P ranks, about 1/P of the
// bytes, and of the decoding. It keeps its buffers from round to round;
// the result is valid until the next call.
type RowShares struct {
	parts  AllToAll
	counts []int
	joined []byte // common and each rank's share, rank after rank
}

// Exchange sends each rank the entries of msg, whole entries in row order
// of a round of rows rows, of its share of the rows, and returns what
// every rank sent this one, one rank after another in rank order.
func (g *RowShares) Exchange(c mpi.Comm, msg []byte, rows int) ([]byte, error) {
	return g.ExchangeWith(c, nil, msg, rows)
}

// ExchangeWith is Exchange where every rank also receives common, whole
// entries, ahead of its share of msg: what every rank must know of the
// round, sent with the reports rather than by a collective of its own.
// The rows of common's entries must lie outside the round's, so that
// DecodeEntriesOf leaves them out of any share.
func (g *RowShares) ExchangeWith(c mpi.Comm, common, msg []byte, rows int) ([]byte, error) {
	if len(msg)%RoundEntryBytes != 0 || len(common)%RoundEntryBytes != 0 {
		return nil, fmt.Errorf("reports of %d and %d bytes, not whole %d-byte entries", len(common), len(msg), RoundEntryBytes)
	}
	n := len(msg) / RoundEntryBytes
	rowAt := func(k int) int { return int(int32(binary.LittleEndian.Uint32(msg[k*RoundEntryBytes:]))) }
	g.counts = slices.Grow(g.counts[:0], c.Size())[:c.Size()]
	start := 0 // the first entry of rank s's rows
	for s := range g.counts {
		end := n // the last rank's, and any beyond the round's rows
		if s+1 < c.Size() {
			next, _ := RowShare(rows, s+1, c.Size())
			end = start + sort.Search(n-start, func(k int) bool { return rowAt(start+k) >= next })
		}
		g.counts[s], start = (end-start)*RoundEntryBytes, end
	}
	if len(common) > 0 {
		g.joined = slices.Grow(g.joined[:0], c.Size()*len(common)+len(msg))
		at := 0
		for s, n := range g.counts {
			g.joined = append(append(g.joined, common...), msg[at:at+n]...)
			g.counts[s], at = len(common)+n, at+n
		}
		msg = g.joined
	}
	return g.parts.Exchange(c, msg, g.counts)
}

// AllToAll sends each rank its part of a message and receives every rank's
// part for this one, by one Alltoallv. It keeps its buffer from round to
// round, so that rounds leave no garbage behind; the result is valid until
// the next call.
type AllToAll struct {
	all []byte
}

// Exchange sends rank s the counts[s] bytes of msg that follow those of
// the ranks before it, and returns what every rank sent this one, one rank
// after another in rank order.
func (g *AllToAll) Exchange(c mpi.Comm, msg []byte, counts []int) ([]byte, error) {
	parts, err := c.Alltoallv(msg, counts, g.all[:0])
	if err != nil {
		return nil, err
	}
	return joinParts(&g.all, parts), nil
}

// RowOrder is the order in which a round's workers take its rows: the
// rows of more features first (ties in row order), a row's features being
// the cheapest guide to the cost of searching it, so that a long row taken
// last does not leave the other workers of a large team waiting for it
// (docs/scaling/16-core.md deals measured search times in simulation). It
// keeps its memory from round to round.
type RowOrder struct {
	keys  []uint64
	order []int32
}

// Of returns the places q in rows of a round's rows in the order they are
// dealt, valid until the next call. It sorts integer keys, the complement
// of a row's features above its place, once: a stable sort with a
// comparison function was a sixth of what a PD-Sparse round did outside
// its parallel loops (docs/journal.md).
func (o *RowOrder) Of(x *data.CSR, rows []int32) []int32 {
	o.keys = o.keys[:0]
	for q, i := range rows {
		nnz := uint32(min(x.Indptr[i+1]-x.Indptr[i], math.MaxUint32))
		o.keys = append(o.keys, uint64(math.MaxUint32-nnz)<<32|uint64(q))
	}
	slices.Sort(o.keys)
	o.order = o.order[:0]
	for _, k := range o.keys {
		o.order = append(o.order, int32(uint32(k)))
	}
	return o.order
}

// RowReports is what a worker reported of the rows it searched in a round:
// the bytes of each row's entries, one row after another.
type RowReports struct {
	Msg   []byte // the entries of the rows this worker searched
	ends  []int  // per row searched, the end of its entries in msg
	round int    // the run of batchReports they belong to
}

// BatchReports has a rank's workers report on a round's rows at once,
// and joins their reports in row order; it keeps its memory from round to
// round.
type BatchReports struct {
	pieces []reportPiece // per row of the round, where its report lies
	order  RowOrder      // the rows in the order they are dealt
	round  int           // runs so far
	left   []piecesLeft  // per row of the round, its pieces not yet done (RunPieces)
	starts []int         // JoinTo's scratch
}

// piecesLeft counts a row's pieces not yet done, alone in its cache line:
// the workers count down the pieces of different rows at once.
type piecesLeft struct {
	n atomic.Int32
	_ [60]byte
}

// reportPiece is where a row left its report: from row number first of
// worker reports r.
type reportPiece struct {
	r     *RowReports
	first int
}

// Looper runs a parallel loop over [0, n) in chunks of chunk: a
// numa.Team's For, or a loop with more work after it (numa.Team.ForThen).
type Looper interface {
	For(n, chunk int, fn func(w numa.Worker, lo, hi int)) error
}

// Run has the workers of loop take the rows of a round, rows[q] for q in
// [0, len(rows)), one at a time, in RowOrder, and call report for each,
// which appends the row's entries to the worker's reports (reports(w)).
// Join then gives every row's entries in row order.
func (b *BatchReports) Run(loop Looper, x *data.CSR, rows []int32, reports func(numa.Worker) *RowReports,
	report func(w numa.Worker, q int, r *RowReports)) error {
	return b.RunPieces(loop, x, rows, 1, nil, reports, report)
}

// RunPieces is Run for rows searched in parts pieces each, so that a round
// of few rows keeps many workers busy: the workers take the pieces (q, p),
// p in [0, parts), the rows in RowOrder and a row's pieces in turn, and call
// piece(w, q, p) for each; the worker that finishes a row's last piece then
// calls report for the row, which joins what its pieces found. With parts
// 1, piece is not called.
func (b *BatchReports) RunPieces(loop Looper, x *data.CSR, rows []int32, parts int,
	piece func(w numa.Worker, q, p int), reports func(numa.Worker) *RowReports,
	report func(w numa.Worker, q int, r *RowReports)) error {
	n := len(rows)
	b.pieces = slices.Grow(b.pieces[:0], n)[:n]
	order := b.order.Of(x, rows)
	b.round++
	finish := func(w numa.Worker, q int) {
		r := reports(w)
		if r.round != b.round { // the worker's first row of this run
			r.Msg, r.ends, r.round = r.Msg[:0], r.ends[:0], b.round
		}
		b.pieces[q] = reportPiece{r: r, first: len(r.ends)}
		report(w, q, r)
		r.ends = append(r.ends, len(r.Msg))
	}
	if parts <= 1 {
		return loop.For(n, 1, func(w numa.Worker, k, _ int) { finish(w, int(order[k])) })
	}
	if cap(b.left) < n {
		b.left = make([]piecesLeft, n)
	}
	left := b.left[:n]
	for q := range left {
		left[q].n.Store(int32(parts))
	}
	return loop.For(n*parts, 1, func(w numa.Worker, k, _ int) {
		q := int(order[k/parts])
		piece(w, q, k%parts)
		if left[q].n.Add(-1) == 0 {
			finish(w, q)
		}
	})
}

// Join returns the entries of every row of the last run, in row order, in
// dst[:0]: the rank's message to the others.
func (b *BatchReports) Join(dst []byte) []byte {
	dst = dst[:0]
	for q := range b.pieces {
		dst = append(dst, b.report(q)...)
	}
	return dst
}

// JoinTo returns the entries of every row of the last run in dst[:0],
// those of the rows for rank 0 first, then those for rank 1, and so on,
// each rank's in row order: rank(q) is the rank that row q's entries go
// to, in [0, len(counts)). It sets counts[s] to the bytes for rank s: the
// rank's message to the others by an Alltoallv, where each row has a rank
// of its own to take it.
func (b *BatchReports) JoinTo(dst []byte, counts []int, rank func(q int) int) []byte {
	clear(counts)
	for q := range b.pieces {
		counts[rank(q)] += len(b.report(q))
	}
	// where each rank's entries start, then the end
	at := slices.Grow(b.starts[:0], len(counts)+1)[:len(counts)+1]
	b.starts = at
	at[0] = 0
	for s, n := range counts {
		at[s+1] = at[s] + n
	}
	dst = slices.Grow(dst[:0], at[len(counts)])[:at[len(counts)]]
	for q := range b.pieces {
		s := rank(q)
		at[s] += copy(dst[at[s]:], b.report(q))
	}
	return dst
}

// Bytes returns the bytes of every row's entries in the last run.
func (b *BatchReports) Bytes() int {
	n := 0
	for q := range b.pieces {
		n += len(b.report(q))
	}
	return n
}

// report returns the bytes row q of the last run reported.
func (b *BatchReports) report(q int) []byte {
	pc := b.pieces[q]
	start := 0
	if pc.first > 0 {
		start = pc.r.ends[pc.first-1]
	}
	return pc.r.Msg[start:pc.r.ends[pc.first]]
}
