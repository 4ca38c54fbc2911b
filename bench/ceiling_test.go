package bench

import (
	"bytes"
	"strings"
	"testing"

	"xmc/numa"
)

// TestCeiling times every kind on one and two workers: a point per kind
// and count, one worker the unit of both figures, the speedup the workers
// over the slowdown; and the table lists them.
func TestCeiling(t *testing.T) {
	topo, err := numa.Detect()
	if err != nil {
		t.Fatal(err)
	}
	points, err := Ceiling(topo, []int{2, 1}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if want := 2 * len(CeilingKinds); len(points) != want {
		t.Fatalf("%d points, want %d: %+v", len(points), want, points)
	}
	for i, p := range points {
		wantWorkers := 1 + i/len(CeilingKinds)
		if p.Kind != CeilingKinds[i%len(CeilingKinds)] || p.Workers != wantWorkers {
			t.Errorf("point %d is %s at %d workers, want %s at %d", i, p.Kind, p.Workers, CeilingKinds[i%len(CeilingKinds)], wantWorkers)
		}
		if p.Op <= 0 || p.Slower <= 0 {
			t.Errorf("%+v: want a positive time and slowdown", p)
		}
		if p.Workers == 1 && (p.Slower != 1 || p.Speedup != 1) {
			t.Errorf("%+v: one worker is the unit", p)
		}
		if got := float64(p.Workers) / p.Slower; p.Speedup != got {
			t.Errorf("%+v: speedup %v, want workers/slower %v", p, p.Speedup, got)
		}
	}
	var out bytes.Buffer
	if err := WriteCeiling(&out, points); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(out.String()), "\n"); len(lines) != 1+len(points) || !strings.Contains(lines[0], "ceiling") {
		t.Errorf("table:\n%s\nwant a header and a row per point", out.String())
	}
}

// TestCeilingRefusesBadCounts checks the arguments.
func TestCeilingRefusesBadCounts(t *testing.T) {
	topo, err := numa.Detect()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Ceiling(topo, []int{0}, 1); err == nil {
		t.Error("0 workers accepted")
	}
	if _, err := Ceiling(topo, []int{2}, 0); err == nil {
		t.Error("0 ops accepted")
	}
}
