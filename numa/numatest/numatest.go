// Package numatest gives the tests of other packages a pool of pinned
// workers on this machine's real or simulated NUMA topology.
package numatest

import (
	"testing"

	"xmc/numa"
)

// Pool returns a pool of threads workers over this machine's topology split
// into domains simulated NUMA domains (1: the topology as detected), closed
// when t ends. It skips t where the machine has too few CPUs to simulate
// that many domains.
func Pool(t testing.TB, threads, domains int) *numa.Pool {
	t.Helper()
	topo, err := numa.Detect()
	if err != nil {
		t.Fatal(err)
	}
	if domains > 1 {
		if topo, err = topo.Simulate(domains); err != nil {
			t.Skip("cannot simulate", domains, "domains:", err)
		}
	}
	p, err := numa.NewPool(topo, threads, numa.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}
