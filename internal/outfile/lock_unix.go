//go:build unix

package outfile

import (
	"os"
	"path/filepath"
	"syscall"
)

// Lock takes an exclusive lock on f for as long as it is open, or
// fails at once when another process holds one.
func Lock(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

// OwnedPrivate reports whether fi is a file of the process's own user that
// no other user may read or write.
func OwnedPrivate(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid() && fi.Mode().Perm()&0o077 == 0
}

// MountedOn reports whether the folder at p is the root of a file system
// mounted there: its device differs from its parent's (a FUSE mount of
// another crypt4gh, say), or it is the root of all.
func MountedOn(p string) bool {
	fi, err := os.Stat(p)
	parent, perr := os.Stat(filepath.Join(p, ".."))
	if err != nil || perr != nil {
		return false
	}
	a, ok1 := fi.Sys().(*syscall.Stat_t)
	b, ok2 := parent.Sys().(*syscall.Stat_t)
	return ok1 && ok2 && (a.Dev != b.Dev || a.Ino == b.Ino)
}

// SingleLink reports whether fi has one name only: a hard link to another
// file of the user's is not taken for a partial output of --continue.
func SingleLink(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Nlink == 1
}
