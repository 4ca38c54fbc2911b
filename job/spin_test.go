package job

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"xmc/numa"
)

// TestInProcessSpin checks when in-process ranks' collectives spin before
// parking: where the ranks' workers fit the CPUs, one each, and not where
// they outnumber them.
func TestInProcessSpin(t *testing.T) {
	cpus := runtime.NumCPU()
	tests := []struct {
		ranks, threads int
		want           time.Duration
	}{
		{cpus - 1, 1, numa.TeamSpin},
		{1, cpus - 1, numa.TeamSpin},
		{cpus, 1, numa.TeamSpin},
		{1, cpus, numa.TeamSpin},
		{cpus + 1, 1, 0},
		{1, cpus + 1, 0},
		{2, cpus, 0},
	}
	for _, tt := range tests {
		if tt.ranks < 1 || tt.threads < 1 {
			continue // a machine of one CPU has no layout of cpus-1
		}
		t.Run(fmt.Sprintf("ranks=%d/threads=%d", tt.ranks, tt.threads), func(t *testing.T) {
			t.Setenv("SLURM_CPUS_PER_TASK", "")
			got, err := inProcessSpin(Options{Ranks: tt.ranks, Threads: tt.threads})
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("inProcessSpin(%d ranks × %d threads on %d CPUs) = %v, want %v", tt.ranks, tt.threads, cpus, got, tt.want)
			}
		})
	}
}
