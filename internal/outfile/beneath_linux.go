package outfile

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// openBeneath opens the folder dir, which must lie in the folder root,
// without following a symbolic link below root or leaving it (openat2
// with RESOLVE_BENEATH and RESOLVE_NO_SYMLINKS); root itself may be a
// link, as the user named it. The returned folder is where the output is
// made and committed, through dirPath: a link planted later, anywhere
// between root and the output, changes nothing. It returns
// errors.ErrUnsupported where the kernel has no openat2 (before 5.6).
func openBeneath(root, dir string) (*os.File, error) {
	rel, err := filepath.Rel(root, dir)
	if err != nil {
		return nil, err
	}
	r, err := os.Open(root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	how := unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	for {
		fd, err := unix.Openat2(int(r.Fd()), rel, &how)
		switch {
		case err == nil:
			return os.NewFile(uintptr(fd), dir), nil
		case errors.Is(err, unix.EINTR), errors.Is(err, unix.EAGAIN):
			continue
		case errors.Is(err, unix.ENOSYS):
			return nil, errors.ErrUnsupported
		case errors.Is(err, unix.ELOOP), errors.Is(err, unix.EXDEV):
			return nil, errLinkBelow
		}
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
}

// dirPath is the path of name in the folder d opened by openBeneath: the
// kernel resolves /proc/self/fd/N to the folder itself, whatever its path
// has become since.
func dirPath(d *os.File, name string) string {
	return "/proc/self/fd/" + strconv.Itoa(int(d.Fd())) + "/" + name
}
