//go:build !linux

package numa

import (
	"errors"
	"fmt"
	"runtime"
)

// affinity returns CPUs 0 to runtime.NumCPU()-1: this system offers no
// affinity mask that this package can read.
func affinity() ([]int, error) {
	cpus := make([]int, runtime.NumCPU())
	for i := range cpus {
		cpus[i] = i
	}
	return cpus, nil
}

// pinThread always fails: thread pinning is implemented for Linux only.
func pinThread(cpus []int) error {
	return fmt.Errorf("pin thread to CPUs %s: %w", FormatCPUList(cpus), errors.ErrUnsupported)
}
