package numa

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

func TestLargeBytes(t *testing.T) {
	for _, n := range []int{0, 1, 4095, 3 << 20, 8<<20 + 1} {
		b := LargeBytes(n)
		if len(b) != n {
			t.Fatalf("LargeBytes(%d) has length %d", n, len(b))
		}
		for i, v := range b {
			if v != 0 {
				t.Fatalf("LargeBytes(%d)[%d] = %d, want 0", n, i, v)
			}
		}
	}
}

// TestLargeBytesHugePages checks that a large buffer's mapping is advised
// to use huge pages (the "hg" flag in /proc/self/smaps) where the system
// gives them on request. Whether touching it then maps huge pages depends
// on the Go heap (memory it recycles may be touched already), so the test
// only logs that; BenchmarkFirstTouch measures the effect.
func TestLargeBytesHugePages(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("transparent huge pages are a Linux feature")
	}
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || strings.Contains(string(mode), "[never]") {
		t.Skipf("transparent huge pages are off (%q, %v)", strings.TrimSpace(string(mode)), err)
	}
	b := LargeBytes(32 << 20)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	m, err := smapsEntry(uintptr(unsafe.Pointer(&b[len(b)/2])))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(strings.Fields(m["VmFlags"]), "hg") {
		t.Errorf("the mapping of a 32 MiB LargeBytes buffer is not advised to use huge pages: VmFlags %q", m["VmFlags"])
	}
	t.Logf("AnonHugePages of the mapping after touching it: %s", m["AnonHugePages"])
	runtime.KeepAlive(b)
}

// smapsEntry returns the fields of the mapping holding addr in
// /proc/self/smaps, by name.
func smapsEntry(addr uintptr) (map[string]string, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var fields map[string]string // of the mapping holding addr, once found
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		name, value, ok := strings.Cut(line, ":")
		if !ok || strings.Contains(name, " ") || strings.Contains(name, "-") {
			// A mapping's first line: "lo-hi perms offset dev inode path".
			if fields != nil {
				return fields, nil
			}
			lo, hi, _ := strings.Cut(strings.Fields(line)[0], "-")
			l, err1 := strconv.ParseUint(lo, 16, 64)
			h, err2 := strconv.ParseUint(hi, 16, 64)
			if err1 == nil && err2 == nil && uint64(addr) >= l && uint64(addr) < h {
				fields = map[string]string{}
			}
			continue
		}
		if fields != nil {
			fields[name] = strings.TrimSpace(value)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if fields != nil {
		return fields, nil
	}
	return nil, fmt.Errorf("no mapping in /proc/self/smaps holds %#x", addr)
}

// BenchmarkFirstTouch writes one byte per 4 KiB page of a fresh 32 MiB
// buffer from make and from LargeBytes: the cost of first-touched memory,
// which huge pages cut on machines where page faults are dear.
func BenchmarkFirstTouch(b *testing.B) {
	const n = 32 << 20
	for _, bc := range []struct {
		name  string
		alloc func(int) []byte
	}{
		{"make", func(n int) []byte { return make([]byte, n) }},
		{"LargeBytes", LargeBytes},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(n)
			for b.Loop() {
				buf := bc.alloc(n)
				for i := 0; i < n; i += 4096 {
					buf[i] = 1
				}
				// Return the pages, so that the next round touches fresh
				// memory as a new buffer in a run does.
				runtime.KeepAlive(buf)
				debug.FreeOSMemory()
			}
		})
	}
}
