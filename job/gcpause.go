package job

import (
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// gcPause is how the ranks of a process set Go's garbage collector for a
// stretch of their work, and restore the previous setting (GOGC) once the
// last of them is done:
//
//   - off while a rank builds the data it keeps for the whole run. A
//     collection while the heap grows to that data finds almost nothing to
//     free (a parser's chunks stay live until joined into the matrices), yet
//     each one stops the world: a Bibtex load took about 16. Pausing them cut
//     a 2-rank Bibtex run's load from 0.07 to 0.04-0.05 s (alternating runs,
//     medians of 6 and of 8), peak memory within 2 MiB.
//   - with some headroom while a rank's workers grow one tree together. At
//     xmc's GOGC of 25 a small heap is collected every few MiB that it grows,
//     and each collection stops every pinned worker, whose locked threads
//     then take 0.2-0.4 ms to wake on the development VM: a first Delicious
//     tree, whose heap grows from 12 to 35 MiB, was collected 8 times.
//     The headroom is a floor on how far the heap may grow past the live
//     data before a collection; on a heap far larger than it, GOGC decides.
//
// A memory limit (GOMEMLIMIT) still triggers collections.
type gcPause struct {
	mu      sync.Mutex
	pausing int // ranks between begin and end
	roomy   int // ranks between beginRoom and endRoom
	room    int // the largest GC percentage asked by beginRoom since roomy was 0
	saved   int // the GC percentage to restore
}

// begin pauses the collector; every begin needs its end.
func (g *gcPause) begin() { g.change(1, 0, 0) }

// end resumes the collector once no rank of the process pauses it.
func (g *gcPause) end() { g.change(-1, 0, 0) }

// beginRoom lets the heap grow by at least bytes past the live data before
// a collection; every beginRoom needs its endRoom.
func (g *gcPause) beginRoom(bytes uint64) {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	live := uint64(1)
	if sample[0].Value.Kind() == metrics.KindUint64 {
		live = max(live, sample[0].Value.Uint64())
	}
	g.change(0, 1, int(min(bytes*100/live, 1<<20)))
}

// endRoom ends a beginRoom.
func (g *gcPause) endRoom() { g.change(0, -1, 0) }

// change counts the ranks that pause and that ask for headroom (room, as a
// GC percentage), and sets the collector for them.
func (g *gcPause) change(pausing, roomy, room int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.pausing+g.roomy == 0 {
		g.saved = debug.SetGCPercent(-1) // read; set below
		g.room = 0
	}
	g.pausing += pausing
	g.roomy += roomy
	g.room = max(g.room, room)
	percent := g.saved
	switch {
	case g.saved < 0 || g.pausing > 0:
		percent = -1
	case g.roomy > 0:
		percent = max(g.saved, g.room)
	}
	debug.SetGCPercent(percent)
}
