package numa

import (
	"sync/atomic"
	"testing"
)

// TestPerWorker checks that each worker gets its own value, made once, by
// itself, and that Each visits the values made, in worker order.
func TestPerWorker(t *testing.T) {
	topo := Topology{Domains: []Domain{{CPUs: []int{0}}, {CPUs: []int{1}}}}
	p := unpinnedPool(t, topo, 4, Options{})
	var made atomic.Int64
	type scratch struct {
		owner Worker
		calls int
	}
	pw := NewPerWorker(p, func(w Worker) *scratch {
		made.Add(1)
		return &scratch{owner: w}
	})
	for range 3 {
		err := p.Run(func(w Worker) error {
			if w.ID == 3 {
				return nil // a worker that never asks makes nothing
			}
			s := pw.Get(w)
			if s.owner != w {
				t.Errorf("worker %d got the value of worker %d", w.ID, s.owner.ID)
			}
			s.calls++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if made.Load() != 3 {
		t.Errorf("made %d values, want 3", made.Load())
	}
	var ids []int
	pw.Each(func(s *scratch) {
		ids = append(ids, s.owner.ID)
		if s.calls != 3 {
			t.Errorf("worker %d: %d calls, want 3", s.owner.ID, s.calls)
		}
	})
	if len(ids) != 3 || ids[0] != 0 || ids[1] != 1 || ids[2] != 2 {
		t.Errorf("Each visited workers %v, want [0 1 2]", ids)
	}
}
