//go:build mpi

// Command mpicheck exercises xmc's MPI backend under a real MPI launcher;
// package mpi's tests (go test -tags mpi ./mpi/...) build it and run it with
// mpirun.
//
// Usage:
//
//	mpirun -np 4 mpicheck -mode MODE [flags]
//
// Modes:
//
//	conformance  run mpitest.Conformance and print the communication report
//	fail         rank -rank returns an error while the others wait in a
//	             collective; it aborts the job with its message
//	stall        rank -rank sleeps forever before a barrier; the other
//	             ranks' watchdog (-watchdog) must abort the job
//	loop         allreduce and barrier in a loop for -duration, rank 0
//	             printing progress each second (for link-cut tests)
//	bench        time allreduce, both gather implementations (MPI_Gather
//	             and MPI_Gatherv against Send and Recv), Allgatherv and
//	             Alltoallv (in equal parts) on 256 B, 1 KB and 8 MB
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"xmc/mpi"
	"xmc/mpi/mpitest"
)

func main() {
	mode := flag.String("mode", "conformance", "conformance, fail, stall, loop or bench")
	rank := flag.Int("rank", 1, "the rank that fails (fail) or stalls (stall)")
	watchdog := flag.Duration("watchdog", time.Minute, "Counted's watchdog duration")
	duration := flag.Duration("duration", time.Minute, "how long loop runs")
	iters := flag.Int("iters", 20, "timed iterations per bench case")
	maxMessage := flag.Int("max-message", mpi.MaxMessage, "split every transfer into messages of at most this many bytes (mpi.Split)")
	flag.Parse()

	raw, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "mpicheck:", err)
		os.Exit(1)
	}
	if raw, err = mpi.Split(raw, *maxMessage); err != nil {
		fmt.Fprintln(os.Stderr, "mpicheck:", err)
		os.Exit(2)
	}
	c := mpi.NewCounted(raw, *watchdog)
	switch *mode {
	case "conformance":
		err = conformance(c)
	case "fail":
		err = fail(c, *rank)
	case "stall":
		err = stall(c, *rank)
	case "loop":
		err = loop(c, *duration)
	case "bench":
		err = bench(c, *iters)
	default:
		err = fmt.Errorf("unknown mode %q", *mode)
	}
	if err != nil {
		// Ends every rank of the job now, with this rank's message.
		c.Abort(1, fmt.Sprintf("mpicheck -mode %s: %v", *mode, err))
	}
	if err := mpi.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, "mpicheck:", err)
		os.Exit(1)
	}
}

func conformance(c *mpi.Counted) error {
	if err := goPanicsSurviveMPI(); err != nil {
		return err
	}
	if err := mpitest.Conformance(c, mpitest.BigBytes); err != nil {
		return err
	}
	all, err := mpi.GatherStats(c, c.Stats())
	if err != nil {
		return err
	}
	if c.Rank() == 0 {
		if err := mpi.WriteReport(os.Stdout, all); err != nil {
			return err
		}
		pml, ok := os.LookupEnv("OMPI_MCA_pml")
		if !ok {
			pml = "openmpi default"
		}
		fmt.Printf("conformance passed on %d ranks (%s backend, pml %s)\n", c.Size(), mpi.Backend, pml)
	}
	return nil
}

// goPanicsSurviveMPI checks that MPI_Init left Go's signal handling intact:
// a nil dereference must still be a recoverable panic, not a crash in an
// MPI signal handler.
func goPanicsSurviveMPI() (err error) {
	defer func() {
		if recover() == nil {
			err = errors.New("a nil dereference did not panic after MPI_Init")
		}
	}()
	var p *int
	*p = 1
	return nil
}

func fail(c *mpi.Counted, failing int) error {
	if err := c.Barrier(); err != nil {
		return err
	}
	if c.Rank() == failing {
		time.Sleep(200 * time.Millisecond) // the others are waiting by now
		return fmt.Errorf("rank %d fails on purpose", failing)
	}
	return c.AllreduceInt64([]int64{1}, mpi.Sum)
}

func stall(c *mpi.Counted, stalled int) error {
	if c.Rank() == stalled {
		fmt.Fprintf(os.Stderr, "mpicheck: rank %d stalls\n", stalled)
		time.Sleep(24 * time.Hour)
	}
	return c.Barrier()
}

func loop(c *mpi.Counted, d time.Duration) error {
	data := make([]float64, 128)
	start, last := time.Now(), time.Now()
	for i := 0; time.Since(start) < d; i++ {
		if err := c.AllreduceFloat64(data, mpi.Sum); err != nil {
			return err
		}
		if err := c.Barrier(); err != nil {
			return err
		}
		if c.Rank() == 0 && time.Since(last) >= time.Second {
			fmt.Printf("loop: iteration %d after %v\n", i, time.Since(start).Round(time.Millisecond))
			last = time.Now()
		}
	}
	return nil
}
