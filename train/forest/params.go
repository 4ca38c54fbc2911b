package forest

import (
	"fmt"

	forestmodel "xmc/model/forest"
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
	// SplitRetries is how many more times a node whose split sends every
	// instance to one child tries again, with a new sample, seeding and
	// label projection, before it becomes a leaf; CRAFTML tries 5 times.
	SplitRetries int `json:"split_retries"`
	// CompactWeights rounds the classifiers' weights to the 1-byte codes
	// of the tree encoding (forestmodel.RoundToCode) rather than to
	// bfloat16: a smaller forest, for some accuracy on data of many
	// features a row (docs/algorithms/forest.md).
	CompactWeights bool `json:"compact_weights,omitempty"`
	// CentroidDrop is the share of a child classifier's squared norm that
	// its smallest entries may carry and still be dropped (after the cut to
	// CentroidKeep), in the children of at most CentroidDropRows sampled
	// rows: the many light entries of the nodes of few rows are most of a
	// large tree's bytes, while a wrong turn there costs less than near the
	// root (docs/algorithms/forest.md). 0 keeps every entry.
	CentroidDrop     float64 `json:"centroid_drop,omitempty"`
	CentroidDropRows int     `json:"centroid_drop_rows,omitempty"`
}

// DefaultParams returns the defaults of CRAFTML's reference program: its
// default mode SXDY (a feature projection per tree, a label projection per
// node, both into 10,000 buckets), centroids normalised after they are cut
// to their largest entries, k-means++ seeding by D², and 5 retries of a
// split that leaves one child. One difference: a projection into at least
// as many buckets as columns is the identity with random signs rather than
// a hash (docs/algorithms/forest.md compares the two).
func DefaultParams() Params {
	return Params{Trees: 50, DimX: defaultProjectedDim, DimY: defaultProjectedDim, Sample: 20000, Branch: 10,
		KMeansIters: 5, CentroidKeep: 1000, CentroidDropRows: 256, LeafSize: 10, SplitRetries: 5}
}

// maxSplitRetries bounds SplitRetries: an attempt's number takes 8 bits of
// the seed of its node's label projection (see labelProjection).
const maxSplitRetries = 255

// defaultProjectedDim is the buckets of a projection unless set, CRAFTML's.
const defaultProjectedDim = 10000

// Validate reports the first parameter out of its range.
func (p Params) Validate() error {
	switch {
	case p.Trees < 1:
		return fmt.Errorf("--trees must be at least 1, got %d", p.Trees)
	case p.DimX < 1 || p.DimY < 1 || p.DimX > forestmodel.MaxProjectedDim || p.DimY > forestmodel.MaxProjectedDim:
		return fmt.Errorf("--dim-x and --dim-y must be between 1 and %d, got %d and %d", forestmodel.MaxProjectedDim, p.DimX, p.DimY)
	case p.Sample < 2:
		return fmt.Errorf("--sample must be at least 2, got %d", p.Sample)
	case p.Branch < 2 || p.Branch > forestmodel.MaxBranch:
		return fmt.Errorf("--branch must be between 2 and %d, got %d", forestmodel.MaxBranch, p.Branch)
	case p.KMeansIters < 1:
		return fmt.Errorf("--kmeans-iters must be at least 1, got %d", p.KMeansIters)
	case p.CentroidKeep < 1:
		return fmt.Errorf("--centroid-keep must be at least 1, got %d", p.CentroidKeep)
	case !(p.CentroidDrop >= 0 && p.CentroidDrop < 1):
		return fmt.Errorf("--centroid-drop must be at least 0 and below 1, got %g", p.CentroidDrop)
	case p.CentroidDrop > 0 && p.CentroidDropRows < 1:
		return fmt.Errorf("--centroid-drop-rows must be at least 1, got %d", p.CentroidDropRows)
	case p.LeafSize < 1:
		return fmt.Errorf("--leaf-size must be at least 1, got %d", p.LeafSize)
	case p.MaxDepth < 0:
		return fmt.Errorf("--max-depth must be 0 (unlimited) or more, got %d", p.MaxDepth)
	case p.SplitRetries < 0 || p.SplitRetries > maxSplitRetries:
		return fmt.Errorf("--split-retries must be 0 to %d, got %d", maxSplitRetries, p.SplitRetries)
	}
	return nil
}
