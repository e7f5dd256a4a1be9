package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// preallocate asks the file system to reserve n bytes for f from offset 0
// without changing its size (FALLOC_FL_KEEP_SIZE). It reports whether
// anything may have been reserved beyond what is later written, which
// the caller then trims. On ext4, writing a new file into reserved blocks
// skips the per-block delayed-allocation bookkeeping of every write (see
// README, Performance). Failure (a file system without fallocate, or too
// little space, which the writes then report) is not an error.
func preallocate(f *os.File, n int64) bool {
	err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, 0, n)
	// ENOSPC may leave part of the range reserved.
	return err == nil || err == unix.ENOSPC
}
