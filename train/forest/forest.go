package forest

import (
	"errors"
	"flag"
	"fmt"
	"hash/maphash"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"

	forestmodel "xmc/model/forest"
	"xmc/train"

	"xmc/data"
	"xmc/numa"
	"xmc/runner"
)

// Params are the hyper-parameters of a CRAFTML forest.
type Params struct {
	Trees        int    `json:"trees"`
	DimX         int    `json:"dim_x"`         // projected feature dimension
	DimY         int    `json:"dim_y"`         // projected label dimension
	Sample       int    `json:"sample"`        // instances sampled per node for k-means
	Branch       int    `json:"branch"`        // k of the k-means, children per node
	KMeansIters  int    `json:"kmeans_iters"`  // assignment/update passes
	CentroidKeep int    `json:"centroid_keep"` // largest entries kept per child classifier
	LeafSize     int    `json:"leaf_size"`     // a node this small becomes a leaf
	MaxDepth     int    `json:"max_depth"`     // 0 means unlimited
	Seed         uint64 `json:"seed"`
	// CentroidNorm says when a child's classifier, the sum of its
	// members' normalised projected feature vectors, is normalised: before
	// it is cut to its CentroidKeep largest entries (the entries kept then
	// have a norm below 1) or after (CRAFTML: they have unit norm).
	CentroidNorm string `json:"centroid_norm"`
	// LabelProjection is LabelProjectionTree (one label projection per
	// tree) or LabelProjectionNode (a new one at every node: CRAFTML's
	// default mode, SXDY).
	LabelProjection string `json:"label_projection"`
	// Seeding weights the k-means++ draws by the distance D = 1 − cosine
	// to the nearest centroid chosen (SeedingD) or by D² (SeedingD2, as
	// k-means++ and CRAFTML).
	Seeding string `json:"seeding"`
	// SplitRetries is how many more times a node whose split sends every
	// instance to one child tries again, with a new sample and seeding
	// (and label projection, per node), before it becomes a leaf; CRAFTML
	// tries 5 times.
	SplitRetries int `json:"split_retries"`
}

// Values of Params.CentroidNorm, LabelProjection and Seeding.
const (
	CentroidNormBeforeCut = "before-cut"
	CentroidNormAfterCut  = "after-cut"
	LabelProjectionTree   = "tree"
	LabelProjectionNode   = "node"
	SeedingD              = "d"
	SeedingD2             = "d2"
)

// DefaultParams returns the defaults of CRAFTML's reference program
// (its default mode SXDY: a feature projection per tree, a label projection
// per node, both into 10,000 buckets; centroids normalised after the cut;
// k-means++ by D²; 5 retries of a split that leaves one child), except that
// a projection into at least as many buckets as columns is the identity
// with random signs rather than a hash. Over seeds 1-5 these reached the
// Java program's P@1 on Bibtex (62.72 ± 0.31 against 62.53) and Delicious
// (68.10 ± 0.11 against 67.82), where the choices made before stayed below
// (62.09 ± 0.29 on Bibtex); hashing Bibtex's 1,836 features into 10,000
// buckets as CRAFTML does gave 63.02 ± 0.23 for 17-21% more training time
// (see the README). DimX and DimY are left 0, meaning 10,000, resolved by
// Resolve.
func DefaultParams() Params {
	return Params{Trees: 50, Sample: 20000, Branch: 10, KMeansIters: 5, CentroidKeep: 1000, LeafSize: 10,
		CentroidNorm: CentroidNormAfterCut, LabelProjection: LabelProjectionNode, Seeding: SeedingD2, SplitRetries: 5}
}

// maxSplitRetries bounds SplitRetries: an attempt's number takes 8 bits of
// the seed of its node's label projection (see labelProjection).
const maxSplitRetries = 255

// defaultProjectedDim is the buckets of a projection unless set, CRAFTML's.
const defaultProjectedDim = 10000

// Resolve fills the defaults left 0 and checks every parameter.
func (p Params) Resolve(D, L int) (Params, error) {
	if p.DimX == 0 {
		p.DimX = defaultProjectedDim
	}
	if p.DimY == 0 {
		p.DimY = defaultProjectedDim
	}
	switch {
	case p.Trees < 1:
		return p, fmt.Errorf("--trees must be at least 1, got %d", p.Trees)
	case p.DimX < 1 || p.DimY < 1 || p.DimX > forestmodel.MaxProjectedDim || p.DimY > forestmodel.MaxProjectedDim:
		return p, fmt.Errorf("--dim-x and --dim-y must be between 1 and %d, got %d and %d", forestmodel.MaxProjectedDim, p.DimX, p.DimY)
	case p.Sample < 2:
		return p, fmt.Errorf("--sample must be at least 2, got %d", p.Sample)
	case p.Branch < 2 || p.Branch > forestmodel.MaxBranch:
		return p, fmt.Errorf("--branch must be between 2 and %d, got %d", forestmodel.MaxBranch, p.Branch)
	case p.KMeansIters < 1:
		return p, fmt.Errorf("--kmeans-iters must be at least 1, got %d", p.KMeansIters)
	case p.CentroidKeep < 1:
		return p, fmt.Errorf("--centroid-keep must be at least 1, got %d", p.CentroidKeep)
	case p.LeafSize < 1:
		return p, fmt.Errorf("--leaf-size must be at least 1, got %d", p.LeafSize)
	case p.MaxDepth < 0:
		return p, fmt.Errorf("--max-depth must be 0 (unlimited) or more, got %d", p.MaxDepth)
	case p.CentroidNorm != CentroidNormBeforeCut && p.CentroidNorm != CentroidNormAfterCut:
		return p, fmt.Errorf("--centroid-norm %q: want %s or %s", p.CentroidNorm, CentroidNormBeforeCut, CentroidNormAfterCut)
	case p.LabelProjection != LabelProjectionTree && p.LabelProjection != LabelProjectionNode:
		return p, fmt.Errorf("--label-projection %q: want %s or %s", p.LabelProjection, LabelProjectionTree, LabelProjectionNode)
	case p.Seeding != SeedingD && p.Seeding != SeedingD2:
		return p, fmt.Errorf("--seeding %q: want %s or %s", p.Seeding, SeedingD, SeedingD2)
	case p.SplitRetries < 0 || p.SplitRetries > maxSplitRetries:
		return p, fmt.Errorf("--split-retries must be 0 to %d, got %d", maxSplitRetries, p.SplitRetries)
	}
	return p, nil
}

// trainingData is the read-only training data a forest worker reads: one copy
// per NUMA domain, built by newTrainingData on a pinned worker of the domain.
type trainingData struct {
	X, Y         data.CSR
	xHash, yHash []uint64 // per-row hashes to detect "all rows equal" quickly
	// yClass numbers the distinct label rows, from 0 to yClasses-1: rows
	// have equal labels exactly when they have the same class, and so the
	// same similarity to any k-means centroid.
	yClass   []int32
	yClasses int
}

// newTrainingData prepares a domain's training data: a copy of d's matrices
// if copyData (first-touched by the calling, pinned, thread, so in its
// domain's memory), else d's matrices themselves, which must not change
// afterwards; and per-row hashes. A rank with one NUMA domain needs no copy:
// all of its memory is local (a copy cost Bibtex 2.7 MB and its page faults).
func newTrainingData(d *data.Dataset, seed maphash.Seed, copyData bool) *trainingData {
	f := &trainingData{X: d.X, Y: d.Y}
	if copyData {
		f.X, f.Y = d.X.Clone(), d.Y.Clone()
	}
	f.xHash = rowHashes(&f.X, seed)
	f.yHash = rowHashes(&f.Y, seed)
	f.yClass, f.yClasses = rowClasses(&f.Y, f.yHash)
	return f
}

// rowClasses numbers the distinct rows of m in order of first appearance,
// given their hashes, and returns each row's number and how many there are.
func rowClasses(m *data.CSR, hash []uint64) ([]int32, int) {
	class := make([]int32, m.Rows)
	first := make(map[uint64][]int32) // by hash, the first row of each class
	n := int32(0)
	for i := range m.Rows {
		idx, val := m.Row(i)
		c := int32(-1)
		for _, r := range first[hash[i]] {
			i0, v0 := m.Row(int(r))
			if slices.Equal(idx, i0) && slices.Equal(val, v0) {
				c = class[r]
				break
			}
		}
		if c < 0 {
			c, n = n, n+1
			first[hash[i]] = append(first[hash[i]], int32(i))
		}
		class[i] = c
	}
	return class, int(n)
}

func rowHashes(m *data.CSR, seed maphash.Seed) []uint64 {
	h := make([]uint64, m.Rows)
	for i := range h {
		idx, val := m.Row(i)
		var mh maphash.Hash
		mh.SetSeed(seed)
		for k, j := range idx {
			var b [8]byte
			b[0], b[1], b[2], b[3] = byte(j), byte(j>>8), byte(j>>16), byte(j>>24)
			v := math.Float32bits(val[k])
			b[4], b[5], b[6], b[7] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
			mh.Write(b[:])
		}
		h[i] = mh.Sum64()
	}
	return h
}

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
}

// newGrower prepares a trainer for params (resolved) over the data
// replicas, for the workers of pool.
func newGrower(p Params, replicas *numa.Replicas[*trainingData], pool *numa.Pool) *grower {
	return &grower{Params: p, Data: replicas, pool: pool,
		scratch:      numa.NewPerWorker(pool, func(w numa.Worker) *forestScratch { return newForestScratch(replicas.Get(w.Domain), p) }),
		teamRows:     make([]*treeRows, replicas.Len()),
		teamRowsOnce: make([]sync.Once, replicas.Len())}
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
	return s.encoded.add(t)
}

// WorkTogether is the TeamFunc of a forest of fewer trees than workers: it
// grows tree unit with every worker of the pool and encodes it. The bytes
// are those of Work.
func (f *grower) WorkTogether(unit int) ([]byte, error) {
	t, err := f.TrainTreeTogether(unit)
	if err != nil {
		return nil, err
	}
	f.teamSpare = t
	return f.teamEncoded.add(t)
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
func (e *encodedTrees) add(t *forestmodel.Tree) ([]byte, error) {
	if need := t.MaxEncodedSize(); cap(e.block)-len(e.block) < need {
		e.block = numa.LargeBytes(max(encodedBlockBytes, need))[:0]
	}
	start := len(e.block)
	b, err := t.AppendBinary(e.block)
	if err != nil {
		return nil, err
	}
	e.block = b
	return b[start:len(b):len(b)], nil
}

// TrainTree trains tree number t on worker w alone, reading w's domain
// replica.
func (f *grower) TrainTree(w numa.Worker, t int) (*forestmodel.Tree, error) {
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
	c := soloCrew{b}
	c.eachDomain(1, func(b *treeBuilder, _ int) { b.fillTables() })
	c.eachDomain(projectChunks(b.d), func(b *treeBuilder, i int) { b.projectChunk(i) })
	tree.X, tree.Y = b.x, b.y
	return tree, grow(tree, int32(b.d.X.Rows), c)
}

// TrainTreeTogether trains tree number t with every worker of the pool:
// the workers of a NUMA domain share the rows under the tree's projections
// (one copy per domain, not per worker), and the nodes of each level of the
// tree are split by whichever worker is free. The tree is the one
// TrainTree grows. Calls must not overlap, nor run beside Work or
// TrainTree: they use every worker.
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
	c := &teamCrew{team: team, domains: f.pool.Domains(), builder: func(w numa.Worker) *treeBuilder {
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
	return tree, grow(tree, int32(d.X.Rows), c)
}

// crew is the workers that grow one tree: one worker alone (soloCrew) or
// the whole pool (teamCrew).
type crew interface {
	// each calls fn(b, i) for every i in [0, n), spread over the crew's
	// builders, and returns when all are done.
	each(n int, fn func(b *treeBuilder, i int)) error
	// eachDomain calls fn(b, i) for every i in [0, n) once per NUMA domain
	// of the crew, spread over the domain's builders: the domain's work on
	// the rows its builders share.
	eachDomain(n int, fn func(b *treeBuilder, i int)) error
	// lead returns a builder that may split a node outside each, with
	// the crew's help, or nil if the crew is that builder alone.
	lead() *treeBuilder
	// workers returns the number of builders in the crew.
	workers() int
}

// soloCrew is one builder growing a tree alone.
type soloCrew struct{ b *treeBuilder }

func (c soloCrew) each(n int, fn func(b *treeBuilder, i int)) error {
	for i := range n {
		fn(c.b, i)
	}
	return nil
}

func (c soloCrew) eachDomain(n int, fn func(b *treeBuilder, i int)) error { return c.each(n, fn) }

func (c soloCrew) lead() *treeBuilder { return nil }

func (c soloCrew) workers() int { return 1 }

// teamCrew is every worker of a pool growing a tree together, a numa.Team
// led by the worker on which the tree is grown.
type teamCrew struct {
	team    *numa.Team
	domains int
	// builder returns worker w's builder, ready for the tree.
	builder func(w numa.Worker) *treeBuilder
	// first is the builder of the team's lead, once made.
	first *treeBuilder
}

// get returns worker w's builder, on worker w.
func (c *teamCrew) get(w numa.Worker) *treeBuilder {
	b := c.builder(w)
	if w.ID == c.team.Lead().ID {
		c.first = b
	}
	return b
}

// lead returns the leading worker's builder: its scratch is free between
// calls of each, and it was made on that worker.
func (c *teamCrew) lead() *treeBuilder { return c.first }

func (c *teamCrew) workers() int { return c.team.Workers() }

func (c *teamCrew) each(n int, fn func(b *treeBuilder, i int)) error {
	var next atomic.Int64
	return c.team.Run(func(w numa.Worker) error {
		b := c.get(w)
		for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
			fn(b, i)
		}
		return nil
	})
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

// forestScratch is one worker's reusable memory: nothing is allocated per
// node in the hot path beyond the tree's own growth.
type forestScratch struct {
	builder      treeBuilder
	rows         *treeRows // the rows of the trees this worker grows alone
	ids          []int32   // instance ids of those trees, partitioned in place per node
	tmp          []int32   // a node's instances, reordered by child
	child        []int32   // routed child per instance of the node
	sample       []int32
	cluster      []int32
	order        []int32 // the sample grouped by cluster
	dist         []float64
	accY         []float32 // dimY × k: the k-means centroids, bucket-major
	accX         []float32 // one cluster's classifier accumulator
	markC        []uint8   // marks (1) for touched, the dimensions accX touched
	perDim       []int32   // per dimension, entries of the node kept
	ents         []entry   // the node's entries, in cluster order
	parts        [][]entry // per cluster, its entries computed by a helper
	bits         []uint64  // a bit per dimension, for sortDims
	touched      []int32   // accX's dimensions, in order of first appearance
	w            []float32 // dimX × DotStride(k): the node's weights, dimension-major
	denseX       []float32 // one projected vector
	markX, markY []bool
	ydense       []float32 // one label vector under a node's projection
	ymark        []bool    // the buckets ydense holds
	touchX       []int32
	touchY       []int32
	labelAcc     []float32 // per label, for leaf means
	labels       []int32
	scores       []float32
	norms        []float64 // per cluster, a sum of squares
	counts       []int32
	newID        []int32
	bounds, pos  []int32 // children's ranges in the node's instances
	sims         []float32
	yoff         []int32           // the node sample's projected label vectors:
	ybk          []int32           // pairs yoff[i]:yoff[i+1] of buckets ybk
	yvl          []float32         // and values yvl
	spare        *forestmodel.Tree // last tree encoded, whose slices the next tree reuses
	encoded      encodedTrees
	// Per label class (trainingData.yClass), the k-means similarity or
	// cluster computed for it in the pass numbered stamp[class], so that
	// a pass computes each once for all the instances of the class.
	stamp  []uint32
	simOf  []float32
	bestOf []int32
	pass   uint32
	mags   []float32
}

func newForestScratch(d *trainingData, p Params) *forestScratch {
	n, k := d.X.Rows, p.Branch
	m := min(n, p.Sample)
	pcg := rand.NewPCG(0, 0)
	return &forestScratch{
		builder: treeBuilder{pcg: pcg, rng: rand.New(pcg)},
		tmp:     make([]int32, n), child: make([]int32, n),
		sample: make([]int32, 0, m), cluster: make([]int32, m), order: make([]int32, m),
		dist: make([]float64, m),
		accY: make([]float32, forestmodel.DotStride(k)*p.DimY), accX: make([]float32, p.DimX), markC: make([]uint8, p.DimX),
		touched: make([]int32, p.DimX+1), perDim: make([]int32, p.DimX), bits: make([]uint64, (p.DimX+63)/64),
		w:      make([]float32, p.DimX*forestmodel.DotStride(k)),
		denseX: make([]float32, p.DimX),
		markX:  make([]bool, p.DimX), markY: make([]bool, p.DimY), ydense: make([]float32, p.DimY), ymark: make([]bool, p.DimY),
		labelAcc: make([]float32, d.Y.Cols),
		scores:   make([]float32, k), norms: make([]float64, k), counts: make([]int32, k+1), newID: make([]int32, k), sims: make([]float32, k),
		bounds: make([]int32, k+1), pos: make([]int32, k),
		stamp: make([]uint32, d.yClasses), simOf: make([]float32, d.yClasses), bestOf: make([]int32, d.yClasses),
	}
}

// newPass returns a number for a new k-means pass, never returned before
// since the stamps were last cleared.
func (s *forestScratch) newPass() uint32 {
	s.pass++
	if s.pass == 0 {
		clear(s.stamp)
		s.pass = 1
	}
	return s.pass
}

// treeRows is the training data as one tree sees it: the rows under the
// tree's projections and their inverse norms, computed once per tree and
// read by every node. A worker growing trees alone keeps its own; the
// workers of a NUMA domain growing a tree together share their domain's.
type treeRows struct {
	xb, yb     []int32   // projection tables: bucket per feature / label
	xs, ys     []float32 // signs per feature / label
	px, py     projectedRows
	xInv, yInv []float32 // 1 / norm of each projected instance
}

func newTreeRows(d *trainingData) *treeRows {
	n := d.X.Rows
	return &treeRows{xb: make([]int32, d.X.Cols), xs: make([]float32, d.X.Cols),
		yb: make([]int32, d.Y.Cols), ys: make([]float32, d.Y.Cols),
		px: newProjectedRows(&d.X), py: newProjectedRows(&d.Y), xInv: make([]float32, n), yInv: make([]float32, n)}
}

// treeBuilder is a worker's part in growing a tree: it splits the nodes
// given to it, each with a random stream of its own, and appends their
// classifiers and leaves to its own buffer, out, from which grow copies
// them to the tree in node order.
type treeBuilder struct {
	p      Params
	seed   uint64 // the tree's seed
	x, y   forestmodel.Projection
	d      *trainingData
	s      *forestScratch
	rows   *treeRows
	ids    []int32 // the tree's instance ids, partitioned in place per node
	pcg    *rand.PCG
	rng    *rand.Rand
	out    forestmodel.Tree // this builder's nodes of the current level
	bounds []int32          // children's ranges of out's nodes, back to back
	// helpers, when set, is the crew, free to help this builder split
	// its node (the only one of its level); err is the first error of
	// the crew's help (a closed pool).
	helpers crew
	err     error
}

// start prepares b to grow tree t of f on worker w's domain data, rows
// and ids.
func (b *treeBuilder) start(f *grower, w numa.Worker, rows *treeRows, ids []int32, t int) {
	b.p, b.seed, b.d, b.s = f.Params, treeSeed(f.Params.Seed, t), f.Data.Get(w.Domain), f.scratch.Get(w)
	b.rows, b.ids = rows, ids
	b.x, b.y = treeProjections(b.p, b.d, b.seed)
	b.out.X, b.out.Y = b.x, b.y
}

// treeProjections returns the feature and label projections of the tree
// of the given seed.
func treeProjections(p Params, d *trainingData, seed uint64) (x, y forestmodel.Projection) {
	return projection(p.DimX, d.X.Cols, data.SplitMix64(seed+1), data.SplitMix64(seed+2)),
		projection(p.DimY, d.Y.Cols, data.SplitMix64(seed+3), data.SplitMix64(seed+4))
}

// fillTables fills the projection tables of b's rows and points their
// buckets at the data's columns where the projection is the identity.
func (b *treeBuilder) fillTables() {
	r := b.rows
	r.xb, r.xs = fillTable(b.x, r.xb, r.xs)
	r.yb, r.ys = fillTable(b.y, r.yb, r.ys)
	r.px.useColumns(&b.d.X, b.x.Identity)
	r.py.useColumns(&b.d.Y, b.y.Identity)
}

// firstIDs sets ids to 0, 1, ...: every instance in the root.
func firstIDs(ids []int32) {
	for i := range ids {
		ids[i] = int32(i)
	}
}

// projectRows is the number of rows projected as one piece of work.
const projectRows = 2048

func projectChunks(d *trainingData) int { return (d.X.Rows + projectRows - 1) / projectRows }

// projectChunk projects chunk i of the rows under the tree's projections
// and computes their inverse norms.
func (b *treeBuilder) projectChunk(i int) {
	r, s := b.rows, b.s
	lo, hi := i*projectRows, min((i+1)*projectRows, b.d.X.Rows)
	r.px.project(&b.d.X, r.xb, r.xs, lo, hi)
	r.py.project(&b.d.Y, r.yb, r.ys, lo, hi)
	b.inverseNorms(&r.px, r.xInv, s.denseX, s.markX, lo, hi)
	b.inverseNorms(&r.py, r.yInv, s.accY[:b.p.DimY], s.markY, lo, hi)
}

// span is a node waiting in the breadth-first queue: its instances are
// ids[lo:hi].
type span struct {
	lo, hi int32
	depth  int
}

// nodeOut locates a node's classifier or leaf in the out buffer of the
// builder that split it, and its children's ranges in the builder's bounds.
type nodeOut struct {
	b                                *treeBuilder
	dim, dimEnd, ent, entEnd         int
	leaf, leafEnd, bounds, boundsEnd int
}

// grow grows t over n instances breadth-first, a level at a time: the crew
// splits the nodes of a level in parallel, each builder into its own
// buffer, and the nodes are then appended to t in id order, so that t does
// not depend on the crew, and node ids follow the breadth-first order.
func grow(t *forestmodel.Tree, n int32, c crew) error {
	if n == 0 {
		return errors.New("no training instances")
	}
	queue := []span{{0, n, 0}}
	newNode(t, n)
	var outs []nodeOut
	for lo := 0; lo < len(queue); {
		hi := len(queue)
		outs = slices.Grow(outs[:0], hi-lo)[:hi-lo]
		if b := c.lead(); hi-lo == 1 && b != nil {
			// A level of one node (the root, at least): its builder
			// runs outside the crew, which helps with the node's
			// largest loops.
			b.helpers = c
			outs[0] = b.node(lo, queue[lo])
			b.helpers = nil
			if b.err != nil {
				return b.err
			}
		} else {
			err := c.each(hi-lo, func(b *treeBuilder, i int) { outs[i] = b.node(lo+i, queue[lo+i]) })
			if err != nil {
				return err
			}
		}
		if err := appendLevel(t, outs, c); err != nil {
			return err
		}
		for i, o := range outs {
			id := lo + i
			bounds := o.b.bounds[o.bounds:o.boundsEnd]
			if len(bounds) == 0 {
				continue
			}
			t.FirstChild[id] = int32(len(queue))
			t.NumChildren[id] = int32(len(bounds)) - 1
			for c := 0; c+1 < len(bounds); c++ {
				queue = append(queue, span{bounds[c], bounds[c+1], queue[id].depth + 1})
				newNode(t, bounds[c+1]-bounds[c])
			}
		}
		for _, o := range outs {
			o.b.out.Reset()
			o.b.bounds = o.b.bounds[:0]
		}
		lo = hi
	}
	t.SplitStart = append(t.SplitStart, int64(len(t.SplitDim)))
	t.EntryStart = append(t.EntryStart, int64(len(t.SplitChild)))
	t.LeafStart = append(t.LeafStart, int64(len(t.LeafLabel)))
	return nil
}

// appendLevel appends to t the classifiers and leaves of a level's nodes,
// outs in id order: their places first, then the copies, which the crew
// makes at once. Copied one node after another as they were appended, they
// took 7 of the 55 ms of a Delicious tree grown by two workers, all on the
// lead (first touches of the arrays' fresh memory, and append's growth by
// a quarter, which copied the arrays about four times over); 3.6-4.1 ms so.
func appendLevel(t *forestmodel.Tree, outs []nodeOut, c crew) error {
	first := len(t.SplitStart)
	dim, ent, leaf := len(t.SplitDim), len(t.SplitChild), len(t.LeafLabel)
	for _, o := range outs {
		t.SplitStart = append(t.SplitStart, int64(dim))
		t.EntryStart = append(t.EntryStart, int64(ent))
		t.LeafStart = append(t.LeafStart, int64(leaf))
		dim += o.dimEnd - o.dim
		ent += o.entEnd - o.ent
		leaf += o.leafEnd - o.leaf
	}
	t.SplitDim, t.SplitCount = extended(t.SplitDim, dim), extended(t.SplitCount, dim)
	t.SplitChild, t.SplitWeight = extended(t.SplitChild, ent), extended(t.SplitWeight, ent)
	t.LeafLabel, t.LeafValue = extended(t.LeafLabel, leaf), extended(t.LeafValue, leaf)
	return c.each(len(outs), func(_ *treeBuilder, i int) {
		o, b := outs[i], &outs[i].b.out
		d, e, l := t.SplitStart[first+i], t.EntryStart[first+i], t.LeafStart[first+i]
		copy(t.SplitDim[d:], b.SplitDim[o.dim:o.dimEnd])
		copy(t.SplitCount[d:], b.SplitCount[o.dim:o.dimEnd])
		copy(t.SplitChild[e:], b.SplitChild[o.ent:o.entEnd])
		copy(t.SplitWeight[e:], b.SplitWeight[o.ent:o.entEnd])
		copy(t.LeafLabel[l:], b.LeafLabel[o.leaf:o.leafEnd])
		copy(t.LeafValue[l:], b.LeafValue[o.leaf:o.leafEnd])
	})
}

// extended returns s lengthened to n elements; when it must grow, its
// capacity at least doubles.
func extended[S ~[]E, E any](s S, n int) S {
	if n > cap(s) {
		g := make(S, len(s), max(n, 2*cap(s)))
		copy(g, s)
		s = g
	}
	return s[:n]
}

// node splits node id, whose instances are sp, or makes it a leaf, into
// b's buffer.
func (b *treeBuilder) node(id int, sp span) nodeOut {
	t := &b.out
	o := nodeOut{b: b, dim: len(t.SplitDim), ent: len(t.SplitChild), leaf: len(t.LeafLabel), bounds: len(b.bounds)}
	b.pcg.Seed(nodeSeed(b.seed, id))
	if children := b.split(id, sp); children != nil {
		b.bounds = append(b.bounds, children...)
	} else {
		b.leaf(b.ids[sp.lo:sp.hi])
	}
	o.dimEnd, o.entEnd, o.leafEnd, o.boundsEnd = len(t.SplitDim), len(t.SplitChild), len(t.LeafLabel), len(b.bounds)
	return o
}

func fillTable(p forestmodel.Projection, buckets []int32, signs []float32) ([]int32, []float32) {
	for j := range buckets {
		buckets[j], signs[j] = p.Map(int32(j))
	}
	return buckets, signs
}

// newNode adds to t a node of size instances, a leaf until grow says
// otherwise.
func newNode(t *forestmodel.Tree, size int32) {
	t.FirstChild = append(t.FirstChild, 0)
	t.NumChildren = append(t.NumChildren, 0)
	t.Size = append(t.Size, size)
}

// projectedRows are the rows of a data matrix under one tree's
// projection, entry by entry: the entry of column j and value v becomes
// one of the bucket of j and value sign(j)·v, in the same place, so the
// data's row pointers serve. A tree projects its data once, rather than
// every node looking up the tables again for each of its instances.
type projectedRows struct {
	indptr []int64
	bucket []int32
	value  []float32
	// identity says bucket is the data's own column indices: an identity
	// projection only flips signs, so its buckets need no copy (half the
	// memory and first touches of a tree's projected rows).
	identity bool
	buckets  []int32 // memory of bucket for other projections, made when first needed
}

// newProjectedRows allocates projected rows for the shape of m.
func newProjectedRows(m *data.CSR) projectedRows {
	return projectedRows{indptr: m.Indptr, value: make([]float32, len(m.Values))}
}

// useColumns makes p's buckets m's columns, for an identity projection, or
// memory of its own.
func (p *projectedRows) useColumns(m *data.CSR, identity bool) {
	p.identity = identity
	if identity {
		p.bucket = m.Indices
		return
	}
	if p.buckets == nil {
		p.buckets = make([]int32, len(m.Indices))
	}
	p.bucket = p.buckets
}

// project sets rows lo to hi-1 of p to those of m under the projection
// given by tables (after useColumns).
func (p *projectedRows) project(m *data.CSR, buckets []int32, signs []float32, lo, hi int) {
	a, e := m.Indptr[lo], m.Indptr[hi]
	val, value := m.Values[a:e], p.value[a:e]
	if p.identity {
		for q, j := range m.Indices[a:e] {
			value[q] = signs[j] * val[q]
		}
		return
	}
	bucket := p.bucket[a:e]
	for q, j := range m.Indices[a:e] {
		bucket[q], value[q] = buckets[j], signs[j]*val[q]
	}
}

// row returns the projected entries of row i: buckets (with repeats when
// columns collide) and values.
func (p *projectedRows) row(i int) ([]int32, []float32) {
	lo, hi := p.indptr[i], p.indptr[i+1]
	return p.bucket[lo:hi], p.value[lo:hi]
}

// inverseNorms sets inv[i] to 1/‖P m_i‖ for rows lo to hi-1 of the
// projected rows p (0 for a row whose projection vanishes). dense and mark
// are zeroed scratch of the projected dimension and are left zeroed.
func (b *treeBuilder) inverseNorms(p *projectedRows, inv []float32, dense []float32, mark []bool, lo, hi int) {
	touched := b.s.touchX[:0]
	for i := lo; i < hi; i++ {
		bucket, value := p.row(i)
		value = value[:len(bucket)]
		touched = touched[:0]
		for k, q := range bucket {
			if !mark[q] {
				mark[q] = true
				touched = append(touched, q)
			}
			dense[q] += value[k]
		}
		var ss float64
		for _, q := range touched {
			ss += float64(dense[q]) * float64(dense[q])
			dense[q], mark[q] = 0, false
		}
		inv[i] = 0
		if ss > 0 {
			inv[i] = float32(1 / math.Sqrt(ss))
		}
	}
	b.s.touchX = touched
}

// split tries to split the node's instances, node id's. It returns nil for
// a leaf, or the boundaries of the children's ranges in b.ids (len =
// children + 1), after appending the node's classifier to b.out.
func (b *treeBuilder) split(id int, sp span) []int32 {
	p := b.p
	ids := b.ids[sp.lo:sp.hi]
	if len(ids) <= p.LeafSize || (p.MaxDepth > 0 && sp.depth >= p.MaxDepth) ||
		allEqual(&b.d.Y, b.d.yHash, ids) || allEqual(&b.d.X, b.d.xHash, ids) {
		return nil
	}
	for attempt := 0; attempt <= p.SplitRetries; attempt++ {
		if bounds := b.trySplit(id, attempt, sp); bounds != nil {
			return bounds
		}
	}
	return nil
}

// trySplit is one attempt at splitting node id: it returns nil, having
// appended nothing to the tree, when k-means finds a single cluster or the
// classifier sends every instance to one child.
func (b *treeBuilder) trySplit(id, attempt int, sp span) []int32 {
	s := b.s
	ids := b.ids[sp.lo:sp.hi]
	sample := b.drawSample(ids)
	k := b.kmeans(sample, b.labelProjection(id, attempt))
	if k < 2 {
		return nil
	}
	firstDim, firstEntry := len(b.out.SplitDim), len(b.out.SplitChild)
	kept := b.classifier(sample, k)
	// Route every instance of the node with the classifier just appended,
	// exactly as prediction will: the kept rows of s.w hold the stored
	// (bfloat16) weights, every other row is zero.
	stride := forestmodel.DotStride(k)
	w := s.w[:b.p.DimX*stride]
	counts := s.counts[:k+1]
	clear(counts)
	b.route(ids, w, stride, k)
	for _, c := range s.child[:len(ids)] {
		counts[c+1]++
	}
	for _, d := range kept {
		clear(w[int(d)*stride : int(d)*stride+k])
	}
	// Drop children that received no instance: no test instance can be
	// better served by them than by a child with training data.
	live := int32(0)
	newID := s.newID[:k]
	for c := range k {
		if counts[c+1] > 0 {
			newID[c] = live
			live++
		} else {
			newID[c] = -1
		}
	}
	if live < 2 {
		b.truncateSplit(firstDim, firstEntry)
		return nil
	}
	if int(live) < k {
		b.dropChildren(firstDim, firstEntry, newID)
	}
	// Counting sort of the node's instances by child, stable in id order.
	bounds := s.bounds[:live+1]
	clear(bounds)
	for c := range k {
		if newID[c] >= 0 {
			bounds[newID[c]+1] = counts[c+1]
		}
	}
	for c := range live {
		bounds[c+1] += bounds[c]
	}
	pos := append(s.pos[:0], bounds[:live]...)
	tmp := s.tmp[:len(ids)]
	for i, id := range ids {
		c := newID[s.child[i]]
		tmp[pos[c]] = id
		pos[c]++
	}
	copy(ids, tmp)
	for c := range bounds {
		bounds[c] += sp.lo
	}
	return bounds
}

// dropChildren renumbers the children of the node whose classifier starts
// at firstDim and firstEntry by newID, dropping the entries of children
// mapped to -1 and the dimensions left without entries.
func (b *treeBuilder) dropChildren(firstDim, firstEntry int, newID []int32) {
	t := &b.out
	wd, we, e := firstDim, firstEntry, firstEntry
	for q := firstDim; q < len(t.SplitDim); q++ {
		count := uint8(0)
		for end := e + int(t.SplitCount[q]); e < end; e++ {
			if c := newID[t.SplitChild[e]]; c >= 0 {
				t.SplitChild[we], t.SplitWeight[we] = uint8(c), t.SplitWeight[e]
				we++
				count++
			}
		}
		if count > 0 {
			t.SplitDim[wd], t.SplitCount[wd] = t.SplitDim[q], count
			wd++
		}
	}
	b.truncateSplit(wd, we)
}

func (b *treeBuilder) truncateSplit(dims, entries int) {
	t := &b.out
	t.SplitDim, t.SplitCount = t.SplitDim[:dims], t.SplitCount[:dims]
	t.SplitChild, t.SplitWeight = t.SplitChild[:entries], t.SplitWeight[:entries]
}

// routeChunk is the number of instances a helper takes at a time.
const routeChunk = 4096

// route sets s.child[i] to the child of highest score for instance ids[i]
// under the node weights w, with the help of b.helpers if set.
func (b *treeBuilder) route(ids []int32, w []float32, stride, k int) {
	child := b.s.child
	b.inPieces(len(ids), func(h *treeBuilder, lo, hi int) {
		route(&h.rows.px, ids[lo:hi], w, stride, h.s.scores[:k], child[lo:hi])
	})
}

// inPieces calls fn(h, lo, hi) over consecutive pieces [lo, hi) covering
// [0, n): on b.helpers, each helper h with its own scratch, if b has helpers
// and n is large enough to share, else on b itself in one piece. The pieces
// must be independent: each writes only its own range of results.
//
// The pieces are of equal size, about routeChunk, and as many as a multiple
// of the helpers, so that each helper gets the same share: pieces of
// routeChunk and a short last one left the root's k-means passes of
// Delicious (12,920 rows: 4,096 × 3 + 632) at 8,192 rows against 4,728 on
// two workers.
func (b *treeBuilder) inPieces(n int, fn func(h *treeBuilder, lo, hi int)) {
	if b.helpers == nil || n < 2*routeChunk {
		fn(b, 0, n)
		return
	}
	w := b.helpers.workers()
	pieces := ((n+routeChunk-1)/routeChunk + w - 1) / w * w
	size := (n + pieces - 1) / pieces
	err := b.helpers.each(pieces, func(h *treeBuilder, i int) {
		if lo := i * size; lo < n {
			fn(h, lo, min(lo+size, n))
		}
	})
	if err != nil && b.err == nil {
		b.err = err
	}
}

// route sets child[i] to the child of highest score for instance ids[i],
// whose projected features are in x, for the node weights w (see
// forestmodel.BestDot).
func route(x *projectedRows, ids []int32, w []float32, stride int, scores []float32, child []int32) {
	child = child[:len(ids)]
	for i, id := range ids {
		bk, sg := x.row(int(id))
		child[i] = forestmodel.BestDot(w, stride, bk, sg, scores)
	}
}

// allEqual reports whether rows ids of m are all identical, using the row
// hashes to answer "no" quickly and comparing the rows to confirm "yes".
func allEqual(m *data.CSR, hash []uint64, ids []int32) bool {
	h := hash[ids[0]]
	for _, id := range ids[1:] {
		if hash[id] != h {
			return false
		}
	}
	i0, v0 := m.Row(int(ids[0]))
	for _, id := range ids[1:] {
		i1, v1 := m.Row(int(id))
		if !slices.Equal(i0, i1) || !slices.Equal(v0, v1) {
			return false
		}
	}
	return true
}

// drawSample returns at most p.Sample of ids, drawn without replacement.
func (b *treeBuilder) drawSample(ids []int32) []int32 {
	s := b.s
	s.sample = append(s.sample[:0], ids...)
	if len(ids) <= b.p.Sample {
		return s.sample
	}
	for i := range b.p.Sample {
		j := i + b.rng.IntN(len(ids)-i)
		s.sample[i], s.sample[j] = s.sample[j], s.sample[i]
	}
	return s.sample[:b.p.Sample]
}

// kmeans runs spherical k-means with k-means++ seeding on the projected,
// normalised label vectors of sample (under proj, or the tree's label
// projection if proj is nil), leaving the assignment in s.cluster
// and returning the number of clusters (fewer than Branch when the sample
// has fewer distinct label vectors).
//
// The sample's label vectors are projected once into (bucket, value) pairs,
// and the centroids are stored bucket-major (row b holds the Branch
// centroids' entries for bucket b, padded to forestmodel.DotStride), so that the
// similarities of one instance to every centroid are one contiguous
// multiply-add per label, as forestmodel.BestDot computes them.
func (b *treeBuilder) kmeans(sample []int32, proj *forestmodel.Projection) int {
	s, p := b.s, b.p
	K := p.Branch
	stride := forestmodel.DotStride(K)
	off, bk, vl, touched := b.sampleLabels(sample, proj)
	C := s.accY // dimY × stride, zero outside this call
	defer func() {
		for _, q := range touched {
			clear(C[int(q)*stride : int(q)*stride+stride])
		}
	}()
	add := func(c, i int) { // centroid c += label vector of sample i
		for q := off[i]; q < off[i+1]; q++ {
			C[int(bk[q])*stride+c] += vl[q]
		}
	}
	sim := func(c, i int) float32 {
		var dot float32
		for q := off[i]; q < off[i+1]; q++ {
			dot += vl[q] * C[int(bk[q])*stride+c]
		}
		return dot
	}

	// k-means++ seeding with distance D = 1 - cosine, drawing by D or D².
	weight := func(d float64) float64 { return d }
	if p.Seeding == SeedingD2 {
		weight = func(d float64) float64 { return d * d }
	}
	dist := s.dist[:len(sample)]
	// nearer lowers dist[i] to the distance of sample i to centroid c,
	// for the sample in [lo, hi): the similarity is computed once per
	// label class, in a pass of h's scratch.
	class := b.d.yClass
	nearer := func(h *treeBuilder, c, lo, hi int) {
		stamp, simOf, pass := h.s.stamp, h.s.simOf, h.s.newPass()
		for i := lo; i < hi; i++ {
			cl := class[sample[i]]
			if stamp[cl] != pass {
				stamp[cl], simOf[cl] = pass, sim(c, i)
			}
			dist[i] = min(dist[i], max(0, 1-float64(simOf[cl])))
		}
	}
	add(0, b.rng.IntN(len(sample)))
	k := 1
	for i := range dist {
		dist[i] = math.Inf(1)
	}
	b.inPieces(len(sample), func(h *treeBuilder, lo, hi int) { nearer(h, 0, lo, hi) })
	for k < K && k < len(sample) {
		var total float64
		for _, d := range dist {
			total += weight(d)
		}
		if total <= 1e-9 {
			break
		}
		r := b.rng.Float64() * total
		pick := len(sample) - 1
		for i, d := range dist {
			if r < weight(d) {
				pick = i
				break
			}
			r -= weight(d)
		}
		add(k, pick)
		b.inPieces(len(sample), func(h *treeBuilder, lo, hi int) { nearer(h, k, lo, hi) })
		k++
	}
	if k < 2 {
		return k
	}
	cluster := s.cluster[:len(sample)]
	counts := s.counts[:k]
	// assign sets the cluster of the sample in [lo, hi): the nearest
	// centroid, found once per label class in a pass of h's scratch.
	assign := func(h *treeBuilder, lo, hi int) {
		stamp, bestOf, pass, sims := h.s.stamp, h.s.bestOf, h.s.newPass(), h.s.sims[:k]
		for i := lo; i < hi; i++ {
			cl := class[sample[i]]
			if stamp[cl] != pass {
				stamp[cl] = pass
				bestOf[cl] = forestmodel.BestDot(C, stride, bk[off[i]:off[i+1]], vl[off[i]:off[i+1]], sims)
			}
			cluster[i] = bestOf[cl]
		}
	}
	for iter := range p.KMeansIters {
		b.inPieces(len(sample), assign)
		if iter == p.KMeansIters-1 {
			break
		}
		// Update: each centroid becomes the normalised sum of its members;
		// a cluster left empty keeps its centroid.
		clear(counts)
		for _, c := range cluster {
			counts[c]++
		}
		// s.scores is free outside route: keep, then normalizeColumns' scratch.
		keep := s.scores[:k] // 1 for a cluster left empty, else 0
		for c := range keep {
			keep[c] = float32(1 - min(counts[c], 1))
		}
		for _, q := range touched {
			row := C[int(q)*stride:][:k]
			for c := range row {
				row[c] *= keep[c]
			}
		}
		for i, c := range cluster {
			add(int(c), i)
		}
		normalizeColumns(C, stride, touched, counts, s.norms[:k], s.scores[:k])
	}
	return k
}

// normalizeColumns scales to unit norm each column c of the rows touched of
// C (rows of stride entries) whose cluster has members (counts[c] > 0),
// leaving a zero column as it is; ss and inv are scratch of one entry per
// column. The rows are read once for all the columns, not once per column
// (k passes of strided loads were the most of k-means' own time); each
// column's sum of squares still runs in the order of touched.
func normalizeColumns(C []float32, stride int, touched, counts []int32, ss []float64, inv []float32) {
	k := len(ss)
	clear(ss)
	for _, q := range touched {
		row := C[int(q)*stride:][:k]
		for c, v := range row {
			ss[c] += float64(v) * float64(v)
		}
	}
	for c := range inv {
		inv[c] = 1
		if counts[c] > 0 && ss[c] > 0 {
			inv[c] = float32(1 / math.Sqrt(ss[c]))
		}
	}
	for _, q := range touched {
		row := C[int(q)*stride:][:k]
		for c := range row {
			row[c] *= inv[c]
		}
	}
}

// labelProjection returns the label projection of attempt attempt at
// splitting node id: nil (the tree's) unless projections are per node,
// then one drawn from the tree's seed, the node and the attempt alone.
func (b *treeBuilder) labelProjection(id, attempt int) *forestmodel.Projection {
	if b.p.LabelProjection != LabelProjectionNode || b.y.Identity {
		return nil // one projection per node is the same identity
	}
	seed := data.SplitMix64(b.seed ^ data.SplitMix64(uint64(id)<<8|uint64(attempt)))
	return &forestmodel.Projection{Dim: int32(b.p.DimY), BucketSeed: uint32(data.SplitMix64(seed + 3)), SignSeed: uint32(data.SplitMix64(seed + 4))}
}

// sampleLabels projects the label vectors of sample, normalised, under
// proj (the tree's projection if nil), into s.yoff, s.ybk and s.yvl:
// sample i's entries are the buckets ybk[yoff[i]:yoff[i+1]] (repeated
// where labels collide) with values yvl. It returns them with the buckets
// touched, in s.touchY, in order of first appearance.
//
// The entries are sized first and filled in pieces, with b's helpers when
// it has any: at the root of a tree the sample is the largest of any node,
// and growing the entries as they came took 10 ms of a first Delicious
// tree's 100 (against 0.7 ms once the memory was warm), all of it serial.
func (b *treeBuilder) sampleLabels(sample []int32, proj *forestmodel.Projection) (off, bk []int32, vl []float32, touched []int32) {
	s := b.s
	// A row keeps one entry per label under any projection: its length
	// is the data's.
	indptr := b.d.Y.Indptr
	off = append(s.yoff[:0], 0)
	total := int32(0)
	for _, id := range sample {
		total += int32(indptr[id+1] - indptr[id])
		off = append(off, total)
	}
	bk = slices.Grow(s.ybk[:0], int(total))[:total]
	vl = slices.Grow(s.yvl[:0], int(total))[:total]
	b.inPieces(len(sample), func(h *treeBuilder, lo, hi int) {
		h.projectLabels(sample[lo:hi], proj, bk[off[lo]:off[hi]], vl[off[lo]:off[hi]])
	})
	touched = s.touchY[:0]
	for _, q := range bk {
		if !s.markY[q] {
			s.markY[q] = true
			touched = append(touched, q)
		}
	}
	for _, q := range touched {
		s.markY[q] = false
	}
	s.yoff, s.ybk, s.yvl, s.touchY = off, bk, vl, touched
	return off, bk, vl, touched
}

// projectLabels writes to bk and vl the normalised label vectors of rows
// ids under proj (the tree's projection if nil), row after row, as
// sampleLabels lays them out.
func (b *treeBuilder) projectLabels(ids []int32, proj *forestmodel.Projection, bk []int32, vl []float32) {
	s := b.s
	n := 0
	for _, id := range ids {
		start := n
		inv := float32(0)
		if proj == nil {
			buckets, values := b.rows.py.row(int(id))
			n += copy(bk[n:], buckets)
			copy(vl[start:], values[:len(buckets)])
			inv = b.rows.yInv[id]
		} else {
			labels, values := b.d.Y.Row(int(id))
			values = values[:len(labels)]
			dense, rowTouched := s.ydense, s.touchX[:0]
			for k, l := range labels {
				q, sign := proj.Map(l)
				bk[n], vl[n] = q, sign*values[k]
				n++
				if !s.ymark[q] {
					s.ymark[q] = true
					rowTouched = append(rowTouched, q)
				}
				dense[q] += sign * values[k]
			}
			// The norm of the merged vector, where colliding labels add.
			var ss float64
			for _, q := range rowTouched {
				ss += float64(dense[q]) * float64(dense[q])
			}
			for _, q := range rowTouched {
				dense[q], s.ymark[q] = 0, false
			}
			s.touchX = rowTouched
			if ss > 0 {
				inv = float32(1 / math.Sqrt(ss))
			}
		}
		for k := start; k < n; k++ {
			vl[k] *= inv
		}
	}
}

func normalize(v []float32, touched []int32) {
	var ss float64
	for _, q := range touched {
		ss += float64(v[q]) * float64(v[q])
	}
	if ss == 0 {
		return
	}
	inv := float32(1 / math.Sqrt(ss))
	for _, q := range touched {
		v[q] *= inv
	}
}

// classifier appends to the tree the node's classifier: per cluster, the
// normalised sum of its members' projected normalised feature vectors,
// reduced to its CentroidKeep largest-magnitude entries, stored
// feature-major (see forestmodel.Tree). It returns the dimensions of the stored
// entries, whose rows of s.w (dimension-major, forestmodel.DotStride(k) weights
// per row) then hold the stored weights for routing; every other row of s.w
// is zero, and the caller clears these.
//
// Each cluster is accumulated on its own, its members in sample order, so
// that its accumulator stays in cache and is visited only where its own
// members have features, never over the union of all. The entries kept
// are then sorted by dimension, stably, so by child within a dimension.
func (b *treeBuilder) classifier(sample []int32, k int) []int32 {
	s := b.s
	// Group the sample by cluster, stably.
	cluster := s.cluster[:len(sample)]
	ends := s.counts[:k+1]
	clear(ends)
	for _, c := range cluster {
		ends[c+1]++
	}
	for c := range k {
		ends[c+1] += ends[c]
	}
	order := s.order[:len(sample)]
	for i, c := range cluster {
		order[ends[c]] = sample[i]
		ends[c]++
	}
	ents, kept := s.ents[:0], s.touchX[:0]
	// The k centroids are independent: with helpers, each computes some
	// into a part of its own, appended below in cluster order.
	var parts [][]entry
	if b.helpers != nil && len(sample) >= 2*routeChunk {
		s.parts = slices.Grow(s.parts[:0], k)[:k]
		parts = s.parts
		err := b.helpers.each(k, func(h *treeBuilder, c int) {
			parts[c] = h.centroid(order[ends[c]-clusterSize(ends, c):ends[c]], uint8(c), parts[c][:0])
		})
		if err != nil && b.err == nil {
			b.err = err
		}
	}
	for c := range k {
		n := len(ents)
		if parts != nil {
			ents = append(ents, parts[c]...)
		} else {
			ents = b.centroid(order[ends[c]-clusterSize(ends, c):ends[c]], uint8(c), ents)
		}
		for _, e := range ents[n:] {
			if s.perDim[e.dim] == 0 {
				kept = append(kept, e.dim)
			}
			s.perDim[e.dim]++
		}
	}
	kept = sortDims(kept, s.bits)
	s.ents, s.touchX = ents, kept
	b.appendEntries(kept, k)
	return kept
}

// clusterSize returns the size of cluster c, whose members end at ends[c] and
// begin where cluster c-1's end.
func clusterSize(ends []int32, c int) int32 {
	if c == 0 {
		return ends[0]
	}
	return ends[c] - ends[c-1]
}

// centroid appends to ents child c's entries of the node's classifier: the
// sum of the members' projected normalised feature vectors, reduced to its
// CentroidKeep largest-magnitude entries and normalised (see keep).
func (b *treeBuilder) centroid(members []int32, c uint8, ents []entry) []entry {
	s, dimX := b.s, b.p.DimX
	acc, mark := s.accX[:dimX], s.markC[:dimX]
	n := accumulate(&b.rows.px, members, b.rows.xInv, acc, mark, s.touched[:dimX+1])
	touched := s.touched[:n]
	scale := float32(1)
	if b.p.CentroidNorm == CentroidNormBeforeCut {
		normalize(acc, touched)
	}
	thresh, ties := b.threshold(acc, touched)
	if b.p.CentroidNorm == CentroidNormAfterCut {
		scale = keptScale(acc, touched, thresh, ties)
	}
	return keep(acc, mark, touched, thresh, ties, scale, c, ents)
}

// accumulate adds the projected normalised feature vectors of the members
// into acc, and writes to touched, in order of first appearance, the
// dimensions it adds to, returning their number. mark flags (1) the
// dimensions listed; touched needs room for one more than the dimension.
func accumulate(x *projectedRows, members []int32, xInv []float32, acc []float32, mark []uint8, touched []int32) int {
	n := 0
	for _, id := range members {
		bucket, value := x.row(int(id))
		value = value[:len(bucket)]
		inv := xInv[id]
		for q, d := range bucket {
			// touched[n] is always written and kept by counting it when
			// the dimension is new: no branch to mispredict.
			touched[n] = d
			n += int(mark[d] ^ 1)
			mark[d] = 1
			acc[d] += value[q] * inv
		}
	}
	return n
}

// threshold returns the magnitude of the CentroidKeep-th largest entry of
// the centroid acc over its touched dimensions (0 when it has no more
// entries than that), and how many entries of exactly that magnitude are
// kept.
func (b *treeBuilder) threshold(acc []float32, touched []int32) (thresh float32, ties int) {
	keep := b.p.CentroidKeep
	if len(touched) <= keep {
		return 0, len(touched)
	}
	mags := b.s.mags[:0]
	for _, d := range touched {
		mags = append(mags, abs32(acc[d]))
	}
	b.s.mags = mags
	// The keep-th largest, by selection rather than a sort: centroids of
	// thousands of dimensions were a tenth of training a Bibtex tree.
	thresh = nthSmallest(mags, len(mags)-keep)
	above := 0
	for _, m := range mags {
		if m > thresh {
			above++
		}
	}
	return thresh, keep - above
}

// nthSmallest returns the value that sorting a would put at index n,
// reordering a: quickselect with the median of three as pivot, falling back
// to a sort of what is left when the partitions stay unbalanced.
func nthSmallest(a []float32, n int) float32 {
	lo, hi := 0, len(a)-1
	for rounds := 0; hi > lo; rounds++ {
		if rounds > 64 {
			slices.Sort(a[lo : hi+1])
			break
		}
		mid := lo + (hi-lo)/2
		if a[mid] < a[lo] {
			a[mid], a[lo] = a[lo], a[mid]
		}
		if a[hi] < a[lo] {
			a[hi], a[lo] = a[lo], a[hi]
		}
		if a[hi] < a[mid] {
			a[hi], a[mid] = a[mid], a[hi]
		}
		pivot := a[mid]
		i, j := lo, hi
		for i <= j {
			for a[i] < pivot {
				i++
			}
			for a[j] > pivot {
				j--
			}
			if i <= j {
				a[i], a[j] = a[j], a[i]
				i++
				j--
			}
		}
		switch {
		case n <= j:
			hi = j
		case n >= i:
			lo = i
		default:
			return a[n]
		}
	}
	return a[n]
}

// keptEntry reports whether an entry of magnitude m of a centroid is kept at
// threshold thresh, with ties entries of that magnitude still to keep.
func keptEntry(m, thresh float32, ties int) bool {
	return m != 0 && m >= thresh && (m != thresh || ties > 0)
}

// keptScale returns 1/‖kept entries‖ of the centroid acc: the scale that
// normalises it after the cut (1 if nothing is kept).
func keptScale(acc []float32, touched []int32, thresh float32, ties int) float32 {
	var ss float64
	for _, d := range touched {
		m := abs32(acc[d])
		if !keptEntry(m, thresh, ties) {
			continue
		}
		if m == thresh {
			ties--
		}
		ss += float64(m) * float64(m)
	}
	if ss == 0 {
		return 1
	}
	return float32(1 / math.Sqrt(ss))
}

// keep appends to ents child's entries of the centroid acc above thresh
// (and the first ties at it, in order of first appearance, which is
// deterministic), multiplied by scale, that do not round to a bfloat16
// zero. It zeroes acc and mark.
func keep(acc []float32, mark []uint8, touched []int32, thresh float32, ties int, scale float32, child uint8, ents []entry) []entry {
	for _, d := range touched {
		v := acc[d]
		acc[d], mark[d] = 0, 0
		m := abs32(v)
		if !keptEntry(m, thresh, ties) {
			continue
		}
		if m == thresh {
			ties--
		}
		v *= scale
		if forestmodel.ToBFloat16(v).Float32() == 0 {
			continue // too small to store
		}
		ents = append(ents, entry{dim: d, child: child, weight: v})
	}
	return ents
}

// appendEntries appends the node's entries s.ents, rounded to bfloat16, to
// the tree feature-major: kept lists their dimensions sorted (and maybe
// dimensions without entries), s.perDim has their counts. It writes the
// stored weights to s.w for routing and zeroes s.perDim.
func (b *treeBuilder) appendEntries(kept []int32, k int) {
	s, t := b.s, &b.out
	perDim, ents := s.perDim, s.ents
	// Counting sort of the entries by dimension, into the tree: perDim
	// becomes each dimension's next position after base.
	base, n := len(t.SplitChild), int32(0)
	for _, d := range kept {
		if c := perDim[d]; c > 0 {
			t.SplitDim = append(t.SplitDim, d)
			t.SplitCount = append(t.SplitCount, uint8(c))
			perDim[d], n = n, n+c
		}
	}
	child := slices.Grow(t.SplitChild, len(ents))[:base+len(ents)]
	weight := slices.Grow(t.SplitWeight, len(ents))[:base+len(ents)]
	stride := forestmodel.DotStride(k)
	w := s.w[:b.p.DimX*stride]
	for _, e := range ents {
		q := base + int(perDim[e.dim])
		perDim[e.dim]++
		v := forestmodel.ToBFloat16(e.weight)
		child[q], weight[q] = e.child, v
		w[int(e.dim)*stride+int(e.child)] = v.Float32()
	}
	t.SplitChild, t.SplitWeight = child, weight
	for _, d := range kept {
		perDim[d] = 0
	}
}

// entry is one weight of a node's classifier: child's weight for the
// projected dimension dim.
type entry struct {
	dim    int32
	child  uint8
	weight float32
}

// sortDims sorts the distinct dimensions dims, using set, a zeroed bit set
// over the dimensions, and leaving it zeroed: by a comparison sort when they
// are few, by setting their bits and reading them back in order when they
// are many.
func sortDims(dims []int32, set []uint64) []int32 {
	if len(dims) < len(set)/4 {
		slices.Sort(dims)
		return dims
	}
	for _, d := range dims {
		set[d>>6] |= 1 << (d & 63)
	}
	dims = dims[:0]
	for i, word := range set {
		for word != 0 {
			dims = append(dims, int32(i<<6+bits.TrailingZeros64(word)))
			word &= word - 1
		}
		set[i] = 0
	}
	return dims
}

func abs32(v float32) float32 { return float32(math.Abs(float64(v))) }

// leaf appends the mean label vector of ids.
func (b *treeBuilder) leaf(ids []int32) {
	s, t := b.s, &b.out
	labels := s.labels[:0]
	for _, id := range ids {
		idx, _ := b.d.Y.Row(int(id))
		for _, l := range idx {
			if s.labelAcc[l] == 0 {
				labels = append(labels, l)
			}
			s.labelAcc[l]++
		}
	}
	slices.Sort(labels)
	inv := 1 / float32(len(ids))
	for _, l := range labels {
		t.LeafLabel = append(t.LeafLabel, l)
		t.LeafValue = append(t.LeafValue, s.labelAcc[l]*inv)
		s.labelAcc[l] = 0
	}
	s.labels = labels
}

// Trainer is the Trainer of --algo forest.
type Trainer struct {
	p Params
	// grow is how a rank's workers share its trees (--grow): not a
	// hyper-parameter, as the trees are the same either way.
	grow string
}

// Values of --grow.
const (
	GrowAuto     = "auto"
	GrowAlone    = "alone"
	GrowTogether = "together"
)

func New() train.Trainer { return &Trainer{p: DefaultParams(), grow: GrowAuto} }

// Flags registers the forest's hyper-parameters.
func (a *Trainer) Flags(fs *flag.FlagSet) {
	p := &a.p
	fs.IntVar(&p.Trees, "trees", p.Trees, "number of trees")
	fs.IntVar(&p.DimX, "dim-x", p.DimX, "projected feature dimension (0: 10000, as CRAFTML); at least D keeps every feature apart (no hashing)")
	fs.IntVar(&p.DimY, "dim-y", p.DimY, "projected label dimension (0: 10000, as CRAFTML); at least L keeps every label apart (no hashing)")
	fs.IntVar(&p.Sample, "sample", p.Sample, "instances sampled per node for k-means")
	fs.IntVar(&p.Branch, "branch", p.Branch, "children per node (k of the k-means)")
	fs.IntVar(&p.KMeansIters, "kmeans-iters", p.KMeansIters, "k-means passes per node")
	fs.IntVar(&p.CentroidKeep, "centroid-keep", p.CentroidKeep, "largest entries kept per child classifier")
	fs.IntVar(&p.LeafSize, "leaf-size", p.LeafSize, "nodes with at most this many instances become leaves")
	fs.IntVar(&p.MaxDepth, "max-depth", p.MaxDepth, "maximum tree depth (0: unlimited)")
	fs.StringVar(&p.CentroidNorm, "centroid-norm", p.CentroidNorm, "normalise a child's classifier before-cut (to its --centroid-keep entries) or after-cut (CRAFTML)")
	fs.StringVar(&p.LabelProjection, "label-projection", p.LabelProjection, "a label projection per tree, or per node (CRAFTML's default mode)")
	fs.StringVar(&p.Seeding, "seeding", p.Seeding, "k-means++ draws weighted by d = 1 - cosine, or by d2 (k-means++ and CRAFTML)")
	fs.IntVar(&p.SplitRetries, "split-retries", p.SplitRetries, "more attempts of a split that sends every instance to one child, before the node becomes a leaf (CRAFTML: 5)")
	fs.StringVar(&a.grow, "grow", a.grow, "how a rank's workers grow its trees (the same trees): alone, a tree per worker, each with its own "+
		"projected copy of the data; together, every worker on each tree in turn, one copy per NUMA domain (less memory, some speed); "+
		"auto, together when the rank has fewer trees than workers or a copy per worker would take over a quarter of the free memory")
}

// Prepare resolves the parameters against the data and builds the
// replicas: a tree per unit.
func (a *Trainer) Prepare(env train.Env, ds *data.Dataset) (*train.Work, error) {
	p := a.p
	p.Seed = env.Seed
	p, err := p.Resolve(ds.D(), ds.L())
	if err != nil {
		return nil, err
	}
	if a.grow != GrowAuto && a.grow != GrowAlone && a.grow != GrowTogether {
		return nil, fmt.Errorf("--grow %q: want %s, %s or %s", a.grow, GrowAuto, GrowAlone, GrowTogether)
	}
	// With several NUMA domains each gets its own copy of the data.
	copyData := env.Pool.Domains() > 1
	replicas, err := numa.NewReplicas(env.Pool, func(int) (*trainingData, error) {
		return newTrainingData(ds, maphash.MakeSeed(), copyData), nil
	})
	if err != nil {
		return nil, err
	}
	t := newGrower(p, replicas, env.Pool)
	// Trees cost about the same: a cyclic deal balances them without
	// messages.
	w := &train.Work{Kind: forestmodel.Kind{}, Params: p, Units: p.Trees, Unit: t.Work, Schedule: runner.ScheduleStatic}
	ranks, workers := env.Comm.Size(), len(env.Pool.Workers())
	perRank := (p.Trees + ranks - 1) / ranks
	copyBytes := treeRowsBytes(ds, p)
	if together, why := growTogether(a.grow, perRank, workers, copyBytes, env.Pool.MemFree()); together {
		w.Unit, w.Team = nil, t.WorkTogether
		env.Log.Info("the workers of a rank grow each tree together", "why", why, "trees_per_rank", perRank, "workers", workers,
			"projected_copy_mib", copyBytes>>20)
	}
	return w, nil
}

// growTogether decides whether a rank's workers grow each tree together
// under --grow grow, with perRank trees for workers workers, a tree's
// projected rows taking copyBytes and memFree bytes free (0: unknown), and
// says why. Under auto they do when a worker per tree would leave workers
// idle, or when a projected copy per worker would take more than a quarter
// of the free memory.
func growTogether(grow string, perRank, workers int, copyBytes, memFree uint64) (bool, string) {
	switch {
	case grow == GrowTogether:
		return true, "--grow together"
	case grow != GrowAuto:
		return false, ""
	case perRank < workers:
		return true, "fewer trees than workers"
	case memFree > 0 && uint64(workers)*copyBytes > memFree/4:
		return true, "a projected copy per worker would take over a quarter of the free memory"
	}
	return false, ""
}

// treeRowsBytes is the memory of a tree's projected rows of ds (see
// treeRows), its buckets shared with the data where a projection is the
// identity.
func treeRowsBytes(ds *data.Dataset, p Params) uint64 {
	nnz := func(m *data.CSR, dim int) uint64 {
		per := uint64(8) // bucket and value
		if dim >= m.Cols {
			per = 4 // value: the buckets are the columns
		}
		return per * uint64(m.NNZ())
	}
	return nnz(&ds.X, p.DimX) + nnz(&ds.Y, p.DimY) + 8*uint64(ds.N())
}
