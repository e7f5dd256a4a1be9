package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/internal/objio"
	"github.com/c4gh-go/crypt4gh/internal/outfile"
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
	// readChunk is the size of the ranged GETs of a stream, which end on
	// segments.
	readChunk = objio.ChunkSize
	// writeBudget is how many bytes of parts an upload holds at most:
	// five parts of 16 MiB.
	writeBudget = 80 << 20
	// copyPart is the size of the server-side copies of a rekey or a
	// splice between objects, and copyJobs how many run at once: few
	// and large, for a small store copies faster one or two at a time
	// (and checksums what it copies).
	copyPart = 1 << 30
	copyJobs = 2
)

// stores is the object storage of one run: one store a scheme, made when
// a first location of the scheme is used, and how many files share the
// memory.
type stores struct {
	mu            sync.Mutex
	opened        map[string]openedStore // by scheme
	files         int                    // files of a batch that move at once
	reading       bool                   // objects are read: uploads get half the budget
	writing       bool                   // objects are written: downloads get half the budget
	config        storeOptions           // the command's flags for them
	pendingWarned bool                   // warnPending said its word
}

// warned reports whether warnPending has warned in this run.
func (s *stores) warned() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pendingWarned
}

// warnOnce reports whether this is the first warning of warnPending.
func (s *stores) warnOnce() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	first := !s.pendingWarned
	s.pendingWarned = true
	return first
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

// storeAttempts is how many times a request is tried; 0 is objstore's
// default. A variable for the tests.
var storeAttempts int

// storeConfig is the configuration of the stores of the run.
func (o storeOptions) config() objstore.Config {
	return objstore.Config{S3Config: expandHome(o.S3Config), IdleTimeout: storeIdleTimeout, Attempts: storeAttempts,
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
		cfg := s.config.config()
		cfg.Notice = e.notice
		o.st, o.err = objstore.OpenStore(e.ctx, loc, cfg)
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
		return c4gh.EncryptedSize(n) + headerRoom
	}
	return 0
}

// reservable is the size to reserve an output for: reservable(in.file),
// or what is left of an object.
func (in *input) reservable() int64 {
	if in.obj != nil {
		return in.obj.Remaining()
	}
	return reservable(in.file)
}

// randomAccess returns the rest of a regular file, or an object that was
// not read yet, as an io.ReaderAt of size bytes.
func (in *input) randomAccess() (io.ReaderAt, int64, error) {
	if in.obj != nil {
		ra, err := in.obj.ReaderAt()
		return ra, in.obj.Object().Size(), err
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
	return objstore.Shown(p)
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
		in, err := openInput(path, e.stdin)
		if err == nil && in.file != nil && !e.stdoutIdle && stdoutIs(e, in.file.Stat) {
			// crypt4gh … -i F >> F, < F >> F: what the command writes
			// would change the file it reads, or be read again.
			in.Close()
			if !in.own {
				return nil, usagef("stdout and stdin are the same file")
			}
			return nil, usagef("stdout is the input %s", quoteName(in.name))
		}
		return in, err
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
	s := objio.NewStream(o, e.readerOptions)
	return &input{Reader: s, name: o.Location().String(), obj: s}
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
	if err == nil {
		e.warnPending(st, loc)
	}
	return e.sinkOf(path, loc, w, cancel, err)
}

// sinkOf is the output of the upload w of the object at loc (path as
// given), or err, the failure to begin it; cancel ends the upload's
// context.
func (e *env) sinkOf(path string, loc objstore.Location, w objstore.ObjectWriter, cancel context.CancelFunc, err error) (*outfile.Output, error) {
	if err != nil {
		cancel()
		if errors.Is(err, objstore.ErrExists) {
			return nil, withHint(err, "use --force to replace it")
		}
		return nil, err
	}
	return outfile.NewSink(path, objio.NewSink(w, loc.String(), cancel)), nil
}

// resumeDest opens the object at path, to be written from src (size
// bytes), as openDest does, but going on with the upload of it that an
// interrupted run left (see objstore.Resumer), and leaving this one
// pending when it fails or is interrupted. It returns the offset of src
// from which the output must be written.
func (e *env) resumeDest(path string, src io.ReaderAt, size int64, force bool) (*outfile.Output, int64, error) {
	loc, err := objectDest(path)
	if err != nil {
		return nil, 0, err
	}
	st, err := e.store(loc)
	if err != nil {
		return nil, 0, err
	}
	r, ok := st.(objstore.Resumer)
	if !ok {
		return nil, 0, usagef("%s: this store does not resume uploads", loc)
	}
	e.stores.uses(true)
	ctx, cancel := context.WithCancel(e.ctx)
	opts := e.writerOptions(size, force)
	opts.Keep = true
	w, from, err := r.Resume(ctx, loc, src, opts)
	out, err := e.sinkOf(path, loc, w, cancel, err)
	return out, from, err
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

// interruptible runs fn with a context that a signal cancels, and makes
// the exit on that signal wait for fn to return (see objio.Interruptible).
func (e *env) interruptible(dest string, fn func(ctx context.Context) error) error {
	return objio.Interruptible(e.ctx, dest, fn)
}

// notice prints what the stores say while they wait (a server that has
// not answered yet), unless -q.
func (e *env) notice(msg string) {
	if !e.quiet {
		fmt.Fprintf(e.stderr, "crypt4gh: %s\n", oneLine(msg))
	}
}
