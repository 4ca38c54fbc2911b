package job

import (
	"math"
	"testing"
)

// TestSerialFraction checks the run's serial fraction from its ranks'
// profiles: on one rank, its own; on several, the largest rank's time
// outside loops over it and every rank's work in loops, so that ranks that
// share the work (each with time outside loops of its own, at once) do not
// bound the speed-up below what they reach.
func TestSerialFraction(t *testing.T) {
	tests := []struct {
		name  string
		ranks []Profile
		want  float64
	}{
		{"no work", nil, 0},
		{"one rank", []Profile{NewProfile(2, 10, 8, 4, 15, 1, 0)}, 2.0 / 17}, // 1 s serial, 1 in collectives
		{"four ranks alike", []Profile{
			NewProfile(1, 10, 8, 4, 8, 1, 0), NewProfile(1, 10, 8, 4, 8, 1, 0),
			NewProfile(1, 10, 8, 4, 8, 1, 0), NewProfile(1, 10, 8, 4, 8, 1, 0),
		}, 2.0 / 34},
		{"the largest rank's time outside loops", []Profile{
			NewProfile(1, 10, 9, 4, 9, 0.5, 0), NewProfile(1, 10, 6, 4, 6, 3, 0), // 0.5 + 0.5, 1 + 3
		}, 4.0 / 19},
		{"loops only", []Profile{NewProfile(4, 5, 5, 1, 20, 0, 0)}, 0},
	}
	for _, tc := range tests {
		if got := SerialFraction(tc.ranks); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: serial fraction %v, want %v", tc.name, got, tc.want)
		}
	}
	// Four ranks alike do in 10 s on 4 cores what one core does in 34 (the
	// 32 s of their loops, and 2 s alone): the bound must allow 3.4. Each
	// rank's time outside loops over its own loops (0.2) allowed 2.5.
	f := SerialFraction(tests[2].ranks)
	if s := AmdahlSpeedup(f, 4); s < 3.4-1e-9 {
		t.Errorf("four ranks alike: Amdahl bound %v below the 3.4 they reach", s)
	}
}

// TestWork checks a run's work: every rank's time in loops' work and alone,
// without its collectives or its loops' idle time.
func TestWork(t *testing.T) {
	tests := []struct {
		name  string
		ranks []Profile
		want  float64
	}{
		{"no ranks", nil, 0},
		{"one rank", []Profile{NewProfile(2, 10, 8, 4, 15, 1, 0)}, 15 + 1}, // 1 s alone; idle loop time 1 s left out
		{"two ranks", []Profile{NewProfile(1, 10, 9, 4, 9, 0.5, 0), NewProfile(1, 10, 6, 4, 6, 3, 0)}, 9.5 + 7},
	}
	for _, tc := range tests {
		if got := Work(tc.ranks); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: work %v, want %v", tc.name, got, tc.want)
		}
	}
}
