package mips

import (
	"encoding/binary"
	"math"
	"slices"
)

// Graph is a navigable small-world graph over the non-zero vectors of a
// Vectors with inner-product similarity (ip-NSW: Morozov and Babenko,
// "Non-metric Similarity Graphs for Maximum Inner Product Search", NeurIPS
// 2018; MEMOIR uses nmslib's SW-graph): each vector links to Degree others
// of large inner product with it, and a query walks the graph greedily from
// an entry vector, keeping the Ef best vectors seen. A vector joins the
// graph, or is relinked, by such a search for itself; as its vector keeps
// changing in training, it is relinked after 1, 2, 4, … changes since it
// was last linked, so that relinking costs O(log changes) searches per
// vector, while searches always score the vectors as they are.
type Graph struct {
	vec     *Vectors
	degree  int
	ef      int
	nbr     []int32      // per vector, Degree neighbours (−1: none)
	weight  []float64    // the inner product of each edge when it was made
	linked  []bool       // in the graph
	changes []int32      // per vector, changes since it was last linked
	due     []int32      // per vector, the changes that relink it
	entry   int32        // the entry vector (−1: empty graph)
	entryN  float64      // its squared norm when chosen
	sc      GraphScratch // Link's
}

// NewGraph returns an empty graph over vec (whose vectors must all be zero,
// or be linked by Link) with the given out-degree and search width.
func NewGraph(vec *Vectors, degree, ef int) *Graph {
	n := vec.Len()
	g := &Graph{vec: vec, degree: degree, ef: max(ef, 1), nbr: make([]int32, n*degree), weight: make([]float64, n*degree),
		linked: make([]bool, n), changes: make([]int32, n), due: make([]int32, n), entry: -1}
	for i := range g.nbr {
		g.nbr[i] = -1
	}
	for k := range n {
		if !vec.IsZero(k) {
			g.Link(k)
		}
	}
	return g
}

// Bytes is the memory the graph holds beyond its vectors.
func (g *Graph) Bytes() int {
	return 12*len(g.nbr) + 9*len(g.linked)
}

// Changed tells the graph that vector k changed; it relinks k when due.
func (g *Graph) Changed(k int) {
	if g.vec.IsZero(k) {
		return // a zero vector scores 0 for every query: searches skip it
	}
	if sq := g.vec.SquaredNorm(k); g.entry < 0 || sq > g.entryN {
		// The longest vector is a good entry for inner products.
		g.entry, g.entryN = int32(k), sq
	}
	g.changes[k]++
	if !g.linked[k] || g.changes[k] >= g.due[k] {
		g.Link(k)
	}
}

// Scale tells the graph that every vector was multiplied by f > 0 (as by
// Vectors.Scale).
func (g *Graph) Scale(f float64) {
	g.entryN *= f * f
	for i := range g.weight {
		g.weight[i] *= f * f
	}
}

// Link (re)links vector k: its neighbours become the Degree vectors of
// largest inner product with it that a search finds, and each of them links
// back to k in place of its weakest edge when k is stronger.
func (g *Graph) Link(k int) {
	g.due[k], g.changes[k] = max(2*g.due[k], 1), 0
	if !g.linked[k] {
		g.linked[k] = true
		if g.entry < 0 {
			g.entry, g.entryN = int32(k), g.vec.SquaredNorm(k)
		}
	}
	idx, val := g.vec.Vector(k)
	found := g.search(func(j int) float64 { return mergeDot(g.vec.idx[j], g.vec.val[j], idx, val) }, []int{k}, &g.sc)
	nb, wt := g.nbr[k*g.degree:(k+1)*g.degree], g.weight[k*g.degree:(k+1)*g.degree]
	for i := range nb {
		nb[i], wt[i] = -1, math.Inf(-1)
	}
	for i, c := range found[:min(len(found), g.degree)] {
		nb[i], wt[i] = int32(c.k), c.score
		// The back edge, in place of c's weakest one.
		cn, cw := g.nbr[c.k*g.degree:(c.k+1)*g.degree], g.weight[c.k*g.degree:(c.k+1)*g.degree]
		if slices.Contains(cn, int32(k)) {
			continue
		}
		weak := 0
		for e := range cn {
			if cn[e] < 0 {
				weak = e
				break
			}
			if cw[e] < cw[weak] {
				weak = e
			}
		}
		if cn[weak] < 0 || cw[weak] < c.score {
			cn[weak], cw[weak] = int32(k), c.score
		}
	}
}

// Search returns the vector of greatest inner product with x that the walk
// finds, other than those of skip (ties to the lower), with its inner
// product and the number of vectors scored; ok is false for an empty graph.
// Searches may run at once, each with its own scratch, but not with Link
// or Changed.
func (g *Graph) Search(xi []int32, xv []float32, skip []int, s *GraphScratch) (best int, score float64, scored int, ok bool) {
	s.query.set(xi, xv)
	defer s.query.clear(xi)
	found := g.search(func(j int) float64 { return g.vec.dotScattered(j, xi, xv, s.query.dense) }, skip, s)
	if len(found) == 0 {
		return -1, math.Inf(-1), s.scored, false
	}
	return found[0].k, found[0].score, s.scored, true
}

// GraphScratch is a searcher's memory, one per goroutine: it may serve
// several graphs in turn.
type GraphScratch struct {
	stamp   []uint32
	now     uint32
	cand    candHeap
	results []scored
	scored  int
	query   scattered
}

type scored struct {
	k     int
	score float64
}

// candHeap is a max-heap of candidates by score, by hand rather than by
// container/heap, whose interface boxes every pushed candidate.
type candHeap []scored

func (h *candHeap) push(c scored) {
	*h = append(*h, c)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if a[p].score >= a[i].score {
			break
		}
		a[p], a[i] = a[i], a[p]
		i = p
	}
}

func (h *candHeap) pop() scored {
	a := *h
	top := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a = a[:n]
	for i := 0; ; {
		l, best := 2*i+1, i
		if l < n && a[l].score > a[best].score {
			best = l
		}
		if l+1 < n && a[l+1].score > a[best].score {
			best = l + 1
		}
		if best == i {
			break
		}
		a[i], a[best] = a[best], a[i]
		i = best
	}
	*h = a
	return top
}

// search walks the graph best first from the entry, scoring vectors by
// score, and returns up to ef best vectors not in skip, best first (ties
// to the lower vector).
func (g *Graph) search(score func(int) float64, skip []int, s *GraphScratch) []scored {
	ef := g.ef
	s.scored = 0
	s.results = s.results[:0]
	if g.entry < 0 {
		return nil
	}
	if len(s.stamp) < g.vec.Len() {
		s.stamp, s.now = make([]uint32, g.vec.Len()), 0
	}
	s.now++
	if s.now == 0 {
		clear(s.stamp)
		s.now = 1
	}
	s.cand = s.cand[:0]
	visit := func(k int) {
		if s.stamp[k] == s.now {
			return
		}
		s.stamp[k] = s.now
		sc := score(k)
		s.scored++
		s.cand.push(scored{k, sc})
		if !slices.Contains(skip, k) {
			s.results = insertBest(s.results, scored{k, sc}, ef)
		}
	}
	visit(int(g.entry))
	for len(s.cand) > 0 {
		c := s.cand.pop()
		if len(s.results) == ef && c.score < s.results[len(s.results)-1].score {
			break // nothing better to be reached from here
		}
		for _, j := range g.nbr[c.k*g.degree : (c.k+1)*g.degree] {
			if j >= 0 && !g.vec.IsZero(int(j)) {
				visit(int(j))
			}
		}
	}
	return s.results
}

// insertBest inserts c into rs, kept best first and at most ef long.
func insertBest(rs []scored, c scored, ef int) []scored {
	better := func(a, b scored) bool { return a.score > b.score || (a.score == b.score && a.k < b.k) }
	if len(rs) == ef && !better(c, rs[len(rs)-1]) {
		return rs
	}
	if len(rs) < ef {
		rs = append(rs, c)
	} else {
		rs[len(rs)-1] = c
	}
	for i := len(rs) - 1; i > 0 && better(rs[i], rs[i-1]); i-- {
		rs[i], rs[i-1] = rs[i-1], rs[i]
	}
	return rs
}

// AppendBinary appends the graph's state: its edges, their weights, and
// each vector's relinking schedule.
func (g *Graph) AppendBinary(b []byte) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(g.entry))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(g.entryN))
	for i, j := range g.nbr {
		b = binary.LittleEndian.AppendUint32(b, uint32(j))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(g.weight[i]))
	}
	for k := range g.linked {
		l := uint32(0)
		if g.linked[k] {
			l = 1
		}
		b = binary.LittleEndian.AppendUint32(b, l)
		b = binary.LittleEndian.AppendUint32(b, uint32(g.changes[k]))
		b = binary.LittleEndian.AppendUint32(b, uint32(g.due[k]))
	}
	return b
}

// DecodeGraph rebuilds the graph that AppendBinary encoded over vec, from
// the start of b, and returns the rest of b.
func DecodeGraph(vec *Vectors, degree, ef int, b []byte) (*Graph, []byte, error) {
	n := vec.Len()
	need := 12 + 12*n*degree + 12*n
	if len(b) < need {
		return nil, nil, errTruncated
	}
	g := &Graph{vec: vec, degree: degree, ef: max(ef, 1), nbr: make([]int32, n*degree), weight: make([]float64, n*degree),
		linked: make([]bool, n), changes: make([]int32, n), due: make([]int32, n)}
	g.entry = int32(binary.LittleEndian.Uint32(b))
	g.entryN = math.Float64frombits(binary.LittleEndian.Uint64(b[4:]))
	p := b[12:]
	for i := range g.nbr {
		g.nbr[i] = int32(binary.LittleEndian.Uint32(p))
		g.weight[i] = math.Float64frombits(binary.LittleEndian.Uint64(p[4:]))
		if g.nbr[i] < -1 || int(g.nbr[i]) >= n {
			return nil, nil, errTruncated
		}
		p = p[12:]
	}
	for k := range n {
		g.linked[k] = binary.LittleEndian.Uint32(p) == 1
		g.changes[k] = int32(binary.LittleEndian.Uint32(p[4:]))
		g.due[k] = int32(binary.LittleEndian.Uint32(p[8:]))
		p = p[12:]
	}
	if g.entry < -1 || int(g.entry) >= n {
		return nil, nil, errTruncated
	}
	return g, b[need:], nil
}
