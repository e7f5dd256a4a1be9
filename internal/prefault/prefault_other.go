//go:build !linux

package prefault

// Ahead does nothing: only Linux is told to populate the heap.
func Ahead(n uintptr) {}
