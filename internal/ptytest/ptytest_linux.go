//go:build linux

package ptytest

import (
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/c4gh-go/crypt4gh/internal/clitest"
)

// Open returns the two ends of a new pseudo-terminal, closed when the test
// ends, or skips the test when none can be had. Closing an end earlier is
// fine.
func Open(t testing.TB) (master, tty *os.File) {
	t.Helper()
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		clitest.Missing(t, "no pseudo-terminals: %v", err)
	}
	master = os.NewFile(uintptr(fd), "/dev/ptmx")
	t.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		clitest.Missing(t, "cannot unlock the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		clitest.Missing(t, "cannot name the pseudo-terminal: %v", err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		clitest.Missing(t, "cannot open the pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { tty.Close() })
	return master, tty
}
