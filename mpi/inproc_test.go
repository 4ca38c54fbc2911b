package mpi_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"xmc/mpi"
	"xmc/mpi/mpitest"
)

// conformanceBytes is the size of the conformance suite's largest buffers
// in these tests: mpitest.BigBytes, or 256 KiB with -short, as make's race
// stage runs them, where the race detector checks every byte moved.
func conformanceBytes() int {
	if testing.Short() {
		return 256 << 10
	}
	return mpitest.BigBytes
}

// TestConformanceInProcess runs the conformance suite on the in-process
// backend, with collectives that park a waiting rank at once and with
// collectives that spin first (LaunchSpinning).
func TestConformanceInProcess(t *testing.T) {
	for _, spin := range []time.Duration{0, time.Millisecond} {
		for n := 1; n <= 4; n++ {
			t.Run(fmt.Sprintf("spin=%v/ranks=%d", spin, n), func(t *testing.T) {
				err := mpi.LaunchSpinning(n, mpi.MaxMessage, spin, func(c mpi.Comm) error {
					return mpitest.Conformance(mpi.NewCounted(c, 0), conformanceBytes())
				})
				if err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestConformanceSplit runs the conformance suite, whose buffers reach 8
// MB (256 KiB with -short), through Split with a 64 KiB limit on a backend
// that refuses any larger transfer: every operation's result must be as
// without a limit.
func TestConformanceSplit(t *testing.T) {
	const limit = 64 << 10
	for _, n := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("ranks=%d", n), func(t *testing.T) {
			err := mpi.Launch(n, limit, func(c mpi.Comm) error {
				sc, err := mpi.Split(c, limit)
				if err != nil {
					return err
				}
				return mpitest.Conformance(mpi.NewCounted(sc, 0), conformanceBytes())
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestLimitRefusesLargeTransfers checks that the in-process backend
// refuses, as MPI does, every transfer larger than its limit, so that a
// transfer that bypasses Split fails in tests.
func TestLimitRefusesLargeTransfers(t *testing.T) {
	const limit = 8 << 10
	big := make([]byte, limit+1)
	for _, c := range []struct {
		name string
		call func(c mpi.Comm) error
	}{
		{"send", func(c mpi.Comm) error { return c.Send(big, 0, 1) }},
		{"bcast", func(c mpi.Comm) error { _, err := c.Bcast(big, 0); return err }},
		{"gatherv", func(c mpi.Comm) error { _, err := c.Gatherv(big, 0, nil); return err }},
		{"gatherv total", func(c mpi.Comm) error { _, err := c.Gatherv(big[:limit/2+1], 0, nil); return err }},
		{"allreduce", func(c mpi.Comm) error { return c.AllreduceFloat64(make([]float64, limit/8+1), mpi.Sum) }},
		{"alltoallv", func(c mpi.Comm) error { _, err := c.Alltoallv(big, []int{limit + 1, 0}, nil); return err }},
		{"alltoallv total", func(c mpi.Comm) error {
			_, err := c.Alltoallv(big[:limit/2+1], []int{limit/2 + 1, 0}, nil)
			return err
		}},
	} {
		err := mpi.Launch(2, limit, c.call)
		if err == nil || !strings.Contains(err.Error(), "exceeds") {
			t.Errorf("%s: %v, want an error about the limit", c.name, err)
		}
	}
	if _, err := mpi.Split(nil, 100); err == nil {
		t.Error("Split accepted a limit of 100 bytes")
	}
}

// launchTimed runs Launch and fails the test if it takes longer than limit.
func launchTimed(t *testing.T, limit time.Duration, n int, fn func(c mpi.Comm) error) error {
	t.Helper()
	return launchTimedWith(t, limit, n, 0, fn)
}

// launchTimedSpinning is launchTimed with collectives that spin for 10 ms
// before parking.
func launchTimedSpinning(t *testing.T, limit time.Duration, n int, fn func(c mpi.Comm) error) error {
	t.Helper()
	return launchTimedWith(t, limit, n, 10*time.Millisecond, fn)
}

func launchTimedWith(t *testing.T, limit time.Duration, n int, spin time.Duration, fn func(c mpi.Comm) error) error {
	t.Helper()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- mpi.LaunchSpinning(n, mpi.MaxMessage, spin, fn) }()
	select {
	case err := <-done:
		t.Logf("Launch returned after %v", time.Since(start).Round(time.Millisecond))
		return err
	case <-time.After(limit):
		t.Fatalf("Launch still running after %v", limit)
		return nil
	}
}

// blockForever has rank r wait in an operation that only an abort can end.
func blockForever(c mpi.Comm, op string) error {
	switch op {
	case "barrier":
		return c.Barrier()
	case "allreduce":
		return c.AllreduceFloat64(make([]float64, 1000), mpi.Sum)
	case "recv":
		_, _, err := c.Recv(mpi.AnySource, 7)
		return err
	case "recv from 0":
		_, _, err := c.Recv(0, 7)
		return err
	}
	panic("unknown op " + op)
}

func TestFailingRankEndsJob(t *testing.T) {
	errPurpose := errors.New("fails on purpose")
	for _, op := range []string{"barrier", "allreduce", "recv", "recv from 0", "spinning barrier"} {
		t.Run(op, func(t *testing.T) {
			var otherErrs [4]error
			launch := launchTimed
			if op == "spinning barrier" {
				// A rank spinning in a collective sees the abort once it
				// parks, within its spin.
				launch, op = launchTimedSpinning, "barrier"
			}
			err := launch(t, time.Second, 4, func(c mpi.Comm) error {
				if c.Rank() == 2 {
					time.Sleep(50 * time.Millisecond) // let the others block first
					return fmt.Errorf("rank two %w", errPurpose)
				}
				otherErrs[c.Rank()] = blockForever(c, op)
				return otherErrs[c.Rank()]
			})
			if !errors.Is(err, errPurpose) || !strings.HasPrefix(err.Error(), "rank 2: rank two fails on purpose") {
				t.Fatalf("Launch error %q, want rank 2's", err)
			}
			for r, e := range otherErrs {
				if r != 2 && !errors.Is(e, mpi.ErrAborted) {
					t.Errorf("rank %d's %s returned %v, want ErrAborted", r, op, e)
				}
			}
		})
	}
}

func TestPanickingRankEndsJob(t *testing.T) {
	err := launchTimed(t, time.Second, 3, func(c mpi.Comm) error {
		if c.Rank() == 1 {
			time.Sleep(20 * time.Millisecond)
			var m map[string]int
			m["boom"]++ // panics: assignment to entry in nil map
		}
		return c.Barrier()
	})
	if err == nil {
		t.Fatal("Launch returned nil, want the panic")
	}
	msg := err.Error()
	for _, want := range []string{"rank 1: panic: assignment to entry in nil map", "inproc_test.go"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Launch error lacks %q:\n%s", want, msg)
		}
	}
}

func TestAbort(t *testing.T) {
	var laterErr error
	err := launchTimed(t, time.Second, 2, func(c mpi.Comm) error {
		if c.Rank() == 1 {
			c.Abort(5, "giving up")
			laterErr = c.Send([]byte{1}, 0, 0)
			return laterErr
		}
		_, _, err := c.Recv(1, 9)
		return err
	})
	var ae *mpi.AbortError
	if !errors.As(err, &ae) || ae.Code != 5 || ae.Msg != "giving up" {
		t.Fatalf("Launch error %v, want rank 1's AbortError with code 5", err)
	}
	if !strings.HasPrefix(err.Error(), "rank 1: ") {
		t.Errorf("Launch error %q does not name rank 1", err)
	}
	if !errors.Is(laterErr, mpi.ErrAborted) {
		t.Errorf("Send after Abort returned %v, want ErrAborted", laterErr)
	}
}

func TestLaunchRejectsNoRanks(t *testing.T) {
	if err := mpi.Launch(0, mpi.MaxMessage, func(mpi.Comm) error { return nil }); err == nil {
		t.Fatal("Launch(0) succeeded")
	}
}

// TestMisuseIsReported checks that programming errors that would hang a real
// MPI job end an in-process job with a message naming them.
func TestMisuseIsReported(t *testing.T) {
	tests := []struct {
		name string
		fn   func(c mpi.Comm) error
		want string
	}{
		{"mismatched collectives", func(c mpi.Comm) error {
			if c.Rank() == 1 {
				_, err := c.Bcast([]byte{1}, 1)
				return err
			}
			return c.Barrier()
		}, "mismatched collective calls: rank 0 called barrier, rank 1 called bcast(root 1)"},
		{"mismatched roots", func(c mpi.Comm) error {
			_, err := c.Gather([]byte{1}, c.Rank()%2)
			return err
		}, "mismatched collective calls"},
		{"mismatched reduction types", func(c mpi.Comm) error {
			if c.Rank() == 0 {
				return c.AllreduceInt64([]int64{1}, mpi.Sum)
			}
			return c.AllreduceFloat64([]float64{1}, mpi.Sum)
		}, "rank 0 called allreduce(int64 sum), rank 1 called allreduce(float64 sum)"},
		{"different lengths", func(c mpi.Comm) error {
			return c.AllreduceFloat64(make([]float64, 1+c.Rank()), mpi.Max)
		}, "allreduce lengths differ: rank 0 passed 1, rank 1 passed 2"},
		{"rank returns during a collective", func(c mpi.Comm) error {
			if c.Rank() == 2 {
				time.Sleep(50 * time.Millisecond) // the others wait first
				return nil
			}
			return c.Barrier()
		}, "wait for it in a collective"},
		{"collective after a rank returned", func(c mpi.Comm) error {
			if c.Rank() == 2 {
				return nil
			}
			time.Sleep(50 * time.Millisecond)
			return c.Barrier()
		}, "barrier can never complete: rank(s) [2] already returned"},
		{"recv from a returned rank", func(c mpi.Comm) error {
			if c.Rank() != 0 {
				return nil
			}
			_, _, err := c.Recv(1, 3)
			return err
		}, "recv from rank 1 with tag 3 can never complete"},
	}
	for _, spin := range []time.Duration{0, 10 * time.Millisecond} {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("spin=%v/%s", spin, tt.name), func(t *testing.T) {
				err := launchTimedWith(t, time.Second, 3, spin, tt.fn)
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("Launch error %v, want one containing %q", err, tt.want)
				}
			})
		}
	}
}

// TestBarrierSeparatesRounds checks that no rank leaves a barrier before
// every rank has entered it, nor runs more than one round ahead: after
// barrier k, every rank has counted rounds 0 to k and none has counted
// round k+2, with ranks that park and ranks that spin (where they
// outnumber the CPUs, as a job would not have them, they spin out their
// time and park: fewer rounds).
func TestBarrierSeparatesRounds(t *testing.T) {
	for _, spin := range []time.Duration{0, time.Millisecond} {
		for _, n := range []int{2, 3, 8} {
			rounds := 2000
			if spin > 0 && n > runtime.NumCPU() {
				rounds = 200
			}
			t.Run(fmt.Sprintf("spin=%v/ranks=%d", spin, n), func(t *testing.T) {
				var counted atomic.Int64
				err := mpi.LaunchSpinning(n, mpi.MaxMessage, spin, func(c mpi.Comm) error {
					for k := range int64(rounds) {
						counted.Add(1)
						if err := c.Barrier(); err != nil {
							return err
						}
						if got, lo := counted.Load(), int64(n)*(k+1); got < lo || got > lo+int64(n)-1 {
							return fmt.Errorf("after barrier %d: %d rounds counted, want %d to %d", k, got, lo, lo+int64(n)-1)
						}
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

func TestWatchdogAbortsStalledCollective(t *testing.T) {
	const limit = 200 * time.Millisecond
	err := launchTimed(t, 2*time.Second, 3, func(raw mpi.Comm) error {
		c := mpi.NewCounted(raw, limit)
		if c.Rank() == 1 {
			// Stalled: the other ranks wait for it in the allreduce. It
			// wakes up long after the watchdog has fired.
			time.Sleep(600 * time.Millisecond)
		}
		return c.AllreduceInt64([]int64{1}, mpi.Sum)
	})
	var ae *mpi.AbortError
	if !errors.As(err, &ae) || ae.Code != 3 {
		t.Fatalf("Launch error %v, want the watchdog's AbortError with code 3", err)
	}
	for _, want := range []string{"blocked in allreduce for ", "of 3", "limit 200ms", "died", "unreachable", "--comm-timeout"} {
		if !strings.Contains(ae.Msg, want) {
			t.Errorf("watchdog message lacks %q: %s", want, ae.Msg)
		}
	}
	if !strings.HasPrefix(err.Error(), "rank 0: ") && !strings.HasPrefix(err.Error(), "rank 2: ") {
		t.Errorf("Launch error %q does not come from a blocked rank (0 or 2)", err)
	}
}

// TestWatchdogIgnoresWorkBetweenOperations checks that only time inside an
// operation counts: every rank works longer than the watchdog duration
// between collectives, and a listener waits longer than that in Recv from
// AnySource.
func TestWatchdogIgnoresWorkBetweenOperations(t *testing.T) {
	const limit = 100 * time.Millisecond
	err := launchTimed(t, 2*time.Second, 2, func(raw mpi.Comm) error {
		c := mpi.NewCounted(raw, limit)
		for range 2 {
			time.Sleep(2 * limit) // local work, the same on every rank
			if err := c.Barrier(); err != nil {
				return err
			}
		}
		if c.Rank() == 1 {
			time.Sleep(2 * limit)
			return c.Send([]byte("late"), 0, 1)
		}
		_, _, err := c.Recv(mpi.AnySource, 1)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestWatchdogWatchesRecvFromOneRank(t *testing.T) {
	const limit = 100 * time.Millisecond
	err := launchTimed(t, 2*time.Second, 2, func(raw mpi.Comm) error {
		c := mpi.NewCounted(raw, limit)
		if c.Rank() == 1 {
			time.Sleep(4 * limit)
			return c.Send([]byte("too late"), 0, 1)
		}
		_, _, err := c.Recv(1, 1)
		return err
	})
	var ae *mpi.AbortError
	if !errors.As(err, &ae) || !strings.Contains(ae.Msg, "rank 0 of 2 has been blocked in recv from rank 1 (tag 1)") {
		t.Fatalf("Launch error %v, want the watchdog's abort of rank 0's recv", err)
	}
}

func BenchmarkInProcess(b *testing.B) {
	const ranks = 4
	for _, size := range []struct {
		name  string
		bytes int
	}{{"1KB", 1 << 10}, {"8MB", 8 << 20}} {
		b.Run("allreduce/"+size.name, func(b *testing.B) {
			b.SetBytes(int64(size.bytes))
			err := mpi.Launch(ranks, mpi.MaxMessage, func(c mpi.Comm) error {
				data := make([]float64, size.bytes/8)
				for range b.N { // every rank runs b.N operations
					if err := c.AllreduceFloat64(data, mpi.Sum); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		})
		b.Run("gather/"+size.name, func(b *testing.B) {
			b.SetBytes(int64(size.bytes))
			err := mpi.Launch(ranks, mpi.MaxMessage, func(c mpi.Comm) error {
				buf := make([]byte, size.bytes)
				for range b.N { // every rank runs b.N operations
					if _, err := c.Gather(buf, 0); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		})
	}
}
