package numa

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
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

// TestLargeBytesHugePages checks that touching a large buffer maps huge
// pages where the system gives them on request.
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
	huge, err := anonHugeKiB(uintptr(unsafe.Pointer(&b[len(b)/2])))
	if err != nil {
		t.Fatal(err)
	}
	if huge == 0 {
		t.Errorf("no huge pages back a touched 32 MiB LargeBytes buffer (transparent_hugepage: %s)", strings.TrimSpace(string(mode)))
	}
	runtime.KeepAlive(b)
}

// anonHugeKiB returns the AnonHugePages of the mapping holding addr, from
// /proc/self/smaps.
func anonHugeKiB(addr uintptr) (int, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if lo, hi, ok := strings.Cut(strings.Fields(line)[0], "-"); ok && !strings.HasSuffix(line, ":") {
			l, err1 := strconv.ParseUint(lo, 16, 64)
			h, err2 := strconv.ParseUint(hi, 16, 64)
			if err1 == nil && err2 == nil {
				in = uint64(addr) >= l && uint64(addr) < h
				continue
			}
		}
		if kib, ok := strings.CutPrefix(line, "AnonHugePages:"); ok && in {
			return strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(kib), " kB"))
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no mapping in /proc/self/smaps holds %#x", addr)
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
