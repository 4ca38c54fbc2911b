// Package prox holds the proximal maps of the regularisers that the sparse
// linear trainers (PPDSparse, PD-Sparse) share.
package prox

// SoftThreshold is the proximal map of λ|·|, written without branches:
// in the update loop the sign of v is unpredictable.
func SoftThreshold(v, lambda float64) float64 {
	return v - min(max(v, -lambda), lambda)
}
