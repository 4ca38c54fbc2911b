package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"

	"xmc/job"
	"xmc/numa"
)

func runInfo(args []string) error {
	fs := newFlagSet("info", "info [--ranks N] [--threads T] [--numa-sim K]")
	jo := job.Options{Version: buildVersion()}
	jo.Register(fs)
	if err := parseFlags(fs, args, false); err != nil {
		return err
	}
	return job.Run("info", jo, func(j *job.Rank) error {
		// Each rank describes itself; rank 0 prints the descriptions in rank
		// order, so the output is one readable block whatever the launcher.
		host, _ := os.Hostname()
		var b strings.Builder
		fmt.Fprintf(&b, "rank %d on %s: %d threads, %d NUMA domain(s), pinned=%v\n", j.ID, host, j.Threads, len(j.Topo.Domains), pinned(j.Pool))
		for _, line := range strings.Split(strings.TrimRight(j.Topo.String(), "\n"), "\n") {
			fmt.Fprintf(&b, "    %s\n", line)
		}
		parts, err := j.Comm.Gatherv([]byte(b.String()), 0, nil)
		if err != nil || j.ID != 0 {
			return err
		}
		fmt.Printf("xmc %s (%s, GOMAXPROCS %d)\n", buildVersion(), runtime.Version(), runtime.GOMAXPROCS(0))
		fmt.Printf("MPI backend: %s, world size %d\n", j.Backend, j.Size)
		fmt.Printf("CPU: %s\n", numa.DetectCPU())
		for _, p := range parts {
			fmt.Print(string(p))
		}
		return nil
	})
}

// pinned reports whether every worker of the pool is pinned.
func pinned(p *numa.Pool) bool {
	for _, w := range p.Workers() {
		if !w.Pinned {
			return false
		}
	}
	return true
}
