//go:build unix

package outfile

import (
	"os"
	"syscall"
)

// createNew creates the new regular file name (O_CREAT|O_EXCL) for
// reading and writing, as os.OpenFile would, but without offering it to
// the runtime's poller: os.OpenFile puts the file in non-blocking mode,
// asks epoll to watch it, which fails for a regular file, and puts it
// back, four fcntl and an epoll_ctl for every output of a batch.
func createNew(name string, perm os.FileMode) (*os.File, error) {
	for {
		fd, err := syscall.Open(name, syscall.O_CREAT|syscall.O_EXCL|syscall.O_RDWR|syscall.O_CLOEXEC, uint32(perm.Perm()))
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: name, Err: err}
		}
		return os.NewFile(uintptr(fd), name), nil
	}
}
