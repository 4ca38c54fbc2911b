package plt

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	pltmodel "xmc/model/plt"
	"xmc/numa"
	"xmc/train/onevsall"
)

// nodeScratch is a worker's memory for training nodes: per row, the last
// gathering it was found in (gathered) and the last node it is positive
// for (positive); the parent's rows and the targets of the node in
// training, the dual variables, and the weights.
type nodeScratch struct {
	gathered, positive []int32
	gathers            int32 // the gatherings so far, which stamp gathered
	parent             int32 // the parent whose rows are in rows, -1: none
	rows               []int32
	y                  []float64
	alpha              []float64
	index              []int32
	// The parent's rows copied with their columns renumbered densely (in
	// order of first appearance): row i is idx, val[ptr[i]:ptr[i+1]] and
	// sq[i] its squared norm; local column c is the data's column cols[c],
	// and local[j] the local column of the data's column j (-1: none). The
	// weights w, over the local columns, and the rows are then small and
	// contiguous, which the passes over the rows read many times. The copy
	// holds up to every row, for the root's children.
	ptr   []int64
	idx   []int32
	val   []float32
	sq    []float64
	cols  []int32
	local []int32
	w     []float64
}

func newNodeScratch(rows, cols int) *nodeScratch {
	// Stamps start at 1 (gatherings) and at node 1 (the root is not
	// trained): zeroed slices hold none.
	s := &nodeScratch{gathered: make([]int32, rows), positive: make([]int32, rows), parent: -1, local: make([]int32, cols)}
	for j := range s.local {
		s.local[j] = -1
	}
	return s
}

// gather sets s.rows to the rows with a label below node v, increasing,
// and copies them, renumbered, into s.ptr, s.idx, s.val.
func gather(d *onevsall.Data, sh *shape, v int32, s *nodeScratch) {
	if s.parent == v {
		return
	}
	s.parent, s.rows = v, s.rows[:0]
	s.gathers++
	for _, l := range sh.order[sh.lo[v]:sh.hi[v]] {
		for _, r := range d.Positives(l) {
			if s.gathered[r] != s.gathers {
				s.gathered[r] = s.gathers
				s.rows = append(s.rows, r)
			}
		}
	}
	slices.Sort(s.rows)
	for _, j := range s.cols {
		s.local[j] = -1
	}
	s.cols, s.ptr, s.idx, s.val, s.sq = s.cols[:0], append(s.ptr[:0], 0), s.idx[:0], s.val[:0], s.sq[:0]
	for _, r := range s.rows {
		idx, val := d.X.Row(int(r))
		var sq float64
		for q, j := range idx {
			c := s.local[j]
			if c < 0 {
				c = int32(len(s.cols))
				s.local[j] = c
				s.cols = append(s.cols, j)
			}
			x := float64(val[q])
			s.idx, s.val = append(s.idx, c), append(s.val, val[q])
			sq += x * x
		}
		s.ptr, s.sq = append(s.ptr, int64(len(s.idx))), append(s.sq, sq)
	}
}

// piece is a run of siblings, nodes lo to hi-1, which one worker trains
// on their parent's rows, gathered once; cost is their rows added up.
type piece struct {
	lo, hi int32
	cost   int64
}

// pieceNodes is the largest run of siblings in a piece: a node's
// gathering copies its parent's rows once, its training reads them for
// each pass (about ten), so runs of 8 siblings keep the copying to about a
// hundredth, while splitting a node's 100 leaves among a dozen workers.
const pieceNodes = 8

// pieces splits the children of every node into pieces, most costly first,
// so that the workers start with the root's children, trained on every
// row, and end with small pieces. A piece costs at most a quarter of a
// worker's share of the whole, or holds one node: the two children of the
// root, which train on every row, go to two workers.
func (sh *shape) pieces(d *onevsall.Data, workers int) []piece {
	rows := make([]int64, sh.nodes()) // at most: the parent's labels' positives
	var total int64
	for v := range sh.nodes() {
		lo, hi := sh.childStart[v], sh.childStart[v+1]
		for _, l := range sh.order[sh.lo[v]:sh.hi[v]] {
			rows[v] += int64(len(d.Positives(l)))
		}
		total += rows[v] * int64(hi-lo)
	}
	most := max(1, total/int64(4*workers))
	var out []piece
	for v := range sh.nodes() {
		lo, hi := sh.childStart[v], sh.childStart[v+1]
		size := int32(min(pieceNodes, max(1, most/max(1, rows[v]))))
		for a := lo; a < hi; a += size {
			b := min(a+size, hi)
			out = append(out, piece{lo: a, hi: b, cost: rows[v] * int64(b-a)})
		}
	}
	slices.SortStableFunc(out, func(a, b piece) int { return cmp.Compare(b.cost, a.cost) })
	return out
}

// train trains the classifiers of every node of the shape but the root,
// each on its parent's rows, on the team's workers, and returns the tree.
func (t *trainer) train(team *numa.Team, u int, sh *shape) (*pltmodel.Tree, error) {
	n := sh.nodes()
	cols := t.p.Preprocess.Cols(t.data.Get(0).D)
	idx, val := make([][]int32, n), make([][]float32, n)
	scratches := numa.NewPerWorker(t.pool, func(numa.Worker) *nodeScratch { return newNodeScratch(t.data.Get(0).X.Rows, cols) })
	errs := make([]error, n)
	pieces := sh.pieces(t.data.Get(0), team.Workers())
	err := team.For(len(pieces), 1, func(w numa.Worker, i, _ int) {
		d, s := t.data.Get(w.Domain), scratches.Get(w)
		for v := pieces[i].lo; v < pieces[i].hi; v++ {
			idx[v], val[v], errs[v] = t.trainNode(d, sh, u, v, s)
		}
	})
	if err != nil {
		return nil, err
	}
	for v, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("node %d: %w", v, err)
		}
	}
	tree := &pltmodel.Tree{Cols: cols, ChildStart: sh.childStart, Label: sh.label, WStart: make([]int64, n+1)}
	for v := range n {
		tree.WStart[v+1] = tree.WStart[v] + int64(len(idx[v]))
	}
	tree.WIdx, tree.WVal = make([]int32, 0, tree.WStart[n]), make([]float32, 0, tree.WStart[n])
	for v := range n {
		tree.WIdx, tree.WVal = append(tree.WIdx, idx[v]...), append(tree.WVal, val[v]...)
	}
	t.nodes.Add(int64(n))
	t.weights.Add(tree.WStart[n])
	return tree, nil
}

// trainNode trains node v of tree u on its parent's rows: positive those
// with a label below v.
func (t *trainer) trainNode(d *onevsall.Data, sh *shape, u int, v int32, s *nodeScratch) ([]int32, []float32, error) {
	gather(d, sh, sh.parent[v], s)
	for _, l := range sh.order[sh.lo[v]:sh.hi[v]] {
		for _, r := range d.Positives(l) {
			s.positive[r] = v
		}
	}
	s.y = slices.Grow(s.y[:0], len(s.rows))[:len(s.rows)]
	for i, r := range s.rows {
		s.y[i] = -1
		if s.positive[r] == v {
			s.y[i] = 1
		}
	}
	rng := rand.New(rand.NewPCG(t.seed, stream(streamNode, u, uint64(v))))
	solve := t.logistic
	if t.p.Loss == pltmodel.SquaredHinge {
		solve = t.squaredHinge
	}
	passes, converged := solve(s, rng)
	t.passes.Add(int64(passes))
	if !converged {
		t.unconverged.Add(1)
	}
	// The weights kept, in the data's columns, increasing.
	bias := int32(-1)
	if t.p.Bias {
		bias = int32(d.D)
	}
	var idx []int32
	for c, wc := range s.w {
		if math.IsNaN(wc) || math.IsInf(wc, 0) {
			return nil, nil, fmt.Errorf("weight %v of column %d", wc, s.cols[c])
		}
		if math.Abs(wc) >= t.p.Prune || s.cols[c] == bias {
			idx = append(idx, s.cols[c])
		}
	}
	slices.Sort(idx)
	val := make([]float32, len(idx))
	for q, j := range idx {
		val[q] = float32(s.w[s.local[j]])
	}
	return idx, val, nil
}

// logistic minimises, over the rows s.rows with targets s.y (±1),
//
//	½‖w‖² + C Σ_i log(1 + exp(−y_i w·x_i))
//
// by LIBLINEAR's dual coordinate descent (Yu, Huang and Lin, Machine
// Learning 2011; LIBLINEAR's solve_l2r_lr_dual): each pass visits the rows
// in a random order and solves each one's dual variable by Newton's method
// on its one-variable subproblem, until the largest gradient of a pass is
// below Eps or after MaxIter passes. It leaves w in s.w (the columns it
// s.cols holds the data's columns) and returns the passes and whether it converged.
// It is written here because no Go library offers it; LIBLINEAR's C code
// would need cgo in every trainer's inner loop.
func (t *trainer) logistic(s *nodeScratch, rng *rand.Rand) (int, bool) {
	const (
		innerMax = 100 // Newton steps per variable
		shrink   = 0.1 // a step past the bound shrinks the variable by this
	)
	c, l := t.p.Cost, len(s.rows)
	s.w = slices.Grow(s.w[:0], len(s.cols))[:len(s.cols)]
	clear(s.w)
	s.alpha = slices.Grow(s.alpha[:0], 2*l)[:2*l]
	s.index = slices.Grow(s.index[:0], l)[:l]
	innerEps, innerEpsMin := 1e-2, min(1e-8, t.p.Eps)
	for i := range s.rows {
		s.alpha[2*i] = min(0.001*c, 1e-8)
		s.alpha[2*i+1] = c - s.alpha[2*i]
		s.addRow(i, s.y[i]*s.alpha[2*i])
		s.index[i] = int32(i)
	}
	for pass := 1; pass <= t.p.MaxIter; pass++ {
		rng.Shuffle(l, func(a, b int) { s.index[a], s.index[b] = s.index[b], s.index[a] })
		newton, gmax := 0, 0.0
		for _, ii := range s.index {
			i := int(ii)
			yi := s.y[i]
			a, b := s.sq[i], yi*s.dotRow(i)
			i1, i2, sign := 2*i, 2*i+1, 1.0
			if 0.5*a*(s.alpha[i2]-s.alpha[i1])+b < 0 {
				i1, i2, sign = i2, i1, -1
			}
			old := s.alpha[i1]
			z := old
			if c-z < 0.5*c {
				z *= 0.1
			}
			gp := a*(z-old) + sign*b + math.Log(z/(c-z))
			gmax = max(gmax, math.Abs(gp))
			inner := 0
			for ; inner <= innerMax && math.Abs(gp) >= innerEps; inner++ {
				gpp := a + c/(c-z)/z
				if next := z - gp/gpp; next <= 0 {
					z *= shrink
				} else {
					z = next
				}
				gp = a*(z-old) + sign*b + math.Log(z/(c-z))
			}
			newton += inner
			if inner > 0 {
				s.alpha[i1], s.alpha[i2] = z, c-z
				s.addRow(i, sign*(z-old)*yi)
			}
		}
		if gmax < t.p.Eps {
			return pass, true
		}
		if newton <= l/10 {
			innerEps = max(innerEpsMin, 0.1*innerEps)
		}
	}
	return t.p.MaxIter, false
}

// squaredHinge minimises, over the rows s.rows with targets s.y (±1),
//
//	½‖w‖² + C Σ_i max(0, 1 − y_i w·x_i)²
//
// by LIBLINEAR's dual coordinate descent with shrinking (Hsieh, Chang, Lin,
// Keerthi and Sundararajan, ICML 2008; LIBLINEAR's solve_l2r_l1l2_svc for
// the L2 loss): each pass visits the active rows in a random order and
// solves each one's dual variable exactly; a variable at its bound 0 whose
// gradient exceeds the last pass's largest projected gradient leaves the
// active rows. It ends when the projected gradients of a pass over every
// row span less than Eps, or after MaxIter passes. It leaves w in s.w and
// returns the passes and whether it converged. Written here for the reason
// logistic is.
func (t *trainer) squaredHinge(s *nodeScratch, rng *rand.Rand) (int, bool) {
	l := len(s.rows)
	diag := 0.5 / t.p.Cost
	s.w = slices.Grow(s.w[:0], len(s.cols))[:len(s.cols)]
	clear(s.w)
	s.alpha = slices.Grow(s.alpha[:0], l)[:l]
	clear(s.alpha)
	s.index = slices.Grow(s.index[:0], l)[:l]
	for i := range s.index {
		s.index[i] = int32(i)
	}
	active, pgMaxOld := l, math.Inf(1)
	for pass := 1; pass <= t.p.MaxIter; pass++ {
		pgMax, pgMin := math.Inf(-1), math.Inf(1)
		rng.Shuffle(active, func(a, b int) { s.index[a], s.index[b] = s.index[b], s.index[a] })
		for q := 0; q < active; q++ {
			i := int(s.index[q])
			yi := s.y[i]
			g := yi*s.dotRow(i) - 1 + s.alpha[i]*diag
			pg := g
			if s.alpha[i] == 0 {
				if g > pgMaxOld {
					active--
					s.index[q], s.index[active] = s.index[active], s.index[q]
					q--
					continue
				}
				pg = min(g, 0)
			}
			pgMax, pgMin = max(pgMax, pg), min(pgMin, pg)
			if math.Abs(pg) > 1e-12 {
				old := s.alpha[i]
				s.alpha[i] = max(old-g/(s.sq[i]+diag), 0)
				s.addRow(i, (s.alpha[i]-old)*yi)
			}
		}
		if pgMax-pgMin <= t.p.Eps {
			if active == l {
				return pass, true
			}
			active, pgMaxOld = l, math.Inf(1)
			continue
		}
		pgMaxOld = pgMax
		if pgMaxOld <= 0 {
			pgMaxOld = math.Inf(1)
		}
	}
	return t.p.MaxIter, false
}

// dotRow returns w·x_i of the node's row i.
func (s *nodeScratch) dotRow(i int) float64 {
	lo, hi := s.ptr[i], s.ptr[i+1]
	idx, val, w := s.idx[lo:hi], s.val[lo:hi], s.w
	val = val[:len(idx)]
	var sum float64
	for q, c := range idx {
		sum += float64(val[q]) * w[c]
	}
	return sum
}

// addRow adds a·x_i of the node's row i to w.
func (s *nodeScratch) addRow(i int, a float64) {
	lo, hi := s.ptr[i], s.ptr[i+1]
	idx, val, w := s.idx[lo:hi], s.val[lo:hi], s.w
	val = val[:len(idx)]
	for q, c := range idx {
		w[c] += a * float64(val[q])
	}
}
