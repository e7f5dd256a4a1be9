package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/c4gh-go/crypt4gh/internal/outfile"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/mount"
	"github.com/c4gh-go/crypt4gh/mount/storesource"
	"github.com/c4gh-go/crypt4gh/objstore"
)

// Objects of S3-compatible stores (s3://BUCKET/KEY) are read and written
// wherever a command takes a data path, and resources on web servers
// (https://…, http:// to a loopback address) are read with range requests.
// This file holds what every command shares for them: the client of the
// run, inputs that stream an object in parallel ranged GETs, and outputs
// that upload as a multipart upload aborted on every failure and signal.

// Memory of the transfers of one run, shared by the files of a batch
// that move at once.
const (
	// readChunk is the size of the ranged GETs of a stream: 128 encrypted
	// segments, so that the chunks of a body end on segments.
	readChunk = 128 * body.EncryptedSegmentSize
	// writeBudget is how many bytes of parts an upload holds at most:
	// five parts of 16 MiB.
	writeBudget = 80 << 20
	// copyPart is the size of the server-side copies of a rekey or a
	// splice between objects, and copyJobs how many run at once: few
	// and large, for a small store copies faster one or two at a time
	// (and checksums what it copies).
	copyPart = 1 << 30
	copyJobs = 2
	// headSize is what is fetched first of an object, in one request:
	// enough for any usual header.
	headSize = 64 << 10
	// abortTimeout is how long an interrupted command waits for its
	// uploads to be aborted before it exits anyway.
	abortTimeout = 15 * time.Second
)

// stores is the object storage of one run: one store a scheme, made when
// a first location of the scheme is used, and how many files share the
// memory.
type stores struct {
	mu      sync.Mutex
	opened  map[string]openedStore // by scheme
	files   int                    // files of a batch that move at once
	reading bool                   // objects are read: uploads get half the budget
	writing bool                   // objects are written: downloads get half the budget
	config  storeOptions           // the command's flags for them
}

// openedStore is the store of a scheme, or why it could not be made.
type openedStore struct {
	st  objstore.Store
	err error
}

// share says that n files of a batch move at once.
func (s *stores) share(n int) {
	s.mu.Lock()
	s.files = max(1, n)
	s.mu.Unlock()
}

// shares returns how many shares of the memory budgets of downloads and
// uploads there are: one per file that moves at once, and twice as many
// when objects are both read and written.
func (s *stores) shares() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reading && s.writing {
		return 2 * s.files
	}
	return s.files
}

// uses records that the run reads (or, with write, writes) objects.
func (s *stores) uses(write bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if write {
		s.writing = true
	} else {
		s.reading = true
	}
}

// readChunks is how many chunks a stream holds at most (64 MiB), shared
// by the files of a batch, two at least. A variable for the tests, which
// read one chunk at a time to stall a download at a known place.
var readChunks = 8

// storeIdleTimeout is how long a request may make no progress before it
// is retried; 0 is objstore's default (a minute). A variable for the
// tests, which stall requests.
var storeIdleTimeout time.Duration

// storeConfig is the configuration of the stores of the run.
func (o storeOptions) config() objstore.Config {
	return objstore.Config{S3Config: expandHome(o.S3Config), IdleTimeout: storeIdleTimeout,
		AllowInsecureHTTP: o.AllowInsecureHTTP}
}

// store returns the store of the run for the scheme of loc, made at the
// first call for the scheme: one S3 client a run, whose credentials are
// resolved once.
func (e *env) store(loc objstore.Location) (objstore.Store, error) {
	s := e.stores
	s.mu.Lock()
	defer s.mu.Unlock()
	scheme := loc.Scheme()
	o, ok := s.opened[scheme]
	if !ok {
		if scheme == "s3" {
			e.warnCredentialFiles()
		}
		o.st, o.err = objstore.OpenStore(e.ctx, loc, s.config.config())
		if s.opened == nil {
			s.opened = map[string]openedStore{}
		}
		s.opened[scheme] = o
	}
	return o.st, o.err
}

// warnCredentialFiles warns, as for a secret key, when a file that may hold
// the S3 credentials of the run may be read by others: the s3cmd file of
// --s3-config, else the AWS shared credentials and configuration files.
func (e *env) warnCredentialFiles() {
	if p := expandHome(e.stores.config.S3Config); p != "" {
		e.warnReadable("s3cmd configuration file", p)
		return
	}
	for _, f := range []struct{ env, path, what string }{
		{"AWS_SHARED_CREDENTIALS_FILE", "~/.aws/credentials", "AWS credentials file"},
		{"AWS_CONFIG_FILE", "~/.aws/config", "AWS configuration file"}, // may hold keys too
	} {
		p := os.Getenv(f.env)
		if p == "" {
			p = expandHome(f.path)
		}
		e.warnReadable(f.what, p)
	}
}

// readerOptions are the options of the streams of a run.
func (e *env) readerOptions() *objstore.ReaderOptions {
	return &objstore.ReaderOptions{ChunkSize: readChunk, Concurrency: max(min(2, readChunks), readChunks/e.stores.shares())}
}

// writerOptions are the options of an upload of size bytes (0: unknown):
// the part size that objstore needs for size, and as many parts at once
// as the budget allows, two at least. Parts too large for two of them to
// fit in the budget (a file over 5,000 × the budget, a stream whose parts
// grew) are spooled to temporary files, so that memory stays within the
// budget whatever the size (two default parts at least, when a batch
// shares it among many uploads).
func (e *env) writerOptions(size int64, force bool) *objstore.WriterOptions {
	part := int64(objstore.DefaultPartSize)
	if size > 0 {
		need := (size + objstore.MaxParts - 1) / objstore.MaxParts
		part = max(part, (need+1<<20-1)&^(1<<20-1))
	}
	budget := int64(writeBudget) / int64(e.stores.shares())
	return &objstore.WriterOptions{
		Force: force, Size: max(size, 0), PartSize: part,
		Concurrency: int(max(2, budget/part)),
		Memory:      max(budget, 2*objstore.DefaultPartSize),
	}
}

// headerRoom is more than the header of a file that encrypt writes.
const headerRoom = 64 << 10

// encryptedSize is at most the size of the encryption of in, 0 when
// unknown.
func encryptedSize(in *input) int64 {
	if n := in.size(); n >= 0 {
		return body.EncryptedSize(n) + headerRoom
	}
	return 0
}

// reservable is the size to reserve an output for: reservable(in.file),
// or what is left of an object.
func (in *input) reservable() int64 {
	if in.obj != nil {
		return in.obj.remaining()
	}
	return reservable(in.file)
}

// randomAccess returns the rest of a regular file, or an object that was
// not read yet, as an io.ReaderAt of size bytes.
func (in *input) randomAccess() (io.ReaderAt, int64, error) {
	if in.obj != nil {
		ra, err := in.obj.readerAt()
		return ra, in.obj.o.Size(), err
	}
	off, err := in.file.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, 0, fmt.Errorf("failed to read input: %w", err)
	}
	size := in.size()
	return io.NewSectionReader(in.file, off, size), size, nil
}

// shownName is how a path or URL is named in messages and output lines:
// a URL without its query (that of a presigned URL is a bearer
// credential) nor anything that Parse refuses to show.
func shownName(p string) string {
	if !objstore.IsURL(p) {
		return p
	}
	loc, err := objstore.Parse(p)
	if err != nil {
		return "URL"
	}
	return loc.String()
}

// inputName names the input at path for messages: "stdin" for "" and
// "-", else its shown name, quoted where it needs it.
func inputName(path string) string {
	if path == "" || path == "-" {
		return "stdin"
	}
	return quoteName(shownName(path))
}

// openObject opens the object (or web resource) at the URL s.
func (e *env) openObject(s string) (*objstore.Object, error) {
	loc, err := objstore.Parse(s)
	if err != nil {
		return nil, err
	}
	if loc.IsPrefix() {
		return nil, withHint(usagef("%s is a prefix, not an object", loc), "name an object (s3://BUCKET/KEY), or give the prefix as a FILE argument of batch mode")
	}
	st, err := e.store(loc)
	if err != nil {
		return nil, err
	}
	o, err := st.Open(e.ctx, loc)
	if errors.Is(err, objstore.ErrNotFound) && loc.URL == "" && e.hasObjectsUnder(st, loc) {
		// s3://b/run1 meant as the folder run1: say so.
		return nil, withHint(err, "%s/ (with the slash) is a prefix with objects under it: give it as a FILE argument of batch mode", loc)
	}
	return o, err
}

// hasObjectsUnder reports whether some object has a key under loc.Key+"/".
func (e *env) hasObjectsUnder(st objstore.Store, loc objstore.Location) bool {
	loc.Key += "/"
	for _, err := range st.List(e.ctx, loc) {
		return err == nil
	}
	return false
}

// openSource opens path for reading as openInput does, and also an
// object or web resource when path is a URL. The caller must call Close.
func (e *env) openSource(path string) (*input, error) {
	if !objstore.IsURL(path) {
		return openInput(path, e.stdin)
	}
	o, err := e.openObject(path)
	if err != nil {
		return nil, err
	}
	return e.objectInput(o), nil
}

// objectInput is the input that reads o.
func (e *env) objectInput(o *objstore.Object) *input {
	e.stores.uses(false)
	s := &objectStream{o: o, opts: func() *objstore.ReaderOptions { return e.readerOptions() }}
	return &input{Reader: s, name: o.Location().String(), obj: s}
}

// objectStream reads an object from the start, as a file is read. Its
// first bytes come in one small request; when they start a crypt4gh
// header, the rest (the body) is streamed from the end of the header, in
// parallel ranged GETs of whole segments, only once something reads past
// the header. So inspecting an object costs its header, and decrypting
// one costs its bytes once.
type objectStream struct {
	o    *objstore.Object
	opts func() *objstore.ReaderOptions // when the body starts: the output is open by then

	head    []byte // the first bytes
	prefix  int64  // how many of them are served from head
	fetched bool
	pos     int64
	body    *objstore.Reader
	err     error
}

// fetchHead reads the first bytes of the object, once.
func (s *objectStream) fetchHead() error {
	if s.fetched {
		return s.err
	}
	s.fetched = true
	if s.head, s.err = s.o.Head(headSize); s.err != nil {
		return s.err
	}
	s.prefix = int64(len(s.head))
	if s.prefix == s.o.Size() {
		return nil // all of it
	}
	if h, err := header.Parse(bytes.NewReader(s.head)); err == nil {
		s.prefix = h.Size()
	}
	return nil
}

func (s *objectStream) Read(p []byte) (int, error) {
	if err := s.fetchHead(); err != nil {
		return 0, err
	}
	if s.pos < s.prefix {
		n := copy(p, s.head[s.pos:s.prefix])
		s.pos += int64(n)
		return n, nil
	}
	if err := s.startBody(); err != nil {
		return 0, err
	}
	n, err := s.body.Read(p)
	s.pos += int64(n)
	return n, err
}

// WriteTo writes the rest of the object to w, the body without a copy of
// its own.
func (s *objectStream) WriteTo(w io.Writer) (int64, error) {
	if err := s.fetchHead(); err != nil {
		return 0, err
	}
	var total int64
	if s.pos < s.prefix {
		n, err := w.Write(s.head[s.pos:s.prefix])
		s.pos += int64(n)
		total += int64(n)
		if err != nil {
			return total, err
		}
	}
	if err := s.startBody(); err == io.EOF {
		return total, nil
	} else if err != nil {
		return total, err
	}
	n, err := s.body.WriteTo(w)
	s.pos += n
	return total + n, err
}

// startBody starts the parallel stream from the current position.
func (s *objectStream) startBody() error {
	if s.body != nil {
		return nil
	}
	if s.pos >= s.o.Size() {
		return io.EOF
	}
	r, err := s.o.NewReader(s.pos, -1, s.opts())
	if err != nil {
		return err
	}
	s.body = r
	return nil
}

// remaining is the number of bytes left to read.
func (s *objectStream) remaining() int64 { return s.o.Size() - s.pos }

// section returns a reader of bytes [r.Start, r.End) of the object, which
// must not have been read yet, as selectRange does for a file.
func (s *objectStream) section(r edit.Range) (io.Reader, error) {
	size := s.o.Size()
	if r.Start > 0 && r.Start >= size {
		return nil, fmt.Errorf("%w (%d bytes)", edit.ErrBeyondEnd, size)
	}
	end := min(r.End, size)
	if r.Start >= end {
		return bytes.NewReader(nil), nil
	}
	body, err := s.o.NewReader(r.Start, end-r.Start, s.opts())
	if err != nil {
		return nil, err
	}
	s.body, s.fetched, s.pos = body, true, r.Start
	return body, nil
}

// readerAt returns the object as an io.ReaderAt whose first bytes come
// from the head fetched in one request, for c4gh.NewReaderAt: a header
// costs the head, and each segment what it is (with the read-ahead of
// objstore.Object for sequential reads).
func (s *objectStream) readerAt() (io.ReaderAt, error) {
	if err := s.fetchHead(); err != nil {
		return nil, err
	}
	return headReaderAt{o: s.o, head: s.head}, nil
}

// Close stops the stream.
func (s *objectStream) Close() error {
	if s.body != nil {
		s.body.Close()
	}
	return nil
}

// headReaderAt serves the reads within head from memory.
type headReaderAt struct {
	o    *objstore.Object
	head []byte
}

func (h headReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off >= 0 && off+int64(len(p)) <= int64(len(h.head)) {
		return copy(p, h.head[off:]), nil
	}
	return h.o.ReadAt(p, off)
}

// objectSink uploads what a command writes to an object. Every call into
// the objstore.ObjectWriter holds sem, so that an interruption, which cancels
// the upload's context and then takes sem for good, aborts the upload
// itself when the command is not inside the Writer (it may be waiting for
// stdin), and else waits for the Writer to return: then no multipart
// upload is left pending.
type objectSink struct {
	w          objstore.ObjectWriter
	name       string // the s3:// URL, for messages
	cancel     context.CancelFunc
	sem        chan struct{}
	forget     func()
	committing atomic.Bool // commit was called
	// Under sem: commit returned, and what.
	committed bool
	err       error
}

// openDest opens path for writing as openOutput does, and also an object
// when path is an s3:// URL. size is how many bytes will be written, at
// most, when known (0 otherwise): it sets the part size of a large
// upload.
func (e *env) openDest(path string, size int64, opts outfile.Options) (*outfile.Output, error) {
	if !objstore.IsURL(path) {
		return outfile.Open(path, e.stdout, opts)
	}
	loc, err := objstore.Parse(path)
	if err != nil {
		return nil, err
	}
	switch {
	case loc.URL != "":
		return nil, usagef("cannot write to %s: only s3:// objects are written", loc)
	case loc.IsPrefix():
		return nil, withHint(usagef("%s is a prefix, not an object", loc), "name the object: s3://BUCKET/KEY")
	}
	st, err := e.store(loc)
	if err != nil {
		return nil, err
	}
	e.stores.uses(true)
	ctx, cancel := context.WithCancel(e.ctx)
	w, err := st.Create(ctx, loc, e.writerOptions(size, opts.Force))
	if err != nil {
		cancel()
		if errors.Is(err, objstore.ErrExists) {
			return nil, withHint(err, "use --force to replace it")
		}
		return nil, err
	}
	s := &objectSink{w: w, name: loc.String(), cancel: cancel, sem: make(chan struct{}, 1)}
	s.forget = outfile.Signals.OnInterrupt(s.interrupted)
	return outfile.NewSink(path, s), nil
}

func (s *objectSink) Write(p []byte) (int, error) {
	s.sem <- struct{}{}
	defer func() { <-s.sem }()
	return s.w.Write(p)
}

// Lend lends the memory of the upload's part buffers, for the segments to
// be sealed in place (see body.Lender).
func (s *objectSink) Lend(n int) ([]byte, error) {
	l, ok := s.w.(body.Lender)
	if !ok {
		return nil, nil
	}
	s.sem <- struct{}{}
	defer func() { <-s.sem }()
	return l.Lend(n)
}

// commit completes the upload.
func (s *objectSink) Commit() error {
	s.sem <- struct{}{}
	s.committing.Store(true)
	err := s.w.Close()
	s.committed, s.err = true, err
	<-s.sem
	s.forget()
	s.cancel()
	if errors.Is(err, objstore.ErrExists) {
		return withHint(err, "use --force to replace it")
	}
	return err
}

// abort abandons the upload.
func (s *objectSink) Abort() {
	s.sem <- struct{}{}
	s.w.Abort()
	<-s.sem
	s.forget()
	s.cancel()
}

// interrupted runs on a signal: it stops the upload and aborts it, within
// abortTimeout. An upload that was being completed cannot be stopped
// (the store may commit it whatever the client does): its answer is
// waited for, and the message says when the object was written.
func (s *objectSink) interrupted() {
	s.cancel()
	aborted := make(chan struct{})
	go func() {
		s.sem <- struct{}{} // never given back: the process exits
		if s.committed && s.err == nil {
			writtenAtInterrupt(s.name)
		}
		s.w.Abort()
		close(aborted)
	}()
	select {
	case <-aborted:
	case <-time.After(abortTimeout):
		if s.committing.Load() {
			mayCommit(s.name)
		}
	}
}

// writtenAtInterrupt says that an object was committed although the
// process was interrupted: its upload was being completed.
func writtenAtInterrupt(name string) {
	fmt.Fprintf(os.Stderr, "crypt4gh: %s was written before the interrupt\n", name)
}

// mayCommit says, on an interrupt that did not wait long enough, that an
// upload under way may still be committed by the store.
func mayCommit(name string) {
	fmt.Fprintf(os.Stderr, "crypt4gh: warning: %s may still be written, if its upload was being completed\n", name)
}

// interruptible runs fn with a context that a signal cancels, and makes
// the exit on that signal wait (up to abortTimeout) for fn to return, so
// that what fn has under way on a server (a Compose) is aborted.
//
// An object whose upload was being completed when the signal came may be
// written all the same (see objectSink.interrupted): when fn returns nil
// after the signal, the message says that dest (when not "") was written.
func (e *env) interruptible(dest string, fn func(ctx context.Context) error) error {
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	var result error
	finished := make(chan struct{})
	forget := outfile.Signals.OnInterrupt(func() {
		cancel()
		select {
		case <-finished:
			if result == nil && dest != "" {
				writtenAtInterrupt(dest)
			}
		case <-time.After(abortTimeout):
			if dest != "" {
				mayCommit(dest)
			}
		}
	})
	result = fn(ctx)
	close(finished)
	forget()
	return result
}

// objectSource is the mount.Source of the objects under the s3:// prefix
// (or the key, taken as a prefix) of source.
func (e *env) objectSource(source string) (mount.Source, error) {
	loc, err := objstore.Parse(source)
	if err != nil {
		return nil, err
	}
	if loc.URL != "" {
		return nil, usagef("mount shows an s3:// prefix or a folder, not %s", loc)
	}
	st, err := e.store(loc)
	if err != nil {
		return nil, err
	}
	return storesource.New(st, loc), nil
}
