package forest

import (
	"flag"
	"fmt"
	"hash/maphash"

	"xmc/data"
	forestmodel "xmc/model/forest"
	"xmc/numa"
	"xmc/runner"
	"xmc/train"
)

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

// New returns the Trainer of --algo forest, with the default hyper-parameters.
func New() train.Trainer { return &Trainer{p: DefaultParams(), grow: GrowAuto} }

// Flags registers the forest's hyper-parameters.
func (a *Trainer) Flags(fs *flag.FlagSet) {
	p := &a.p
	fs.IntVar(&p.Trees, "trees", p.Trees, "number of trees")
	fs.IntVar(&p.DimX, "dim-x", p.DimX, "projected feature dimension (buckets of the hashing trick); at least D keeps every feature apart (no hashing)")
	fs.IntVar(&p.DimY, "dim-y", p.DimY, "projected label dimension (buckets of the hashing trick); at least L keeps every label apart (no hashing)")
	fs.IntVar(&p.Sample, "sample", p.Sample, "instances sampled per node for k-means")
	fs.IntVar(&p.Branch, "branch", p.Branch, "children per node (k of the k-means)")
	fs.IntVar(&p.KMeansIters, "kmeans-iters", p.KMeansIters, "k-means passes per node")
	fs.IntVar(&p.CentroidKeep, "centroid-keep", p.CentroidKeep, "largest entries kept per child classifier")
	fs.Float64Var(&p.CentroidDrop, "centroid-drop", p.CentroidDrop, "share of each child classifier's squared norm that its smallest entries may carry "+
		"and be dropped, in children of at most --centroid-drop-rows sampled rows: a smaller model (docs/algorithms/forest.md); 0 keeps every entry")
	fs.IntVar(&p.CentroidDropRows, "centroid-drop-rows", p.CentroidDropRows, "the largest child, in sampled rows, whose classifier --centroid-drop thins")
	fs.BoolVar(&p.CompactWeights, "compact-weights", p.CompactWeights, "store each classifier weight in one byte (3 bits of mantissa) rather than two: "+
		"a smaller model, for some accuracy where rows have many features (docs/algorithms/forest.md)")
	fs.IntVar(&p.LeafSize, "leaf-size", p.LeafSize, "nodes with at most this many instances become leaves")
	fs.IntVar(&p.MaxDepth, "max-depth", p.MaxDepth, "maximum tree depth (0: unlimited)")
	fs.IntVar(&p.SplitRetries, "split-retries", p.SplitRetries, "more attempts of a split that sends every instance to one child, before the node becomes a leaf (CRAFTML: 5)")
	fs.StringVar(&a.grow, "grow", a.grow, "how a rank's workers grow its trees (the same trees): alone, a tree per worker, each with its own "+
		"projected copy of the data; together, every worker on each tree in turn, one copy per NUMA domain (less memory, some speed); "+
		"auto, together when the rank has fewer trees than workers or a copy per worker would take over a quarter of the free memory")
}

// Prepare checks the parameters and builds the replicas: a tree per unit.
func (a *Trainer) Prepare(env train.Env, ds *data.Dataset) (*train.Work, error) {
	p := a.p
	p.Seed = env.Seed
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if p.CentroidDrop == 0 {
		// Without a drop its bound does nothing: the model records neither.
		p.CentroidDropRows = 0
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
	w := &train.Work{Kind: forestmodel.Kind{}, Params: p, Units: p.Trees, Unit: t.Work, Help: t.Help, Schedule: runner.ScheduleStatic,
		Stats: func() map[string]float64 {
			return map[string]float64{"nodes_split_helping": float64(t.helpedNodes.Load()),
				"row_chunks_projected_helping": float64(t.helpedChunks.Load())}
		}}
	ranks, workers := env.Comm.Size(), len(env.Pool.Workers())
	perRank := (p.Trees + ranks - 1) / ranks
	copyBytes := treeRowsBytes(ds, p)
	if together, why := growTogether(a.grow, perRank, workers, copyBytes, env.Pool.MemAvailable()); together {
		w.Unit, w.Help, w.Stats, w.Team = nil, nil, nil, t.WorkTogether
		env.Log.Info("the workers of a rank grow each tree together", "why", why, "trees_per_rank", perRank, "workers", workers,
			"projected_copy_mib", copyBytes>>20)
	}
	return w, nil
}

// growTogether decides whether a rank's workers grow each tree together
// under --grow grow, with perRank trees for workers workers, a tree's
// projected rows taking copyBytes and available bytes of memory available
// (0: unknown), and says why. Under auto they do when a worker per tree
// would leave workers idle, or when a projected copy per worker would take
// more than a quarter of the available memory.
func growTogether(grow string, perRank, workers int, copyBytes, available uint64) (bool, string) {
	switch {
	case grow == GrowTogether:
		return true, "--grow together"
	case grow != GrowAuto:
		return false, ""
	case perRank < workers:
		return true, "fewer trees than workers"
	case available > 0 && uint64(workers)*copyBytes > available/4:
		return true, "a projected copy per worker would take over a quarter of the available memory"
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
