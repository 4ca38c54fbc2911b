//go:build !linux

package numa

// adviseHugePages does nothing: transparent huge pages are a Linux feature.
func adviseHugePages([]byte) {}
