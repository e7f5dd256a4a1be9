package cli

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// pendingInput reports whether f, stdin that is not a terminal, holds
// input: a regular file with bytes left, or a pipe or socket with bytes
// waiting to be read (a writer such as echo has written them by the time
// the command runs), without reading any.
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
		n, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCINQ)
		return err == nil && n > 0
	}
	return false
}
