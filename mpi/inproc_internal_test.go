package mpi

import (
	"fmt"
	"testing"
	"time"
)

// TestReturnAfterLastWait checks that a rank which passes the job's last
// wait and returns is no mismatch for a rank released by the same wait
// that looks up from it later: rank 1 arrives first and is held after
// counting itself in, while rank 0 arrives, completes the wait and returns.
func TestReturnAfterLastWait(t *testing.T) {
	for _, spin := range []time.Duration{0, time.Millisecond} {
		t.Run(fmt.Sprintf("spin=%v", spin), func(t *testing.T) {
			hold := func(rank int) {
				if rank == 1 {
					time.Sleep(50 * time.Millisecond)
				}
			}
			err := launch(2, MaxMessage, spin, hold, func(c Comm) error {
				if c.Rank() == 0 {
					time.Sleep(5 * time.Millisecond) // rank 1 arrives first
				}
				return c.Barrier()
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
