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

// TestGCPause checks that overlapping pauses and headrooms of in-process
// ranks keep the collector off while any rank pauses it, give it the
// largest headroom asked while any rank asks for one (never less than the
// setting found), and restore the setting found by the first once the last
// ends.
func TestGCPause(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(150))
	const roomy = -2 // want: a percentage above 150
	var g gcPause
	steps := []struct {
		name string
		do   func()
		want int
	}{
		{"pause", g.begin, -1}, {"pause", g.begin, -1}, {"end", g.end, -1}, {"end", g.end, 150},
		{"pause", g.begin, -1}, {"end", g.end, 150}, // and again
		{"small room", func() { g.beginRoom(1) }, 150},
		{"large room", func() { g.beginRoom(1 << 40) }, roomy},
		{"pause in room", g.begin, -1}, {"end", g.end, roomy},
		{"end room", g.endRoom, roomy}, {"end room", g.endRoom, 150},
		{"pause", g.begin, -1}, {"large room", func() { g.beginRoom(1 << 40) }, -1},
		{"end", g.end, roomy}, {"end room", g.endRoom, 150},
	}
	for i, s := range steps {
		s.do()
		got := gcPercent()
		if s.want == roomy && got > 150 {
			continue
		}
		if got != s.want {
			t.Fatalf("step %d (%s): GC percent %d, want %d (%d: above 150)", i, s.name, got, s.want, roomy)
		}
	}
}
