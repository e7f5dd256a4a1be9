package cli

import "golang.org/x/sys/unix"

// undumpable keeps other processes of the user (a debugger, a reader of
// /proc/PID/mem or /proc/PID/environ) out of this process's memory, as
// ssh-agent does: only root can read it then. A program it starts is
// dumpable again.
func undumpable() error {
	return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}
