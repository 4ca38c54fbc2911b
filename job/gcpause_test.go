package job

import (
	"runtime/debug"
	"testing"
)

// gcPercent returns the current GC percentage without changing it.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// TestGCPause checks that overlapping pauses of in-process ranks keep the
// collector off until the last one ends, then restore the setting found
// by the first.
func TestGCPause(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(150))
	var g gcPause
	steps := []struct {
		begin bool // else end
		want  int
	}{
		{true, -1}, {true, -1}, {false, -1}, {false, 150},
		{true, -1}, {false, 150}, // and again
	}
	for i, s := range steps {
		if s.begin {
			g.begin()
		} else {
			g.end()
		}
		if got := gcPercent(); got != s.want {
			t.Fatalf("step %d: GC percent %d, want %d", i, got, s.want)
		}
	}
}
