package numa

import (
	"bufio"
	"bytes"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// AvailableMemory returns the bytes of memory this process can still take
// (0 when unknown): the kernel's MemAvailable, which counts the page cache
// it can reclaim (MemFree does not, and a virtual machine's NUMA nodes may
// under-report it), or, when the process's cgroup (a Slurm job's, a
// container's) limits it lower, that limit less the cgroup's usage.
// readFile reads a file; pass os.ReadFile.
func AvailableMemory(readFile func(string) ([]byte, error)) uint64 {
	avail := uint64(math.MaxUint64)
	if b, err := readFile("/proc/meminfo"); err == nil {
		if v, ok := meminfoField(b, "MemAvailable:"); ok {
			avail = v
		}
	}
	if limit, used, ok := cgroupMemory(readFile); ok && limit < math.MaxInt64/2 {
		left := uint64(0)
		if limit > used {
			left = limit - used
		}
		avail = min(avail, left)
	}
	if avail == math.MaxUint64 {
		return 0
	}
	return avail
}

// meminfoField returns the value in bytes of the /proc/meminfo line that
// starts with name ("MemAvailable:   24282884 kB").
func meminfoField(b []byte, name string) (uint64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || f[0] != name {
			continue
		}
		v, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			return 0, false
		}
		if len(f) > 2 && f[2] == "kB" {
			v *= 1024
		}
		return v, true
	}
	return 0, false
}

// cgroupMemory returns the memory limit and usage of this process's cgroup,
// v2 (memory.max, memory.current) or v1 (memory.limit_in_bytes,
// memory.usage_in_bytes), looked up under /sys/fs/cgroup at the path
// /proc/self/cgroup names and, where a container shows its own cgroup as
// the root, at the root.
func cgroupMemory(readFile func(string) ([]byte, error)) (limit, used uint64, ok bool) {
	b, err := readFile("/proc/self/cgroup")
	if err != nil {
		return 0, 0, false
	}
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var dirs []string
		var maxFile, usedFile string
		switch {
		case parts[0] == "0" && parts[1] == "": // v2
			dirs = []string{filepath.Join("/sys/fs/cgroup", parts[2]), "/sys/fs/cgroup"}
			maxFile, usedFile = "memory.max", "memory.current"
		case slices.Contains(strings.Split(parts[1], ","), "memory"): // v1
			dirs = []string{filepath.Join("/sys/fs/cgroup/memory", parts[2]), "/sys/fs/cgroup/memory"}
			maxFile, usedFile = "memory.limit_in_bytes", "memory.usage_in_bytes"
		default:
			continue
		}
		for _, dir := range dirs {
			l, errL := readFile(filepath.Join(dir, maxFile))
			u, errU := readFile(filepath.Join(dir, usedFile))
			if errL != nil || errU != nil {
				continue
			}
			ls, us := strings.TrimSpace(string(l)), strings.TrimSpace(string(u))
			if ls == "max" {
				return math.MaxUint64, 0, true
			}
			lv, err1 := strconv.ParseUint(ls, 10, 64)
			uv, err2 := strconv.ParseUint(us, 10, 64)
			if err1 == nil && err2 == nil {
				return lv, uv, true
			}
		}
	}
	return 0, 0, false
}
