//go:build linux

package agent

import "golang.org/x/sys/unix"

// lockedPage returns size bytes of memory outside the Go heap, locked in
// RAM (never swapped) and left out of core dumps where the system allows.
// locked reports whether mlock succeeded (RLIMIT_MEMLOCK may forbid it).
func lockedPage(size int) (mem []byte, locked bool, free func()) {
	b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		b := make([]byte, size)
		return b, false, func() { clear(b) }
	}
	_ = unix.Madvise(b, unix.MADV_DONTDUMP)
	locked = unix.Mlock(b) == nil
	return b, locked, func() {
		clear(b)
		_ = unix.Munlock(b)
		_ = unix.Munmap(b)
	}
}
