package outfile

import (
	"os"

	"golang.org/x/sys/unix"
)

// markAttr is the extended attribute that holds an output's mark.
const markAttr = "user.crypt4gh.run"

// setMark writes mark on f, where its file system keeps user attributes.
func setMark(f *os.File, mark string) {
	if sc, err := f.SyscallConn(); err == nil {
		sc.Control(func(fd uintptr) { unix.Fsetxattr(int(fd), markAttr, []byte(mark), 0) })
	}
}

// Marked reports whether the file at path holds mark (Options.Mark).
// A symbolic link is followed, as the output was committed through it.
func Marked(path, mark string) bool {
	b := make([]byte, 64)
	n, err := unix.Getxattr(path, markAttr, b)
	return err == nil && string(b[:n]) == mark
}

// Unmark removes the mark from the file at path (through a link, as
// Marked), once a journal has it done: the file is the user's from then
// on, and carries nothing of the run.
func Unmark(path string) { unix.Removexattr(path, markAttr) }
