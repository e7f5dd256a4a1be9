//go:build !unix

package agent

import "syscall"

// detachAttr: no sessions here (and no agent: peerOf refuses everyone).
func detachAttr() *syscall.SysProcAttr { return nil }
