// Package linear is the model of the one-vs-all linear trainers (DiSMEC,
// PPDSparse, least squares) and of the multi-class ones that keep a weight
// vector per class (PD-Sparse, MEMOIR): a sparse weight vector per label,
// stored a block of labels per unit (Block), the preprocessing of rows that
// training applied and prediction repeats (Preprocess), and the model that
// scores rows with its labels, whole or as the shard a rank holds (Model,
// Kind).
package linear
