package forest

import (
	"sync"
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
// long (docs/scaling/16-core.md, "A forest grown together on 16 workers").
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
	busy, waiting            int  // builders splitting a node, waiting for one
	stop                     bool // no more nodes are dealt until the next flush
}

// flushEntries is the number of entries (a split's dimensions and weights,
// a leaf's labels) that the frontier lets its nodes hold in the builders'
// buffers before it stops dealing, to append them to the tree: about 64
// MiB.
const flushEntries = 1 << 23

// newFrontier returns the frontier of tree t, whose root holds n
// instances; helped says whether the crew that grows it has a lead, and
// flushAt how many entries the split nodes may hold before dealing stops
// for a flush.
func newFrontier(t *forestmodel.Tree, n int32, helped bool, flushAt int) *frontier {
	f := &frontier{tree: t, helped: helped, flushAt: flushAt, spans: []span{{0, n, 0}}, outs: make([]nodeOut, 1)}
	f.cond.L = &f.mu
	newNode(t, n)
	return f
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
// entries. A builder with no node to take waits for one, and reports how
// long it waited.
func (f *frontier) work(b *treeBuilder, waited func(time.Duration)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for !f.stop {
		dealable := f.next < len(f.spans) && f.pending < f.flushAt
		if f.busy == 0 && (!dealable || f.helped && f.alone()) {
			f.stop = true
			f.cond.Broadcast()
			break
		}
		if !dealable {
			f.waiting++
			start := time.Now()
			f.cond.Wait()
			waited(time.Since(start))
			f.waiting--
			continue
		}
		id, sp := f.take()
		f.busy++
		f.mu.Unlock()
		o := b.node(id, sp)
		f.mu.Lock()
		f.busy--
		f.done(id, o)
		if f.waiting > 0 {
			f.cond.Broadcast()
		}
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
	f.flushed, f.pending, f.stop = f.committed, 0, false
	return nil
}
