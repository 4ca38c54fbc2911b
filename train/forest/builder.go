package forest

import (
	"math/rand/v2"

	"xmc/data"
	forestmodel "xmc/model/forest"
	"xmc/numa"
)

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
	// A centroid's magnitudes, the keep largest for dropLight, and the
	// scratch of their selection.
	mags, kept []float32
	selection  selection
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
	out    forestmodel.Tree // this builder's split nodes not yet in the tree
	bounds []int32          // children's ranges of out's nodes, back to back
	// helpers, when set, are the builders free to help this builder split
	// its node: the crew, at the root, or the frontier's idle builders;
	// err is the first error of the crew's help (a closed pool).
	helpers helpers
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
