//go:build unix

package outfile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
)

// Lock takes an exclusive lock on f for as long as it is open, or
// fails at once with ErrLocked when another process holds one. On a file
// system that cannot lock (Lustre without -o flock, NFS without its lock
// daemon) it does nothing: the file is used unlocked rather than not at
// all.
func Lock(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	switch {
	case err == nil, errors.Is(err, syscall.ENOSYS), errors.Is(err, syscall.ENOLCK), errors.Is(err, syscall.EOPNOTSUPP), errors.Is(err, syscall.ENOTSUP):
		return nil
	case errors.Is(err, syscall.EWOULDBLOCK):
		return ErrLocked
	}
	return &os.PathError{Op: "lock", Path: f.Name(), Err: err}
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
