package forest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	forestmodel "xmc/model/forest"
)

// frontier deals the nodes of a tree to the builders that grow it, each
// node as soon as it has an id. The ids number the nodes breadth-first (the
// tree's layout, and each node's random stream, follow them), so a node's
// children are numbered once the node and every node of a smaller id are
// split: the split nodes are committed in id order, and committing a node
// numbers its children and makes them ready. The builders do not wait for
// a level to end, as they did when the nodes were dealt a level at a time:
// a node's children are split while the rest of its level is, and a level
// of fewer nodes than builders (the root's children) leaves none idle for
// long (docs/scaling/16-core.md, "A tree's nodes dealt as they are
// numbered").
//
// A builder with no node to split helps those that split a large one: it
// takes pieces of their loops (helpLoop), as the crew does at the root. A
// loop is cut in pieces for the builders idle when it starts, if it has
// rows for two pieces of helpRows; below a tree's first levels its nodes
// are too small, and the builders too busy, for that.
//
// The nodes' outputs stay in their builders' buffers until flush appends
// them to the tree, which grow does when no node is being split: at the end
// of the tree, around a node split with the crew's help, and whenever the
// committed nodes hold flushAt entries (flushEntries), so that the buffers
// stay bounded on trees of hundreds of MiB.
type frontier struct {
	tree *forestmodel.Tree
	// helped says the crew has a lead that can split a node with the
	// others' help: dealing then stops when a single node is left to split
	// and no builder is busy.
	helped  bool
	flushAt int
	// builders counts the crew's builders and those that joined it.
	builders atomic.Int32

	mu   sync.Mutex
	cond sync.Cond // signalled when a node is split or dealing stops
	// spans and outs are by node id: the nodes numbered so far, and the
	// outputs of those split (outs[id].b is nil until then).
	spans []span
	outs  []nodeOut
	// The ids below next were dealt, those below committed are split and
	// have their children numbered, and those below flushed are in the
	// tree. pending counts the entries of the committed nodes not yet
	// flushed.
	next, committed, flushed int
	pending                  int
	busy                     int // builders splitting a node
	// waiting counts the builders waiting for a node or a loop to help
	// with; frontierHelp.workers reads it without f.mu.
	waiting atomic.Int32
	stop    bool        // no more nodes are dealt until the next flush
	loops   []*helpLoop // loops of nodes being split, open to help
	// err is set when a builder panicked, and over once the crew stopped
	// growing the tree, grown or not: the builders that joined then leave.
	err  error
	over bool
}

// flushEntries is the number of entries (a split's dimensions and weights,
// a leaf's labels) that the frontier lets its nodes hold in the builders'
// buffers before it stops dealing, to append them to the tree: 24 to 64
// MiB (3 bytes an entry of a split, 5 a dimension, 8 a leaf's label).
const flushEntries = 1 << 23

// newFrontier returns the frontier of tree t, whose root holds n
// instances, grown by a crew of the given number of builders; helped says
// whether the crew has a lead, and flushAt how many entries the split
// nodes may hold before dealing stops for a flush.
func newFrontier(t *forestmodel.Tree, n int32, builders int, helped bool, flushAt int) *frontier {
	f := &frontier{tree: t, helped: helped, flushAt: flushAt, spans: []span{{0, n, 0}}, outs: make([]nodeOut, 1)}
	f.builders.Store(int32(builders))
	f.cond.L = &f.mu
	newNode(t, n)
	return f
}

// grow grows the tree with crew c: it deals the nodes to c's builders, and
// to those that join (join), and appends them to the tree. A node that is
// the only one to split, with the crew free (the root), is split by the
// crew's lead with the others' help. The split nodes are appended to the
// tree whenever they hold flushAt entries, and at the end.
func (f *frontier) grow(c crew) error {
	defer f.end()
	if f.spans[0].hi == 0 {
		return errors.New("no training instances")
	}
	for !f.finished() {
		if b := c.lead(); b != nil && f.alone() {
			b.helpers = c
			id, sp := f.take()
			o := b.node(id, sp)
			b.helpers = nil
			if b.err != nil {
				return b.err
			}
			f.done(id, o)
		} else if err := c.each(c.workers(), func(b *treeBuilder, _ int) { f.work(b, c.waited) }); err != nil {
			return err
		}
		if err := f.failed(); err != nil {
			return err
		}
		if err := f.flush(c); err != nil {
			return err
		}
	}
	t := f.tree
	t.SplitStart = append(t.SplitStart, int64(len(t.SplitDim)))
	t.EntryStart = append(t.EntryStart, int64(len(t.SplitChild)))
	t.LeafStart = append(t.LeafStart, int64(len(t.LeafLabel)))
	return nil
}

// end records that the crew stopped growing the tree, for the builders
// that joined it to leave.
func (f *frontier) end() {
	f.mu.Lock()
	f.over = true
	f.cond.Broadcast()
	f.mu.Unlock()
}

// ended reports whether the crew stopped growing the tree.
func (f *frontier) ended() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.over
}

// failed returns the error of a builder that panicked, if one did.
func (f *frontier) failed() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// join has builder h, which grows no tree of its own, split the tree's
// nodes beside the crew until the crew stops growing it: the tree is the
// same. h's split nodes stay in its buffer until the crew flushes them,
// which it does only while no builder works, so h leaves with the tree
// alone. waited is as work's. It returns the number of nodes h split.
func (f *frontier) join(h *treeBuilder, waited func(time.Duration)) (nodes int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.builders.Add(1)
	for !f.over {
		if f.stop { // until the crew's flush
			start := time.Now()
			f.cond.Wait()
			waited(time.Since(start))
			continue
		}
		f.mu.Unlock()
		nodes += f.work(h, waited)
		f.mu.Lock()
	}
	return nodes
}

// finished reports whether every node is split and in the tree. It and
// alone, take, done and flush are called only while no builder works.
func (f *frontier) finished() bool { return f.flushed == len(f.spans) }

// alone reports whether exactly one node is left to split.
func (f *frontier) alone() bool { return len(f.spans)-f.next == 1 }

// take deals the next node: its id and its instances.
func (f *frontier) take() (int, span) {
	id := f.next
	f.next++
	return id, f.spans[id]
}

// done records node id as split, with output o, and commits the nodes it
// completes; f.mu must be held while builders work.
func (f *frontier) done(id int, o nodeOut) {
	f.outs[id] = o
	t := f.tree
	for f.committed < len(f.spans) && f.outs[f.committed].b != nil {
		id := f.committed
		if o := f.outs[id]; len(o.children) > 0 {
			t.FirstChild[id] = int32(len(f.spans))
			t.NumChildren[id] = int32(len(o.children)) - 1
			for c := 0; c+1 < len(o.children); c++ {
				lo, hi := o.children[c], o.children[c+1]
				f.spans = append(f.spans, span{lo, hi, f.spans[id].depth + 1})
				f.outs = append(f.outs, nodeOut{})
				newNode(t, hi-lo)
			}
		}
		f.pending += f.outs[id].entries()
		f.committed++
	}
}

// work splits nodes on builder b until dealing stops: when no node is left
// to deal and none is being split, when a single node is left for the
// crew to split together, or when the committed nodes hold flushAt
// entries. A builder with no node to take helps split another's, or waits
// for one and reports how long it waited. It returns the number of nodes
// b split.
func (f *frontier) work(b *treeBuilder, waited func(time.Duration)) (nodes int) {
	// The help of the builders idle at each loop's start, if any: builders
	// may join while b splits a node (join).
	help := &frontierHelp{f: f, b: b}
	defer func() {
		// A panic (a bug) stops the dealing, so that no builder waits
		// for a node that will not come; the crew's loop reports it.
		if r := recover(); r != nil {
			f.mu.Lock()
			f.stop = true
			if f.err == nil {
				f.err = fmt.Errorf("a builder of the tree panicked: %v", r)
			}
			f.cond.Broadcast()
			f.mu.Unlock()
			panic(r)
		}
	}()
	for {
		id, sp, loop, ok := f.nextTask(waited)
		switch {
		case !ok:
			return nodes
		case loop != nil:
			loop.run(b)
		default:
			b.helpers = help
			o := b.node(id, sp)
			b.helpers = nil
			f.record(id, o)
			nodes++
		}
	}
}

// nextTask returns what a builder does next: split node id, whose
// instances are sp; help with loop; or nothing (ok false) once dealing
// stops. A builder with neither waits for one, and reports how long.
func (f *frontier) nextTask(waited func(time.Duration)) (id int, sp span, loop *helpLoop, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for !f.stop {
		dealable := f.next < len(f.spans) && f.pending < f.flushAt
		if f.busy == 0 && (!dealable || f.helped && f.alone()) {
			f.stop = true
			f.cond.Broadcast()
			break
		}
		if dealable {
			id, sp = f.take()
			f.busy++
			return id, sp, nil, true
		}
		if loop = f.openLoop(); loop != nil {
			return 0, span{}, loop, true
		}
		f.waiting.Add(1)
		start := time.Now()
		f.cond.Wait()
		waited(time.Since(start))
		f.waiting.Add(-1)
	}
	return 0, span{}, nil, false
}

// record records node id, dealt by nextTask, as split with output o.
func (f *frontier) record(id int, o nodeOut) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.busy--
	f.done(id, o)
	if f.waiting.Load() > 0 {
		f.cond.Broadcast()
	}
}

// flush appends the committed nodes' outputs to the tree, with the crew's
// help, and empties the builders' buffers, once no builder works: every
// node dealt is then committed.
func (f *frontier) flush(c crew) error {
	outs := f.outs[f.flushed:f.committed]
	if err := appendNodes(f.tree, outs, c); err != nil {
		return err
	}
	for _, o := range outs {
		o.b.out.Reset()
		o.b.bounds = o.b.bounds[:0]
	}
	f.mu.Lock()
	f.flushed, f.pending, f.stop = f.committed, 0, false
	f.cond.Broadcast() // for the builders that joined (join)
	f.mu.Unlock()
	return nil
}

// openLoop returns a loop of f.loops with indices left to take, or nil;
// f.mu must be held.
func (f *frontier) openLoop() *helpLoop {
	for _, l := range f.loops {
		if l.next.Load() < l.n {
			return l
		}
	}
	return nil
}

// helpRows is the most rows of a piece of a loop that a frontier's idle
// builders help with, and half the fewest rows of a loop cut in pieces:
// less than a team's routeChunk, since they are idle anyway and take a
// piece by one atomic add, so that the root's children (two thousand rows
// each on the Wiki10-31K shape), which bound a tree beyond 32 workers, are
// shared out too.
const helpRows = 512

// helpLoop is a loop of a node's split that idle builders help with: the
// indices [0, n), each taken by one builder.
type helpLoop struct {
	n          int64
	fn         func(h *treeBuilder, i int)
	next, done atomic.Int64
	finished   chan struct{} // closed once done reaches n
}

// newHelpLoop returns the loop of fn over [0, n), finished at once if n is
// 0.
func newHelpLoop(n int, fn func(h *treeBuilder, i int)) *helpLoop {
	l := &helpLoop{n: int64(n), fn: fn, finished: make(chan struct{})}
	if n == 0 {
		close(l.finished)
	}
	return l
}

// run calls fn for indices of l on builder h until none is left to take,
// and returns how many it took.
func (l *helpLoop) run(h *treeBuilder) (took int) {
	for i := l.next.Add(1) - 1; i < l.n; i = l.next.Add(1) - 1 {
		l.do(h, int(i))
		took++
	}
	return took
}

// do calls fn for index i on h and counts it done, even if fn panics, so
// that the loop's builder does not wait for it forever.
func (l *helpLoop) do(h *treeBuilder, i int) {
	defer func() {
		if l.done.Add(1) == l.n {
			close(l.finished)
		}
	}()
	l.fn(h, i)
}

// frontierHelp is the help that builder b gets from the frontier's idle
// builders with the node it splits (helpers).
type frontierHelp struct {
	f *frontier
	b *treeBuilder
}

// each posts the loop for the frontier's idle builders, takes its share
// on b, and returns once every index is done.
func (h *frontierHelp) each(n int, fn func(*treeBuilder, int)) error {
	if n == 0 {
		return nil
	}
	l := newHelpLoop(n, fn)
	f := h.f
	f.mu.Lock()
	f.loops = append(f.loops, l)
	if f.waiting.Load() > 0 {
		f.cond.Broadcast()
	}
	f.mu.Unlock()
	l.run(h.b)
	<-l.finished
	f.mu.Lock()
	f.loops = slices.DeleteFunc(f.loops, func(o *helpLoop) bool { return o == l })
	f.mu.Unlock()
	return nil
}

// workers counts b and the builders idle at the moment: a loop is cut in
// pieces only for builders free to take them (a builder that splits a
// node in pieces of its own loses what its passes share across the node,
// such as the similarities of a label class, computed once a piece).
func (h *frontierHelp) workers() int { return 1 + int(h.f.waiting.Load()) }

func (h *frontierHelp) piece() int { return helpRows }
