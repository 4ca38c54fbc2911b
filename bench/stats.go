package bench

import (
	"math"
	"slices"
)

// Stat summarises repeated measurements of one quantity: the median, which
// one slow run (a noisy neighbour, a cold page cache) does not move, and the
// range, which shows how noisy the machine was.
type Stat struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
}

// Describe returns the Stat of xs, or the zero Stat when xs is empty. It
// does not modify xs.
func Describe(xs []float64) Stat {
	if len(xs) == 0 {
		return Stat{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return Stat{Median: sortedMedian(s), Min: s[0], Max: s[len(s)-1], N: len(s)}
}

// Median returns the median of xs, the mean of the two middle values for an
// even count, and 0 when xs is empty. It does not modify xs.
func Median(xs []float64) float64 { return Describe(xs).Median }

func sortedMedian(s []float64) float64 {
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Spread is the range relative to the median, (max-min)/median: 0.05 means
// the runs varied by 5% of the typical time. It is 0 when the median is 0.
func (s Stat) Spread() float64 {
	if s.Median == 0 {
		return 0
	}
	return (s.Max - s.Min) / s.Median
}

// Speedup returns base/t, how many times faster a time t is than the
// baseline time base. It is 0 when either time is not positive (a phase
// that did not run), so that a missing phase never looks like a speedup.
func Speedup(base, t float64) float64 {
	if base <= 0 || t <= 0 || math.IsNaN(base) || math.IsNaN(t) {
		return 0
	}
	return base / t
}

// Efficiency returns the parallel efficiency of a run on cores cores that
// reached speedup against a baseline on baseCores cores:
// speedup·baseCores/cores. 1 is perfect strong scaling; 0.5 means half of
// the added cores' time was lost to serial work, communication or
// imbalance. It is 0 when cores is not positive.
func Efficiency(speedup float64, baseCores, cores int) float64 {
	if cores <= 0 {
		return 0
	}
	return speedup * float64(baseCores) / float64(cores)
}
