//go:build mpi

package main

import (
	"fmt"
	"slices"
	"time"

	"xmc/mpi"
)

// tagGather is the tag of gatherP2P's messages.
const tagGather = 1 << 20

// gatherP2P is Gatherv on Send and Recv: every rank sends its buffer to
// root, which receives them in arrival order. It is the alternative that
// bench compares with the MPI_Gather and MPI_Gatherv calls that mpi's
// Gather and Gatherv make. It is only correct when consecutive gathers are
// separated by a synchronising collective, as in bench: otherwise a fast
// rank's next message could be taken for another rank's current one.
func gatherP2P(c mpi.Comm, buf []byte, root int) ([][]byte, error) {
	if c.Rank() != root {
		return nil, c.Send(buf, root, tagGather)
	}
	out := make([][]byte, c.Size())
	out[root] = append([]byte{}, buf...)
	for range c.Size() - 1 {
		b, from, err := c.Recv(mpi.AnySource, tagGather)
		if err != nil {
			return nil, err
		}
		out[from] = b
	}
	return out, nil
}

// bench times every case iters times and prints, on rank 0, the median
// over iterations of the slowest rank's time. Cases are interleaved within
// each iteration, and every operation starts after a barrier, so that load
// from other processes affects all cases alike.
func bench(c mpi.Comm, iters int) error {
	sizes := []struct {
		name  string
		bytes int
	}{{"256B", 256}, {"1KB", 1 << 10}, {"8MB", 8 << 20}}
	for _, size := range sizes {
		data := make([]float64, size.bytes/8)
		buf := make([]byte, size.bytes)
		// An Alltoallv sends each rank an equal part of buf.
		counts := make([]int, c.Size())
		for q := range counts {
			counts[q] = size.bytes / c.Size()
		}
		parts := buf[:size.bytes/c.Size()*c.Size()]
		cases := []struct {
			name string
			run  func() error
		}{
			{"allreduce", func() error { return c.AllreduceFloat64(data, mpi.Sum) }},
			{"gather/MPI_Gather", func() error { _, err := c.Gather(buf, 0); return err }},
			{"gatherv/MPI_Gatherv", func() error { _, err := c.Gatherv(buf, 0, nil); return err }},
			{"gatherv/send-recv", func() error { _, err := gatherP2P(c, buf, 0); return err }},
			{"allgatherv", func() error { _, err := c.Allgatherv(buf, nil); return err }},
			{"alltoallv", func() error { _, err := c.Alltoallv(parts, counts, nil); return err }},
		}
		times := make([][]float64, len(cases))
		for it := -1; it < iters; it++ { // iteration -1 warms up connections and buffers
			for k, bc := range cases {
				if err := c.Barrier(); err != nil {
					return err
				}
				start := time.Now()
				if err := bc.run(); err != nil {
					return fmt.Errorf("bench %s %s: %w", bc.name, size.name, err)
				}
				t := []float64{time.Since(start).Seconds()}
				if err := c.ReduceFloat64(t, mpi.Max, 0); err != nil {
					return err
				}
				if it >= 0 {
					times[k] = append(times[k], t[0])
				}
			}
		}
		if c.Rank() != 0 {
			continue
		}
		for k, bc := range cases {
			slices.Sort(times[k])
			median := time.Duration(times[k][len(times[k])/2] * float64(time.Second))
			fmt.Printf("bench ranks=%d size=%s op=%s median=%v\n", c.Size(), size.name, bc.name, median.Round(time.Microsecond/10))
		}
	}
	return nil
}
