// Package outfile writes the outputs of the crypt4gh command so that
// nothing is lost. Every file the tool creates, data or key, goes through
// an [Output]: it is written to a temporary file in the target folder,
// fsynced, and then committed under its name in a way that cannot replace
// a file that appeared meanwhile (without Force), and the folder is
// fsynced. On any failure, and on every catchable signal ([Signals]), the
// temporary file is removed. Standard output, devices and named pipes are
// written in place.
package outfile

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/c4gh-go/crypt4gh/keys"
)

// Modes of created files: plaintext and secret keys are private; other
// outputs get 0666 minus the umask, as the kernel applies it.
const (
	ModeSecret = 0o600
	ModePublic = 0o666
)

// output is where a command writes one result.
type Output struct {
	io.Writer
	path  string   // the name the user gave; "" for stdout
	final string   // where the file is committed
	tmp   *os.File // the temporary file, until commit or abort
	dev   *os.File // a device or named pipe written in place
	sink  Sink     // an object being uploaded, say
	force bool
	// spareKeys: with force, a secret key found at final when the file is
	// committed is not replaced (one put there since the checks).
	spareKeys bool
	// reserved: blocks may be reserved past what was written (preallocate),
	// to be released by commit.
	reserved bool
	// committed: commit gave the file its name.
	committed bool
	// mtime, when set, is given to the file before its commit: the
	// input's, as gzip keeps it.
	mtime time.Time
	// below is the folder the file is made and committed in, held open
	// (Options.Beneath); final is a path through it until the commit.
	below *os.File
	// folder, with Options.Folders, is the folder the file is made and
	// committed in, held by folders.
	folder  *folder
	folders *Folders
	// mark, when set, is given to the file before its commit (see
	// Options.Mark).
	mark string
	// undoable: commit keeps the file it replaces, in previous, for Undo
	// (see Undoable).
	undoable bool
	previous string
	// guard, when set, is held while commit gives the file its name
	// (see Guard).
	guard sync.Locker
	// replaceMarked: without force, a file at final that holds this mark
	// is replaced (Options.ReplaceMarked).
	replaceMarked string
}

// SetModTime gives a file output the modification time t at its commit
// (the input's, as gzip keeps it); other outputs keep theirs.
func (o *Output) SetModTime(t time.Time) {
	if o.tmp != nil {
		o.mtime = t
	}
}

// Final is where a file output is committed: the path, or with Force the
// file a symbolic link at the path points to; "" for other outputs.
func (o *Output) Final() string { return o.final }

// IsSink reports whether the output writes to a Sink.
func (o *Output) IsSink() bool { return o.sink != nil }

// Sink is an output that is not a file: an object being uploaded, say.
// Nothing of it may be visible before Commit; Abort leaves nothing.
type Sink interface {
	io.Writer
	Commit() error
	Abort()
}

// Lend lends the memory of a Sink that lends it (as body.Lender says), so
// that encrypt seals segments into an upload's part buffers; other
// outputs lend nothing: nil.
func (o *Output) Lend(n int) ([]byte, error) {
	if l, ok := o.sink.(lender); ok {
		return l.Lend(n)
	}
	return nil, nil
}

// lender is a Sink that lends its memory (body.Lender).
type lender interface {
	Lend(n int) ([]byte, error)
}

// NewSink is the output at path that writes to s.
func NewSink(path string, s Sink) *Output {
	return &Output{Writer: s, path: path, sink: s}
}

// Options says how an output may be created.
type Options struct {
	Force  bool        // replace an existing file
	Binary bool        // refuse to write to a terminal unless path is "-"
	Mode   os.FileMode // ModeSecret or ModePublic
	Input  *os.File    // the input, which the output must not be
	// SecretKey: the output is a new secret key, which may replace an
	// old one with Force; nothing else ever replaces a secret key.
	SecretKey bool
	// Beneath, when set, is the output folder that path lies in (a batch's
	// -o DIR/): a symbolic link below it, to a folder or at path itself,
	// is refused, since in a folder that others may write a planted link
	// would send the output, or with Force its replacement of a file,
	// elsewhere. On Linux the folder of path is then opened without
	// following links (openat2) and held, and the output is made and
	// committed in it, so that a link planted after the checks changes
	// nothing either. Beneath itself may be a link: the user named it.
	Beneath string
	// Folders, when set, holds the folders of the outputs of a batch open
	// from one output to the next (see Folders).
	Folders *Folders
	// Mark, when set, is written on the file (an extended attribute,
	// where the file system keeps them) before it is committed, so that
	// a journal that recorded it can tell, after a run killed between
	// the commit and its done line, that the file at the output's name
	// is the one that run wrote (Marked) and not one put there since.
	Mark string
	// ReplaceMarked, when set and Force is not, lets the output replace a
	// file at its name that holds this mark, and no other: checked when
	// the output is opened and again when it is committed, so that a
	// file put there in between is not replaced.
	ReplaceMarked string
}

// IsStdout reports whether path names standard output.
func IsStdout(path string) bool {
	switch path {
	case "", "-", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1":
		return true
	}
	return false
}

// Open opens path for writing (see IsStdout for the names of
// stdout). Nothing is created before every check has passed.
func Open(path string, stdout io.Writer, opts Options) (*Output, error) {
	if IsStdout(path) {
		if stdout == nil {
			// Key files are given no stdout: they are files.
			return nil, KeyToStdout(path)
		}
		if opts.Binary && path != "-" && IsTerminal(stdout) {
			return nil, withHint(usagef("refusing to write binary data to a terminal"),
				"use -o FILE, or -o - to write to the terminal anyway")
		}
		if f, ok := stdout.(*os.File); ok && opts.Input != nil {
			// "crypt4gh … -i f >> f" would read what it appends.
			if fo, err := f.Stat(); err == nil && fo.Mode().IsRegular() {
				if fi, err := opts.Input.Stat(); err == nil && os.SameFile(fo, fi) {
					return nil, usagef("stdout is the input file")
				}
			}
		}
		return &Output{Writer: stdout}, nil
	}
	if opts.Folders != nil {
		return openIn(opts.Folders, path, opts)
	}
	at := path // where the output is made: path, or in the folder held below Beneath
	var below *os.File
	if opts.Beneath != "" {
		var err error
		if below, at, err = beneath(opts.Beneath, path); err != nil {
			return nil, err
		}
	}
	o, err := open(path, at, opts, true, false)
	if below != nil {
		if err != nil || o.tmp == nil {
			below.Close()
		} else {
			o.below = below
		}
	}
	return o, err
}

// openIn is Open of a file in a folder of folders.
func openIn(folders *Folders, path string, opts Options) (*Output, error) {
	var (
		f      *folder
		at     = path
		absent bool
		err    error
	)
	if opts.Beneath != "" {
		if f, at, absent, err = folders.beneath(opts.Beneath, path); err != nil {
			return nil, err
		}
	} else {
		f = folders.byPath(path)
	}
	o, err := open(path, at, opts, f.warnOnce(), absent)
	if err != nil || o.tmp == nil {
		folders.release(f)
		return o, err
	}
	o.folder, o.folders = f, folders
	return o, nil
}

// errLinkBelow is what openBeneath meets when a link lies below the
// output folder.
var errLinkBelow = errors.New("a symbolic link below the output folder")

// beneath checks that path lies in the output folder root with no link
// below root, and returns the folder of path, held open, and the path of
// the output through it. Where the folder cannot be held (not Linux, or a
// kernel before 5.6), it returns no folder and path.
func beneath(root, path string) (*os.File, string, error) {
	if err := CheckBelow(root, path); err != nil {
		return nil, "", err
	}
	d, err := openBeneath(root, filepath.Dir(path))
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		return nil, path, nil
	case errors.Is(err, errLinkBelow):
		// Planted since checkBelow looked.
		return nil, "", linkBelow(filepath.Dir(path), root)
	case err != nil:
		return nil, "", fmt.Errorf("failed to open the folder of output %s: %w", QuoteName(path), PathErr(err))
	}
	at := dirPath(d, filepath.Base(path))
	if fi, err := os.Lstat(at); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		d.Close()
		return nil, "", linkBelow(path, root)
	}
	return d, at, nil
}

// CheckBelow fails when a folder or file between the output folder dir
// and the output name in it is a symbolic link. What does not exist yet
// is made by the command. Open with Options.Beneath checks it too.
func CheckBelow(dir, name string) error {
	rel, err := filepath.Rel(dir, name)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return usagef("output %s is not in the output folder %s", QuoteName(name), QuoteName(dir))
	}
	p := dir
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		p = filepath.Join(p, part)
		fi, err := os.Lstat(p)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return nil
		case err != nil:
			return fmt.Errorf("failed to check output %s: %w", QuoteName(p), PathErr(err))
		case fi.Mode()&os.ModeSymlink != 0:
			return linkBelow(p, dir)
		}
	}
	return nil
}

func linkBelow(p, dir string) error {
	return withHint(usagef("%s, below the output folder %s, is a symbolic link", QuoteName(p), QuoteName(dir)),
		"outputs are never written through links below the output folder: remove it, or choose another folder")
}

// open is Open of the file at, named path in messages; warn says to look
// for old temporary files in its folder (warnStale); absent, that nothing
// was found at at (by Lstat), which needs no other check.
func open(path, at string, opts Options, warn, absent bool) (*Output, error) {
	final := at
	if !absent {
		var err error
		if final, err = check(at, path, opts); err != nil {
			return nil, err
		}
	}
	if final == "" {
		// An existing device or named pipe: written in place.
		f, err := os.OpenFile(at, os.O_WRONLY, 0)
		if err != nil {
			return nil, fmt.Errorf("failed to open output %s: %w", path, PathErr(err))
		}
		if opts.Binary && term.IsTerminal(int(f.Fd())) {
			f.Close()
			return nil, withHint(usagef("refusing to write binary data to the terminal %s", path),
				"use -o - to write to the terminal anyway")
		}
		return &Output{Writer: f, path: path, dev: f}, nil
	}
	if warn {
		// Named as the user knows the folder, not through the one held.
		shownDir := filepath.Dir(final)
		if at != path {
			shownDir = filepath.Dir(path)
		}
		warnStale(shownDir)
	}
	tmp, err := createTemp(final, opts.Mode)
	if err != nil {
		return nil, fmt.Errorf("failed to create output %s: %w", path, PathErr(err))
	}
	return &Output{Writer: &writeNamer{f: tmp, path: path, writeback: startWriteback}, path: path, final: final, tmp: tmp, force: opts.Force, spareKeys: opts.Force && !opts.SecretKey, mark: opts.Mark, replaceMarked: opts.ReplaceMarked}, nil
}

// KeyToStdout refuses a key output that is stdout.
func KeyToStdout(path string) error {
	return usagef("keys are written to files, not to stdout (%s)", path)
}

// Check returns the path where the file for path will be committed:
// path itself, or with --force the file that a symbolic link points to.
// It returns "" for an existing device or named pipe, which is written in
// place, and an error when the output may not be written.
func Check(path string, opts Options) (string, error) { return check(path, path, opts) }

// check is Check of the file at path, named shown in messages.
func check(path, shown string, opts Options) (string, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if _, lerr := os.Lstat(path); lerr == nil {
			return "", usagef("output %s is a symbolic link to nothing", shown)
		}
		return path, nil
	case err != nil:
		return "", fmt.Errorf("failed to check output %s: %w", shown, PathErr(err))
	}
	if opts.Input != nil {
		if in, err := opts.Input.Stat(); err == nil && os.SameFile(fi, in) {
			return "", withHint(usagef("output file %s is the input file", shown),
				"write to another file, then rename it over the input if it should replace it")
		}
	}
	switch {
	case fi.IsDir():
		return "", usagef("output %s is a directory", shown)
	case !fi.Mode().IsRegular():
		return "", nil
	case !opts.Force && (opts.ReplaceMarked == "" || !Marked(path, opts.ReplaceMarked)):
		return "", withHint(usagef("output file %q %w", shown, ErrExists), "use --force to replace it")
	case !opts.SecretKey:
		if err := spareSecretKey(path, shown, ""); err != nil {
			return "", err
		}
	}
	if path != shown {
		// In a folder held open (Beneath): path is no link (beneath
		// checked it), and resolving it would leave the folder held for
		// the folder's path.
		return path, nil
	}
	// Through a symbolic link, replace the file it points to, not the link.
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", fmt.Errorf("failed to resolve output %s: %w", shown, PathErr(err))
	}
	return target, nil
}

// spareSecretKey refuses to replace the file at path (shown as shown)
// with an output that is not a secret key when it holds one, or when it
// cannot be read to tell: a key may be kept from its owner's other
// programs, and a user may replace a file in a folder of theirs that they
// cannot read. when says when it was found, for the message.
func spareSecretKey(path, shown, when string) error {
	held, err := holdsSecretKey(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return withHint(usagef("cannot read %s%s to tell that it is no secret key: %v", QuoteName(shown), when, PathErr(err)),
			"remove it first if it may be replaced")
	case held:
		return usagef("%s holds a secret key%s: only a new secret key may replace it", QuoteName(shown), when)
	}
	return nil
}

// holdsSecretKey reports whether the file at path is a secret key file of
// a format that this tool reads, or holds a PEM block of a private key of
// any kind (an RSA or ECDSA key of SSH or OpenSSL, an OpenPGP key), or is
// an OpenPGP secret key in its binary form (gpg --export-secret-keys). The
// error is that of a file that could not be opened or read; what is not a
// regular file (a folder put there meanwhile) holds no key.
func holdsSecretKey(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	// One read of what there is: io.ReadAll's growing buffer took more
	// time than the rest of a splice --region over an output of 1 MiB.
	// A file larger than a key file may be is not read at all: reading
	// its first MiB cost a new process a quarter of a splice --region.
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > MaxKeyFile {
		return false, nil
	}
	data := make([]byte, max(fi.Size(), 0))
	n, err := io.ReadFull(f, data)
	data = data[:n]
	defer clear(data)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return false, err
	}
	if _, err = keys.InspectSecretKey(data); err == nil {
		return true, nil
	}
	return pemPrivateKey(data) || openPGPSecretKey(data), nil
}

// openPGPSecretKey reports whether data starts as a binary OpenPGP secret
// key does (RFC 9580): a Secret-Key packet (tag 5) in the old or the new
// packet format, whose length fits in data, of key version 3 to 6 and a
// public-key algorithm that OpenPGP defines.
func openPGPSecretKey(data []byte) bool {
	if len(data) < 8 {
		return false
	}
	var n, at int // the packet's length, where its body starts
	switch b := data[0]; {
	case b&0xc0 == 0x80 && (b>>2)&0x0f == 5: // old format
		switch b & 3 {
		case 0:
			n, at = int(data[1]), 2
		case 1:
			n, at = int(data[1])<<8|int(data[2]), 3
		case 2:
			n, at = int(data[1])<<24|int(data[2])<<16|int(data[3])<<8|int(data[4]), 5
		default:
			return false
		}
	case b == 0xc5: // new format
		switch l := int(data[1]); {
		case l < 192:
			n, at = l, 2
		case l < 224:
			n, at = (l-192)<<8+int(data[2])+192, 3
		case l == 255:
			n, at = int(data[2])<<24|int(data[3])<<16|int(data[4])<<8|int(data[5]), 6
		default:
			return false
		}
	default:
		return false
	}
	if n < 8 || n > len(data)-at {
		return false
	}
	body := data[at:]
	algo := body[5] // version, creation time, algorithm
	switch body[0] {
	case 3:
		algo = body[7] // and two bytes of validity before it
	case 4, 5, 6:
	default:
		return false
	}
	switch algo {
	case 1, 2, 3, 16, 17, 18, 19, 20, 22, 25, 26, 27, 28:
		return true
	}
	return false
}

// pemPrivateKey reports whether data has the first line of a PEM private
// key of any kind: PRIVATE KEY, ENCRYPTED PRIVATE KEY, RSA PRIVATE KEY,
// OPENSSH PRIVATE KEY, PGP PRIVATE KEY BLOCK, and so on, also after a
// byte-order mark or spaces.
func pemPrivateKey(data []byte) bool {
	for line := range bytes.Lines(data) {
		line = bytes.TrimSpace(bytes.TrimPrefix(bytes.TrimSpace(line), []byte("\uFEFF")))
		if label, ok := bytes.CutPrefix(line, []byte("-----BEGIN ")); ok && bytes.HasSuffix(label, []byte("-----")) && bytes.Contains(label, []byte("PRIVATE KEY")) {
			return true
		}
	}
	return false
}

// Write errors name the user's path, not the temporary file.
//
// It also has the kernel start writing the file to disk every
// writebackChunk bytes, so that the fsync at the commit waits for the last
// few megabytes only and not for the whole file, whose writes to disk then
// overlap with the work of making the rest.
type writeNamer struct {
	f       *os.File
	path    string
	written int64 // bytes written, from offset 0 on
	queued  int64 // bytes before this offset were handed to writeback
	// writeback starts writing n bytes at off to disk (startWriteback).
	writeback func(f *os.File, off, n int64)
}

// writebackChunk is how many written bytes are handed to the disk at once.
const writebackChunk = 8 << 20

// preallocateMin is the smallest output that Preallocate reserves room
// for. A smaller one is written to disk in one go by the fsync of its
// commit, whose delayed allocation then allocates it at once; reserving
// it first costs more than it saves: two more system calls at its start
// (fstatfs, fallocate) and two at its commit (fstat, ftruncate), on ext4
// unwritten extents to convert when it is written, and on tmpfs pages
// zeroed only to be overwritten (a batch of 1 MiB files, see
// docs/performance.md).
const preallocateMin = writebackChunk

func (w *writeNamer) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.wrote(int64(n))
	return n, w.rename(err)
}

// ReadFrom keeps io.Copy between files in the kernel (copy_file_range),
// writebackChunk bytes at a time so that the writeback starts as the copy
// goes. An *io.LimitedReader of a file is unwrapped, as os.File.ReadFrom
// does: wrapped twice, the copy would leave the kernel.
func (w *writeNamer) ReadFrom(r io.Reader) (int64, error) {
	src, lr := r, (*io.LimitedReader)(nil)
	if l, ok := r.(*io.LimitedReader); ok {
		src, lr = l.R, l
	}
	var total int64
	for lr == nil || lr.N > 0 {
		n := int64(writebackChunk)
		if lr != nil {
			n = min(n, lr.N)
		}
		m, err := w.f.ReadFrom(&io.LimitedReader{R: src, N: n})
		total += m
		if lr != nil {
			lr.N -= m
		}
		w.wrote(m)
		if err != nil {
			return total, w.rename(err)
		}
		if m < n {
			break
		}
	}
	return total, nil
}

// wrote counts n more bytes written and hands what was written to the
// disk every writebackChunk bytes, up to a multiple of 64 KiB: the page
// that the next write fills further is not written out twice.
func (w *writeNamer) wrote(n int64) {
	w.written += n
	if end := w.written &^ (64<<10 - 1); end-w.queued >= writebackChunk {
		w.writeback(w.f, w.queued, end-w.queued)
		w.queued = end
	}
}

func (w *writeNamer) rename(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) && pe.Path == w.f.Name() {
		return &os.PathError{Op: pe.Op, Path: QuoteName(w.path), Err: pe.Err}
	}
	return err
}

// PathErr drops the path from an *os.PathError: the message names the
// file already, or the path is the temporary one that means nothing to the
// user.
func PathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

// TempSuffix marks the temporary files of this tool: ".NAME.partial-XXXXXXXX".
const TempSuffix = ".partial-"

// MaxName is the longest file name most file systems take.
const MaxName = 255

// CreateTemp creates the temporary file for final in its folder, with
// mode perm minus the umask. Its name is .NAME.partial-RANDOM, or
// .crypt4gh.partial-RANDOM when that would be too long for the folder.
func CreateTemp(final string, perm os.FileMode) (*os.File, error) {
	warnStale(filepath.Dir(final))
	return createTemp(final, perm)
}

// createTemp is CreateTemp without looking for old temporary files.
func createTemp(final string, perm os.FileMode) (*os.File, error) {
	for range 10 {
		f, err := Signals.Create(tempName(final), perm)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err == nil {
			// Held while it is written: RemovePartials leaves it alone.
			Lock(f)
		}
		return f, err
	}
	return nil, errors.New("failed to find a free temporary name")
}

// tempName returns a new name for a temporary file of final, in its
// folder: .NAME.partial-RANDOM, or .crypt4gh.partial-RANDOM when that
// would be too long.
func tempName(final string) string {
	dir, base := filepath.Split(final)
	if dir == "" {
		dir = "."
	}
	prefix := "." + base
	if len(prefix)+len(TempSuffix)+16 > MaxName {
		prefix = ".crypt4gh"
	}
	var r [8]byte
	rand.Read(r[:])
	return filepath.Join(dir, prefix+TempSuffix+hex.EncodeToString(r[:]))
}

// StaleAge is the age after which a temporary file of this tool is
// surely left over from a run that was killed.
const StaleAge = 24 * time.Hour

// warnedStale remembers the folders already checked.
var warnedStale = map[string]bool{}

// warnStale says when dir holds temporary files of this tool older than a
// day (a run killed with SIGKILL, or a crash, leaves them; they may hold
// plaintext and reserved space). It never removes them: they may belong to
// another process.
func warnStale(dir string) {
	Signals.mu.Lock()
	seen := warnedStale[dir]
	warnedStale[dir] = true
	Signals.mu.Unlock()
	if seen {
		return
	}
	names, _ := filepath.Glob(filepath.Join(dir, ".*"+TempSuffix+"*"))
	for _, n := range names {
		if fi, err := os.Lstat(n); err == nil && fi.Mode().IsRegular() && time.Since(fi.ModTime()) > StaleAge {
			fmt.Fprintf(os.Stderr, "crypt4gh: warning: %s was left by an interrupted run %d hours ago; remove it if no crypt4gh is running\n",
				QuoteName(n), int(time.Since(fi.ModTime()).Hours()))
		}
	}
}

// Commit moves a file output into place. It must be called only after
// everything was written successfully.
func (o *Output) Commit() error {
	if o.sink != nil {
		sink := o.sink
		o.sink = nil
		err := sink.Commit()
		if err == nil && o.guard != nil {
			// An object: its commit is a request, not made holding the
			// guard; it is named once the store answered.
			o.guard.Lock()
			o.committed = true
			o.guard.Unlock()
		}
		return err
	}
	if o.dev != nil {
		err := o.dev.Close()
		o.dev = nil
		if err != nil {
			return fmt.Errorf("failed to write %s: %w", o.path, PathErr(err))
		}
		return nil
	}
	if o.tmp == nil {
		return nil
	}
	name := o.tmp.Name()
	defer Signals.Forget(name)
	defer o.unhold()
	err := o.release()
	if err == nil && !o.mtime.IsZero() {
		err = os.Chtimes(name, o.mtime, o.mtime)
	}
	if err == nil && o.mark != "" {
		setMark(o.tmp, o.mark) // where it cannot, the journal cannot tell
	}
	if err == nil {
		err = o.tmp.Sync()
	}
	if cerr := o.tmp.Close(); err == nil {
		err = cerr
	}
	o.tmp = nil
	if err == nil && o.spareKeys {
		// Put there since the checks at the start: as then, refused.
		if err := spareSecretKey(o.final, o.path, " (it appeared while this command ran)"); err != nil {
			o.removeTemp(name)
			return err
		}
	}
	if err == nil {
		err = o.place(name)
	}
	if err != nil {
		o.removeTemp(name)
		if errors.Is(err, os.ErrExist) && !o.force {
			return withHint(usagef("output file %q already exists (it appeared while this command ran)", o.path),
				"use --force to replace it")
		}
		return fmt.Errorf("failed to write %s: %w", o.path, PathErr(err))
	}
	if o.folder != nil {
		err = o.folder.sync()
	} else {
		err = SyncDir(filepath.Dir(o.final))
	}
	if err != nil {
		// Its name may not last: the output failed, and a failed
		// output leaves nothing.
		o.Undo()
	}
	return err
}

// place gives the complete temporary file name the output's name, with
// the guard held (Guard): the file it replaces kept first when the output
// is Undoable, and a marked one replaced only while it holds its mark.
func (o *Output) place(name string) error {
	if o.guard != nil {
		o.guard.Lock()
		defer o.guard.Unlock()
	}
	if o.undoable && o.force {
		var err error
		if o.previous, err = keepPrevious(o.final); err != nil {
			return err
		}
	}
	err := Place(name, o.final, o.force)
	if errors.Is(err, os.ErrExist) && !o.force && o.replaceMarked != "" && Marked(o.final, o.replaceMarked) {
		err = os.Rename(name, o.final)
	}
	if err != nil {
		o.dropPrevious()
		return err
	}
	o.committed = true
	return nil
}

// Guard makes commit hold mu while it gives the file its name, and so
// lets a hook of Signals.OnInterrupt that takes mu, and keeps it until
// the process exits, see the outputs of a command either named or not,
// and none named after it: a header and its body, written apart.
func (o *Output) Guard(mu sync.Locker) {
	if o != nil {
		o.guard = mu
	}
}

// Committed reports whether commit gave the file its name, and Undo has
// not taken it back; with a Guard, ask it holding the guard.
func (o *Output) Committed() bool { return o != nil && o.committed }

// unhold closes the folder held for the output: from now on its path is
// the one the user gave.
func (o *Output) unhold() {
	if o.below != nil {
		o.below.Close()
		o.below = nil
		o.final = o.path
	}
	if o.folder != nil {
		if o.folder.d != nil {
			o.final = o.path
		}
		o.folders.release(o.folder)
		o.folder, o.folders = nil, nil
	}
}

// release frees the blocks reserved past what was written.
func (o *Output) release() error {
	if !o.reserved {
		return nil
	}
	o.reserved = false
	fi, err := o.tmp.Stat()
	if err == nil {
		err = o.tmp.Truncate(fi.Size())
	}
	return err
}

// Place gives the complete file tmp the name final. With force it
// replaces whatever is there; without, it fails with an error wrapping
// os.ErrExist when final exists, also when it appeared after the checks
// at start-up.
func Place(tmp, final string, force bool) error {
	if force {
		return os.Rename(tmp, final)
	}
	err := renameNoReplace(tmp, final)
	if !errors.Is(err, errors.ErrUnsupported) {
		return err
	}
	// No renameat2 here (an old kernel, another system, a file system
	// without it): a hard link cannot replace anything either.
	if err := os.Link(tmp, final); err != nil {
		if errors.Is(err, os.ErrExist) {
			return err
		}
		// A file system without hard links: check, then rename. Only
		// here can a file that appears in between be replaced.
		if _, serr := os.Lstat(final); serr == nil {
			return os.ErrExist
		}
		return os.Rename(tmp, final)
	}
	return os.Remove(tmp)
}

// SyncDir makes a rename in dir durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return nil // nothing to sync with (a folder we may not read)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return fmt.Errorf("failed to sync folder %s: %w", dir, PathErr(err))
	}
	return nil
}

// Undo removes a file that commit created, when a command with several
// outputs fails after it, and puts back the file it replaced, if it was
// Undoable; nil and uncommitted outputs are left alone.
func (o *Output) Undo() {
	if o == nil || !o.committed {
		return
	}
	o.committed = false
	if o.previous != "" {
		if err := os.Rename(o.previous, o.final); err != nil {
			fmt.Fprintf(os.Stderr, "crypt4gh: warning: could not put back the previous %s: it is %s (%v)\n",
				QuoteName(o.path), QuoteName(o.previous), PathErr(err))
		}
		o.previous = ""
		SyncDir(filepath.Dir(o.final))
		return
	}
	os.Remove(o.final)
}

// Undoable makes a file output that replaces a file (Force) keep the one
// it replaces until Keep, so that Undo puts it back: for the first of
// outputs that go together (a header and its body, written apart), whose
// old one is of no use without the other's old one either. Undo may run
// from a hook of Signals.OnInterrupt (it takes no lock of Signals', nor
// does commit while it holds a Guard): a run interrupted between the two
// commits puts the old one back too.
func (o *Output) Undoable() { o.undoable = true }

// Keep ends what Undoable began: the command's outputs are all committed,
// the file replaced goes, and Undo does nothing from now on.
func (o *Output) Keep() {
	if o != nil {
		o.dropPrevious()
		o.committed = false
	}
}

func (o *Output) dropPrevious() {
	if o.previous != "" {
		os.Remove(o.previous)
		o.previous = ""
	}
}

// keepPrevious gives the file at final, if there is one, a second name
// beside it (a temporary file's), and returns it; "" when there is none.
// Where the file system has no hard links, the file is copied.
func keepPrevious(final string) (string, error) {
	fi, err := os.Lstat(final)
	if errors.Is(err, os.ErrNotExist) || err == nil && !fi.Mode().IsRegular() {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	// A temporary file's name, not recorded with Signals, whose lock a
	// guard holder must not take (Guard): the hook of an interrupt puts
	// the old file back, or it stays under that name.
	var name string
	for range 10 {
		name = tempName(final)
		if err = os.Link(final, name); !errors.Is(err, os.ErrExist) {
			break
		}
	}
	switch {
	case err == nil:
		return name, nil
	case errors.Is(err, os.ErrNotExist):
		return "", nil
	case errors.Is(err, os.ErrExist):
		return "", errors.New("failed to find a free temporary name")
	}
	// No hard links here: a copy.
	src, err := os.Open(final)
	if err != nil {
		return "", err
	}
	defer src.Close()
	dst, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm())
	if err != nil {
		return "", err
	}
	_, err = io.Copy(dst, src)
	if err == nil {
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
		return "", err
	}
	return name, nil
}

// Abort removes a file output that was not committed (a device or named
// pipe is only closed). It is safe to call after commit.
func (o *Output) Abort() {
	if o.sink != nil {
		o.sink.Abort()
		o.sink = nil
	}
	if o.dev != nil {
		o.dev.Close()
		o.dev = nil
	}
	if o.tmp == nil {
		return
	}
	name := o.tmp.Name()
	o.tmp.Close()
	o.removeTemp(name)
	Signals.Forget(name)
	o.tmp = nil
	o.unhold()
}

// removeTemp removes the temporary file name of o, and says so when it
// cannot: what is left may be plaintext.
func (o *Output) removeTemp(name string) {
	if err := os.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
		shown := filepath.Join(filepath.Dir(o.path), filepath.Base(name))
		fmt.Fprintf(os.Stderr, "crypt4gh: warning: could not remove the temporary file %s (%v); remove it by hand\n", QuoteName(shown), PathErr(err))
	}
}

// Finish commits the output when err is nil and aborts it otherwise.
func (o *Output) Finish(err error) error {
	if err != nil {
		o.Abort()
		return err
	}
	return o.Commit()
}

func IsTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// SameFile reports whether the paths a and b name the same file: the same
// cleaned path, the same existing file, or the same path once the symbolic
// links of their folders are Resolved.
func SameFile(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	fa, ea := os.Stat(a)
	fb, eb := os.Stat(b)
	if ea == nil && eb == nil {
		return os.SameFile(fa, fb)
	}
	return Resolved(a) == Resolved(b)
}

// Resolved is the absolute path of p with the symbolic links of its folder
// Resolved, or p itself when that fails.
func Resolved(p string) string {
	dir, err := filepath.EvalSymlinks(filepath.Dir(p))
	if err != nil {
		return filepath.Clean(p)
	}
	abs, err := filepath.Abs(filepath.Join(dir, filepath.Base(p)))
	if err != nil {
		return filepath.Clean(p)
	}
	return abs
}

// Distinct refuses two outputs of one command that are the same
// file, and an output that is one of the files the command reads (a key,
// a passphrase file): the output would replace it. outputs and inputs are
// pairs of a name for the message and a path; an empty path or stdout is
// skipped. When stdout is a regular file (crypt4gh … >> F), it is refused
// as one of the outputs and inputs too: what the command writes there
// would go into the old file that a commit replaces, or into a key.
func Distinct(stdout io.Writer, outputs, inputs []string) error {
	if f, ok := stdout.(*os.File); ok {
		if so, err := f.Stat(); err == nil && so.Mode().IsRegular() {
			all := append(outputs[:len(outputs):len(outputs)], inputs...)
			for j := 0; j+1 < len(all); j += 2 {
				if IsStdout(all[j+1]) {
					continue
				}
				if fi, err := os.Stat(all[j+1]); err == nil && os.SameFile(so, fi) {
					return usagef("stdout is the file of %s (%s)", all[j], all[j+1])
				}
			}
		}
	}
	for i := 0; i+1 < len(outputs); i += 2 {
		if IsStdout(outputs[i+1]) {
			continue
		}
		others := append(outputs[i+2:len(outputs):len(outputs)], inputs...)
		for j := 0; j+1 < len(others); j += 2 {
			if !IsStdout(others[j+1]) && SameFile(outputs[i+1], others[j+1]) {
				return usagef("%s and %s are the same file (%s)", outputs[i], others[j], others[j+1])
			}
		}
	}
	return nil
}

// QuoteName escapes the control characters of a file name for a message
// meant for people, as GNU tools do, so that a crafted name cannot move the
// cursor or hide text, and the bytes that are not UTF-8 (\xff), which a
// terminal would show as another character or none.
func QuoteName(name string) string {
	if !strings.ContainsFunc(name, isControl) && utf8.ValidString(name) {
		return name
	}
	var b strings.Builder
	for i, r := range name {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(name[i:], "\uFFFD"):
			fmt.Fprintf(&b, "\\x%02x", name[i])
		case isControl(r):
			fmt.Fprintf(&b, "\\x%02x", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }

// Preallocate reserves room for n bytes when the output is a new file and
// n is at least preallocateMin, so that the writes cost less (see
// preallocate_linux.go). The size of the file still grows only as it is
// written; commit releases whatever was reserved and not written, if n
// was an overestimate.
func (o *Output) Preallocate(n int64) {
	if o.tmp != nil && n >= preallocateMin && preallocate(o.tmp, n) {
		o.reserved = true
	}
}

// RemovePartials removes the temporary files of final (.NAME.partial-…)
// that a run killed while writing it left behind, when a journal says
// that the run that wrote final died. A temporary file that a live
// process holds (each is locked while it is written, where the file
// system locks) is another run's, of the same name: it is left alone.
func RemovePartials(final string) error {
	dir, base := filepath.Split(final)
	if dir == "" {
		dir = "."
	}
	prefix := "." + base + TempSuffix
	if len(prefix)+16 > MaxName {
		return nil // the temporary name does not say whose it is
	}
	names, err := filepath.Glob(filepath.Join(dir, globEscape(prefix)+"*"))
	if err != nil {
		return err
	}
	for _, n := range names {
		if fi, err := os.Lstat(n); err != nil || !fi.Mode().IsRegular() {
			continue // gone, or not a file of this tool's
		}
		f, err := os.Open(n)
		if err != nil {
			continue
		}
		if Lock(f) == ErrLocked {
			f.Close() // another process writes it now
			continue
		}
		err = os.Remove(n)
		f.Close()
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// globEscape escapes the metacharacters of filepath.Match in s.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
