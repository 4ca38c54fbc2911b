//go:build !amd64

package numa

// pause is the spin-wait hint where none is written for the processor: a
// short busy loop.
func pause(n uint32) {
	for range n {
	}
}
