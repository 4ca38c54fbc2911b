package job

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestStopContextCatchesLateSignals checks that once a run has stopped (here
// at its time limit), a signal on its way out does not kill the process:
// the test binary itself would die of the SIGTERM it sends.
func TestStopContextCatchesLateSignals(t *testing.T) {
	ctx, release := stopContext(10 * time.Millisecond)
	<-ctx.Done()
	if cause := context.Cause(ctx); cause == nil || !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("stopped with %v (cause %v), want the time limit", ctx.Err(), cause)
	}
	release()
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the signal, were it not caught, kills the process meanwhile
}
