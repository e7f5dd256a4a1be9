//go:build unix

package agent

import "syscall"

// detachAttr puts the daemon in a session of its own, away from the
// terminal.
func detachAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }
