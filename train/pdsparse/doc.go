// Package pdsparse trains PD-Sparse (Yen, Huang, Zhong, Ravikumar and
// Dhillon, ICML 2016): a multi-class (and multi-label) max-margin model
// with L1 and L2 regularisation, one sparse weight vector per class,
// trained by the primal-dual sparse dual block-coordinate method.
//
// Ranks own blocks of classes and train in synchronous rounds of a batch
// of rows: every rank searches the batch's rows against its classes'
// weights, the ranks exchange what each row's search found (its scores
// and most violating classes), each row's dual variables are solved over
// its active set, and each rank applies the steps to its own classes'
// weights. The weights do not depend on the number of ranks or threads.
package pdsparse
