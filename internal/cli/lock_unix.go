//go:build unix

package cli

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive lock on f for as long as it is open, or
// fails at once when another process holds one.
func lockFile(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

// ownedPrivate reports whether fi is a file of the process's own user that
// no other user may read or write.
func ownedPrivate(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid() && fi.Mode().Perm()&0o077 == 0
}
