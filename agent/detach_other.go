//go:build !unix

package agent

import (
	"os"
	"syscall"
)

// detachAttr: no sessions here (and no agent: peerOf refuses everyone).
func detachAttr() *syscall.SysProcAttr { return nil }

func lockDir(string) (func(), error) { return func() {}, nil }

func ownedPrivately(fi os.FileInfo) bool { return fi.Mode().Perm()&0o022 == 0 }
