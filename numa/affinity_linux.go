package numa

import (
	"errors"
	"fmt"
	"slices"

	"golang.org/x/sys/unix"
)

// affinity returns the CPUs of the calling thread's affinity mask, ascending.
// It grows the mask until the kernel accepts its size, so machines with more
// than the 1024 CPUs of a fixed unix.CPUSet are handled.
func affinity() ([]int, error) {
	for n := 1024; n <= maxCPU; n *= 2 {
		set := unix.NewCPUSet(n)
		err := unix.SchedGetaffinityDynamic(0, set)
		if errors.Is(err, unix.EINVAL) {
			continue // mask smaller than the kernel's
		}
		if err != nil {
			return nil, fmt.Errorf("sched_getaffinity: %w", err)
		}
		var cpus []int
		for cpu := range n {
			if set.IsSet(cpu) {
				cpus = append(cpus, cpu)
			}
		}
		return cpus, nil
	}
	return nil, fmt.Errorf("sched_getaffinity: kernel mask exceeds %d CPUs", maxCPU)
}

// pinThread binds the calling OS thread to exactly cpus. The caller must have
// locked its goroutine to the thread (runtime.LockOSThread). It reads the mask
// back because the kernel silently drops CPUs outside the thread's cpuset
// cgroup; a narrowed mask is reported as an error.
func pinThread(cpus []int) error {
	if len(cpus) == 0 {
		return errors.New("pin thread: no CPUs")
	}
	set := unix.NewCPUSet(slices.Max(cpus) + 1)
	for _, cpu := range cpus {
		set.Set(cpu)
	}
	if err := unix.SchedSetaffinityDynamic(0, set); err != nil {
		return fmt.Errorf("pin thread to CPUs %s: sched_setaffinity: %w", FormatCPUList(cpus), err)
	}
	got, err := affinity()
	if err != nil {
		return fmt.Errorf("pin thread to CPUs %s: %w", FormatCPUList(cpus), err)
	}
	if want := slices.Compact(slices.Sorted(slices.Values(cpus))); !slices.Equal(got, want) {
		return fmt.Errorf("pin thread to CPUs %s: kernel set CPUs %s", FormatCPUList(cpus), FormatCPUList(got))
	}
	return nil
}
