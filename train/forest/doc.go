// Package forest trains CRAFTML forests (Siblini et al., ICML 2018) as
// DXML does: each tree is grown on random projections of the features and
// labels, every node splitting its rows by a spherical k-means of their
// projected label vectors and keeping, as each child's classifier, the
// largest entries of its rows' projected feature centroid; leaves hold the
// mean label vector of their rows.
//
// A tree is a unit of work. A rank's workers grow its trees alone, a tree
// per worker with its own projected copy of the rows, or together, every
// worker on each tree in turn (see Trainer's --grow), with the same bytes
// either way. Package xmc/model/forest holds the trained model.
package forest
