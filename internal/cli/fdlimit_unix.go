//go:build unix

package cli

import "syscall"

// openFileLimit returns how many files the process may have open
// (RLIMIT_NOFILE, which the Go runtime raises to its hard limit at
// start), or 0 when it is not known.
func openFileLimit() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0
	}
	return int(min(rl.Cur, 1<<30))
}
