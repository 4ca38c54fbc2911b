package numa

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePageSize is the size of a transparent huge page (2 MiB on x86-64), or
// 0 when the kernel has none. It is read once: it is fixed at boot.
var hugePageSize = sync.OnceValue(func() uintptr {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size")
	if err != nil {
		return 0
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n&(n-1) != 0 {
		return 0
	}
	return uintptr(n)
})

// adviseHugePages advises huge pages for the huge-page-aligned part of b.
// Errors are ignored: the advice only changes how fast b is first touched.
func adviseHugePages(b []byte) {
	h := hugePageSize()
	if h == 0 || uintptr(len(b)) < h {
		return
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	start := (p + h - 1) &^ (h - 1)
	end := (p + uintptr(len(b))) &^ (h - 1)
	if start < end {
		unix.Madvise(b[start-p:end-p], unix.MADV_HUGEPAGE)
	}
}
