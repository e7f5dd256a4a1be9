//go:build unix

package agent

import (
	"os"
	"syscall"
)

// detachAttr puts the daemon in a session of its own, away from the
// terminal.
func detachAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

// lockDir holds an exclusive lock on the folder dir until the function it
// returns is called: two agents started at once on one path take turns.
func lockDir(dir string) (func(), error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}

// ownedPrivately reports whether fi, a folder, belongs to this user and
// only this user may change what it holds.
func ownedPrivately(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid() && fi.Mode().Perm()&0o022 == 0
}
