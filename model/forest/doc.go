// Package forest is the model of a CRAFTML forest (Siblini et al., ICML
// 2018), as DXML trains it: how a trained tree is held (Tree), encoded in a
// model file's section and packed for prediction (PackedTree), how a node
// routes a row to a child (SplitIndex, BestDot), the hashing-trick
// projections of features and labels (Projection), and the forest that
// scores rows with its trees, whole or as the part a rank holds (Model,
// Kind).
//
// Package xmc/train/forest grows the trees.
package forest
