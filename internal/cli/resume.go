package cli

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/internal/outfile"
	"github.com/c4gh-go/crypt4gh/objstore"
	"github.com/urfave/cli/v2"
)

// decrypt --continue: a download of an object that was interrupted (by a
// signal, SIGKILL, a lost network, a crash) resumes after the last segment
// that was authenticated and written, instead of starting again.
//
// With --continue, the plaintext goes to .NAME.c4gh-resume beside the
// output NAME (mode 0600), and a record of the download to
// .NAME.c4gh-resume.json: the object's location, ETag, size and header
// size, how many bytes of plaintext were written and synced to disk, and
// the boot of the machine during which they were written. Both stay when
// the run fails or is interrupted. The next run with --continue checks the
// record against the object: when the object changed (another ETag or
// size), it says so and starts again; otherwise it keeps the whole
// segments of plaintext that are on disk (all that the file holds, when
// the machine was not restarted meanwhile; else what was synced, at most
// resumeSync bytes less) and fetches the body from the next segment on.
// At the end the partial file is committed under NAME as every output is
// (never over a file that appeared meanwhile, without --force), and the
// record is removed.
//
// Segments are independent, so the body can be decrypted from any
// segment on; an edit list, whose offsets count from the start, would
// need more: a file that has one is refused with --continue.

// resumeSync is how many bytes are written between two syncs of the
// partial output and its record.
const resumeSync = 64 << 20

// Suffixes of the files that --continue keeps beside the output.
const (
	resumeSuffix = ".c4gh-resume"
	recordSuffix = ".c4gh-resume.json"
)

func continueFlag(p *bool) cli.Flag {
	return &cli.BoolFlag{
		Name:        "continue",
		Destination: p,
		Usage:       "keep the partial output of a download beside -o FILE and resume it after an interruption (s3:// and https:// inputs)",
	}
}

// resumeRecord is what .NAME.c4gh-resume.json holds.
type resumeRecord struct {
	Source string `json:"source"`
	// URL is a SHA-256 of the whole URL, query included (a presigned
	// URL's query names the object and holds secrets: only its hash is
	// kept).
	URL string `json:"url_sha256"`
	// ETag is the validator of the object: its ETag or, for a web
	// resource without a strong one, its weak ETag or Last-Modified
	// time; Strong says whether it is a strong ETag.
	ETag       string `json:"etag"`
	Strong     bool   `json:"strong"`
	KeyID      string `json:"key_id"` // c4gh.Resumable.KeyID: the body's data keys
	Size       int64  `json:"size"`
	HeaderSize int64  `json:"header_size"`
	Plaintext  int64  `json:"plaintext"` // written and synced: whole segments
	BootID     string `json:"boot_id"`   // when the partial output was last written
}

// decryptResume decrypts the object of -i to -o with --continue.
func decryptResume(e *env, d *decryptOptions, rng *edit.Range) error {
	src, path := d.Input, d.Output
	switch {
	case rng != nil:
		return usagef("--continue cannot be used with --range")
	case d.Checksum:
		return usagef("--continue cannot be used with --checksum")
	case !objstore.IsURL(src):
		return withHint(usagef("--continue resumes the download of an object or a web resource"),
			"use -i s3://BUCKET/KEY or -i https://…")
	case outfile.IsStdout(path):
		return withHint(usagef("--continue needs an output file"), "use -o FILE")
	case objstore.IsURL(path):
		return usagef("--continue writes a local file, not %s", path)
	}
	final, err := outfile.Check(path, outfile.Options{Force: d.Force})
	// An output that exists without a partial one beside it may be the
	// complete download of an earlier run: then there is nothing to do
	// (as wget -c has it), so that a retry loop ends. Its size, against
	// the object's plaintext, tells.
	var done os.FileInfo
	if err != nil && !d.Force {
		// Only a regular file of the caller's, private as a decrypt
		// leaves it, is taken for the earlier run's: not a link, not a
		// file that another user planted at the name.
		if fi, serr := os.Lstat(path); serr == nil && fi.Mode().IsRegular() && outfile.OwnedPrivate(fi) && !exists(resumeFile(path, resumeSuffix)) {
			done, final = fi, path
		}
		if done == nil {
			return err
		}
	}
	existsErr := err
	if final == "" {
		return usagef("--continue needs a regular file as output, not %s", quoteName(path))
	}
	if len(filepath.Base(resumeFile(final, recordSuffix))) > outfile.MaxName {
		return usagef("the name %s is too long for the files of --continue beside it", quoteName(path))
	}
	partial := resumeFile(final, resumeSuffix)

	in, err := e.openSource(src)
	if err != nil {
		return err
	}
	defer in.Close()
	o := in.obj.o
	ra, size, err := in.randomAccess()
	if err != nil {
		return err
	}
	if err := checkMagic(bufio.NewReader(io.NewSectionReader(ra, 0, 16))); err != nil {
		return err
	}
	sk, sender, err := readReaderKeys(e, d.keyOptions)
	if err != nil {
		return err
	}
	defer sk.Zero()
	res, err := c4gh.NewResumable(ra, size, sk, &c4gh.DecryptOptions{Sender: sender})
	switch {
	case errors.Is(err, c4gh.ErrResumeEditList):
		return withHint(usagef("%s has an edit list: --continue cannot resume it", o.Location()),
			"decrypt it without --continue")
	case errors.As(err, new(*body.SegmentError)):
		return fmt.Errorf("body %w", err)
	case err != nil:
		return noPacketHint(err, sk, sender)
	}
	defer res.Close()
	hsize, plainSize := res.HeaderSize(), res.Size()
	if done != nil {
		if done.Size() != plainSize {
			return existsErr
		}
		if !e.quiet {
			fmt.Fprintf(e.stderr, "crypt4gh: %s is complete (%d bytes of plaintext): nothing to do\n", quoteName(path), plainSize)
		}
		return nil
	}

	validator, strong := o.Validator()
	urlSum := sha256.Sum256([]byte(src))
	rec := resumeRecord{Source: o.Location().String(), URL: hex.EncodeToString(urlSum[:]), ETag: validator, Strong: strong,
		KeyID: res.KeyID(), Size: size, HeaderSize: hsize}
	rw, err := openPartial(e, partial, rec, res)
	if err != nil {
		return err
	}
	defer rw.close()

	from := res.Offset(rw.start)
	rest := &objectStream{o: o, opts: func() *objstore.ReaderOptions { return e.readerOptions() }, fetched: true, pos: min(from, size)}
	defer rest.Close()
	prog := e.newProgress(size-from, "decrypting")
	r := res.From(rw.start, prog.Reader(rest), d.Jobs)
	defer r.Close()
	prog.Start()
	_, err = r.WriteTo(rw)
	prog.Stop()
	if err != nil {
		err = decryptError(err, hsize, size)
		if serr := rw.sync(); serr != nil {
			return err
		}
		if hintFor(err) == "" {
			err = withHint(err, "the plaintext decrypted so far is kept in %s: run the same command again to resume", quoteName(partial))
		}
		return err
	}
	if n := rw.written.Load(); n != plainSize {
		return fmt.Errorf("failed to decrypt %s: %d bytes of plaintext, want %d", o.Location(), n, plainSize)
	}
	return rw.commit(final, path, d.Force)
}

// partialWriter writes the plaintext to the partial output, syncing it
// and updating the record every resumeSync bytes, and on a signal.
type partialWriter struct {
	f       *os.File
	path    string // of the partial output
	record  string // of the record
	rec     resumeRecord
	start   int64        // where this run began to write
	written atomic.Int64 // bytes of plaintext in f

	mu        sync.Mutex // between the writes of the record
	sinceSync int64
	forget    func()
}

// openPartial opens the partial output at path for the download rec of
// plainSize bytes of plaintext, positioned after the plaintext that an
// earlier run left and that may be kept.
func openPartial(e *env, path string, rec resumeRecord, res *c4gh.Resumable) (*partialWriter, error) {
	w := &partialWriter{path: path, record: strings.TrimSuffix(path, resumeSuffix) + recordSuffix, rec: rec}
	f, err := openPrivate(path)
	if errors.Is(err, errNotPrivate) {
		return nil, withHint(fmt.Errorf("failed to open %s: %w", quoteName(path), pathErr(err)),
			"remove it (and %s), or decrypt to another output", quoteName(w.record))
	}
	if err != nil {
		return nil, fmt.Errorf("failed to open %s: %w", quoteName(path), pathErr(err))
	}
	if err := outfile.Lock(f); err != nil {
		f.Close()
		return nil, withHint(usagef("%s is in use by another crypt4gh", quoteName(path)), "wait for it to end, or stop it")
	}
	fail := func(what string, err error) (*partialWriter, error) {
		f.Close()
		return nil, fmt.Errorf("failed to %s %s: %w", what, quoteName(path), pathErr(err))
	}
	fi, err := f.Stat()
	if err != nil {
		return fail("read", err)
	}
	w.start = w.kept(e, fi.Size(), res)
	w.rec.Plaintext = w.start
	w.rec.BootID = bootID()
	if err := w.saveRecord(); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Truncate(w.start); err != nil {
		return fail("truncate", err)
	}
	if _, err := f.Seek(w.start, io.SeekStart); err != nil {
		return fail("seek", err)
	}
	w.f = f
	w.written.Store(w.start)
	w.forget = outfile.Signals.OnInterrupt(func() { w.sync() })
	return w, nil
}

// kept returns how many of the size bytes of plaintext that an earlier run
// left in the partial output are kept: whole segments, as far as its
// record says they were written for the same object. A partial output
// without a record (each run writes its record before any plaintext)
// keeps nothing.
func (w *partialWriter) kept(e *env, size int64, res *c4gh.Resumable) int64 {
	data, err := readPrivate(w.record)
	if errors.Is(err, errNotPrivate) {
		e.warnf("%s is %v: starting again", quoteName(w.record), errNotPrivate)
		return 0
	}
	if err != nil || size == 0 {
		return 0
	}
	var old resumeRecord
	if json.Unmarshal(data, &old) != nil || old.Source != w.rec.Source || old.URL != w.rec.URL {
		return 0 // another download
	}
	if !sameBody(e, old, w.rec) {
		return 0
	}
	n := old.Plaintext
	if id := bootID(); id != "" && id == old.BootID {
		// No restart since: every byte written is in the file.
		n = size
	}
	n = res.Kept(min(n, size))
	if n > 0 && !e.quiet {
		fmt.Fprintf(e.stderr, "crypt4gh: resuming %s after %d bytes of plaintext (%d of %d segments)\n",
			w.rec.Source, n, body.SegmentOf(n), body.SegmentCount(res.Size()))
	}
	return n
}

// sameBody reports whether the object of the record now, rec, has the
// body that the download of the record old was of: the same strong
// validator and sizes; or the same data keys and body size, as after its
// header was re-encrypted in place (the segments go on authenticating
// under those keys, which decrypting the rest checks). Else it says why
// the download starts again.
func sameBody(e *env, old, rec resumeRecord) bool {
	switch {
	case old.Strong && rec.Strong && old.ETag == rec.ETag && old.Size == rec.Size && old.HeaderSize == rec.HeaderSize:
		return true
	case old.KeyID != "" && old.KeyID == rec.KeyID && old.Size-old.HeaderSize == rec.Size-rec.HeaderSize:
		if old.ETag != rec.ETag || old.HeaderSize != rec.HeaderSize {
			e.warnf("%s has a new header but the same body (its data keys did not change): resuming", rec.Source)
		}
		return true
	case !rec.Strong || !old.Strong:
		what := "no ETag"
		if rec.ETag != "" {
			what = "only " + rec.ETag
		}
		e.warnf("%s has no strong validator (%s), so whether it changed since the interrupted download cannot be told: starting again",
			rec.Source, what)
		return false
	}
	e.warnf("%s changed since the interrupted download (ETag %s, size %d; it was %s, %d): starting again",
		rec.Source, rec.ETag, rec.Size, old.ETag, old.Size)
	return false
}

func (w *partialWriter) Write(p []byte) (int, error) {
	// The lock covers the write too, so that a sync on a signal waits for
	// a write under way and records it: the file's size, seen by the
	// user, is what the record says once the command has stopped.
	w.mu.Lock()
	n, err := w.f.Write(p)
	w.written.Add(int64(n))
	w.sinceSync += int64(n)
	due := w.sinceSync >= resumeSync
	w.mu.Unlock()
	if err != nil {
		return n, fmt.Errorf("failed to write %s: %w", quoteName(w.path), pathErr(err))
	}
	if due {
		if err := w.sync(); err != nil {
			return n, err
		}
	}
	return n, nil
}

// sync makes what was written durable and records it.
func (w *partialWriter) sync() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := w.written.Load()
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("failed to sync %s: %w", quoteName(w.path), pathErr(err))
	}
	w.sinceSync = 0
	w.rec.Plaintext = body.Floor(n)
	return w.saveRecordLocked()
}

func (w *partialWriter) saveRecord() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.saveRecordLocked()
}

// saveRecordLocked replaces the record, atomically.
func (w *partialWriter) saveRecordLocked() error {
	data, err := json.Marshal(w.rec)
	if err != nil {
		return err
	}
	tmp := w.record + ".new"
	os.Remove(tmp)
	f, err := openPrivate(tmp)
	if err == nil {
		_, err = f.Write(append(data, '\n'))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = os.Rename(tmp, w.record)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("failed to write %s: %w", quoteName(w.record), pathErr(err))
	}
	return nil
}

// commit gives the complete partial output the name final (path as the
// user wrote it), as output.commit does, and removes the record.
func (w *partialWriter) commit(final, path string, force bool) error {
	w.forget()
	err := w.f.Sync()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	w.f = nil
	if err == nil {
		err = outfile.Place(w.path, final, force)
	}
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return withHint(usagef("output file %q already exists (it appeared while this command ran)", path),
				"the plaintext is kept in %s; use --force with --continue to replace the file", quoteName(w.path))
		}
		return fmt.Errorf("failed to write %s: %w", path, pathErr(err))
	}
	os.Remove(w.record)
	return outfile.SyncDir(filepath.Dir(final))
}

// close releases the partial output if commit did not.
func (w *partialWriter) close() {
	if w.f != nil {
		w.forget()
		w.f.Close()
		w.f = nil
	}
}

// errNotPrivate is the error for a file of --continue that another user
// may have made or may read: its contents cannot be trusted, nor may the
// plaintext go into it.
var errNotPrivate = errors.New("not a private file of yours (another user could have made it or could read it)")

// openPrivate opens the regular file at path for reading and writing: a
// new one, created with mode 0600 (never one that appeared meanwhile), or
// an existing one only when it is the caller's own with no permission for
// others, as an earlier run left it. It refuses a symbolic link or
// anything but a regular file.
func openPrivate(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, outfile.ModeSecret)
	if errors.Is(err, os.ErrExist) {
		if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
			return nil, &os.PathError{Op: "open", Path: path, Err: errors.New("not a regular file")}
		}
		f, err = os.OpenFile(path, os.O_RDWR, 0)
	}
	if err != nil {
		return nil, err
	}
	if err := checkPrivate(f, path); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// checkPrivate fails unless f, opened at path, is still the regular file
// at path and a private file of the caller's.
func checkPrivate(f *os.File, path string) error {
	fi, err := f.Stat()
	li, lerr := os.Lstat(path)
	switch {
	case err != nil || lerr != nil || !os.SameFile(fi, li) || !fi.Mode().IsRegular():
		return &os.PathError{Op: "open", Path: path, Err: errors.New("changed while it was opened")}
	case !outfile.OwnedPrivate(fi) || !outfile.SingleLink(fi):
		return &os.PathError{Op: "open", Path: path, Err: errNotPrivate}
	}
	return nil
}

// readPrivate returns the contents of the record at path when it is a
// private file of the caller's, as openPrivate would open it.
func readPrivate(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := checkPrivate(f, path); err != nil {
		return nil, err
	}
	return io.ReadAll(io.LimitReader(f, 1<<20))
}

// resumeFile returns the name of the file of --continue with the given
// suffix beside the output at path.
func resumeFile(path, suffix string) string {
	dir, base := filepath.Split(path)
	return filepath.Join(dir, "."+base+suffix)
}

// exists reports whether something, a link included, is at path.
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// removeResumeFiles removes the partial output and the record of an
// interrupted download to path that a complete download has made
// obsolete: they are removed only when they are the caller's own private
// files, as --continue would have used them.
func removeResumeFiles(e *env, path string) {
	if outfile.IsStdout(path) || objstore.IsURL(path) {
		return
	}
	removed := false
	for _, suffix := range []string{resumeSuffix, recordSuffix} {
		name := resumeFile(path, suffix)
		f, err := os.Open(name)
		if err != nil {
			continue
		}
		if checkPrivate(f, name) == nil && os.Remove(name) == nil {
			removed = true
		}
		f.Close()
	}
	if removed && !e.quiet {
		fmt.Fprintf(e.stderr, "crypt4gh: removed the partial output of the interrupted download to %s, which is complete now\n", quoteName(path))
	}
}

// warnResumable says when the output of a decrypt without --continue
// has the partial output of an interrupted download with --continue
// beside it, which this run does not use (and removes once complete).
func warnResumable(e *env, path string) {
	if outfile.IsStdout(path) || objstore.IsURL(path) {
		return
	}
	partial := resumeFile(path, resumeSuffix)
	if fi, err := os.Lstat(partial); err == nil && fi.Mode().IsRegular() {
		e.warnf("%s holds the plaintext of an interrupted download: add --continue to resume it; this run removes it and %s once it is complete",
			quoteName(partial), quoteName(resumeFile(path, recordSuffix)))
	}
}

// bootID identifies the boot of the machine (Linux), "" when unknown.
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
