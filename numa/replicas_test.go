//go:build linux

package numa

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestNewReplicas(t *testing.T) {
	for name, topo := range testTopologies(t) {
		t.Run(name, func(t *testing.T) {
			requirePinning(t, topo)
			p, err := NewPool(topo, len(topo.Domains), Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()

			// Each build waits for the builds of all other domains, so the
			// test deadlocks unless the domains build in parallel.
			var barrier sync.WaitGroup
			barrier.Add(p.Domains())
			buildCPUs := make([][]int, p.Domains())
			var r *Replicas[[]float32]
			within(t, func() {
				r, err = NewReplicas(p, func(d int) ([]float32, error) {
					barrier.Done()
					barrier.Wait()
					buildCPUs[d] = threadCPUs(t)
					v := make([]float32, 1<<16)
					for i := range v {
						v[i] = float32(d)
					}
					return v, nil
				})
			})
			if err != nil {
				t.Fatal(err)
			}
			if r.Len() != len(topo.Domains) {
				t.Fatalf("%d replicas for %d domains", r.Len(), len(topo.Domains))
			}
			for d, dom := range topo.Domains {
				if !slices.Equal(buildCPUs[d], dom.CPUs) {
					t.Errorf("replica %d built on CPUs %v, want domain CPUs %v", d, buildCPUs[d], dom.CPUs)
				}
				if v := r.Get(d); len(v) != 1<<16 || v[0] != float32(d) || v[len(v)-1] != float32(d) {
					t.Errorf("replica %d holds the wrong copy", d)
				}
			}
		})
	}
}

func TestNewReplicasErrors(t *testing.T) {
	topo := Topology{Domains: []Domain{{CPUs: []int{0}}, {CPUs: []int{0}}, {CPUs: []int{0}}}}
	p := unpinnedPool(t, topo, 3, Options{})
	errBoom := errors.New("boom")
	tests := []struct {
		name    string
		build   func(d int) (int, error)
		wantMsg string
	}{
		{
			name: "error",
			build: func(d int) (int, error) {
				if d >= 1 {
					return 0, errBoom
				}
				return d, nil
			},
			wantMsg: "build replica for domain 1: boom",
		},
		{
			name: "panic",
			build: func(d int) (int, error) {
				if d == 2 {
					panic("kaboom")
				}
				return d, nil
			},
			wantMsg: "build replica for domain 2: panic: kaboom",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewReplicas(p, tt.build)
			if err == nil {
				t.Fatalf("NewReplicas = %v, want error", r)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error %q does not contain %q", err, tt.wantMsg)
			}
		})
	}
}
