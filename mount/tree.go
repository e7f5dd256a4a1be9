package mount

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/internal/errkind"
	"github.com/c4gh-go/crypt4gh/keys"
)

// This file is the decrypted view of a Source, apart from FUSE: which
// names a folder shows, the size of each file, and how its bytes are read.

// Suffix ends the names of the Crypt4GH files that the mount shows
// decrypted, under their name without it.
const Suffix = ".c4gh"

// headerJobs is how many headers of one folder are opened at once: for an
// object store, each is a request.
const headerJobs = 4

// tree is the view of a Source through a secret key.
type tree struct {
	src    Source
	key    keys.Opener
	own    *keys.SecretKey // the copy of a secret key given as the Opener
	opts   c4gh.DecryptOptions
	log    *logger
	budget atomic.Int64 // cache blocks that may still be taken, all files together

	raBudget atomic.Int64 // blocks that may still be read ahead, all handles together
	workers  *workers     // decrypt the blocks read ahead
	raUsed   atomic.Int64 // blocks read ahead that a read used (for the tests)
	cpus     int          // GOMAXPROCS when mounted: a process that serves the mount may raise it later

	mu     sync.Mutex
	opened []*file // encrypted files whose header was opened
	closed bool
}

func newTree(src Source, key keys.Opener, sender *keys.PublicKey, log io.Writer) *tree {
	t := &tree{src: src, key: key, log: &logger{w: log}}
	if sk, ok := key.(*keys.SecretKey); ok {
		own := *sk
		t.own, t.key = &own, &own
	}
	if sender != nil {
		s := *sender
		t.opts.Sender = &s
	}
	t.budget.Store(maxBlocks)
	t.raBudget.Store(raBudget)
	t.cpus = runtime.GOMAXPROCS(0)
	t.workers = newWorkers(t.cpus)
	return t
}

// node is an entry of a folder of the view.
type node struct {
	name    string // as shown
	dir     bool
	modTime time.Time
	file    *file // for a file
	stamp   stamp // of the entry of the source
}

// stamp is what tells one version of an entry of the source from another.
type stamp struct {
	size    int64
	modTime time.Time
	version string
}

func stampOf(e Entry) stamp { return stamp{e.Size, e.ModTime, e.Version} }

// same compares by version where both have one (an object's Stat knows
// its ETag, not its time), else by time.
func (s stamp) same(o stamp) bool {
	if s.version != "" && o.version != "" {
		return s.size == o.size && s.version == o.version
	}
	return s.size == o.size && s.modTime.Equal(o.modTime) && s.version == o.version
}

// listing is a folder as the view shows it.
type listing struct {
	nodes []node // sorted by name
	// leftOut are the entries of the source left out, by name, with the
	// stamp they had: listed again unchanged, they are left out again
	// without a second line in the log or a second read of their header.
	leftOut map[string]stamp
	at      time.Time // when the source was listed
}

// list returns the entries that the folder dir of the source shows, sorted
// by name. It opens the header of every Crypt4GH file in it, and logs each
// entry that it leaves out. With prev, the folder's earlier listing, the
// files that have not changed since are kept as they are, and what was left
// out and has not changed is left out again, silently.
func (t *tree) list(ctx context.Context, dir string, prev *listing) (*listing, error) {
	at := time.Now()
	entries, err := t.src.ReadDir(ctx, dir)
	if err != nil {
		return nil, err
	}
	l := &listing{leftOut: map[string]stamp{}, at: at}
	kept := map[string]node{} // the files of prev, by their name in the source
	if prev != nil {
		for _, n := range prev.nodes {
			if n.file != nil {
				kept[path.Base(n.file.path)] = n
			}
		}
	}
	leave := func(e Entry, format string, args ...any) {
		st := stampOf(e)
		if old, ok := prev.left(e.Name); !ok || !old.same(st) {
			t.log.printf(format, args...)
		}
		l.leftOut[e.Name] = st
	}
	names := make(map[string]bool, len(entries))
	for _, e := range entries {
		if e.Other == "" {
			names[e.Name] = true
		}
	}
	out := make([]node, 0, len(entries))
	var enc []Entry
	for _, e := range entries {
		p := path.Join(dir, e.Name)
		shown := strings.TrimSuffix(e.Name, Suffix)
		old, unchanged := kept[e.Name]
		unchanged = unchanged && !e.Dir && old.stamp.same(stampOf(e))
		switch {
		case !validName(e.Name):
			leave(e, "%s: left out: not a valid file name", quote(p))
		case e.Other != "":
			leave(e, "%s: left out: %s", quote(p), e.Other)
		case e.Dir || shown == e.Name || shown == "":
			f := (*file)(nil)
			if unchanged {
				f = old.file
			} else if !e.Dir {
				f = &file{t: t, path: p, size: e.Size, src: lazyFile{src: t.src, name: p}}
			}
			out = append(out, node{name: e.Name, dir: e.Dir, modTime: e.ModTime, file: f, stamp: stampOf(e)})
		case names[shown]:
			leave(e, "%s: left out: %s is beside it", quote(p), quote(path.Join(dir, shown)))
		case e.Size < 0:
			leave(e, "%s: left out: negative size %d", quote(p), e.Size)
		case unchanged:
			out = append(out, node{name: shown, modTime: e.ModTime, file: old.file, stamp: old.stamp})
		default:
			if st, ok := prev.left(e.Name); ok && st.same(stampOf(e)) {
				l.leftOut[e.Name] = st // its header did not open, and it has not changed
				continue
			}
			enc = append(enc, e)
		}
	}

	// Open the headers, a few at a time.
	files := make([]*file, len(enc))
	errs := make([]error, len(enc))
	var wg sync.WaitGroup
	jobs := make(chan int)
	for range min(headerJobs, len(enc)) {
		wg.Go(func() {
			for i := range jobs {
				p := path.Join(dir, enc[i].Name)
				f, err := t.openHeader(ctx, p, enc[i].Size)
				if err != nil {
					t.log.printf("%s: left out: %v", quote(p), err)
					errs[i] = err
					continue
				}
				files[i] = f
			}
		})
	}
	for i := range enc {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	for i, f := range files {
		switch {
		case f != nil:
			out = append(out, node{name: strings.TrimSuffix(enc[i].Name, Suffix), modTime: enc[i].ModTime, file: f, stamp: stampOf(enc[i])})
		case errkind.Of(errs[i]) != errkind.Other:
			// Not for this key, or not Crypt4GH: the same answer until
			// the file changes. An I/O error is tried again.
			l.leftOut[enc[i].Name] = stampOf(enc[i])
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	indexTimes(out)
	l.nodes = out
	return l, nil
}

// left returns the stamp of name when l left it out.
func (l *listing) left(name string) (stamp, bool) {
	if l == nil {
		return stamp{}, false
	}
	st, ok := l.leftOut[name]
	return st, ok
}

// indexData are, for each suffix of an index, the suffixes that the name
// of its data file may have in place of it ("" for the name without it):
// reads.bam.bai and reads.bai index reads.bam.
var indexData = map[string][]string{
	".bai":  {"", ".bam"},
	".crai": {"", ".cram"},
	".csi":  {"", ".bam", ".vcf.gz", ".bcf"},
	".tbi":  {"", ".vcf.gz", ".gz"},
}

// indexTimes shows each index no older than the data file it indexes, so
// that htslib does not warn that the index is older than the data (an
// encrypted index is often written or copied before its data file).
func indexTimes(nodes []node) {
	at := make(map[string]int, len(nodes))
	for i, n := range nodes {
		if !n.dir {
			at[n.name] = i
		}
	}
	for i, n := range nodes {
		ext := path.Ext(n.name)
		alts, ok := indexData[ext]
		if !ok || n.dir {
			continue
		}
		base := strings.TrimSuffix(n.name, ext)
		for _, alt := range alts {
			if j, ok := at[base+alt]; ok && j != i && nodes[j].modTime.After(n.modTime) {
				nodes[i].modTime = nodes[j].modTime
			}
		}
	}
}

// validName reports whether a source gave a name that a folder can show.
func validName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\x00")
}

// openHeader opens the header of the Crypt4GH file at p, of size bytes,
// and returns the file that stands for its plaintext.
func (t *tree) openHeader(ctx context.Context, p string, size int64) (*file, error) {
	f := &file{t: t, path: p, src: lazyFile{src: t.src, name: p}}
	if _, err := f.src.acquire(ctx); err != nil {
		return nil, err
	}
	r, err := c4gh.NewReaderAt(&f.src, size, t.key, &t.opts)
	f.src.release()
	if err != nil {
		return nil, err
	}
	f.enc = r
	f.size = r.Size()
	if r.Missing() {
		// Valid (the specification keeps what is there), as decrypt
		// takes it, but whole segments may have been lost: say so.
		t.log.printf("%s: the edit list describes %d bytes, the file holds %d of them: shown as %d bytes",
			quote(p), standsFor(r, size), f.size, f.size)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		r.Close()
		return nil, errClosed
	}
	t.opened = append(t.opened, f)
	return f, nil
}

// current returns the file that n stands for now: n.file, unless no
// process has it open and the source, asked through its [Stater], says it
// changed since it was listed. Then the new file replaces n's (changed
// reports it); an encrypted one has its header opened again.
func (t *tree) current(ctx context.Context, n *node) (f *file, changed bool, err error) {
	st, ok := t.src.(Stater)
	if !ok || n.file.src.inUse() {
		return n.file, false, nil
	}
	e, err := st.Stat(ctx, n.file.path)
	if err != nil {
		return n.file, false, err
	}
	if stampOf(e).same(n.stamp) {
		return n.file, false, nil
	}
	if n.file.enc != nil {
		f, err = t.openHeader(ctx, n.file.path, e.Size)
		if err != nil {
			return n.file, false, fmt.Errorf("changed since it was listed: %w", err)
		}
	} else {
		f = &file{t: t, path: n.file.path, size: e.Size, src: lazyFile{src: t.src, name: n.file.path}}
	}
	t.log.printf("%s: changed since it was listed: opened again (%d bytes shown)", quote(f.path), f.size)
	n.file, n.stamp, n.modTime = f, stampOf(e), e.ModTime
	if e.ModTime.IsZero() {
		n.modTime = time.Now()
	}
	return f, true, nil
}

// standsFor returns the length of the plaintext that the edit list of r
// describes, for a file of size bytes: more than r.Size() when the body
// lacks bytes that the list keeps.
func standsFor(r *c4gh.ReaderAt, size int64) int64 {
	list, _ := r.EditList()
	plain, err := body.PlaintextSize(size - r.HeaderSize())
	if err != nil {
		return r.Size()
	}
	return edit.StandsFor(list, plain).Claimed
}

// close erases the data keys of every file and the copy of the secret key.
func (t *tree) close() {
	t.workers.stop()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, f := range t.opened {
		f.enc.Close()
	}
	t.opened = nil
	t.closed = true
	if t.own != nil {
		t.own.Zero()
	}
}

var errClosed = errkind.New(errkind.Usage, "file system closed")

// file is a file that the view shows: a plain file of the source, or the
// plaintext of a Crypt4GH file.
type file struct {
	t     *tree
	path  string // in the source
	size  int64  // as shown
	enc   *c4gh.ReaderAt
	src   lazyFile
	cache blockCache

	errMu  sync.Mutex
	errors map[string]bool // the read errors logged
}

// open prepares f for reading; each successful open must be followed by a
// release.
func (f *file) open(ctx context.Context) error {
	first, err := f.src.acquire(ctx)
	if first {
		f.cache.open()
	}
	return err
}

// release ends an open; the last one closes the source file and frees the
// cache.
func (f *file) release() {
	if f.src.release() {
		f.cache.drop(&f.t.budget)
	}
}

// readAt reads the bytes of f at off into p, as far as f goes, and returns
// how many it read: len(p) unless f ends first. An error is logged (once
// for each segment) and means that no byte of p can be trusted.
func (f *file) readAt(p []byte, off int64) (int, error) {
	if off >= f.size || len(p) == 0 {
		return 0, nil
	}
	p = p[:min(int64(len(p)), f.size-off)]
	var err error
	if f.enc == nil {
		var n int
		n, err = f.src.ReadAt(p, off)
		if err == io.EOF || err == nil {
			return n, nil // shorter now than when it was listed
		}
	} else {
		err = f.readPlain(p, off)
	}
	if err != nil {
		f.report(err)
		return 0, err
	}
	return len(p), nil
}

// readAhead is readAt of an encrypted file through r, the read-ahead of
// a handle: the reply it returns holds the blocks read ahead that it
// uses until its done method is called.
func (f *file) readAhead(p []byte, off int64, r *reader) (*reply, error) {
	if off >= f.size || len(p) == 0 {
		return &reply{}, nil
	}
	rep, err := r.read(p[:min(int64(len(p)), f.size-off)], off)
	if err != nil {
		f.report(err)
		return nil, err
	}
	return rep, nil
}

// readPlain reads exactly len(p) bytes of plaintext at off: whole blocks
// straight into p, parts of blocks through the cache.
func (f *file) readPlain(p []byte, off int64) error {
	for len(p) > 0 {
		index := body.SegmentOf(off)
		start := body.PlaintextOffset(index)
		n := int(body.SegmentEnd(start, f.size) - start) // length of the block
		skip := int(off - start)
		if skip == 0 && len(p) >= n {
			whole := int(body.Floor(int64(len(p))))
			if off+int64(len(p)) == f.size {
				whole = len(p) // up to the end, whose block is short
			}
			if err := f.readBlocks(p[:whole], off); err != nil {
				return err
			}
			p, off = p[whole:], off+int64(whole)
			continue
		}
		m, ok := f.cache.copyOut(p, index, skip)
		if !ok {
			m = min(len(p), n-skip)
			buf := f.cache.take(&f.t.budget)
			if buf == nil {
				// No room in the cache: read just the part.
				if err := f.readFull(p[:m], off); err != nil {
					return err
				}
			} else if err := f.readFull(buf[:n], start); err != nil {
				f.cache.giveBack(buf, &f.t.budget)
				// The block may hold a damaged segment that the part
				// does not touch.
				if err := f.readFull(p[:m], off); err != nil {
					return err
				}
			} else {
				copy(p, buf[skip:n])
				f.cache.put(index, buf, n, &f.t.budget)
			}
		}
		p, off = p[m:], off+int64(m)
	}
	return nil
}

// readBlocks reads whole blocks of plaintext into p, which starts at off,
// a block boundary: split among the CPUs when there are several blocks,
// since the kernel waits for each read before it sends the next.
func (f *file) readBlocks(p []byte, off int64) error {
	blocks := body.SegmentCount(int64(len(p)))
	parts := min(int64(f.t.cpus), blocks)
	if parts <= 1 {
		return f.readFull(p, off)
	}
	errs := make([]error, parts)
	var wg sync.WaitGroup
	var from int64 // the first block of the part
	for i := range parts {
		to := from + (blocks-from)/(parts-i) // the last part ends with p
		start, end := body.PlaintextOffset(from), min(int64(len(p)), body.PlaintextOffset(to))
		part, at := p[start:end], off+start
		if i == parts-1 {
			errs[i] = f.readFull(part, at)
		} else {
			wg.Go(func() { errs[i] = f.readFull(part, at) })
		}
		from = to
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// readFull reads exactly len(p) bytes of plaintext at off.
func (f *file) readFull(p []byte, off int64) error {
	n, err := f.enc.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = fmt.Errorf("failed to read: %w", io.ErrUnexpectedEOF) // the file shrank
	}
	return err
}

// maxLogged is how many different read errors of one file are logged.
const maxLogged = 16

// report logs a read error of f, unless the same one was logged before.
func (f *file) report(err error) {
	what := err.Error()
	var se *body.SegmentError
	switch {
	case errors.As(err, &se):
		what = fmt.Sprintf("segment %d", se.Index)
	case errors.Is(err, c4gh.ErrMissingData):
		what = "missing"
	}
	f.errMu.Lock()
	defer f.errMu.Unlock()
	if f.errors[what] || len(f.errors) > maxLogged {
		return
	}
	if f.errors == nil {
		f.errors = make(map[string]bool)
	}
	f.errors[what] = true
	if len(f.errors) > maxLogged {
		f.t.log.printf("%s: more read errors, not logged", quote(f.path))
		return
	}
	f.t.log.printf("%s: %v: reads that need it fail with EIO", quote(f.path), err)
}

// lazyFile is a file of the source, open while it is in use: an
// io.ReaderAt that the ReaderAt of an encrypted file keeps, and that holds
// no open file between uses.
type lazyFile struct {
	src  Source
	name string

	mu   sync.RWMutex
	f    File
	refs int
}

var _ io.ReaderAt = (*lazyFile)(nil)

// acquire opens the file unless it is open, and reports whether it did.
func (l *lazyFile) acquire(ctx context.Context) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	first := l.refs == 0
	if first {
		f, err := l.src.Open(ctx, l.name)
		if err != nil {
			return false, err
		}
		l.f = f
	}
	l.refs++
	return first, nil
}

// inUse reports whether the file is open.
func (l *lazyFile) inUse() bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.refs > 0
}

// release reports whether it closed the file.
func (l *lazyFile) release() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refs--
	if l.refs > 0 {
		return false
	}
	l.f.Close() // opened for reading: nothing to lose
	l.f = nil
	return true
}

func (l *lazyFile) ReadAt(p []byte, off int64) (int, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.f == nil {
		return 0, errClosed
	}
	return l.f.ReadAt(p, off)
}

// logger writes one line per message.
type logger struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *logger) printf(format string, args ...any) {
	line := "crypt4gh: mount: " + fmt.Sprintf(format, args...) + "\n"
	l.mu.Lock()
	defer l.mu.Unlock()
	io.WriteString(l.w, line) // nowhere to report a failure
}

// display returns a path of the source as it is shown in messages.
func display(p string) string {
	if p == "" {
		return "."
	}
	return p
}

// quote returns a path as it can be printed: quoted when it holds control
// characters or is not UTF-8.
func quote(p string) string {
	if !utf8.ValidString(p) || strings.IndexFunc(p, unicode.IsControl) >= 0 {
		return strconv.Quote(p)
	}
	return p
}
