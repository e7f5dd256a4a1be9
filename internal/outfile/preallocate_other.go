//go:build !linux

package outfile

import "os"

// preallocate reserves nothing on systems without fallocate.
func preallocate(f *os.File, n int64) bool { return false }

// Sparse is false: without preallocation it does not matter.
func Sparse(fi os.FileInfo) bool { return false }

// startWriteback does nothing where there is no sync_file_range: the
// fsync before the commit writes the whole file.
func startWriteback(f *os.File, off, n int64) {}
