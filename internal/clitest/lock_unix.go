//go:build unix

package clitest

import (
	"os"
	"syscall"
)

// lockFile waits for an exclusive lock on f.
func lockFile(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }

// unlockFile releases the lock of lockFile.
func unlockFile(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
