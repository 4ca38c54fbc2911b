package runner

import "xmc/model"

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

// StaticShard describes the shard of a model of units units along axis
// written by rank among size ranks that hold the units they own.
func StaticShard(rank, size, units int, axis string) *model.ShardInfo {
	return &model.ShardInfo{Rank: rank, Ranks: size, Axis: axis, Lo: int64(rank), Hi: int64(units), Stride: int64(size)}
}
