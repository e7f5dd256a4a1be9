package cli

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/c4gh-go/crypt4gh/keys"
)

// Every file the tool creates, data or key, goes through output: it is
// written to a temporary file in the target folder, fsynced, and then
// committed under its name in a way that cannot replace a file that
// appeared meanwhile (without --force), and the folder is fsynced. On any
// failure, and on every catchable signal, the temporary file is removed.
// Standard output, devices and named pipes are written in place.

// Modes of created files: plaintext and secret keys are private; other
// outputs get 0666 minus the umask, as the kernel applies it.
const (
	modeSecret = 0o600
	modePublic = 0o666
)

// output is where a command writes one result.
type output struct {
	io.Writer
	path  string      // the name the user gave; "" for stdout
	final string      // where the file is committed
	tmp   *os.File    // the temporary file, until commit or abort
	dev   *os.File    // a device or named pipe written in place
	obj   *objectSink // an object being uploaded (s3.go)
	force bool
	// reserved: blocks may be reserved past what was written (preallocate),
	// to be released by commit.
	reserved bool
	// committed: commit gave the file its name.
	committed bool
	// mtime, when set, is given to the file before its commit: the
	// input's, as gzip keeps it.
	mtime time.Time
}

// keepTime makes a file output take the modification time of the regular
// file in, as gzip does; other outputs and inputs keep theirs.
func (o *output) keepTime(in *input) {
	if o.tmp == nil || in == nil || in.obj != nil || !in.regular() {
		return
	}
	if fi, err := in.file.Stat(); err == nil {
		o.mtime = fi.ModTime()
	}
}

// outputOptions says how an output may be created.
type outputOptions struct {
	force  bool        // replace an existing file
	binary bool        // refuse to write to a terminal unless path is "-"
	mode   os.FileMode // modeSecret or modePublic
	input  *os.File    // the input, which the output must not be
	// secretKey: the output is a new secret key, which may replace an
	// old one with force; nothing else ever replaces a secret key.
	secretKey bool
}

// isStdout reports whether path names standard output.
func isStdout(path string) bool {
	switch path {
	case "", "-", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1":
		return true
	}
	return false
}

// openOutput opens path for writing (see isStdout for the names of
// stdout). Nothing is created before every check has passed.
func openOutput(path string, stdout io.Writer, opts outputOptions) (*output, error) {
	if isStdout(path) {
		if stdout == nil {
			// Key files are given no stdout: they are files.
			return nil, keyToStdout(path)
		}
		if opts.binary && path != "-" && isTerminal(stdout) {
			return nil, withHint(usagef("refusing to write binary data to a terminal"),
				"use -o FILE, or -o - to write to the terminal anyway")
		}
		if f, ok := stdout.(*os.File); ok && opts.input != nil {
			// "crypt4gh … -i f >> f" would read what it appends.
			if fo, err := f.Stat(); err == nil && fo.Mode().IsRegular() {
				if fi, err := opts.input.Stat(); err == nil && os.SameFile(fo, fi) {
					return nil, usagef("stdout is the input file")
				}
			}
		}
		return &output{Writer: stdout}, nil
	}
	final, err := checkOutput(path, opts)
	if err != nil {
		return nil, err
	}
	if final == "" {
		// An existing device or named pipe: written in place.
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return nil, fmt.Errorf("failed to open output %s: %w", path, pathErr(err))
		}
		if opts.binary && term.IsTerminal(int(f.Fd())) {
			f.Close()
			return nil, withHint(usagef("refusing to write binary data to the terminal %s", path),
				"use -o - to write to the terminal anyway")
		}
		return &output{Writer: f, path: path, dev: f}, nil
	}
	tmp, err := createTemp(final, opts.mode)
	if err != nil {
		return nil, fmt.Errorf("failed to create output %s: %w", path, pathErr(err))
	}
	return &output{Writer: &writeNamer{f: tmp, path: path, writeback: startWriteback}, path: path, final: final, tmp: tmp, force: opts.force}, nil
}

// keyToStdout refuses a key output that is stdout.
func keyToStdout(path string) error {
	return usagef("keys are written to files, not to stdout (%s)", path)
}

// checkOutput returns the path where the file for path will be committed:
// path itself, or with --force the file that a symbolic link points to.
// It returns "" for an existing device or named pipe, which is written in
// place, and an error when the output may not be written.
func checkOutput(path string, opts outputOptions) (string, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if _, lerr := os.Lstat(path); lerr == nil {
			return "", usagef("output %s is a symbolic link to nothing", path)
		}
		return path, nil
	case err != nil:
		return "", fmt.Errorf("failed to check output %s: %w", path, pathErr(err))
	}
	if opts.input != nil {
		if in, err := opts.input.Stat(); err == nil && os.SameFile(fi, in) {
			return "", usagef("output file %s is the input file", path)
		}
	}
	switch {
	case fi.IsDir():
		return "", usagef("output %s is a directory", path)
	case !fi.Mode().IsRegular():
		return "", nil
	case !opts.force:
		return "", withHint(usagef("output file %q already exists", path), "use --force to replace it")
	case !opts.secretKey && holdsSecretKey(path):
		return "", usagef("%s holds a secret key: only a new secret key may replace it", quoteName(path))
	}
	// Through a symbolic link, replace the file it points to, not the link.
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", fmt.Errorf("failed to resolve output %s: %w", path, pathErr(err))
	}
	return target, nil
}

// holdsSecretKey reports whether the file at path is a secret key file of
// a format that this tool reads.
func holdsSecretKey(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	data, _ := io.ReadAll(io.LimitReader(f, maxKeyFile))
	defer clear(data)
	_, err = keys.InspectSecretKey(data)
	return err == nil
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
		return &os.PathError{Op: pe.Op, Path: quoteName(w.path), Err: pe.Err}
	}
	return err
}

// pathErr drops the path from an *os.PathError: the message names the
// file already, or the path is the temporary one that means nothing to the
// user.
func pathErr(err error) error {
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

// tempSuffix marks the temporary files of this tool: ".NAME.partial-XXXXXXXX".
const tempSuffix = ".partial-"

// maxName is the longest file name most file systems take.
const maxName = 255

// createTemp creates the temporary file for final in its folder, with
// mode perm minus the umask. Its name is .NAME.partial-RANDOM, or
// .crypt4gh.partial-RANDOM when that would be too long for the folder.
func createTemp(final string, perm os.FileMode) (*os.File, error) {
	dir, base := filepath.Split(final)
	if dir == "" {
		dir = "."
	}
	warnStale(dir)
	prefix := "." + base
	if len(prefix)+len(tempSuffix)+16 > maxName {
		prefix = ".crypt4gh"
	}
	for range 10 {
		var r [8]byte
		rand.Read(r[:])
		f, err := cleanup.create(filepath.Join(dir, prefix+tempSuffix+hex.EncodeToString(r[:])), perm)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, errors.New("failed to find a free temporary name")
}

// staleAge is the age after which a temporary file of this tool is
// surely left over from a run that was killed.
const staleAge = 24 * time.Hour

// warnedStale remembers the folders already checked.
var warnedStale = map[string]bool{}

// warnStale says when dir holds temporary files of this tool older than a
// day (a run killed with SIGKILL, or a crash, leaves them; they may hold
// plaintext and reserved space). It never removes them: they may belong to
// another process.
func warnStale(dir string) {
	cleanup.mu.Lock()
	seen := warnedStale[dir]
	warnedStale[dir] = true
	cleanup.mu.Unlock()
	if seen {
		return
	}
	names, _ := filepath.Glob(filepath.Join(dir, ".*"+tempSuffix+"*"))
	for _, n := range names {
		if fi, err := os.Lstat(n); err == nil && fi.Mode().IsRegular() && time.Since(fi.ModTime()) > staleAge {
			fmt.Fprintf(os.Stderr, "crypt4gh: warning: %s was left by an interrupted run %d hours ago; remove it if no crypt4gh is running\n",
				quoteName(n), int(time.Since(fi.ModTime()).Hours()))
		}
	}
}

// commit moves a file output into place. It must be called only after
// everything was written successfully.
func (o *output) commit() error {
	if o.obj != nil {
		obj := o.obj
		o.obj = nil
		return obj.commit()
	}
	if o.dev != nil {
		err := o.dev.Close()
		o.dev = nil
		if err != nil {
			return fmt.Errorf("failed to write %s: %w", o.path, pathErr(err))
		}
		return nil
	}
	if o.tmp == nil {
		return nil
	}
	name := o.tmp.Name()
	defer cleanup.forget(name)
	err := o.release()
	if err == nil && !o.mtime.IsZero() {
		err = os.Chtimes(name, o.mtime, o.mtime)
	}
	if err == nil {
		err = o.tmp.Sync()
	}
	if cerr := o.tmp.Close(); err == nil {
		err = cerr
	}
	o.tmp = nil
	if err == nil {
		err = place(name, o.final, o.force)
	}
	if err != nil {
		os.Remove(name)
		if errors.Is(err, os.ErrExist) && !o.force {
			return withHint(usagef("output file %q already exists (it appeared while this command ran)", o.path),
				"use --force to replace it")
		}
		return fmt.Errorf("failed to write %s: %w", o.path, pathErr(err))
	}
	o.committed = true
	return syncDir(filepath.Dir(o.final))
}

// release frees the blocks reserved past what was written.
func (o *output) release() error {
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

// place gives the complete file tmp the name final. With force it
// replaces whatever is there; without, it fails with an error wrapping
// os.ErrExist when final exists, also when it appeared after the checks
// at start-up.
func place(tmp, final string, force bool) error {
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

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return nil // nothing to sync with (a folder we may not read)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return fmt.Errorf("failed to sync folder %s: %w", dir, pathErr(err))
	}
	return nil
}

// undo removes a file that commit created, when a command with several
// outputs fails after it; nil and uncommitted outputs are left alone.
func (o *output) undo() {
	if o != nil && o.committed {
		os.Remove(o.final)
		o.committed = false
	}
}

// abort removes a file output that was not committed (a device or named
// pipe is only closed). It is safe to call after commit.
func (o *output) abort() {
	if o.obj != nil {
		o.obj.abort()
		o.obj = nil
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
	os.Remove(name)
	cleanup.forget(name)
	o.tmp = nil
}

// finish commits the output when err is nil and aborts it otherwise.
func (o *output) finish(err error) error {
	if err != nil {
		o.abort()
		return err
	}
	return o.commit()
}

func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// sameFile reports whether the paths a and b name the same file: the same
// cleaned path, the same existing file, or the same path once the symbolic
// links of their folders are resolved.
func sameFile(a, b string) bool {
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
	return resolved(a) == resolved(b)
}

// resolved is the absolute path of p with the symbolic links of its folder
// resolved, or p itself when that fails.
func resolved(p string) string {
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

// distinctOutputs refuses two outputs of one command that are the same
// file, and an output that is one of the files the command reads (a key,
// a passphrase file): the output would replace it. outputs and inputs are
// pairs of a name for the message and a path; an empty path or stdout is
// skipped.
func distinctOutputs(outputs, inputs []string) error {
	for i := 0; i+1 < len(outputs); i += 2 {
		if isStdout(outputs[i+1]) {
			continue
		}
		others := append(outputs[i+2:len(outputs):len(outputs)], inputs...)
		for j := 0; j+1 < len(others); j += 2 {
			if !isStdout(others[j+1]) && sameFile(outputs[i+1], others[j+1]) {
				return usagef("%s and %s are the same file (%s)", outputs[i], others[j], others[j+1])
			}
		}
	}
	return nil
}

// keyInputs are the files of key material that a command reads: pairs of
// a flag and a path, for distinctOutputs. more are further pairs (the
// recipients' public keys, a new passphrase's file).
func keyInputs(k keyOptions, more ...string) []string {
	var in []string
	add := func(name, path string) {
		if path != "" && path != "-" {
			in = append(in, name, expandHome(path))
		}
	}
	add("--sk", k.SK)
	add("--sender_pk", k.Sender)
	add("--passphrase-file", k.PassphraseFile)
	for i := 0; i+1 < len(more); i += 2 {
		add(more[i], more[i+1])
	}
	return in
}

// recipientInputs are the pairs of keyInputs for the recipients' public
// key files.
func recipientInputs(paths []string) []string {
	var in []string
	for _, p := range paths {
		in = append(in, "--recipient_pk", p)
	}
	return in
}

// quoteName escapes the control characters of a file name for a message
// meant for people, as GNU tools do, so that a crafted name cannot move the
// cursor or hide text.
func quoteName(name string) string {
	if !strings.ContainsFunc(name, isControl) {
		return name
	}
	var b strings.Builder
	for _, r := range name {
		if isControl(r) {
			fmt.Fprintf(&b, "\\x%02x", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }

// preallocate reserves room for n bytes when the output is a new file and
// n > 0, so that the writes cost less (see preallocate_linux.go). The size
// of the file still grows only as it is written; commit releases whatever
// was reserved and not written, if n was an overestimate.
func (o *output) preallocate(n int64) {
	if o.tmp != nil && n > 0 && preallocate(o.tmp, n) {
		o.reserved = true
	}
}
