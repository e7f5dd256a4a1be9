package mount

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// openInside opens name, a slash-separated path below the folder root
// ("" for root), with flags, the kernel resolving it without leaving
// root (openat2 with RESOLVE_BENEATH): a link that points out of root,
// also one swapped in while it is opened, fails with errOutside. Links
// inside root are followed. Where the kernel has no openat2 (before
// 5.6), the path is checked, then opened.
func openInside(root, name string, flags int) (*os.File, error) {
	rel := filepath.FromSlash(name)
	if rel == "" {
		rel = "."
	}
	p := filepath.Join(root, rel)
	r, err := os.Open(root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS}
	for {
		fd, err := unix.Openat2(int(r.Fd()), rel, &how)
		switch {
		case err == nil:
			return os.NewFile(uintptr(fd), p), nil
		case errors.Is(err, unix.EINTR), errors.Is(err, unix.EAGAIN):
			continue // EAGAIN: a rename raced the lookup
		case errors.Is(err, unix.ENOSYS):
			return openByPath(root, name, flags)
		case errors.Is(err, unix.EXDEV):
			// RESOLVE_BENEATH refuses every absolute link, also one to
			// a place inside root: such a one is opened by its resolved
			// path, through no link at all.
			return openResolved(r, root, p, flags)
		}
		return nil, &fs.PathError{Op: "open", Path: p, Err: err}
	}
}

// openResolved opens p, a path below root (open as r), by the path it
// resolves to, which must lie in root, with no link followed on the way
// (RESOLVE_NO_SYMLINKS): a link swapped in after it was resolved fails.
func openResolved(r *os.File, root, p string, flags int) (*os.File, error) {
	outside := &fs.PathError{Op: "open", Path: p, Err: errOutside}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, outside
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return nil, outside
	}
	rel, err := filepath.Rel(realRoot, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, outside
	}
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	for {
		fd, err := unix.Openat2(int(r.Fd()), rel, &how)
		switch {
		case err == nil:
			return os.NewFile(uintptr(fd), p), nil
		case errors.Is(err, unix.EINTR), errors.Is(err, unix.EAGAIN):
			continue
		case errors.Is(err, unix.ELOOP), errors.Is(err, unix.EXDEV):
			return nil, outside
		}
		return nil, &fs.PathError{Op: "open", Path: p, Err: err}
	}
}

// statInside describes name below root as openInside finds it.
func statInside(root, name string) (os.FileInfo, error) {
	f, err := openInside(root, name, unix.O_PATH)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Stat()
}

// openNonblock is the flag that opens a pipe without waiting for a
// writer.
const openNonblock = unix.O_NONBLOCK

// openDirectory is the flag that opens only a folder.
const openDirectory = unix.O_DIRECTORY
