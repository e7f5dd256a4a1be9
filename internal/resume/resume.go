// Package resume keeps the files of an interrupted download beside its
// output, so that the next run resumes it.
//
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
// SyncEvery bytes less) and fetches the body from the next segment on.
// At the end the partial file is committed under NAME as every output is
// (never over a file that appeared meanwhile, without --force), and the
// record is removed.
//
// Segments are independent, so the body can be decrypted from any
// segment on; an edit list, whose offsets count from the start, would
// need more: a file that has one is refused with --continue.
package resume

import (
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
	"github.com/c4gh-go/crypt4gh/internal/errkind"
	"github.com/c4gh-go/crypt4gh/internal/outfile"
)

// Reporter is where Open says what it keeps of an earlier run and why
// not: Warn for a download that starts again, Note (nil for none) for one
// that resumes.
type Reporter struct {
	Warn func(format string, args ...any)
	Note func(format string, args ...any)
}

// Start is where this run began to write: the plaintext kept.
func (w *Partial) Start() int64 { return w.start }

// Written is the plaintext in the partial output now.
func (w *Partial) Written() int64 { return w.written.Load() }

func quoteName(name string) string { return outfile.QuoteName(name) }

func pathErr(err error) error { return outfile.PathErr(err) }

func usagef(format string, args ...any) error { return errkind.Errorf(errkind.Usage, format, args...) }

func withHint(err error, format string, args ...any) error {
	return errkind.WithHint(err, format, args...)
}

// SyncEvery is how many bytes are written between two syncs of the
// partial output and its record.
const SyncEvery = 64 << 20

// Suffixes of the files that --continue keeps beside the output.
const (
	Suffix       = ".c4gh-resume"
	RecordSuffix = ".c4gh-resume.json"
)

// Record is what .NAME.c4gh-resume.json holds.
type Record struct {
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

// Partial writes the plaintext to the partial output, syncing it
// and updating the record every SyncEvery bytes, and on a signal.
type Partial struct {
	f       *os.File
	path    string // of the partial output
	record  string // of the record
	rec     Record
	start   int64        // where this run began to write
	written atomic.Int64 // bytes of plaintext in f

	mu        sync.Mutex // between the writes of the record
	sinceSync int64
	forget    func()
}

// Open opens the partial output at path for the download rec of
// plainSize bytes of plaintext, positioned after the plaintext that an
// earlier run left and that may be kept.
func Open(path string, rec Record, res *c4gh.Resumable, rep Reporter) (*Partial, error) {
	w := &Partial{path: path, record: strings.TrimSuffix(path, Suffix) + RecordSuffix, rec: rec}
	f, err := OpenPrivate(path)
	if errors.Is(err, ErrNotPrivate) {
		return nil, withHint(fmt.Errorf("failed to open %s: %w", quoteName(path), pathErr(err)),
			"remove it (and %s), or decrypt to another output", quoteName(w.record))
	}
	if err != nil {
		return nil, fmt.Errorf("failed to open %s: %w", quoteName(path), pathErr(err))
	}
	if err := outfile.Lock(f); errors.Is(err, outfile.ErrLocked) {
		f.Close()
		return nil, withHint(usagef("%s is in use by another crypt4gh", quoteName(path)), "wait for it to end, or stop it")
	} else if err != nil {
		f.Close()
		return nil, fmt.Errorf("failed to lock %s: %w", quoteName(path), pathErr(err))
	}
	fail := func(what string, err error) (*Partial, error) {
		f.Close()
		return nil, fmt.Errorf("failed to %s %s: %w", what, quoteName(path), pathErr(err))
	}
	fi, err := f.Stat()
	if err != nil {
		return fail("read", err)
	}
	w.start = w.kept(rep, fi.Size(), res)
	w.rec.Plaintext = w.start
	w.rec.BootID = BootID()
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
	w.forget = outfile.Signals.OnInterrupt(func() { w.Sync() })
	return w, nil
}

// kept returns how many of the size bytes of plaintext that an earlier run
// left in the partial output are kept: whole segments, as far as its
// record says they were written for the same object. A partial output
// without a record (each run writes its record before any plaintext)
// keeps nothing.
func (w *Partial) kept(rep Reporter, size int64, res *c4gh.Resumable) int64 {
	data, err := ReadPrivate(w.record)
	if errors.Is(err, ErrNotPrivate) {
		rep.Warn("%s is %v: starting again", quoteName(w.record), ErrNotPrivate)
		return 0
	}
	if err != nil || size == 0 {
		return 0
	}
	var old Record
	if json.Unmarshal(data, &old) != nil || old.Source != w.rec.Source || old.URL != w.rec.URL {
		return 0 // another download
	}
	if !sameBody(rep, old, w.rec) {
		return 0
	}
	n := old.Plaintext
	if id := BootID(); id != "" && id == old.BootID {
		// No restart since: every byte written is in the file.
		n = size
	}
	n = res.Kept(min(n, size))
	if n > 0 && rep.Note != nil {
		rep.Note("resuming %s after %d bytes of plaintext (%d of %d segments)",
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
func sameBody(rep Reporter, old, rec Record) bool {
	switch {
	case old.Strong && rec.Strong && old.ETag == rec.ETag && old.Size == rec.Size && old.HeaderSize == rec.HeaderSize:
		return true
	case old.KeyID != "" && old.KeyID == rec.KeyID && old.Size-old.HeaderSize == rec.Size-rec.HeaderSize:
		if old.ETag != rec.ETag || old.HeaderSize != rec.HeaderSize {
			rep.Warn("%s has a new header but the same body (its data keys did not change): resuming", rec.Source)
		}
		return true
	case !rec.Strong || !old.Strong:
		what := "no ETag"
		if rec.ETag != "" {
			what = "only " + rec.ETag
		}
		rep.Warn("%s has no strong validator (%s), so whether it changed since the interrupted download cannot be told: starting again",
			rec.Source, what)
		return false
	}
	rep.Warn("%s changed since the interrupted download (ETag %s, size %d; it was %s, %d): starting again",
		rec.Source, rec.ETag, rec.Size, old.ETag, old.Size)
	return false
}

func (w *Partial) Write(p []byte) (int, error) {
	// The lock covers the write too, so that a sync on a signal waits for
	// a write under way and records it: the file's size, seen by the
	// user, is what the record says once the command has stopped.
	w.mu.Lock()
	n, err := w.f.Write(p)
	w.written.Add(int64(n))
	w.sinceSync += int64(n)
	due := w.sinceSync >= SyncEvery
	w.mu.Unlock()
	if err != nil {
		return n, fmt.Errorf("failed to write %s: %w", quoteName(w.path), pathErr(err))
	}
	if due {
		if err := w.Sync(); err != nil {
			return n, err
		}
	}
	return n, nil
}

// Sync makes what was written durable and records it.
func (w *Partial) Sync() error {
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

func (w *Partial) saveRecord() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.saveRecordLocked()
}

// saveRecordLocked replaces the record, atomically.
func (w *Partial) saveRecordLocked() error {
	data, err := json.Marshal(w.rec)
	if err != nil {
		return err
	}
	tmp := w.record + ".new"
	os.Remove(tmp)
	f, err := OpenPrivate(tmp)
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

// Commit gives the complete partial output the name final (path as the
// user wrote it), as output.commit does, and removes the record.
func (w *Partial) Commit(final, path string, force bool) error {
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
			return withHint(usagef("output file %q already Exists (it appeared while this command ran)", path),
				"the plaintext is kept in %s; use --force with --continue to replace the file", quoteName(w.path))
		}
		return fmt.Errorf("failed to write %s: %w", path, pathErr(err))
	}
	os.Remove(w.record)
	return outfile.SyncDir(filepath.Dir(final))
}

// Close releases the partial output if commit did not.
func (w *Partial) Close() {
	if w.f != nil {
		w.forget()
		w.f.Close()
		w.f = nil
	}
}

// ErrNotPrivate is the error for a file of --continue that another user
// may have made or may read: its contents cannot be trusted, nor may the
// plaintext go into it.
var ErrNotPrivate = errors.New("not a private file of yours (another user could have made it or could read it)")

// OpenPrivate opens the regular file at path for reading and writing: a
// new one, created with mode 0600 (never one that appeared meanwhile), or
// an existing one only when it is the caller's own with no permission for
// others, as an earlier run left it. It refuses a symbolic link or
// anything but a regular file.
func OpenPrivate(path string) (*os.File, error) {
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
	if err := CheckPrivate(f, path); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// CheckPrivate fails unless f, opened at path, is still the regular file
// at path and a private file of the caller's.
func CheckPrivate(f *os.File, path string) error {
	fi, err := f.Stat()
	li, lerr := os.Lstat(path)
	switch {
	case err != nil || lerr != nil || !os.SameFile(fi, li) || !fi.Mode().IsRegular():
		return &os.PathError{Op: "open", Path: path, Err: errors.New("changed while it was opened")}
	case !outfile.OwnedPrivate(fi) || !outfile.SingleLink(fi):
		return &os.PathError{Op: "open", Path: path, Err: ErrNotPrivate}
	}
	return nil
}

// ReadPrivate returns the contents of the record at path when it is a
// private file of the caller's, as OpenPrivate would open it.
func ReadPrivate(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := CheckPrivate(f, path); err != nil {
		return nil, err
	}
	return io.ReadAll(io.LimitReader(f, 1<<20))
}

// File returns the name of the file of --continue with the given
// suffix beside the output at path.
func File(path, suffix string) string {
	dir, base := filepath.Split(path)
	return filepath.Join(dir, "."+base+suffix)
}

// Exists reports whether something, a link included, is at path.
func Exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// BootID identifies the boot of the machine (Linux), "" when unknown.
func BootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
