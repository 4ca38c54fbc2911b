package numa

// LargeBytes returns a zeroed byte slice of length n for a large buffer
// that is written soon after: encoded trees, the buffers of a gather. On
// Linux it advises the kernel (madvise MADV_HUGEPAGE) to back the slice's
// whole huge pages with transparent huge pages, so that first touching
// them costs one page fault per huge page rather than one per 4 KiB page.
//
// Page faults are what first-touched memory costs: on the development VM
// about 11 µs per 4 KiB page, so 64 MiB took 180 ms to touch in 4 KiB
// pages and 4 ms in 2 MiB pages (a forest run's encoded trees and gather
// buffers are tens of MiB per rank). Go's heap asks for huge pages only
// when the system enables them for all memory, and most distributions
// enable them on request only (transparent_hugepage=madvise).
//
// The advice is a hint: without transparent huge pages, or for memory the
// Go heap already touched, the slice is an ordinary one. Its pages are
// first touched by whichever thread writes them, as for any allocation.
func LargeBytes(n int) []byte {
	b := make([]byte, n)
	adviseHugePages(b)
	return b
}
