package job

import "math"

// Profile is where one rank's training time went, for strong-scaling
// studies: the time in parallel loops and how busy the workers were in
// them (numa.Pool.Profile), the time in collectives and barriers (the
// communicator's), and the rest, which one goroutine spends computing
// while the others wait. A trainer of rounds also has it per round.
type Profile struct {
	Workers int     `json:"workers"`
	TrainS  float64 `json:"train_s"`
	// LoopS is the wall time in parallel loops, Loops their number, and
	// BusyS the workers' time computing in them, summed over workers.
	LoopS float64 `json:"loop_s"`
	Loops int64   `json:"loops"`
	BusyS float64 `json:"busy_s"`
	// CollectiveS is the time blocked in collectives and barriers.
	CollectiveS float64 `json:"collective_s"`
	// SerialS is TrainS less LoopS and CollectiveS: the time one
	// goroutine (the rank's, or the lead of its workers) computed alone.
	SerialS float64 `json:"serial_s"`
	// Rounds is the number of rounds of a trainer of rounds, and the
	// fields PerRound its figures per round, in milliseconds.
	Rounds   int           `json:"rounds,omitempty"`
	PerRound *RoundProfile `json:"per_round,omitempty"`
}

// RoundProfile is a Profile's mean figures per round, in milliseconds.
type RoundProfile struct {
	SerialMS     float64 `json:"serial_ms"`
	CollectiveMS float64 `json:"collective_ms"`
	LoopMS       float64 `json:"loop_ms"`
	Loops        float64 `json:"loops"`
}

// NewProfile returns the profile of a training of trainS seconds on
// workers workers, loopS of them in loops loops in which the workers were
// busy busyS, collectiveS in collectives, over rounds rounds (0 for work
// of independent units).
func NewProfile(workers int, trainS, loopS float64, loops int64, busyS, collectiveS float64, rounds int) Profile {
	p := Profile{Workers: workers, TrainS: trainS, LoopS: loopS, Loops: loops, BusyS: busyS, CollectiveS: collectiveS,
		SerialS: max(0, trainS-loopS-collectiveS), Rounds: rounds}
	if rounds > 0 {
		ms := 1e3 / float64(rounds)
		p.PerRound = &RoundProfile{SerialMS: p.SerialS * ms, CollectiveMS: collectiveS * ms, LoopMS: loopS * ms,
			Loops: float64(loops) / float64(rounds)}
	}
	return p
}

// SerialFraction is the part of a run's work that one core does alone, as
// Amdahl's law counts it, from the profiles of all its ranks: the longest
// time a rank spent outside its loops, computing alone or in collectives
// (which more cores do not shorten), over that and the work in every
// rank's loops, their BusyS summed. Every rank spends such time at once,
// so it counts once; over a rank's own loops alone, ranks that share the
// work would seem serial, and the bound would fall below the speedup they
// reach. On one rank it is that rank's serial and collective time over
// them and its BusyS. A run with no work at all has fraction 0.
func SerialFraction(ranks []Profile) float64 {
	serial, busy := 0.0, 0.0
	for _, p := range ranks {
		serial, busy = max(serial, p.SerialS+p.CollectiveS), busy+p.BusyS
	}
	if serial+busy == 0 {
		return 0
	}
	return serial / (serial + busy)
}

// Work is the time a run's ranks and workers spent computing, from the
// profiles of all its ranks: every rank's BusyS and SerialS, not its waits
// in collectives or between loops. It is wall time: with more workers than
// cores it also counts their waits for a core. Against one worker's on the same job it
// is the work a layout adds: what its ranks repeat, and each core's
// slowdown beside the others. Where the serial part is small, a layout of
// P workers reaches about P × loop efficiency / that ratio.
func Work(ranks []Profile) float64 {
	w := 0.0
	for _, p := range ranks {
		w += p.BusyS + p.SerialS
	}
	return w
}

// LoopEfficiency is how busy the workers were in the parallel loops: BusyS
// over Workers × LoopS (1 where there were no loops). It is below 1 when
// a loop's work is uneven or its hand-off slow.
func (p Profile) LoopEfficiency() float64 {
	if p.LoopS == 0 || p.Workers == 0 {
		return 1
	}
	return p.BusyS / (float64(p.Workers) * p.LoopS)
}

// AmdahlSpeedup is the speed-up over one core that a serial fraction f
// allows on n cores: 1 / (f + (1 − f)/n).
func AmdahlSpeedup(f float64, n int) float64 {
	if n < 1 {
		return math.NaN()
	}
	return 1 / (f + (1-f)/float64(n))
}
