package train

import (
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"math/rand/v2"
	"slices"

	"xmc/data"
	"xmc/model"
	"xmc/numa"
)

// ForestParams are the hyper-parameters of a CRAFTML forest.
type ForestParams struct {
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
}

// DefaultForestParams returns the CRAFTML defaults; DimX and DimY are left 0,
// meaning min(D, 10000) and min(L, 10000), resolved by Resolve.
func DefaultForestParams() ForestParams {
	return ForestParams{Trees: 50, Sample: 20000, Branch: 10, KMeansIters: 5, CentroidKeep: 1000, LeafSize: 10}
}

// Resolve fills the data-dependent defaults and checks every parameter.
func (p ForestParams) Resolve(D, L int) (ForestParams, error) {
	if p.DimX == 0 {
		p.DimX = min(D, 10000)
	}
	if p.DimY == 0 {
		p.DimY = min(L, 10000)
	}
	switch {
	case p.Trees < 1:
		return p, fmt.Errorf("--trees must be at least 1, got %d", p.Trees)
	case p.DimX < 1 || p.DimY < 1 || p.DimX > model.MaxProjectedDim || p.DimY > model.MaxProjectedDim:
		return p, fmt.Errorf("--dim-x and --dim-y must be between 1 and %d, got %d and %d", model.MaxProjectedDim, p.DimX, p.DimY)
	case p.Sample < 2:
		return p, fmt.Errorf("--sample must be at least 2, got %d", p.Sample)
	case p.Branch < 2 || p.Branch > model.MaxBranch:
		return p, fmt.Errorf("--branch must be between 2 and %d, got %d", model.MaxBranch, p.Branch)
	case p.KMeansIters < 1:
		return p, fmt.Errorf("--kmeans-iters must be at least 1, got %d", p.KMeansIters)
	case p.CentroidKeep < 1:
		return p, fmt.Errorf("--centroid-keep must be at least 1, got %d", p.CentroidKeep)
	case p.LeafSize < 1:
		return p, fmt.Errorf("--leaf-size must be at least 1, got %d", p.LeafSize)
	case p.MaxDepth < 0:
		return p, fmt.Errorf("--max-depth must be 0 (unlimited) or more, got %d", p.MaxDepth)
	}
	return p, nil
}

// ForestData is the read-only training data a forest worker reads: one copy
// per NUMA domain, built by NewForestData on a pinned worker of the domain.
type ForestData struct {
	X, Y         data.CSR
	xHash, yHash []uint64 // per-row hashes to detect "all rows equal" quickly
}

// NewForestData copies d (so that the copy is first-touched by the calling,
// pinned, thread) and precomputes per-row hashes.
func NewForestData(d *data.Dataset, seed maphash.Seed) *ForestData {
	f := &ForestData{X: cloneCSR(&d.X), Y: cloneCSR(&d.Y)}
	f.xHash = rowHashes(&f.X, seed)
	f.yHash = rowHashes(&f.Y, seed)
	return f
}

func cloneCSR(m *data.CSR) data.CSR {
	return data.CSR{Rows: m.Rows, Cols: m.Cols, Indptr: slices.Clone(m.Indptr),
		Indices: slices.Clone(m.Indices), Values: slices.Clone(m.Values)}
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

// ForestTrainer trains the trees of a forest; TrainTree is safe for
// concurrent use by different workers.
type ForestTrainer struct {
	Params  ForestParams
	Data    *numa.Replicas[*ForestData]
	scratch []*forestScratch // per worker, allocated by the worker itself
}

// NewForestTrainer prepares a trainer for params (resolved) over the data
// replicas, with scratch for the given number of workers.
func NewForestTrainer(p ForestParams, replicas *numa.Replicas[*ForestData], workers int) *ForestTrainer {
	return &ForestTrainer{Params: p, Data: replicas, scratch: make([]*forestScratch, workers)}
}

// TreeSeed derives the seed of tree t from the forest seed alone, so a tree
// is the same whichever rank or worker trains it.
func TreeSeed(seed uint64, t int) uint64 {
	return splitmix64(seed ^ splitmix64(uint64(t)+0x9e3779b97f4a7c15))
}

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Work is the WorkFunc of a forest: it trains tree unit and encodes it.
// The tree's slices are then kept for the worker's next tree, which saves
// regrowing them.
func (f *ForestTrainer) Work(w numa.Worker, unit int) ([]byte, error) {
	t, err := f.TrainTree(w, unit)
	if err != nil {
		return nil, err
	}
	b, err := t.MarshalBinary()
	f.scratch[w.ID].spare = t
	return b, err
}

// TrainTree trains tree number t on worker w, reading w's domain replica.
func (f *ForestTrainer) TrainTree(w numa.Worker, t int) (*model.Tree, error) {
	d := f.Data.Get(w.Domain)
	s := f.scratch[w.ID]
	if s == nil {
		s = newForestScratch(d, f.Params)
		f.scratch[w.ID] = s
	}
	seed := TreeSeed(f.Params.Seed, t)
	tree := &model.Tree{}
	if s.spare != nil {
		tree, s.spare = s.spare, nil
		tree.Reset()
	}
	tree.X = model.Projection{Dim: int32(f.Params.DimX), BucketSeed: uint32(splitmix64(seed + 1)), SignSeed: uint32(splitmix64(seed + 2))}
	tree.Y = model.Projection{Dim: int32(f.Params.DimY), BucketSeed: uint32(splitmix64(seed + 3)), SignSeed: uint32(splitmix64(seed + 4))}
	b := &treeBuilder{p: f.Params, d: d, s: s, rng: rand.New(rand.NewPCG(seed, splitmix64(seed))), tree: tree}
	if err := b.build(); err != nil {
		return nil, err
	}
	return b.tree, nil
}

// forestScratch is one worker's reusable memory: nothing is allocated per
// node in the hot path beyond the tree's own growth.
type forestScratch struct {
	xb, yb       []int32   // projection tables: bucket per feature / label
	xs, ys       []float32 // signs per feature / label
	xInv, yInv   []float32 // 1 / norm of each projected instance
	ids, tmp     []int32   // instance ids, partitioned in place per node
	child        []int32   // routed child per instance of the node
	sample       []int32
	cluster      []int32
	dist         []float64
	accY, accX   []float32 // k × dimY and k × dimX dense accumulators
	denseX       []float32 // one projected vector
	markX, markY []bool
	touchX       []int32
	touchY       []int32
	labelAcc     []float32 // per label, for leaf means
	labels       []int32
	buckets      []int32
	signed       []float32
	scores       []float32
	counts       []int32
	newID        []int32
	sims         []float32
	yoff         []int32   // the node sample's projected label vectors:
	ybk          []int32   // pairs yoff[i]:yoff[i+1] of buckets ybk
	yvl          []float32 // and values yvl
	touchC       [][]int32 // per cluster, the dimensions its accumulator touched
	markC        []bool    // k × dimX marks for touchC
	index        *model.SplitIndex
	spare        *model.Tree // last tree encoded, whose slices the next tree reuses
	mags         []float32
}

func newForestScratch(d *ForestData, p ForestParams) *forestScratch {
	n, k := d.X.Rows, p.Branch
	return &forestScratch{
		xb: make([]int32, d.X.Cols), xs: make([]float32, d.X.Cols),
		yb: make([]int32, d.Y.Cols), ys: make([]float32, d.Y.Cols),
		xInv: make([]float32, n), yInv: make([]float32, n),
		ids: make([]int32, n), tmp: make([]int32, n), child: make([]int32, n),
		sample: make([]int32, 0, min(n, p.Sample)), cluster: make([]int32, min(n, p.Sample)),
		dist: make([]float64, min(n, p.Sample)),
		accY: make([]float32, k*p.DimY), accX: make([]float32, k*p.DimX),
		denseX: make([]float32, p.DimX),
		markX:  make([]bool, p.DimX), markY: make([]bool, p.DimY),
		labelAcc: make([]float32, d.Y.Cols), index: model.NewSplitIndex(p.DimX),
		touchC: make([][]int32, k), markC: make([]bool, k*p.DimX),
		scores: make([]float32, k), counts: make([]int32, k+1), newID: make([]int32, k), sims: make([]float32, k),
	}
}

// treeBuilder grows one tree breadth-first, so that node ids, and with them
// the order of every entry appended to the tree, follow processing order.
type treeBuilder struct {
	p    ForestParams
	d    *ForestData
	s    *forestScratch
	rng  *rand.Rand
	tree *model.Tree
}

// span is a node waiting in the breadth-first queue: its instances are
// s.ids[lo:hi].
type span struct {
	lo, hi int32
	depth  int
}

func (b *treeBuilder) build() error {
	s, t := b.s, b.tree
	s.xb, s.xs = fillTable(t.X, s.xb, s.xs)
	s.yb, s.ys = fillTable(t.Y, s.yb, s.ys)
	b.inverseNorms(&b.d.X, s.xb, s.xs, s.xInv, s.denseX, s.markX)
	b.inverseNorms(&b.d.Y, s.yb, s.ys, s.yInv, s.accY[:b.p.DimY], s.markY)
	n := int32(b.d.X.Rows)
	if n == 0 {
		return errors.New("no training instances")
	}
	for i := range n {
		s.ids[i] = i
	}
	queue := []span{{0, n, 0}}
	b.newNode(n)
	for id := 0; id < len(queue); id++ {
		sp := queue[id]
		t.SplitStart = append(t.SplitStart, int64(len(t.SplitDim)))
		t.EntryStart = append(t.EntryStart, int64(len(t.SplitChild)))
		t.LeafStart = append(t.LeafStart, int64(len(t.LeafLabel)))
		children := b.split(sp)
		if len(children) == 0 {
			b.leaf(s.ids[sp.lo:sp.hi])
			continue
		}
		t.FirstChild[id] = int32(len(queue))
		t.NumChildren[id] = int32(len(children)) - 1
		for c := 0; c+1 < len(children); c++ {
			lo, hi := children[c], children[c+1]
			queue = append(queue, span{lo, hi, sp.depth + 1})
			b.newNode(hi - lo)
		}
	}
	t.SplitStart = append(t.SplitStart, int64(len(t.SplitDim)))
	t.EntryStart = append(t.EntryStart, int64(len(t.SplitChild)))
	t.LeafStart = append(t.LeafStart, int64(len(t.LeafLabel)))
	return nil
}

func fillTable(p model.Projection, buckets []int32, signs []float32) ([]int32, []float32) {
	for j := range buckets {
		buckets[j], signs[j] = p.Map(int32(j))
	}
	return buckets, signs
}

func (b *treeBuilder) newNode(size int32) {
	t := b.tree
	t.FirstChild = append(t.FirstChild, 0)
	t.NumChildren = append(t.NumChildren, 0)
	t.Size = append(t.Size, size)
}

// inverseNorms sets inv[i] to 1/‖P m_i‖ for the projection given by tables
// (0 for a row whose projection vanishes). dense and mark are zeroed scratch
// of the projected dimension and are left zeroed.
func (b *treeBuilder) inverseNorms(m *data.CSR, bucket []int32, sign []float32, inv []float32, dense []float32, mark []bool) {
	touched := b.s.touchX[:0]
	for i := range m.Rows {
		idx, val := m.Row(i)
		touched = touched[:0]
		for k, j := range idx {
			q := bucket[j]
			if !mark[q] {
				mark[q] = true
				touched = append(touched, q)
			}
			dense[q] += sign[j] * val[k]
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

// split tries to split the node's instances. It returns nil for a leaf, or
// the boundaries of the children's ranges in s.ids (len = children + 1),
// after appending the node's classifier to the tree.
func (b *treeBuilder) split(sp span) []int32 {
	s, p := b.s, b.p
	ids := s.ids[sp.lo:sp.hi]
	if len(ids) <= p.LeafSize || (p.MaxDepth > 0 && sp.depth >= p.MaxDepth) ||
		allEqual(&b.d.Y, b.d.yHash, ids) || allEqual(&b.d.X, b.d.xHash, ids) {
		return nil
	}
	sample := b.drawSample(ids)
	k := b.kmeans(sample)
	if k < 2 {
		return nil
	}
	t := b.tree
	firstDim, firstEntry := len(t.SplitDim), len(t.SplitChild)
	b.classifier(sample, k)
	// Route every instance of the node with the classifier just appended,
	// exactly as prediction will. The node's end offsets and child count are
	// provisional until the build loop records them.
	node := int32(len(t.SplitStart) - 1)
	t.SplitStart = append(t.SplitStart, int64(len(t.SplitDim)))
	t.EntryStart = append(t.EntryStart, int64(len(t.SplitChild)))
	t.NumChildren[node] = int32(k)
	s.index.Load(t, node)
	counts := s.counts[:k+1]
	clear(counts)
	for i, id := range ids {
		c := b.route(id)
		s.child[i] = c
		counts[c+1]++
	}
	s.index.Unload()
	t.NumChildren[node] = 0
	t.SplitStart = t.SplitStart[:len(t.SplitStart)-1]
	t.EntryStart = t.EntryStart[:len(t.EntryStart)-1]
	// Drop children that received no instance: no test instance can be
	// better served by them than by a child with training data.
	kept := int32(0)
	newID := s.newID[:k]
	for c := range k {
		if counts[c+1] > 0 {
			newID[c] = kept
			kept++
		} else {
			newID[c] = -1
		}
	}
	if kept < 2 {
		b.truncateSplit(firstDim, firstEntry)
		return nil
	}
	if int(kept) < k {
		b.dropChildren(firstDim, firstEntry, newID)
	}
	// Counting sort of the node's instances by child, stable in id order.
	bounds := make([]int32, kept+1)
	for c := range k {
		if newID[c] >= 0 {
			bounds[newID[c]+1] = counts[c+1]
		}
	}
	for c := range kept {
		bounds[c+1] += bounds[c]
	}
	pos := slices.Clone(bounds[:kept])
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
	t := b.tree
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
	t := b.tree
	t.SplitDim, t.SplitCount = t.SplitDim[:dims], t.SplitCount[:dims]
	t.SplitChild, t.SplitWeight = t.SplitChild[:entries], t.SplitWeight[:entries]
}

// route returns the child of the node loaded in s.index for training
// instance id.
func (b *treeBuilder) route(id int32) int32 {
	s := b.s
	idx, val := b.d.X.Row(int(id))
	s.buckets, s.signed = s.buckets[:0], s.signed[:0]
	for q, j := range idx {
		s.buckets = append(s.buckets, s.xb[j])
		s.signed = append(s.signed, s.xs[j]*val[q])
	}
	return s.index.Best(s.buckets, s.signed, s.scores)
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
// normalised label vectors of sample, leaving the assignment in s.cluster
// and returning the number of clusters (fewer than Branch when the sample
// has fewer distinct label vectors).
//
// The sample's label vectors are projected once into (bucket, value) pairs,
// and the centroids are stored bucket-major (row b holds the Branch
// centroids' entries for bucket b), so that the similarities of one
// instance to every centroid are one contiguous multiply-add per label.
func (b *treeBuilder) kmeans(sample []int32) int {
	s, p := b.s, b.p
	K := p.Branch
	// Project the sample's label vectors, and collect the buckets they
	// touch: the only centroid rows that can be non-zero.
	off, bk, vl := s.yoff[:0], s.ybk[:0], s.yvl[:0]
	touched := s.touchY[:0]
	for _, id := range sample {
		off = append(off, int32(len(bk)))
		idx, _ := b.d.Y.Row(int(id))
		for _, l := range idx {
			q := s.yb[l]
			bk = append(bk, q)
			vl = append(vl, s.ys[l]*s.yInv[id])
			if !s.markY[q] {
				s.markY[q] = true
				touched = append(touched, q)
			}
		}
	}
	off = append(off, int32(len(bk)))
	for _, q := range touched {
		s.markY[q] = false
	}
	s.yoff, s.ybk, s.yvl, s.touchY = off, bk, vl, touched
	C := s.accY // dimY × K, zero outside this call
	defer func() {
		for _, q := range touched {
			clear(C[int(q)*K : int(q)*K+K])
		}
	}()
	add := func(c, i int) { // centroid c += label vector of sample i
		for q := off[i]; q < off[i+1]; q++ {
			C[int(bk[q])*K+c] += vl[q]
		}
	}
	sim := func(c, i int) float32 {
		var dot float32
		for q := off[i]; q < off[i+1]; q++ {
			dot += vl[q] * C[int(bk[q])*K+c]
		}
		return dot
	}

	// k-means++ seeding with distance 1 - cosine.
	dist := s.dist[:len(sample)]
	add(0, b.rng.IntN(len(sample)))
	k := 1
	for i := range sample {
		dist[i] = max(0, 1-float64(sim(0, i)))
	}
	for k < K && k < len(sample) {
		var total float64
		for _, d := range dist {
			total += d
		}
		if total <= 1e-9 {
			break
		}
		r := b.rng.Float64() * total
		pick := len(sample) - 1
		for i, d := range dist {
			if r < d {
				pick = i
				break
			}
			r -= d
		}
		add(k, pick)
		for i := range sample {
			dist[i] = min(dist[i], max(0, 1-float64(sim(k, i))))
		}
		k++
	}
	if k < 2 {
		return k
	}
	cluster := s.cluster[:len(sample)]
	sims := s.sims[:k]
	counts := s.counts[:k]
	for iter := range p.KMeansIters {
		for i := range sample {
			clear(sims)
			for q := off[i]; q < off[i+1]; q++ {
				v, row := vl[q], C[int(bk[q])*K:][:k]
				for c := range sims {
					sims[c] += v * row[c]
				}
			}
			best := 0
			for c := 1; c < k; c++ {
				if sims[c] > sims[best] {
					best = c
				}
			}
			cluster[i] = int32(best)
		}
		if iter == p.KMeansIters-1 {
			break
		}
		// Update: each centroid becomes the normalised sum of its members;
		// a cluster left empty keeps its centroid.
		clear(counts)
		for _, c := range cluster {
			counts[c]++
		}
		for _, q := range touched {
			row := C[int(q)*K:][:k]
			for c := range row {
				if counts[c] > 0 {
					row[c] = 0
				}
			}
		}
		for i, c := range cluster {
			add(int(c), i)
		}
		for c := range k {
			if counts[c] == 0 {
				continue
			}
			var ss float64
			for _, q := range touched {
				v := C[int(q)*K+c]
				ss += float64(v) * float64(v)
			}
			if ss > 0 {
				inv := float32(1 / math.Sqrt(ss))
				for _, q := range touched {
					C[int(q)*K+c] *= inv
				}
			}
		}
	}
	return k
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
// feature-major (see model.Tree). Each cluster's accumulator is visited only
// where its own members have features, never over the union of all.
func (b *treeBuilder) classifier(sample []int32, k int) {
	s, p, t := b.s, b.p, b.tree
	dimX := p.DimX
	touched := s.touchC[:k]
	for c := range touched {
		touched[c] = touched[c][:0]
	}
	for i, id := range sample {
		c := int(s.cluster[i])
		acc, mark := s.accX[c*dimX:(c+1)*dimX], s.markC[c*dimX:(c+1)*dimX]
		idx, val := b.d.X.Row(int(id))
		inv := s.xInv[id]
		for q, j := range idx {
			d := s.xb[j]
			if !mark[d] {
				mark[d] = true
				touched[c] = append(touched[c], d)
			}
			acc[d] += s.xs[j] * val[q] * inv
		}
	}
	// Normalise each centroid, zero its entries below the kept magnitude
	// threshold, and collect the dimensions some centroid keeps.
	kept := s.touchX[:0]
	for c := range k {
		acc, mark := s.accX[c*dimX:(c+1)*dimX], s.markC[c*dimX:(c+1)*dimX]
		normalize(acc, touched[c])
		thresh := float32(0)
		ties := len(touched[c]) // entries equal to thresh that may still be kept
		if len(touched[c]) > p.CentroidKeep {
			mags := s.mags[:0]
			for _, d := range touched[c] {
				mags = append(mags, abs32(acc[d]))
			}
			slices.Sort(mags)
			thresh = mags[len(mags)-p.CentroidKeep]
			above := len(mags) - p.CentroidKeep
			for above < len(mags) && mags[above] == thresh {
				above++
			}
			ties = p.CentroidKeep - (len(mags) - above)
			s.mags = mags
		}
		// Ties at the threshold are kept in order of first appearance in
		// the sample, which is deterministic.
		for _, d := range touched[c] {
			mark[d] = false
			v := acc[d]
			m := abs32(v)
			if v == 0 || m < thresh || (m == thresh && ties == 0) {
				acc[d] = 0
				continue
			}
			if m == thresh {
				ties--
			}
			if !s.markX[d] {
				s.markX[d] = true
				kept = append(kept, d)
			}
		}
	}
	sortTouched(kept, s.markX)
	for _, d := range kept {
		count := uint8(0)
		for c := range k {
			v := model.ToBFloat16(s.accX[c*dimX+int(d)])
			s.accX[c*dimX+int(d)] = 0
			if v.Float32() != 0 {
				t.SplitChild = append(t.SplitChild, uint8(c))
				t.SplitWeight = append(t.SplitWeight, v)
				count++
			}
		}
		if count > 0 {
			t.SplitDim = append(t.SplitDim, d)
			t.SplitCount = append(t.SplitCount, count)
		}
	}
	s.touchX = kept
}

// sortTouched sorts the dimensions in touched and clears their marks: by
// sorting when they are few, by scanning the marks when they are many
// (cheaper than a comparison sort once more than a few percent are set).
func sortTouched(touched []int32, mark []bool) {
	if len(touched) < len(mark)/32 {
		for _, d := range touched {
			mark[d] = false
		}
		slices.Sort(touched)
		return
	}
	touched = touched[:0]
	for d, m := range mark {
		if m {
			touched = append(touched, int32(d))
			mark[d] = false
		}
	}
}

func abs32(v float32) float32 { return float32(math.Abs(float64(v))) }

// leaf appends the mean label vector of ids.
func (b *treeBuilder) leaf(ids []int32) {
	s, t := b.s, b.tree
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
