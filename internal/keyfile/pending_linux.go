package keyfile

import (
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// pendingWait is how long pendingInput waits for a pipe's first bytes.
const pendingWait = 500 * time.Millisecond

// pendingInput reports whether f, stdin that is not a terminal, holds
// input: a regular file with bytes left, or a pipe or socket with bytes
// waiting to be read, or that come within pendingWait, without reading
// any. A writer slower than that is not seen.
func pendingInput(f *os.File) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	switch {
	case fi.Mode().IsRegular():
		off, err := f.Seek(0, io.SeekCurrent)
		return err == nil && fi.Size() > off
	case fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) != 0:
		// A writer that starts late (a pipeline whose first command
		// takes a moment) gets a short wait: until bytes come, the
		// pipe's end, or pendingWait.
		fds := []unix.PollFd{{Fd: int32(f.Fd()), Events: unix.POLLIN}}
		unix.Poll(fds, int(pendingWait.Milliseconds()))
		n, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCINQ)
		return err == nil && n > 0
	}
	return false
}
