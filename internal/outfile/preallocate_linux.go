package outfile

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// reserveMargin is the free space that a reservation always leaves to
// other writers.
const reserveMargin = 64 << 20

// preallocate asks the file system to reserve n bytes for f from offset 0
// without changing its size (FALLOC_FL_KEEP_SIZE), and reports whether
// anything was reserved, which the caller releases at commit. On ext4,
// writing a new file into reserved blocks skips the per-block
// delayed-allocation bookkeeping of every write (see docs/performance.md).
//
// It never reserves more than the free space minus reserveMargin, so that
// other writers do not run out of space because of a reservation, and it
// keeps nothing when the file system refuses (no fallocate, or no space:
// the writes then report it).
func preallocate(f *os.File, n int64) bool {
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &st); err != nil {
		return false
	}
	if free := int64(st.Bavail) * int64(st.Bsize); n > free-reserveMargin {
		return false
	}
	if err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, 0, n); err != nil {
		// A failure (ENOSPC) may leave part of the range reserved:
		// release it now.
		f.Truncate(0)
		return false
	}
	return true
}

// Sparse reports whether the file of fi holds far fewer blocks than its
// size says: its size is no guide to what it holds.
func Sparse(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	return st.Blocks*512 < fi.Size()/2
}

// startWriteback asks the kernel to start writing n bytes of f at off to
// disk, without waiting for them (sync_file_range with
// SYNC_FILE_RANGE_WRITE). It is only a hint: the fsync before the commit
// is what makes the file durable, and an error changes nothing.
func startWriteback(f *os.File, off, n int64) {
	unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
}
