package runner

// Owner returns the rank that computes unit u among size ranks.
func Owner(u, size int) int { return u % size }

// OwnedUnits returns the units of rank among size ranks, in increasing order.
func OwnedUnits(units, rank, size int) []int {
	var own []int
	for u := rank; u < units; u += size {
		own = append(own, u)
	}
	return own
}
