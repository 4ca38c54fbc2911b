package pdsparse

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"sync/atomic"

	"xmc/data"
	"xmc/mpi"
	"xmc/numa"
	"xmc/train"
	"xmc/train/internal/prox"
)

// dualVar is a class of a row's active set and its dual variable:
// α ≥ 0 for the row's labels, α ≤ 0 for the others; and the rank that owns
// the class, where it lies at hand (a row's solution goes to its classes'
// ranks, and a lookup in ownerOf per class missed the cache), in the bytes
// that the alignment of α leaves.
type dualVar struct {
	class, owner int32
	alpha        float64
}

// weightPlace is the weight of a class (local id) on a feature: its dual sum
// v, whose weight is prox_λ(v) (roundTrainer.weight), and, where the weights
// are kept in lists rather than dense, its index in the feature's list of
// non-zero weights (-1: not listed). The lists do not keep the weight in
// the place: a place of 16 bytes rather than 24 let more of a step's
// places stay in cache.
type weightPlace struct {
	v      float64
	class  int32
	listed int32
}

// listedWeight is a non-zero weight of a feature as the search reads it: the
// class (local id), its place in the feature's lists and the weight.
type listedWeight struct {
	class, place int32
	w            float64
}

// roundTrainer is the runner.RoundTrainer of Params.
type roundTrainer struct {
	p      Params
	comm   mpi.Comm
	x, y   data.CSR  // the preprocessed rows and their labels
	sq     []float64 // ‖x_i‖²
	blocks [][]int32
	order  *train.EpochBatches // the rows of every round
	// fill is the classes with a positive in a seeded random order: a
	// row whose search finds fewer violators than MaxSelect tries the
	// first classes of it that score 0, as the reference program does.
	fill    []int32
	fillPos []int32 // per class, its place in fill (-1: none)

	// The owned classes' weights, by feature: places[j] holds feature j's
	// (class, dual sum, weight) places and at gives the place of class c
	// in it. nz[j·parts + share] lists the non-zero weights of a share of
	// the classes, in no order, with their class and place, side by side
	// for the search, which reads nothing else.
	owned  []int
	local  []int32 // per class: its local id on this rank, or -1
	global []int32 // per local id: its class
	places [][]weightPlace
	nz     [][]listedWeight
	at     placeTable
	// dense, when the rank's features × classes are at most
	// denseWeightLimit (denseWeightLimit but in tests), holds the weights
	// in place of nz and at: every pair has a place, at its class.
	dense            *denseWeights
	denseWeightLimit int
	// denseLimit is the most pairs of a dense place table (see
	// newPlaceTable).
	denseLimit int
	// ownFill is the owned classes in the order of fill, ownSorted in
	// increasing order.
	ownFill, ownSorted []int32
	// parts is the number of shares of the owned classes that a row's
	// search is split into where a round has too few rows for the workers
	// (see searchParts): partOf gives a local class's share, partFill each
	// share's classes in the order of fill, and the weights' lists are by
	// feature and share, nz[j·parts + share]. wantParts, if not 0, sets
	// parts (tests).
	parts, wantParts int
	partOf           []uint8
	partFill         [][]int32

	// act is each row's active set, in the order its solutions keep: the
	// whole set on the row's home rank (see home), which solves the row;
	// on the other ranks, the variables of their own classes alone, which
	// they report the scores of and step. ownerOf is each class's rank,
	// the owner a variable carries (dualVar.owner) when it is made from a
	// row's labels or a checkpoint.
	act     [][]dualVar // per row
	ownerOf []int32
	// The state that every rank holds alike.
	epochs int
	// bestAcc is the best held-out accuracy so far (−1 before the first),
	// sinceBest the epochs since it improved.
	bestAcc   float64
	sinceBest int
	// bestWt is, with --heldout, the weights of the epoch of best
	// held-out accuracy, by feature and place as places (shorter lists:
	// zeros after); the model is made of them.
	bestWt [][]float64
	// rounds, reportBytes and solutionBytes count this run's rounds and
	// the bytes of the reports and of the solutions this rank received,
	// for the log.
	rounds                     int
	reportBytes, solutionBytes int64
	phases                     roundPhases
	// curv holds the round's rows' curvature bounds (see curvature.go).
	curv curvatures
	// duals is the dual objective at the end of each epoch of this run
	// (see dualObjective).
	duals []float64

	// The held-out rows (none without --heldout), preprocessed, and their
	// labels; log takes a line at the end of every epoch.
	held, heldY data.CSR
	log         *slog.Logger

	// Scratch. The pool's workers run the rounds' loops as team, held
	// together for the rounds (see Round).
	pool      *numa.Pool
	team      *numa.Team
	searchers *numa.PerWorker[*searcher]
	batch     train.BatchReports
	// finds holds a round's pieces of search (see searchPiece).
	finds []pieceFind
	msg   []byte
	// blockSums is dualObjective's, a sum per block of features or rows.
	blockSums []float64
	// toHomes gives each rank every rank's reports of the round's rows it
	// is the home of, homeCounts being the bytes of the reports for each;
	// toSolvers every rank's reports of its share of the held-out rows.
	toHomes    train.AllToAll
	homeCounts []int
	toSolvers  train.RowShares
	entries    []train.RoundEntry
	steppers   *numa.PerWorker[*stepper]
	// solving is, where ranks share the classes, the rows of the round
	// this rank solves; solutions sends each rank the new variables of
	// its classes, toOwners[r] being those for rank r, and solved holds
	// the active sets (whole, or a rank's classes' part) for rowSteps.
	// rowSteps is the round's rows with a step to take.
	solving     []rowStep
	solutions   train.AllToAll
	toOwners    [][]byte
	ownerCounts []int
	sentRow     []int   // per rank, the last row of solving sent to it
	dests       []int32 // the ranks a row's solution goes to
	solved      []dualVar
	rowSteps    []rowStep
	// ordered and stepOf are decodeSolutions' scratch for putting the
	// steps in row order.
	ordered []rowStep
	stepOf  []int32
	ahead   float64 // what readActive read ahead, summed
	// shards splits the features into shardsPerWorker ranges per worker, of
	// about equal non-zeros: a worker applies the round's steps to the
	// weights of a range of features (shards[s] to shards[s+1]), in a round of
	// at least parallelAdds additions (parallelStepAdds but in tests).
	shards       []int32
	parallelAdds int
	// taken flags the rows of rowSteps whose steps are taken, and
	// takenRows counts them, where the round's loop that takes them applies
	// the shards too (see applyWhenTaken; applyApart, in tests, keeps them
	// apart); stepRows is, where ranks share the classes, each one's row;
	// stepIndex is 0, 1, 2, ...: every row of rowSteps, for apply.
	taken      []takenFlag
	takenRows  atomic.Int32
	stepRows   []int32
	stepIndex  []int32
	applyApart bool
}

// stepper is a worker's memory for the steps of a round's rows: its
// scratch for their subproblems, and the moves they found.
type stepper struct {
	// entries is a rank alone's scratch for a row's entries, decoded
	// from its report (see solveReported).
	entries            []train.RoundEntry
	add, fill          []train.RoundEntry
	known              []train.RoundEntry // a row's active classes' scores, by class (solution)
	scores, b, c, x, y []float64
	// active is a row's active set with the classes that join it, next
	// the new active sets of the rows this worker solved in the round.
	active, next []dualVar
	// adds and at are applyLists' additions and their pairs' places;
	// ahead and touched sum what it read ahead; applied is the rows of
	// rowSteps whose steps applyWhenTaken applies to a shard.
	applied []int32
	adds    []stepAddition
	at      []int32
	touched float64
	ahead   uint64
	simplex simplexScratch
	// absSum is boundCurvatures' sum of a class's rows' absolute values,
	// by feature (0 between uses).
	absSum []float64
	moves  []dualMove
	// cuts holds, for each row of the round with moves, where the row's
	// features enter each feature shard (see rowStep.cuts).
	cuts  []int32
	round int // the round moves and cuts belong to
}

// dualMove is a step of a row's dual variable for an owned class: d added to
// α for local class c.
type dualMove struct {
	c int32
	d float64
}

// rowStep is a row of the round (the q-th of its batch): its entries,
// t.entries[lo:hi] (where the rank solves it and is not alone); its new
// active set, next[nlo:nhi] of stepper st where this rank solved it (empty:
// unchanged), t.solved[nlo:nhi] where it came in the round's solutions; and
// the moves its step found (in the stepper's memory, which its worker only
// appends to in the round), or the error it met. For a row with moves, idx
// and val are its features and cuts[s] the first of them in feature shard s
// (len(t.shards) cuts), so that applying the row's steps to a shard costs
// no search.
type rowStep struct {
	q, lo, hi int
	st        *stepper
	nlo, nhi  int
	moves     []dualMove
	idx       []int32
	val       []float32
	cuts      []int32
	err       error
}

// takenFlag holds the last round in which a row's step was taken (see
// applyWhenTaken), alone in its cache line: the workers that take the
// rows' steps set them while the workers applying shards read them, and a
// round stamp needs no clearing between rounds.
type takenFlag struct {
	atomic.Int64
	_ [56]byte
}

// unitMultiple is what the number of units is rounded up to a multiple of
// (see unitCount).
const unitMultiple = 64

// classesPerUnit is the default classes of a unit for l classes: enough
// units (64) that a small class set spreads over the ranks, and at most
// 256 classes a unit (docs/algorithms/pdsparse.md gives the measurements).
func classesPerUnit(l int) int { return min(256, max(1, (l+63)/64)) }

// unitCount is the number of units the labeled classes (those with a positive)
// are dealt into, with at most perUnit classes each: the fewest such,
// rounded up to a multiple of unitMultiple (each class its own unit where
// there are fewer classes). Ranks own units cyclically for the whole run
// and wait on the busiest at every round, so a count that 2, 4, ... 64
// ranks divide wastes none of them: 73 units, wordnet-mc's by size alone,
// give 16 ranks 5 units or 4, and keep 9% of their time idle. The weights
// do not depend on the units.
func unitCount(labeled, perUnit int) int {
	n := (labeled + perUnit - 1) / perUnit
	return min(labeled, (n+unitMultiple-1)/unitMultiple*unitMultiple)
}

// newRoundTrainer returns the round trainer of the parameters p, whose
// data-dependent defaults are filled (forData), on the rows ds.
func newRoundTrainer(p Params, ds *data.Dataset, comm mpi.Comm, pool *numa.Pool) (*roundTrainer, error) {
	if ds.N() == 0 {
		return nil, errors.New("pdsparse: no training rows")
	}
	t := &roundTrainer{p: p, comm: comm, pool: pool, x: p.Apply(&ds.X), y: ds.Y.Clone(), denseLimit: placeDenseLimit,
		denseWeightLimit: denseWeightLimit, parallelAdds: parallelStepAdds}
	t.sq = make([]float64, t.x.Rows)
	for i := range t.x.Rows {
		_, val := t.x.Row(i)
		for _, v := range val {
			t.sq[i] += float64(v) * float64(v)
		}
	}
	counts := data.LabelCounts(&t.y)
	// Units of like work: the classes dealt by frequency in turn (see
	// train.DealtBlocks and unitCount).
	labeled := 0
	for _, c := range counts {
		if c > 0 {
			labeled++
		}
	}
	t.blocks = train.DealtBlocks(counts, unitCount(labeled, t.p.ClassesPerUnit))
	t.order = train.NewEpochBatches(t.x.Rows, p.BatchSize, p.Seed)
	for l, c := range counts {
		if c > 0 {
			t.fill = append(t.fill, int32(l))
		}
	}
	rng := rand.New(rand.NewPCG(data.SplitMix64(p.Seed^0x5bd1e995), 7))
	rng.Shuffle(len(t.fill), func(i, j int) { t.fill[i], t.fill[j] = t.fill[j], t.fill[i] })
	t.fillPos = make([]int32, t.y.Cols)
	for l := range t.fillPos {
		t.fillPos[l] = -1
	}
	for q, l := range t.fill {
		t.fillPos[l] = int32(q)
	}
	return t, nil
}

// Start sets up the owned classes and the active sets, fresh or from their
// saved state.
func (t *roundTrainer) Start(units []int, _ int, state [][]byte, shared []byte) error {
	t.own(units)
	if err := t.findOwners(units); err != nil {
		return err
	}
	t.newWeights()
	t.splitSearch(searchParts(len(t.pool.Workers()), t.p.BatchSize, len(t.global), t.dense != nil, t.wantParts))
	k := len(t.global)
	t.searchers = numa.NewPerWorker(t.pool, func(numa.Worker) *searcher { return newSearcher(k) })
	t.steppers = numa.NewPerWorker(t.pool, func(numa.Worker) *stepper { return &stepper{round: -1} })
	t.shards = featureShards(&t.x, shardsPerWorker*len(t.pool.Workers()))
	t.act = make([][]dualVar, t.x.Rows)
	t.epochs, t.bestAcc, t.sinceBest, t.bestWt = 0, -1, 0, nil
	for i := range t.act {
		labels, _ := t.y.Row(i)
		for _, l := range labels {
			t.act[i] = t.keepVar(int32(i), t.act[i], l, 0)
		}
	}
	if state != nil {
		for q, u := range units {
			if err := t.loadUnit(u, state[q]); err != nil {
				return err
			}
		}
	}
	if shared != nil {
		if err := t.loadShared(shared); err != nil {
			return err
		}
	}
	return nil
}

// findOwners sets t.ownerOf from every rank's units, units being this
// rank's: the ranks all-gather their unit numbers.
func (t *roundTrainer) findOwners(units []int) error {
	msg := make([]byte, 0, 4*len(units))
	for _, u := range units {
		msg = binary.LittleEndian.AppendUint32(msg, uint32(u))
	}
	parts, err := t.comm.Allgatherv(msg, nil)
	if err != nil {
		return fmt.Errorf("pdsparse: the ranks' units: %w", err)
	}
	t.ownerOf = make([]int32, t.y.Cols)
	for l := range t.ownerOf {
		t.ownerOf[l] = -1
	}
	for r, part := range parts {
		for ; len(part) >= 4; part = part[4:] {
			u := int(binary.LittleEndian.Uint32(part))
			if u >= len(t.blocks) {
				return fmt.Errorf("pdsparse: rank %d owns unit %d of %d", r, u, len(t.blocks))
			}
			for _, l := range t.blocks[u] {
				t.ownerOf[l] = int32(r)
			}
		}
	}
	return nil
}

// home returns the rank that solves row i, and keeps its whole active set:
// the rows in turn, so that each rank solves about as many rows of each
// round, and keeps as many rows' active sets.
func (t *roundTrainer) home(i int32) int { return int(i) % t.comm.Size() }

// keepVar appends class l's variable of α alpha to active, row i's
// variables on this rank, if this rank keeps it: on row i's home, every
// variable; elsewhere, those of its own classes.
func (t *roundTrainer) keepVar(i int32, active []dualVar, l int32, alpha float64) []dualVar {
	if t.local[l] >= 0 || t.home(i) == t.comm.Rank() {
		active = append(active, dualVar{class: l, owner: t.ownerOf[l], alpha: alpha})
	}
	return active
}

// own numbers the classes of units, the rank's, with local ids in order,
// and lists them in increasing order and in the order of fill.
func (t *roundTrainer) own(units []int) {
	t.owned = units
	t.local = make([]int32, t.y.Cols)
	for l := range t.local {
		t.local[l] = -1
	}
	var classes []int32
	for _, u := range units {
		for _, l := range t.blocks[u] {
			t.local[l] = int32(len(classes))
			classes = append(classes, l)
		}
	}
	t.global = classes
	t.ownSorted = slices.Sorted(slices.Values(classes))
	t.ownFill = t.ownFill[:0]
	for _, l := range t.fill {
		if t.local[l] >= 0 {
			t.ownFill = append(t.ownFill, l)
		}
	}
}

// newWeights makes the owned classes' weights, all zero: dense when the
// rank's features × classes are at most denseWeightLimit, every pair with
// its place at its class, else in lists with a table of places.
func (t *roundTrainer) newWeights() {
	k := len(t.global)
	t.places = make([][]weightPlace, t.x.Cols)
	t.nz, t.at, t.dense = nil, placeTable{}, nil
	if t.x.Cols*k > t.denseWeightLimit {
		t.at = newPlaceTable(t.x.Cols, k, t.denseLimit)
		return
	}
	t.dense = newDenseWeights(t.x.Cols, k)
	all := make([]weightPlace, t.x.Cols*k)
	for j := range t.places {
		t.places[j] = all[j*k : (j+1)*k : (j+1)*k]
		for c := range t.places[j] {
			t.places[j][c] = weightPlace{class: int32(c), listed: -1}
		}
	}
}

// loadUnit loads the saved state b of unit u: its (feature, class, v)
// records of dual sums, and of the best epoch's weights.
func (t *roundTrainer) loadUnit(u int, b []byte) error {
	if len(b)%16 != 0 {
		return fmt.Errorf("unit %d: state of %d bytes, not whole (feature, class, v) records", u, len(b))
	}
	for ; len(b) > 0; b = b[16:] {
		fj, l := binary.LittleEndian.Uint32(b), int32(binary.LittleEndian.Uint32(b[4:]))
		j := int32(fj &^ bestRecord)
		v := math.Float64frombits(binary.LittleEndian.Uint64(b[8:]))
		if j < 0 || int(j) >= t.x.Cols || l < 0 || int(l) >= t.y.Cols || t.local[l] < 0 {
			return fmt.Errorf("unit %d: state names feature %d and class %d", u, j, l)
		}
		if fj&bestRecord == 0 {
			t.add(j, t.local[l], v)
			continue
		}
		// A weight of the best epoch's model: its place exists, as the
		// record of its dual sum comes first.
		e := t.placeOf(j, t.local[l])
		if e < 0 {
			return fmt.Errorf("unit %d: best weight of feature %d and class %d without its dual sum", u, j, l)
		}
		if t.bestWt == nil {
			t.bestWt = make([][]float64, t.x.Cols)
		}
		if len(t.bestWt[j]) <= int(e) {
			t.bestWt[j] = append(t.bestWt[j], make([]float64, int(e)+1-len(t.bestWt[j]))...)
		}
		t.bestWt[j][e] = v
	}
	return nil
}

// add adds v to the dual sum of local class c on feature j.
func (t *roundTrainer) add(j, c int32, v float64) {
	t.addAt(j, c, t.placeOf(j, c), v)
}

// placeOf returns the place of local class c in feature j's places: c
// itself with dense weights, else the table's entry, or -1 if it has none.
func (t *roundTrainer) placeOf(j, c int32) int32 {
	if t.dense != nil {
		return c
	}
	if e, ok := t.at.get(j, c); ok {
		return e
	}
	return -1
}

// addAt is add with the place e of the pair (-1: none yet) looked up.
func (t *roundTrainer) addAt(j, c, e int32, v float64) {
	if e < 0 {
		e = int32(len(t.places[j]))
		t.at.put(j, c, e)
		t.places[j] = append(t.places[j], weightPlace{class: c, listed: -1})
	}
	p := &t.places[j][e]
	p.v += v
	w := t.weight(p)
	if t.dense != nil {
		t.dense.set(j, c, w)
		return
	}
	nz := &t.nz[int(j)*t.parts+int(t.partOf[c])]
	switch k := p.listed; {
	case w != 0 && k >= 0:
		(*nz)[k].w = w
	case w != 0:
		p.listed = int32(len(*nz))
		*nz = append(*nz, listedWeight{class: c, place: e, w: w})
	case k >= 0:
		// Zero: out of the list, whose last entry takes its slot.
		list := *nz
		last := list[len(list)-1]
		list[k] = last
		t.places[j][last.place].listed = k
		*nz = list[:len(list)-1]
		p.listed = -1
	}
}

// weight returns the weight of place p: prox_λ(v).
func (t *roundTrainer) weight(p *weightPlace) float64 {
	return prox.SoftThreshold(p.v, t.p.Lambda)
}
