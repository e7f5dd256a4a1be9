package outfile

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// renameNoReplace renames tmp to final unless final exists, atomically
// (renameat2 with RENAME_NOREPLACE). It fails with an error wrapping
// os.ErrExist when final exists, and with errors.ErrUnsupported when the
// kernel or file system does not offer it.
func renameNoReplace(tmp, final string) error {
	err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, final, unix.RENAME_NOREPLACE)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EEXIST):
		return os.ErrExist
	case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOTSUP):
		return errors.ErrUnsupported
	}
	return &os.LinkError{Op: "rename", Old: tmp, New: final, Err: err}
}
