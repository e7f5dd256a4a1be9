package mount

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
	"github.com/c4gh-go/crypt4gh/keys"
)

// This file shows a tree through FUSE, with github.com/hanwen/go-fuse.

const (
	// timeout is how long the kernel may keep names and attributes: the
	// source does not change while it is mounted.
	timeout = 24 * time.Hour
)

// maxRead is the largest read that the kernel may send (max_read) and the
// readahead asked for (the kernel allows 128 KiB at most). 512 KiB lets
// cat's reads of 256 KiB reach the file system whole: BenchmarkMount
// found them faster than 128 KiB ones in most runs, and 1 MiB ones no
// faster. A variable so that the benchmarks can try others.
var maxRead = 512 << 10

// readAheadKB is the kernel's read-ahead for the mounted files, in KiB,
// where the mount may set it. The kernel gives a FUSE mount the smaller
// of the max_readahead it asks for and its device's default, 128 KiB,
// and sends reads of that size: a cold `cat` of a mounted file then ran
// at 0.51 of a decrypt's speed, the cores idle a quarter of the time.
// With 1 MiB (set through sysfs, which only root may write) it ran at
// 0.67; 512 KiB and 2 MiB did about as well, larger reads (max_read) no
// better (docs/performance.md, Mount).
const readAheadKB = 1024

// blksize is the block size that stat reports, which tools such as cat
// take as the size of their reads.
var blksize uint32 = 128 << 10

// directBlksize is the block size reported with Options.DirectIO: with no
// kernel read-ahead, each read of cat reaches the mount as it is, and
// reads of 512 KiB (max_read) took 0.6 of the time of reads of 128 KiB.
var directBlksize uint32 = 512 << 10

// readObserver, when set by a test, sees the length of every read that
// the kernel sends.
var readObserver func(n int)

// Server is a mounted file system. Create it with [Mount]; the caller must
// call Wait or Unmount.
type Server struct {
	srv        *fuse.Server
	tree       *tree
	mountpoint string
	done       chan struct{} // closed when serving has ended
	top        Shown

	mu sync.Mutex // serialises Unmount
}

// Mount shows src at mountpoint, an existing folder, and serves the file
// system in the background until it is unmounted. It lists the top folder
// of src before mounting, so that an unreadable source fails here.
//
// Every regular file and folder of src is shown read-only, under its own
// name, except the Crypt4GH files named NAME.c4gh: each that opts.Key opens
// is shown as NAME, decrypted, with the size of the plaintext that it
// stands for (its edit list applied). A Crypt4GH file that the key does not
// open, and one whose NAME is also an entry of the same folder, is left out
// and logged to opts.Log. See the package documentation for the details.
func Mount(src Source, mountpoint string, opts Options) (*Server, error) {
	if keys.IsNil(opts.Key) {
		return nil, errNoKey
	}
	if src == nil {
		return nil, errNoSource
	}
	mp, err := filepath.Abs(mountpoint)
	if err != nil {
		return nil, fmt.Errorf("failed to find mountpoint: %w", err)
	}
	if fi, err := os.Stat(mp); err != nil {
		return nil, fmt.Errorf("failed to find mountpoint: %w", err)
	} else if !fi.IsDir() {
		return nil, errkind.Errorf(errkind.Usage, "mountpoint %s is not a folder", mp)
	}
	logw := opts.Log
	if logw == nil {
		logw = os.Stderr
	}
	t := newTree(src, opts.Key, opts.Sender, logw)
	top, err := t.list(context.Background(), "", nil)
	if err != nil {
		t.close()
		return nil, fmt.Errorf("failed to read source: %w", err)
	}

	uid, gid := uint32(os.Getuid()), uint32(os.Getgid())
	fsys := &fsys{tree: t, uid: uid, gid: gid, fileMode: 0o400, dirMode: 0o500, blksize: blksize, directIO: opts.DirectIO, refresh: max(opts.Refresh, 0)}
	if opts.DirectIO {
		fsys.blksize = directBlksize
	}
	if opts.AllowOther {
		fsys.fileMode, fsys.dirMode = 0o444, 0o555
	}
	root := &dirNode{fsys: fsys, node: node{dir: true, modTime: time.Now()}, listing: top}
	ttl := timeout
	if fsys.refresh > 0 {
		ttl = min(ttl, fsys.refresh)
	}
	mo := fuse.MountOptions{
		AllowOther:    opts.AllowOther,
		Options:       []string{"default_permissions"},
		FsName:        "crypt4gh",
		Name:          "crypt4gh",
		MaxWrite:      maxRead,
		MaxReadAhead:  maxRead,
		DisableXAttrs: true,
		// Every reply is bytes in memory, never a file to splice from:
		// go-fuse would otherwise try a pipe first for each read (three
		// more system calls) before it writes the bytes.
		DisableSplice: true,
		// With DirectIO, mmap still works where the kernel can (6.6).
		ExtraCapabilities: fuse.CAP_DIRECT_IO_ALLOW_MMAP,
		// What go-fuse has to say goes where the caller wants our lines.
		Logger: log.New(logw, "crypt4gh: mount: fuse: ", 0),
	}
	if os.Geteuid() == 0 {
		// Mount directly, with no need for fusermount3; "ro" is a flag
		// then, not an option.
		mo.DirectMount = true
		mo.DirectMountFlags = syscall.MS_RDONLY | syscall.MS_NOSUID | syscall.MS_NODEV
	} else {
		mo.Options = append(mo.Options, "ro")
	}
	srv, err := fs.Mount(mp, root, &fs.Options{
		MountOptions:    mo,
		EntryTimeout:    &ttl,
		AttrTimeout:     &ttl,
		NegativeTimeout: &ttl,
		UID:             uid,
		GID:             gid,
		// Not 0, which some programs take for a deleted entry.
		RootStableAttr: &fs.StableAttr{Ino: fuse.FUSE_ROOT_ID},
	})
	if err != nil {
		t.close()
		return nil, fmt.Errorf("failed to mount %s: %w", mp, err)
	}
	setReadAhead(mp)
	s := &Server{srv: srv, tree: t, mountpoint: mp, done: make(chan struct{})}
	for _, n := range top.nodes {
		if n.dir {
			s.top.Folders++
		} else {
			s.top.Files++
		}
	}
	go func() {
		srv.Wait()
		t.close()
		close(s.done)
	}()
	return s, nil
}

// Top returns what the top folder showed when it was mounted.
func (s *Server) Top() Shown { return s.top }

// Wait blocks until the file system is unmounted, by [Server.Unmount] or
// from outside (fusermount3 -u, umount), or until ctx is done: then it
// unmounts it. It returns nil unless unmounting failed. A command passes a
// ctx that signals cancel (signal.NotifyContext with os.Interrupt and
// syscall.SIGTERM).
func (s *Server) Wait(ctx context.Context) error {
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return s.Unmount()
	}
}

// Unmount unmounts the file system. When processes still have files open
// in it, it is detached instead (a lazy unmount): it leaves the file tree
// at once and is gone when the last file closes; reads of those files
// fail once the program ends. It returns nil when the file system is
// already unmounted.
func (s *Server) Unmount() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.done:
		return nil
	default:
	}
	if err := s.srv.Unmount(); err == nil {
		<-s.done
		return nil
	}
	if err := detach(s.mountpoint); err != nil {
		return fmt.Errorf("failed to unmount %s: %w", s.mountpoint, err)
	}
	return nil
}

// setReadAhead sets the read-ahead of the file system mounted at mp (its
// INIT done: that would lower it again) to readAheadKB, through the
// sysfs file of its device, when the process may write it. Where it may
// not, the kernel's default stays: the mount works as well, less fast.
func setReadAhead(mp string) {
	var st unix.Stat_t
	if err := unix.Stat(mp, &st); err != nil {
		return
	}
	f, err := os.OpenFile(fmt.Sprintf("/sys/class/bdi/%d:%d/read_ahead_kb", unix.Major(st.Dev), unix.Minor(st.Dev)), os.O_WRONLY, 0)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%d\n", readAheadKB)
}

// detach makes a lazy unmount of mountpoint.
func detach(mountpoint string) error {
	err := unix.Unmount(mountpoint, unix.MNT_DETACH)
	if err == nil || !errors.Is(err, unix.EPERM) {
		return err
	}
	bin, err := exec.LookPath("fusermount3")
	if err != nil {
		if bin, err = exec.LookPath("fusermount"); err != nil {
			return err
		}
	}
	if out, err := exec.Command(bin, "-u", "-z", mountpoint).CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w: %s", filepath.Base(bin), err, out)
	}
	return nil
}

// fsys holds what every node needs.
type fsys struct {
	tree              *tree
	uid, gid          uint32
	fileMode, dirMode uint32
	blksize           uint32 // reported by stat
	directIO          bool   // encrypted files around the page cache
	refresh           time.Duration
}

// attr fills in the attributes of n.
func (f *fsys) attr(n *node, out *fuse.Attr) {
	out.Uid, out.Gid = f.uid, f.gid
	out.SetTimes(nil, &n.modTime, &n.modTime)
	out.Blksize = f.blksize
	if n.dir {
		out.Mode = syscall.S_IFDIR | f.dirMode
		out.Nlink = 2
		return
	}
	out.Mode = syscall.S_IFREG | f.fileMode
	out.Nlink = 1
	out.Size = uint64(n.file.size)
	out.Blocks = (out.Size + 511) / 512
}

// dirNode is a folder, listed the first time it is looked at, and again
// when its listing is older than fsys.refresh.
type dirNode struct {
	fs.Inode
	fsys *fsys
	path string // in the source
	node node   // of the parent's listing; the zero node for the top

	mu      sync.Mutex
	listing *listing
	shown   map[string]*file // the children of the inode: their files, nil for folders
}

var (
	_ fs.NodeLookuper  = (*dirNode)(nil)
	_ fs.NodeReaddirer = (*dirNode)(nil)
	_ fs.NodeGetattrer = (*dirNode)(nil)
	_ fs.NodeStatfser  = (*dirNode)(nil)
)

// load lists the folder unless its listing is fresh, and makes the
// children of the inode those of the listing.
func (d *dirNode) load(ctx context.Context) ([]node, syscall.Errno) {
	d.mu.Lock()
	defer d.mu.Unlock()
	stale := d.listing != nil && d.fsys.refresh > 0 && time.Since(d.listing.at) >= d.fsys.refresh
	if d.listing == nil || stale {
		// A listing is kept: let no interrupt cut it short.
		l, err := d.fsys.tree.list(context.WithoutCancel(ctx), d.path, d.listing)
		switch {
		case err == nil:
			d.listing = l
		case stale:
			// Show what was there rather than nothing; try again at
			// the next look.
			d.fsys.tree.log.printf("%s: failed to list again, showing the earlier listing: %v", quote(display(d.path)), err)
		default:
			d.fsys.tree.log.printf("%s: failed to list: %v", quote(display(d.path)), err)
			return nil, syscall.EIO
		}
	}
	d.sync(ctx)
	return d.listing.nodes, 0
}

// sync makes the children of the inode those of the listing: a name that
// went is removed, a file that changed gets a new inode (processes that
// have the old one open keep reading what they opened), a new name is
// added. The kernel is not told: it forgets names after the refresh time
// (the entry timeout), and a notice from here could wait for the lookup
// under way, which holds the folder.
func (d *dirNode) sync(ctx context.Context) {
	nodes := d.listing.nodes
	if d.shown == nil {
		d.shown = make(map[string]*file, len(nodes))
	}
	want := make(map[string]bool, len(nodes))
	for i := range nodes {
		n := &nodes[i]
		want[n.name] = true
		f, ok := d.shown[n.name]
		if ok && f == n.file && (n.dir == (f == nil)) {
			continue
		}
		if ok {
			d.RmChild(n.name)
		}
		var ops fs.InodeEmbedder
		mode := uint32(syscall.S_IFREG)
		if n.dir {
			ops, mode = &dirNode{fsys: d.fsys, path: path.Join(d.path, n.name), node: *n}, syscall.S_IFDIR
		} else {
			ops = &fileNode{fsys: d.fsys, node: *n}
		}
		d.AddChild(n.name, d.NewPersistentInode(ctx, ops, fs.StableAttr{Mode: mode}), true)
		d.shown[n.name] = n.file
	}
	for name := range d.shown {
		if !want[name] {
			d.RmChild(name)
			delete(d.shown, name)
		}
	}
}

func (d *dirNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	nodes, errno := d.load(ctx)
	if errno != 0 {
		return nil, errno
	}
	i := searchNodes(nodes, name)
	if i < 0 {
		return nil, syscall.ENOENT
	}
	ch := d.GetChild(name)
	if ch == nil {
		return nil, syscall.ENOENT
	}
	if fn, ok := ch.Operations().(*fileNode); ok {
		var a fuse.AttrOut
		fn.Getattr(ctx, nil, &a) // opened again since it was listed, maybe
		out.Attr = a.Attr
		return ch, 0
	}
	d.fsys.attr(&nodes[i], &out.Attr)
	return ch, 0
}

// searchNodes returns the index of name in nodes, sorted by name, or -1.
func searchNodes(nodes []node, name string) int {
	lo, hi := 0, len(nodes)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if nodes[m].name < name {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(nodes) && nodes[lo].name == name {
		return lo
	}
	return -1
}

func (d *dirNode) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	nodes, errno := d.load(ctx)
	if errno != 0 {
		return nil, errno
	}
	list := make([]fuse.DirEntry, 0, 2+len(nodes))
	list = append(list, fuse.DirEntry{Name: ".", Mode: syscall.S_IFDIR}, fuse.DirEntry{Name: "..", Mode: syscall.S_IFDIR})
	for i := range nodes {
		e := fuse.DirEntry{Name: nodes[i].name, Mode: syscall.S_IFREG}
		if nodes[i].dir {
			e.Mode = syscall.S_IFDIR
		}
		list = append(list, e)
	}
	return fs.NewListDirStream(list), 0
}

func (d *dirNode) Getattr(ctx context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n := d.node
	n.dir = true
	d.fsys.attr(&n, &out.Attr)
	return 0
}

func (d *dirNode) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	out.Bsize = d.fsys.blksize
	out.Frsize = d.fsys.blksize
	out.NameLen = 255
	return 0
}

// fileNode is a file.
type fileNode struct {
	fs.Inode
	fsys *fsys

	mu   sync.Mutex
	node node
}

var (
	_ fs.NodeOpener    = (*fileNode)(nil)
	_ fs.NodeGetattrer = (*fileNode)(nil)
)

func (f *fileNode) Getattr(ctx context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	f.mu.Lock()
	n := f.node
	f.mu.Unlock()
	f.fsys.attr(&n, &out.Attr)
	return 0
}

func (f *fileNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&syscall.O_ACCMODE != syscall.O_RDONLY {
		return nil, 0, syscall.EROFS
	}
	ctx = context.WithoutCancel(ctx)
	f.mu.Lock()
	file, changed := f.node.file, false
	if f.fsys.refresh > 0 {
		var err error
		if file, changed, err = f.fsys.tree.current(ctx, &f.node); err != nil {
			f.mu.Unlock()
			file.report(err)
			return nil, 0, syscall.EIO
		}
	}
	f.mu.Unlock()
	if changed {
		// What the kernel holds of the earlier file is no longer true:
		// its size, and its pages (dropped too as it opens a file without
		// FOPEN_KEEP_CACHE). The notice is sent from another goroutine
		// and waited for a while only, so that a kernel that wanted this
		// open to end first could not hold the mount.
		done := make(chan struct{})
		go func() {
			f.NotifyContent(0, 0)
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(time.Second):
		}
	}
	if err := file.open(ctx); err != nil {
		file.report(err)
		return nil, 0, syscall.EIO
	}
	h := &handle{file: file}
	if file.enc != nil && f.fsys.directIO && readAhead {
		h.rd = &reader{f: file}
	}
	if f.fsys.directIO && file.enc != nil {
		return h, fuse.FOPEN_DIRECT_IO, 0
	}
	if changed {
		return h, 0, 0
	}
	// The kernel may keep what it read across opens: the file has not
	// changed since it was listed.
	return h, fuse.FOPEN_KEEP_CACHE, 0
}

// handle is an open file.
type handle struct {
	file *file
	rd   *reader // read-ahead, of an encrypted file
}

var (
	_ fs.FileReader   = (*handle)(nil)
	_ fs.FileFlusher  = (*handle)(nil)
	_ fs.FileReleaser = (*handle)(nil)
)

func (h *handle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if readObserver != nil {
		readObserver(len(dest))
	}
	if h.rd != nil {
		rep, err := h.file.readAhead(dest, off, h.rd)
		if err != nil {
			return nil, syscall.EIO
		}
		return vectorResult{rep}, 0
	}
	n, err := h.file.readAt(dest, off)
	if err != nil {
		return nil, syscall.EIO
	}
	return fuse.ReadResultData(dest[:n]), 0
}

// vectorResult sends a reply as it is, its slices written to the kernel
// in one writev (go-fuse's scatter-gather path), so that blocks read
// ahead are not copied into the request's buffer first; Done, called by
// go-fuse once the reply is written or dropped, gives them back.
type vectorResult struct{ rep *reply }

var _ fuse.ReadResult = vectorResult{}

func (v vectorResult) Size() int { return v.rep.size() }

// Slices makes go-fuse write the slices as they are.
func (v vectorResult) Slices() ([][]byte, fuse.Status) { return v.rep.vecs, fuse.OK }

// Bytes serves go-fuse's other paths: the reply in one slice.
func (v vectorResult) Bytes(buf []byte) ([]byte, fuse.Status) {
	out := buf[:0]
	for _, s := range v.rep.vecs {
		out = append(out, s...)
	}
	return out, fuse.OK
}

func (v vectorResult) Done() { v.rep.done() }

// Flush answers ENOSYS, which tells the kernel that no close needs to
// wait for the file system: a read-only one has nothing to write back.
// (A process that mounts and reads its own mount may then exit while it
// has files open without hanging in close.)
func (h *handle) Flush(ctx context.Context) syscall.Errno {
	return syscall.ENOSYS
}

func (h *handle) Release(ctx context.Context) syscall.Errno {
	if h.rd != nil {
		h.rd.close()
	}
	h.file.release()
	return 0
}
