package numa

import (
	"errors"
	"os"
	"testing"
)

// TestAvailableMemory reads MemAvailable (not MemFree) and the cgroup's
// limit less its usage, v1 and v2, at the path /proc/self/cgroup names or
// at the root, whichever is lower; unlimited and unknown cgroups leave
// MemAvailable.
func TestAvailableMemory(t *testing.T) {
	const gib = 1 << 30
	meminfo := "MemTotal:       134217728 kB\nMemFree:          5977088 kB\nMemAvailable:   125829120 kB\n" // 120 GiB
	tests := []struct {
		name  string
		files map[string]string
		want  uint64
	}{
		{"no cgroup", map[string]string{"/proc/meminfo": meminfo}, 120 * gib},
		{"v2 limited", map[string]string{"/proc/meminfo": meminfo, "/proc/self/cgroup": "0::/slurm/job_7\n",
			"/sys/fs/cgroup/slurm/job_7/memory.max": "17179869184\n", "/sys/fs/cgroup/slurm/job_7/memory.current": "1073741824\n"}, 15 * gib},
		{"v2 unlimited", map[string]string{"/proc/meminfo": meminfo, "/proc/self/cgroup": "0::/\n",
			"/sys/fs/cgroup/memory.max": "max\n", "/sys/fs/cgroup/memory.current": "1073741824\n"}, 120 * gib},
		{"v1 at the root", map[string]string{"/proc/meminfo": meminfo, "/proc/self/cgroup": "5:cpu:/\n4:memory:/container/abc\n0::/\n",
			"/sys/fs/cgroup/memory/memory.limit_in_bytes": "8589934592", "/sys/fs/cgroup/memory/memory.usage_in_bytes": "4294967296"}, 4 * gib},
		{"v1 unlimited", map[string]string{"/proc/meminfo": meminfo, "/proc/self/cgroup": "4:memory:/\n",
			"/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712", "/sys/fs/cgroup/memory/memory.usage_in_bytes": "1"}, 120 * gib},
		{"cgroup over its limit", map[string]string{"/proc/meminfo": meminfo, "/proc/self/cgroup": "0::/j\n",
			"/sys/fs/cgroup/j/memory.max": "100", "/sys/fs/cgroup/j/memory.current": "200"}, 0},
		{"nothing known", map[string]string{}, 0},
	}
	for _, tt := range tests {
		read := func(path string) ([]byte, error) {
			if s, ok := tt.files[path]; ok {
				return []byte(s), nil
			}
			return nil, os.ErrNotExist
		}
		if got := AvailableMemory(read); got != tt.want {
			t.Errorf("%s: %d bytes, want %d", tt.name, got, tt.want)
		}
	}
	if got := AvailableMemory(func(string) ([]byte, error) { return nil, errors.New("denied") }); got != 0 {
		t.Errorf("unreadable files: %d, want 0", got)
	}
}
