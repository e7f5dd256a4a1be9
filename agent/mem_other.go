//go:build !linux

package agent

// lockedPage returns size bytes of ordinary memory: this platform's
// memory locking is not used.
func lockedPage(size int) (mem []byte, locked bool, free func()) {
	b := make([]byte, size)
	return b, false, func() { clear(b) }
}
