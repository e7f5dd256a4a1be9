//go:build !linux

package mount

import (
	"os"
	"syscall"
)

// openInside opens name below root with flags, after checking that its
// path, links resolved, stays in root (no openat2 here: a link swapped in
// between is not caught; the mount runs on Linux only).
func openInside(root, name string, flags int) (*os.File, error) {
	return openByPath(root, name, flags)
}

// statInside describes name below root as openInside finds it.
func statInside(root, name string) (os.FileInfo, error) {
	p := dirSource{root: root}.path(name)
	if !(dirSource{root: root}).inside(p) {
		return nil, &os.PathError{Op: "stat", Path: p, Err: errOutside}
	}
	return os.Stat(p)
}

const openNonblock = syscall.O_NONBLOCK

const openDirectory = 0
