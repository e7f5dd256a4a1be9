package mount

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Source is a read-only tree of files that [Mount] shows: a local folder
// ([Dir]) or, through an adapter (package mount/storesource), the objects
// under a prefix of an object store. Paths are slash-separated and relative to the top of the tree,
// which is "" (never ".", never starting or ending with a slash).
//
// Unless [Options.Refresh] is set, a Source must not change while it is
// mounted: the mount lists each folder once, the first time it is looked
// at, and reads files at the sizes it listed. With it, folders are listed
// again when their listing is older, and a file that changed is opened
// again (see [Stater]). Its methods may be called from several goroutines
// at once.
type Source interface {
	// ReadDir lists the folder at dir. The entries need not be sorted;
	// their names are single path elements.
	ReadDir(ctx context.Context, dir string) ([]Entry, error)
	// Open opens the file at name for reading. The mount calls Close when
	// the last process that had it open closes it.
	Open(ctx context.Context, name string) (File, error)
}

// Entry is one entry of a folder of a [Source].
type Entry struct {
	Name    string    // a single path element
	Dir     bool      // a folder; otherwise a regular file
	Size    int64     // of a file, in bytes
	ModTime time.Time // shown as the time of the file or folder
	// Version, when not "", tells one version of a file from another
	// where its size and time may not (an object's ETag).
	Version string
	// Other, when not "", says what the entry is when it is neither a
	// regular file nor a folder ("a named pipe", "a device"): the mount
	// leaves it out, and logs it as it logs every entry left out.
	Other string
}

// Stater is implemented by a Source that can describe one file without
// listing its folder. With [Options.Refresh], the mount asks it before it
// opens a file that no process has open: a file whose size, time or
// version differ from its listing's is then read as it is now (its header
// opened again), not as it was listed.
type Stater interface {
	Stat(ctx context.Context, name string) (Entry, error)
}

// File is an open file of a [Source]. ReadAt may be called from several
// goroutines at once.
type File interface {
	io.ReaderAt
	io.Closer
}

// Dir returns the local folder at root, its subfolders included, as a
// [Source]. Symbolic links are followed when they lead to a place inside
// root: one that points outside it (which another user of a shared folder
// could plant) is left out, as are entries that are neither regular files
// nor folders (devices, pipes, sockets), and listed with [Entry.Other]
// set so that the mount logs them; broken links are left out silently.
func Dir(root string) Source {
	return dirSource{root: root}
}

type dirSource struct{ root string }

func (d dirSource) path(name string) string {
	return filepath.Join(d.root, filepath.FromSlash(name))
}

// String returns the folder, as given to [Dir].
func (d dirSource) String() string { return d.root }

func (d dirSource) ReadDir(ctx context.Context, dir string) ([]Entry, error) {
	// The folder opened as it is in root now: one that became a link to
	// elsewhere since it was listed is not read.
	f, err := openInside(d.root, dir, os.O_RDONLY|openDirectory)
	if err != nil {
		return nil, err // names the folder and what failed
	}
	list, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(list))
	var above []os.FileInfo // the folders from root to dir, for links to them
	for _, de := range list {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		fi, err := statInside(d.root, path.Join(dir, de.Name()))
		switch {
		case errors.Is(err, errOutside):
			out = append(out, Entry{Name: de.Name(), Other: errOutside.Error()})
			continue
		case err != nil:
			continue // a link to nowhere, or removed since
		}
		if de.Type()&fs.ModeSymlink != 0 && fi.IsDir() {
			if above == nil {
				above = d.folders(dir)
			}
			if slices.ContainsFunc(above, func(a os.FileInfo) bool { return os.SameFile(a, fi) }) {
				// Followed, it would show the tree inside itself
				// without end.
				out = append(out, Entry{Name: de.Name(), Other: errLoop.Error()})
				continue
			}
		}
		switch m := fi.Mode(); {
		case fi.IsDir():
			out = append(out, Entry{Name: de.Name(), Dir: true, ModTime: fi.ModTime()})
		case m.IsRegular():
			out = append(out, Entry{Name: de.Name(), Size: fi.Size(), ModTime: fi.ModTime()})
		case m&fs.ModeNamedPipe != 0:
			out = append(out, Entry{Name: de.Name(), Other: "a named pipe"})
		case m&fs.ModeSocket != 0:
			out = append(out, Entry{Name: de.Name(), Other: "a socket"})
		case m&fs.ModeDevice != 0:
			out = append(out, Entry{Name: de.Name(), Other: "a device"})
		default:
			out = append(out, Entry{Name: de.Name(), Other: "not a regular file"})
		}
	}
	return out, nil
}

// folders describes the folders from root down to dir, dir included.
func (d dirSource) folders(dir string) []os.FileInfo {
	var out []os.FileInfo
	for p := dir; ; p = path.Dir(p) {
		if p == "." {
			p = ""
		}
		if fi, err := statInside(d.root, p); err == nil {
			out = append(out, fi)
		}
		if p == "" {
			return out
		}
	}
}

var (
	errLoop       = errors.New("a symbolic link to a folder that holds it (a loop)")
	errNotRegular = errors.New("not a regular file")
	errOutside    = errors.New("a symbolic link that points out of the mounted folder")
)

// inside reports whether p, with its symbolic links resolved, is in the
// folder root (resolved too).
func (d dirSource) inside(p string) bool {
	root, err := filepath.EvalSymlinks(d.root)
	if err != nil {
		return false
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return false
	}
	rel, err := filepath.Rel(root, real)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func (d dirSource) Stat(ctx context.Context, name string) (Entry, error) {
	fi, err := statInside(d.root, name)
	if err != nil {
		return Entry{}, err
	}
	if !fi.Mode().IsRegular() {
		return Entry{}, &fs.PathError{Op: "stat", Path: d.path(name), Err: errNotRegular}
	}
	return Entry{Name: path.Base(name), Size: fi.Size(), ModTime: fi.ModTime()}, nil
}

// Open opens the regular file at name, as it is in root now: a link that
// points out of the folder (made or swapped in since it was listed) is
// not served, and what turned into a pipe is opened without waiting for
// a writer, then refused.
func (d dirSource) Open(ctx context.Context, name string) (File, error) {
	f, err := openInside(d.root, name, os.O_RDONLY|openNonblock)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil {
		f.Close()
		return nil, err
	} else if !fi.Mode().IsRegular() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: d.path(name), Err: errNotRegular}
	}
	return f, nil
}

// openByPath opens name below root with flags after checking that its
// path, its links resolved, stays in root: where openat2 is missing.
func openByPath(root, name string, flags int) (*os.File, error) {
	d := dirSource{root: root}
	p := d.path(name)
	if !d.inside(p) {
		return nil, &fs.PathError{Op: "open", Path: p, Err: errOutside}
	}
	return os.OpenFile(p, flags, 0)
}
