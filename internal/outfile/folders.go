package outfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// Folders is the output folders of a batch (Options.Folders). Each is
// held open once for all the outputs made in it, rather than once for
// each, and opened once to be fsynced. Every commit still waits for an
// fsync of the folder begun after its rename, so an output is durable
// under its name when Commit returns, as without Folders. The zero value is ready; Close
// closes what it holds once the batch is over.
type Folders struct {
	mu   sync.Mutex
	held map[string]*folder // by the folder's path
}

// maxIdleFolders is how many folders a Folders keeps open with no output
// in them: a batch that writes into many folders holds few at once.
const maxIdleFolders = 32

// folder is one output folder: held open below the output folder
// (Options.Beneath), or named by its path, and fsynced for the outputs
// committed into it.
type folder struct {
	path string      // the folder's path, as the outputs name it
	d    *os.File    // the folder held by openBeneath; nil: by path
	id   os.FileInfo // what d is, to check that path still names it
	refs int         // outputs open in it (guarded by Folders.mu)

	mu     sync.Mutex
	err    error    // the first fsync that failed
	syncFD *os.File // the folder opened for fsync, on first use
	noSync bool     // the folder cannot be opened to be fsynced
	warned bool     // its old temporary files were looked for

	// The group commit (see sync): renames counted, the count that the
	// last fsync to end covered, and whether one is under way.
	renames, synced uint64
	syncing         bool
	syncEnded       sync.Cond // broadcast when an fsync ends; its L is &mu
}

func newFolder(path string, d *os.File, id os.FileInfo) *folder {
	return &folder{path: path, d: d, id: id, refs: 1}
}

// beneath is the package's beneath (see Options.Beneath) through the
// folders held: the folder of path, held, the path of the output through
// it, and whether nothing is there yet. The folder already held is taken
// again when path's folder is still that folder.
func (fs *Folders) beneath(root, path string) (f *folder, at string, absent bool, err error) {
	dir := filepath.Dir(path)
	fi, err := folderBelow(root, dir, path)
	if err != nil {
		return nil, "", false, err
	}
	if f = fs.take(dir, fi); f == nil {
		d, err := openBeneath(root, dir)
		switch {
		case errors.Is(err, errors.ErrUnsupported):
			d = nil
		case errors.Is(err, errLinkBelow):
			return nil, "", false, linkBelow(dir, root)
		case err != nil:
			return nil, "", false, fmt.Errorf("failed to open the folder of output %s: %w", QuoteName(path), PathErr(err))
		}
		id := fi
		if d != nil {
			if id, err = d.Stat(); err != nil {
				d.Close()
				return nil, "", false, fmt.Errorf("failed to open the folder of output %s: %w", QuoteName(path), PathErr(err))
			}
		}
		f = fs.add(newFolder(dir, d, id))
	}
	at = path
	if f.d != nil {
		at = dirPath(f.d, filepath.Base(path))
	}
	li, err := os.Lstat(at)
	switch {
	case err == nil && li.Mode()&os.ModeSymlink != 0:
		fs.release(f)
		return nil, "", false, linkBelow(path, root)
	case errors.Is(err, os.ErrNotExist):
		absent = true
	}
	return f, at, absent, nil
}

// folderBelow is CheckBelow of the folder dir of the output path, which
// must exist: it returns what dir is, to find the folder held for it.
// The output's own name is checked through the folder held.
func folderBelow(root, dir, path string) (os.FileInfo, error) {
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, usagef("output %s is not in the output folder %s", QuoteName(path), QuoteName(root))
	}
	if rel == "." {
		// The output folder itself may be a link: the user named it.
		fi, err := os.Stat(root)
		if err != nil {
			return nil, fmt.Errorf("failed to open the folder of output %s: %w", QuoteName(path), PathErr(err))
		}
		return fi, nil
	}
	var fi os.FileInfo
	p := root
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		p = filepath.Join(p, part)
		if fi, err = os.Lstat(p); err != nil {
			return nil, fmt.Errorf("failed to open the folder of output %s: %w", QuoteName(path), PathErr(err))
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return nil, linkBelow(p, root)
		}
	}
	return fi, nil
}

// byPath is the folder of an output that is not made below an output
// folder: named by its path, only fsynced.
func (fs *Folders) byPath(final string) *folder {
	dir := filepath.Dir(final)
	if f := fs.take(dir, nil); f != nil {
		return f
	}
	return fs.add(newFolder(dir, nil, nil))
}

// take returns the folder held for dir, with one more output in it, if
// it is still the folder fi (nil: any folder by path).
func (fs *Folders) take(dir string, fi os.FileInfo) *folder {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f := fs.held[dir]
	if f == nil || (f.id == nil) != (fi == nil) || fi != nil && !os.SameFile(f.id, fi) {
		return nil
	}
	f.refs++
	return f
}

// add records f, which has one output in it, as the folder of its path;
// a folder that path named before is closed once its outputs are done.
func (fs *Folders) add(f *folder) *folder {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.held == nil {
		fs.held = map[string]*folder{}
	}
	if old := fs.held[f.path]; old != nil && old.refs == 0 {
		old.close()
	}
	fs.held[f.path] = f
	return f
}

// release says that an output made in f is done: f stays open for the
// next ones unless its path names another folder now, or too many are
// open.
func (fs *Folders) release(f *folder) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f.refs--
	if f.refs > 0 {
		return
	}
	if fs.held[f.path] != f {
		f.close()
		return
	}
	if len(fs.held) > maxIdleFolders {
		delete(fs.held, f.path)
		f.close()
	}
}

// Close closes the folders held; no output may be open in them.
func (fs *Folders) Close() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for p, f := range fs.held {
		f.close()
		delete(fs.held, p)
	}
}

func (f *folder) close() {
	if f.d != nil {
		f.d.Close()
	}
	if f.syncFD != nil {
		f.syncFD.Close()
	}
}

// warnOnce reports whether the folder's old temporary files are still to
// be looked for (warnStale), once.
func (f *folder) warnOnce() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	seen := f.warned
	f.warned = true
	return !seen
}

// syncFolder fsyncs a folder; the tests watch it.
var syncFolder = (*os.File).Sync

// errNoSync means that the folder cannot be opened to be fsynced (we may
// not read it): there is nothing to sync with, as for SyncDir.
var errNoSync = errors.New("folder not readable")

// sync makes the renames into f made before it was called durable: it
// fsyncs the folder through the descriptor that its outputs share. The
// commits into one folder share their fsyncs: one is under way at a time,
// and a commit whose rename it may have missed (it started before the
// commit called sync) waits for the next, which one of those waiting
// starts for all of them. On a disk with a write cache every fsync is
// a flush of that cache, and a batch of 1,000 files of 1 MiB made 1,100
// to 1,700 of them, one fsync a file and one a rename, with as many under
// way as files being committed; sharing the folder's fsyncs made 770 to
// 1,030, in three quarters of the time (docs/performance.md, Batches).
// A failed fsync, or a failure to open the folder for one, fails every
// later call: the kernel may have dropped what that fsync did not write.
func (f *folder) sync() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil || f.noSync {
		return f.err
	}
	if f.syncEnded.L == nil {
		f.syncEnded.L = &f.mu
	}
	f.renames++
	mine := f.renames
	for f.synced < mine && f.err == nil && !f.noSync {
		if f.syncing {
			f.syncEnded.Wait()
			continue
		}
		// This fsync covers every rename counted so far. Only the
		// commit that runs it uses syncFD meanwhile.
		f.syncing = true
		covers, d := f.renames, f.syncFD
		f.mu.Unlock()
		d, err := f.syncOnce(d)
		f.mu.Lock()
		f.syncing, f.syncFD = false, d
		switch {
		case errors.Is(err, errNoSync):
			f.noSync = true
		case err != nil:
			f.err = fmt.Errorf("failed to sync folder %s: %w", f.path, PathErr(err))
		default:
			f.synced = covers
		}
		f.syncEnded.Broadcast()
	}
	return f.err
}

// syncOnce fsyncs the folder through d, which it opens first when d is
// nil, and returns the descriptor to keep. A folder named by its path is
// opened anew when the path names another folder now, after the one that
// it named is fsynced too: the renames counted may have gone into either.
func (f *folder) syncOnce(d *os.File) (*os.File, error) {
	if d != nil && f.d == nil {
		now, nerr := os.Stat(f.path)
		was, werr := d.Stat()
		if nerr == nil && werr == nil && !os.SameFile(now, was) {
			err := syncFolder(d)
			d.Close()
			d = nil
			if err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
				return nil, err
			}
		}
	}
	if d == nil {
		name := f.path
		if f.d != nil {
			name = dirPath(f.d, ".")
		}
		var err error
		if d, err = os.Open(name); errors.Is(err, os.ErrPermission) {
			return nil, errNoSync
		} else if err != nil {
			return nil, err
		}
	}
	if err := syncFolder(d); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return d, err
	}
	return d, nil
}
