package runner

// Owner returns the rank that owns unit u among size ranks: the rank that
// computes it under the static schedule and in round mode, and the rank
// that scores with it when a model is loaded in parts. Units are dealt
// cyclically, so that when unit costs drift with the id every rank gets a
// similar mix.
func Owner(u, size int) int { return u % size }

// OwnedUnits returns the units among units that rank owns among size
// ranks, in increasing order.
func OwnedUnits(units, rank, size int) []int {
	var own []int
	for u := rank; u < units; u += size {
		own = append(own, u)
	}
	return own
}
