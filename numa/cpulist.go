package numa

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// maxCPU bounds the CPU numbers this package accepts. Linux supports at most
// 8192 CPUs (NR_CPUS); the margin guards only against malformed input that
// would otherwise make ParseCPUList allocate without limit.
const maxCPU = 1 << 16

// ParseCPUList parses a Linux CPU list such as "0-3,8,10-11", the format of
// /sys/devices/system/node/node*/cpulist, Slurm and taskset. It returns the
// CPUs ascending and without duplicates. Surrounding white space is ignored,
// and an empty list (a NUMA node without CPUs) gives an empty result.
func ParseCPUList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var cpus []int
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		first, err := parseCPU(lo)
		if err != nil {
			return nil, fmt.Errorf("parse CPU list %q: %w", s, err)
		}
		last := first
		if isRange {
			if last, err = parseCPU(hi); err != nil {
				return nil, fmt.Errorf("parse CPU list %q: %w", s, err)
			}
			if last < first {
				return nil, fmt.Errorf("parse CPU list %q: range %q is descending", s, part)
			}
		}
		for cpu := first; cpu <= last; cpu++ {
			cpus = append(cpus, cpu)
		}
	}
	slices.Sort(cpus)
	return slices.Compact(cpus), nil
}

// parseCPU parses one CPU number of a CPU list.
func parseCPU(s string) (int, error) {
	// strconv.Atoi alone would accept signs ("+3", "-0").
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not a CPU number", s)
	}
	cpu, err := strconv.Atoi(s)
	if err != nil || cpu >= maxCPU {
		return 0, fmt.Errorf("CPU number %q out of range [0, %d)", s, maxCPU)
	}
	return cpu, nil
}

// FormatCPUList formats CPUs in the Linux CPU list format read by
// ParseCPUList, collapsing runs into ranges: [0 1 2 3 8] gives "0-3,8".
// The CPUs need not be sorted; duplicates are written once.
func FormatCPUList(cpus []int) string {
	sorted := slices.Compact(slices.Sorted(slices.Values(cpus)))
	var b strings.Builder
	for i := 0; i < len(sorted); {
		j := i
		for j+1 < len(sorted) && sorted[j+1] == sorted[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(sorted[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(sorted[j]))
		}
		i = j + 1
	}
	return b.String()
}
