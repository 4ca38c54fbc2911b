package forest

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"xmc/data"
	forestmodel "xmc/model/forest"
	"xmc/numa"
)

// grower trains the trees of a forest; TrainTree is safe for
// concurrent use by different workers, and TrainTreeTogether grows a tree
// with every worker of the pool.
type grower struct {
	Params  Params
	Data    *numa.Replicas[*trainingData]
	pool    *numa.Pool
	scratch *numa.PerWorker[*forestScratch]
	// What the workers growing a tree together share: per NUMA domain the
	// rows under the tree's projections, made by the domain's first worker
	// to need them, and the instance ids the nodes partition.
	teamRows     []*treeRows
	teamRowsOnce []sync.Once
	teamIDs      []int32
	teamSpare    *forestmodel.Tree // the last tree grown together, whose slices the next reuses
	teamEncoded  encodedTrees
	// flushAt is the number of entries a tree's split nodes may hold in
	// their builders' buffers before they are appended to the tree
	// (flushEntries; tests use less).
	flushAt int
	// growing holds the trees that workers grow alone, open to the
	// workers that have none left to grow (Help), and starting counts
	// those whose workers are filling their projections' tables, to be
	// open next; grown is signalled when one opens.
	growMu   sync.Mutex
	grown    sync.Cond
	growing  []*aloneTree
	starting int
	// helpedNodes and helpedChunks count the nodes split and the chunks
	// of rows projected by workers helping (Help).
	helpedNodes, helpedChunks atomic.Int64
}

// aloneTree is a tree that a worker grows alone, as the workers that help
// it see it: its number, frontier, the owner's rows and instance ids, and
// the loop that projects the rows, which the helpers share with the owner
// before they split nodes.
type aloneTree struct {
	t       int
	f       *frontier
	rows    *treeRows
	ids     []int32
	project *helpLoop
	// projectErr is the panic of a builder's projection, for the owner
	// to return.
	projectErr atomic.Pointer[error]
}

// projected has builder b, the owner's or a helper's, project chunks of
// the tree's rows (see treeBuilder.projectChunk) until none is left to
// take, then wait for those that others took, recording the wait with
// waited: no builder splits a node before every row is projected. It
// returns the number of chunks b projected, and the error of a builder
// whose projection panicked; b's own panic goes on up its goroutine, after
// the others have it.
func (at *aloneTree) projected(b *treeBuilder, waited func(time.Duration)) (chunks int, err error) {
	func() {
		defer func() {
			if r := recover(); r != nil {
				perr := fmt.Errorf("projecting the rows of tree %d: panic: %v", at.t, r)
				at.projectErr.CompareAndSwap(nil, &perr)
				panic(r)
			}
		}()
		chunks = at.project.run(b)
	}()
	start := time.Now()
	<-at.project.finished
	waited(time.Since(start))
	if err := at.projectErr.Load(); err != nil {
		return chunks, *err
	}
	return chunks, nil
}

// newGrower prepares a trainer for params (resolved) over the data
// replicas, for the workers of pool.
func newGrower(p Params, replicas *numa.Replicas[*trainingData], pool *numa.Pool) *grower {
	f := &grower{Params: p, Data: replicas, pool: pool,
		scratch:      numa.NewPerWorker(pool, func(w numa.Worker) *forestScratch { return newForestScratch(replicas.Get(w.Domain), p) }),
		teamRows:     make([]*treeRows, replicas.Len()),
		teamRowsOnce: make([]sync.Once, replicas.Len()), flushAt: flushEntries}
	f.grown.L = &f.growMu
	return f
}

// treeSeed derives the seed of tree t from the forest seed alone, so a tree
// is the same whichever rank or worker trains it.
func treeSeed(seed uint64, t int) uint64 {
	return data.SplitMix64(seed ^ data.SplitMix64(uint64(t)+0x9e3779b97f4a7c15))
}

// nodeSeed derives the random stream of node id of the tree of the given
// seed, so that a node draws the same numbers whichever worker splits it.
func nodeSeed(seed uint64, id int) (uint64, uint64) {
	return seed, data.SplitMix64(seed ^ data.SplitMix64(uint64(id)+0x632be59bd9b4e019))
}

// Work is the WorkFunc of a forest: it trains tree unit and encodes it.
// The tree's slices are then kept for the worker's next tree, which saves
// regrowing them.
func (f *grower) Work(w numa.Worker, unit int) ([]byte, error) {
	t, err := f.TrainTree(w, unit)
	if err != nil {
		return nil, err
	}
	s := f.scratch.Get(w)
	s.spare = t
	return s.encoded.add(t, nil)
}

// WorkTogether is the TeamFunc of a forest of fewer trees than workers: it
// grows tree unit with every worker of the pool and encodes it. The bytes
// are those of Work.
func (f *grower) WorkTogether(unit int) ([]byte, error) {
	var enc []byte
	err := f.pool.Together(func(team *numa.Team) error {
		t, err := f.growTogether(team, unit)
		if err != nil {
			return err
		}
		f.teamSpare = t
		// The team encodes the tree too: alone, the lead took 7% of the
		// training of a Wiki10-31K-shaped forest to encode its trees.
		enc, err = f.teamEncoded.add(t, func(n int, fn func(i int)) error {
			return team.For(n, 1, func(_ numa.Worker, i, _ int) { fn(i) })
		})
		return err
	})
	return enc, err
}

// projection returns the projection of cols columns into dim buckets with
// the given seeds: the identity (with random signs) when there are buckets
// enough for every column.
func projection(dim, cols int, bucketSeed, signSeed uint64) forestmodel.Projection {
	if dim >= cols {
		return forestmodel.Projection{Dim: int32(max(cols, 1)), Identity: true, BucketSeed: uint32(bucketSeed), SignSeed: uint32(signSeed)}
	}
	return forestmodel.Projection{Dim: int32(dim), BucketSeed: uint32(bucketSeed), SignSeed: uint32(signSeed)}
}

// encodedTrees holds a worker's encoded trees, back to back in large blocks
// (numa.LargeBytes) that are never reused: the trees are the rank's results
// and live until the model is written. Fresh memory for each encoding was a
// quarter of a tree's training time on the development VM (first-touch page
// faults; MarshalBinary was 0.18 of 0.64 s of a rank's 25 Bibtex trees).
type encodedTrees struct {
	block []byte // the current block; its spare capacity is free
}

// encodedBlockBytes is the least size of a block of encodedTrees: 16 MiB is
// 8 huge pages, and a fraction of a rank's trees (25 Bibtex trees encode
// to 26 MiB).
const encodedBlockBytes = 16 << 20

// add encodes t after the trees of the current block, or in a new block
// when the current one has less room than t can take, and returns its
// encoding (capacity capped, so appending to it cannot overwrite the next).
// loop, if not nil, encodes the tree's pieces (see AppendBinaryWith).
func (e *encodedTrees) add(t *forestmodel.Tree, loop func(n int, fn func(i int)) error) ([]byte, error) {
	if need := t.MaxEncodedSize(); cap(e.block)-len(e.block) < need {
		e.block = numa.LargeBytes(max(encodedBlockBytes, need))[:0]
	}
	start := len(e.block)
	var b []byte
	var err error
	if loop == nil {
		b, err = t.AppendBinary(e.block)
	} else {
		b, err = t.AppendBinaryWith(e.block, loop)
	}
	if err != nil {
		return nil, err
	}
	e.block = b
	return b[start:len(b):len(b)], nil
}

// TrainTree trains tree number t on worker w alone, reading w's domain
// replica.
func (f *grower) TrainTree(w numa.Worker, t int) (*forestmodel.Tree, error) {
	f.growMu.Lock()
	f.starting++
	f.growMu.Unlock()
	var at *aloneTree // the tree, once open to help
	defer func() {
		f.growMu.Lock()
		if at == nil {
			f.starting--
			f.grown.Broadcast()
		} else {
			f.growing = slices.DeleteFunc(f.growing, func(o *aloneTree) bool { return o == at })
		}
		f.growMu.Unlock()
	}()
	s := f.scratch.Get(w)
	if s.rows == nil {
		d := f.Data.Get(w.Domain)
		s.rows, s.ids = newTreeRows(d), make([]int32, d.X.Rows)
	}
	tree := &forestmodel.Tree{}
	if s.spare != nil {
		tree, s.spare = s.spare, nil
		tree.Reset()
	}
	b := &s.builder
	b.start(f, w, s.rows, s.ids, t)
	firstIDs(s.ids)
	c := soloCrew{b: b, pool: f.pool}
	b.fillTables()
	tree.X, tree.Y = b.x, b.y
	// The tree opens to help before its rows are projected: the workers
	// that help it (Help) share the projection, which held them idle
	// where a rank has fewer trees than workers.
	f.growMu.Lock()
	at = &aloneTree{t: t, f: newFrontier(tree, int32(b.d.X.Rows), 1, false, f.flushAt), rows: s.rows, ids: s.ids,
		project: newHelpLoop(projectChunks(b.d), func(h *treeBuilder, i int) { h.projectChunk(i) })}
	f.growing = append(f.growing, at)
	f.starting--
	f.grown.Broadcast()
	f.growMu.Unlock()
	if _, err := at.projected(b, f.pool.Waited); err != nil {
		at.f.end()
		return nil, err
	}
	return tree, at.f.grow(c)
}

// Help is the runner.Plan.Help of a forest grown a tree per worker: worker
// w, with no tree of its own left to grow, helps project the rows and split
// the nodes of the trees that other workers still grow, one tree at a
// time, the one with the fewest builders first, until none is left, so
// that the last trees of a rank do not hold up its other workers. The
// trees are the same bytes. w reads the rows of a tree it helps where
// their owner made them, in the owner's NUMA domain.
//
// A tree taken by its worker an instant before w found none left, and not
// yet counted as starting, goes without w's help: the window is the
// runner's hand-off of a unit, against a tree's time.
func (f *grower) Help(w numa.Worker) error {
	for {
		at := f.toHelp()
		if at == nil {
			return nil
		}
		b := &f.scratch.Get(w).builder
		b.start(f, w, at.rows, at.ids, at.t)
		chunks, err := at.projected(b, f.pool.Waited)
		f.helpedChunks.Add(int64(chunks))
		if err != nil {
			return err
		}
		f.helpedNodes.Add(int64(at.f.join(b, f.pool.Waited)))
	}
}

// toHelp returns the tree grown alone with the fewest builders, of those
// still growing, waiting for those that start; nil once none is left.
func (f *grower) toHelp() *aloneTree {
	f.growMu.Lock()
	defer f.growMu.Unlock()
	for {
		var best *aloneTree
		for _, at := range f.growing {
			if !at.f.ended() && (best == nil || at.f.builders.Load() < best.f.builders.Load()) {
				best = at
			}
		}
		if best != nil || f.starting == 0 {
			return best
		}
		start := time.Now()
		f.grown.Wait()
		f.pool.Waited(time.Since(start))
	}
}

// TrainTreeTogether trains tree number t with every worker of the pool:
// the workers of a NUMA domain share the rows under the tree's projections
// (one copy per domain, not per worker), and each node is split, as soon
// as it is numbered, by whichever worker is free (see frontier). The tree
// is the one TrainTree grows. Calls must not overlap, nor run beside Work
// or TrainTree: they use every worker.
func (f *grower) TrainTreeTogether(t int) (*forestmodel.Tree, error) {
	var tree *forestmodel.Tree
	// The first worker leads, taking its share of every parallel loop
	// at once, while the others spin for the next (see numa.Team).
	err := f.pool.Together(func(team *numa.Team) error {
		var err error
		tree, err = f.growTogether(team, t)
		return err
	})
	return tree, err
}

// growTogether is TrainTreeTogether, led by the team's lead.
func (f *grower) growTogether(team *numa.Team, t int) (*forestmodel.Tree, error) {
	if f.teamIDs == nil {
		f.teamIDs = make([]int32, f.Data.Get(0).X.Rows)
	}
	c := &teamCrew{team: team, domains: f.pool.Domains(), started: make([]*treeBuilder, len(f.pool.Workers())), builder: func(w numa.Worker) *treeBuilder {
		f.teamRowsOnce[w.Domain].Do(func() { f.teamRows[w.Domain] = newTreeRows(f.Data.Get(w.Domain)) })
		b := &f.scratch.Get(w).builder
		b.start(f, w, f.teamRows[w.Domain], f.teamIDs, t)
		return b
	}}
	if err := c.eachDomain(1, func(b *treeBuilder, _ int) { b.fillTables() }); err != nil {
		return nil, err
	}
	d := f.Data.Get(0)
	if err := c.eachDomain(projectChunks(d), func(b *treeBuilder, i int) { b.projectChunk(i) }); err != nil {
		return nil, err
	}
	firstIDs(f.teamIDs)
	tree := &forestmodel.Tree{}
	if f.teamSpare != nil {
		tree, f.teamSpare = f.teamSpare, nil
		tree.Reset()
	}
	tree.X, tree.Y = treeProjections(f.Params, d, treeSeed(f.Params.Seed, t))
	return tree, grow(tree, int32(d.X.Rows), c, f.flushAt)
}

// helpers are builders that help one builder split its node: they share
// out its largest loops, each helper with its own scratch.
type helpers interface {
	// each calls fn(b, i) for every i in [0, n), spread over the
	// builders, and returns when all are done.
	each(n int, fn func(b *treeBuilder, i int)) error
	// workers returns the number of builders that may help.
	workers() int
	// piece returns the most rows of a piece of a loop: a loop of fewer
	// than two pieces' rows is not cut.
	piece() int
}

// crew is the workers that grow one tree: one worker alone (soloCrew) or
// the whole pool (teamCrew). Its builders help each other (helpers).
type crew interface {
	helpers
	// eachDomain calls fn(b, i) for every i in [0, n) once per NUMA domain
	// of the crew, spread over the domain's builders: the domain's work on
	// the rows its builders share.
	eachDomain(n int, fn func(b *treeBuilder, i int)) error
	// lead returns a builder that may split a node outside each, with
	// the crew's help, or nil if the crew is that builder alone.
	lead() *treeBuilder
	// waited records that a builder spent d of its part of a loop of
	// each waiting for work that another builder makes, not working.
	waited(d time.Duration)
}

// soloCrew is one builder growing a tree alone, on a worker of pool.
type soloCrew struct {
	b    *treeBuilder
	pool *numa.Pool
}

func (c soloCrew) each(n int, fn func(b *treeBuilder, i int)) error {
	for i := range n {
		fn(c.b, i)
	}
	return nil
}

func (c soloCrew) eachDomain(n int, fn func(b *treeBuilder, i int)) error { return c.each(n, fn) }

func (c soloCrew) lead() *treeBuilder { return nil }

func (c soloCrew) workers() int { return 1 }

func (c soloCrew) piece() int { return routeChunk }

// waited records d as the builder's wait for nodes that builders that
// joined it split (frontier.join).
func (c soloCrew) waited(d time.Duration) { c.pool.Waited(d) }

// teamCrew is every worker of a pool growing a tree together, a numa.Team
// led by the worker on which the tree is grown.
type teamCrew struct {
	team    *numa.Team
	domains int
	// builder returns worker w's builder, ready for the tree.
	builder func(w numa.Worker) *treeBuilder
	// started holds, by worker, its builder once ready for the tree (each
	// written by its own worker only); first is the lead's.
	started []*treeBuilder
	first   *treeBuilder
}

// get returns worker w's builder, on worker w, readied for the tree the
// first time w asks.
func (c *teamCrew) get(w numa.Worker) *treeBuilder {
	if b := c.started[w.ID]; b != nil {
		return b
	}
	b := c.builder(w)
	c.started[w.ID] = b
	if w.ID == c.team.Lead().ID {
		c.first = b
	}
	return b
}

// lead returns the leading worker's builder: its scratch is free between
// calls of each, and it was made on that worker.
func (c *teamCrew) lead() *treeBuilder { return c.first }

func (c *teamCrew) workers() int { return c.team.Workers() }

// piece is routeChunk: a team's loops wake its members, and it helps the
// root alone, the largest node.
func (c *teamCrew) piece() int { return routeChunk }

func (c *teamCrew) waited(d time.Duration) { c.team.Waited(d) }

// each deals the indices one at a time and ends when they are done, not
// waiting for a member that comes late (numa.Team.For).
func (c *teamCrew) each(n int, fn func(b *treeBuilder, i int)) error {
	return c.team.For(n, 1, func(w numa.Worker, i, _ int) { fn(c.get(w), i) })
}

func (c *teamCrew) eachDomain(n int, fn func(b *treeBuilder, i int)) error {
	next := make([]atomic.Int64, c.domains)
	return c.team.Run(func(w numa.Worker) error {
		b := c.get(w)
		for i := int(next[w.Domain].Add(1) - 1); i < n; i = int(next[w.Domain].Add(1) - 1) {
			fn(b, i)
		}
		return nil
	})
}
