package train

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"xmc/mpi"
	"xmc/numa"
)

// roundEntry is what a rank reports, in a round of a multi-class trainer,
// of one of its classes for row q of the round's batch: a score, and a kind
// that the trainer defines. 20 bytes on the wire.
type roundEntry struct {
	q, class int32
	kind     int32
	score    float64
}

// roundEntryBytes is the size of a roundEntry on the wire.
const roundEntryBytes = 20

// appendEntry appends e's wire form to b.
func appendEntry(b []byte, e roundEntry) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(e.q))
	b = binary.LittleEndian.AppendUint32(b, uint32(e.class))
	b = binary.LittleEndian.AppendUint32(b, uint32(e.kind))
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(e.score))
}

// decodeEntries decodes the entries of b into into[:0], ordered by row
// and, within a row, kept in the order of b (rank order), and returns them.
func decodeEntries(b []byte, into []roundEntry) ([]roundEntry, error) {
	if len(b)%roundEntryBytes != 0 {
		return nil, fmt.Errorf("reports of %d bytes, not whole %d-byte entries", len(b), roundEntryBytes)
	}
	into = into[:0]
	for ; len(b) > 0; b = b[roundEntryBytes:] {
		into = append(into, roundEntry{q: int32(binary.LittleEndian.Uint32(b)),
			class: int32(binary.LittleEndian.Uint32(b[4:])), kind: int32(binary.LittleEndian.Uint32(b[8:])),
			score: math.Float64frombits(binary.LittleEndian.Uint64(b[12:]))})
	}
	slices.SortStableFunc(into, func(a, b roundEntry) int { return cmp.Compare(a.q, b.q) })
	return into, nil
}

// forEachRow calls f with the entries of each row, in row order.
func forEachRow(entries []roundEntry, f func(q int32, rowEntries []roundEntry) error) error {
	for lo := 0; lo < len(entries); {
		hi := lo
		for hi < len(entries) && entries[hi].q == entries[lo].q {
			hi++
		}
		if err := f(entries[lo].q, entries[lo:hi]); err != nil {
			return err
		}
		lo = hi
	}
	return nil
}

// allGather gives every rank the messages of all ranks, one after another
// in rank order: rank 0 gathers them and broadcasts the whole. It keeps its
// buffers from round to round, so that rounds leave no garbage behind; the
// result is valid until the next call.
type allGather struct {
	into, all []byte
}

func (g *allGather) exchange(c mpi.Comm, msg []byte) ([]byte, error) {
	parts, err := c.Gatherv(msg, 0, g.into)
	if err != nil {
		return nil, err
	}
	if c.Rank() == 0 {
		g.all = g.all[:0]
		for _, p := range parts {
			g.all = append(g.all, p...)
		}
		if len(parts) > 0 && len(parts[0]) > 0 {
			g.into = parts[0][:0:cap(parts[0])]
		}
	}
	return c.Bcast(g.all, 0)
}

// rowReports is what a worker reported of the rows it searched in a round:
// the bytes of each row's entries, one row after another.
type rowReports struct {
	msg   []byte // the entries of the rows this worker searched
	ends  []int  // per row searched, the end of its entries in msg
	round int    // the run of batchReports they belong to
}

// batchReports has a rank's workers report on a round's rows at once and
// joins their reports in row order; it keeps its memory from round to
// round.
type batchReports struct {
	pieces []reportPiece
	round  int // runs so far
}

// reportPiece is where the rows of a piece left their entries: from row
// number first of worker reports r.
type reportPiece struct {
	r     *rowReports
	first int
}

// run has the pool's workers (or the caller, for a pool of one: see
// numa.Options.InlineSingle) take pieces of piece rows of [0, n) in turn
// and call report for each row of a piece, which appends the row's entries
// to the worker's reports (reports(w)); it returns every row's entries, in
// row order, in dst[:0].
func (b *batchReports) run(pool *numa.Pool, n, piece int, reports func(numa.Worker) *rowReports,
	report func(w numa.Worker, q int, r *rowReports), dst []byte) ([]byte, error) {
	count := (n + piece - 1) / piece
	b.pieces = slices.Grow(b.pieces[:0], count)[:count]
	b.round++
	err := pool.For(count, 1, func(w numa.Worker, k, _ int) {
		r := reports(w)
		if r.round != b.round { // the worker's first piece of this run
			r.msg, r.ends, r.round = r.msg[:0], r.ends[:0], b.round
		}
		b.pieces[k] = reportPiece{r: r, first: len(r.ends)}
		for q := k * piece; q < min((k+1)*piece, n); q++ {
			report(w, q, r)
			r.ends = append(r.ends, len(r.msg))
		}
	})
	if err != nil {
		return dst, err
	}
	dst = dst[:0]
	for k, pc := range b.pieces {
		rows := min(piece, n-k*piece)
		start := 0
		if pc.first > 0 {
			start = pc.r.ends[pc.first-1]
		}
		dst = append(dst, pc.r.msg[start:pc.r.ends[pc.first+rows-1]]...)
	}
	return dst, nil
}
