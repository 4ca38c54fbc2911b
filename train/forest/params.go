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
