package objstore

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/c4gh-go/crypt4gh/internal/errkind"
)

// Limits of S3 multipart uploads.
const (
	// MinPartSize is the smallest part S3 accepts, but for the last one.
	MinPartSize = 5 << 20
	// MaxPartSize is the largest part S3 accepts.
	MaxPartSize int64 = 5 << 30
	// MaxParts is how many parts an upload may have.
	MaxParts = 10000
)

// DefaultPartSize is the part size of a Writer when WriterOptions say
// none: with DefaultConcurrency parts, 128 MiB.
const DefaultPartSize = 16 << 20

// WriterOptions tune a Writer. The zero value gives the defaults.
type WriterOptions struct {
	// Force replaces an existing object. Without it an existing object is
	// ErrExists: NewWriter checks before the upload (so that a long
	// upload does not run for nothing), and the upload is committed with
	// If-None-Match: * so that an object written meanwhile is not
	// replaced either, on servers that support conditional writes (AWS
	// S3 and versitygw do; elsewhere only the check before protects it).
	Force bool

	// IfMatch, when set, replaces only the object with this ETag (and
	// implies Force): the commit fails with ErrChanged if it was
	// replaced meanwhile, on servers that support conditional writes.
	IfMatch string

	// Size is the number of bytes that will be written, if known (0 means
	// unknown). The part size grows with it so that no object needs more
	// than MaxParts parts.
	Size int64

	// PartSize is the size of each part but the last, at least
	// MinPartSize; 0 means DefaultPartSize. For an unknown Size the part
	// size doubles every 1,000 parts, so that a stream of up to 16 TB
	// fits at the default.
	PartSize int64

	// Concurrency is how many part buffers the Writer holds at once,
	// being filled or being sent; 0 means DefaultConcurrency.
	Concurrency int

	// Memory is the most bytes the part buffers hold; 0 means
	// Concurrency × PartSize (the PartSize asked for, before it grows
	// with Size). Parts so large that two of them do not fit in it (a
	// known Size over 5,000 × Memory, or a long stream whose parts grew)
	// are written to temporary files in SpoolDir instead of memory, two
	// at once (one filled while one is sent; one when Concurrency is 1):
	// memory stays within Memory whatever the size of the object, and
	// the disk holds two parts at most.
	Memory int64

	// SpoolDir is the folder of those temporary files; "" means
	// os.TempDir(). Each is removed as soon as it is created (where the
	// system allows it, otherwise once its part is sent), so that none
	// is left behind, not even by a process killed with SIGKILL. A
	// folder in which NewWriter cannot create a file is not used: the
	// parts are then held in memory, two at least, above Memory.
	SpoolDir string
}

// A Writer writes an object as a stream. Data is cut into parts sent in
// parallel as a multipart upload; a stream that ends before its first
// part is full is sent with a single PutObject instead. Memory is bounded
// by WriterOptions.Memory, Concurrency × PartSize by default (128 MiB at
// the defaults). When the parts grow (a known Size over 10,000 ×
// PartSize, or a stream past 1,000 parts), fewer are held at once, within
// the same bytes, two at least (one filled while one is sent, or one when
// Concurrency is 1); parts too large for that are spooled to temporary
// files (see WriterOptions.SpoolDir).
//
// Close commits the object: until then nothing is visible at the key.
// The caller must call Close or Abort. Any failure, and Abort, aborts the
// multipart upload, so that neither an object nor a pending upload is
// left behind. A Writer is not safe for concurrent use.
type Writer struct {
	c           *Client
	ctx         context.Context // the caller's
	wctx        context.Context // for the parts, canceled on failure
	cancel      context.CancelFunc
	bucket, key string
	opt         WriterOptions

	buf      []byte     // the part being filled, in memory
	spool    *spoolFile // or on disk
	full     bool       // a first part was filled: new buffers get the whole part size
	small    bool       // the bytes come in small pieces between server-side copies (Compose)
	noSpool  bool       // parts are never spooled: small, or SpoolDir cannot be used
	uploadID *string
	next     int32 // number of the next part
	free     chan []byte
	buffers  int           // buffers made
	budget   int64         // bytes the buffers may hold: Memory
	spools   chan struct{} // one per spool file open, two at most
	slots    chan struct{} // one per request in flight
	wg       sync.WaitGroup

	mu    sync.Mutex
	parts []types.CompletedPart
	err   error // the first failure

	closed   bool
	aborted  bool // the upload was aborted (or never started)
	checksum bool // send CRC32 checksums of the parts

	// A part request was stopped under way: the server may still store
	// the part after the upload is aborted.
	stopped atomic.Bool

	// A request to create the upload whose answer was lost and that was
	// made again may have left an upload nobody knows the ID of.
	mayOrphan bool
	started   time.Time
}

// NewWriter returns a Writer of the object bucket/key. Without
// opts.Force or opts.IfMatch it reports an existing object as ErrExists.
// The context governs every request of the upload but the abort, which
// runs even when the context is canceled.
func (c *Client) NewWriter(ctx context.Context, bucket, key string, opts *WriterOptions) (*Writer, error) {
	return c.newWriter(ctx, bucket, key, opts, false)
}

// newWriter is NewWriter; small says that the bytes will come in small
// pieces between server-side copies (Compose), never to be spooled.
func (c *Client) newWriter(ctx context.Context, bucket, key string, opts *WriterOptions, small bool) (*Writer, error) {
	var opt WriterOptions
	if opts != nil {
		opt = *opts
	}
	if key == "" || key[len(key)-1] == '/' {
		return nil, c.fail("write", bucket, key, &detailed{sentinel: ErrInvalidURL, detail: "a prefix, not an object"})
	}
	if opt.PartSize == 0 {
		opt.PartSize = DefaultPartSize
	}
	if opt.PartSize < MinPartSize || opt.PartSize > MaxPartSize {
		return nil, c.fail("write", bucket, key, errkind.Errorf(errkind.Usage, "part size %d outside %d to %d", opt.PartSize, MinPartSize, MaxPartSize))
	}
	if opt.Concurrency <= 0 {
		opt.Concurrency = DefaultConcurrency
	}
	if opt.Size < 0 {
		opt.Size = 0
	}
	// What the buffers may hold, whatever the part size grows to.
	if opt.Memory <= 0 {
		opt.Memory = int64(opt.Concurrency) * opt.PartSize
	}
	if opt.Size > 0 {
		// Parts of whole MiB, enough of them for Size.
		need := (opt.Size + MaxParts - 1) / MaxParts
		need = (need + 1<<20 - 1) &^ (1<<20 - 1)
		opt.PartSize = max(opt.PartSize, need)
		if opt.PartSize > MaxPartSize {
			return nil, c.fail("write", bucket, key, &detailed{sentinel: ErrTooLarge, detail: fmt.Sprintf("%d bytes", opt.Size)})
		}
	}
	if opt.IfMatch != "" {
		opt.Force = true
	}
	if !opt.Force {
		if err := c.checkAbsent(ctx, bucket, key); err != nil {
			return nil, c.fail("write", bucket, key, err)
		}
	}
	w := &Writer{
		c: c, ctx: ctx, bucket: bucket, key: key, opt: opt,
		next:     1,
		budget:   opt.Memory,
		free:     make(chan []byte, opt.Concurrency),
		spools:   make(chan struct{}, min(2, opt.Concurrency)),
		slots:    make(chan struct{}, opt.Concurrency),
		aborted:  true,
		checksum: c.checksum,
		small:    small,
		noSpool:  small,
	}
	if w.spooled(w.partSize(MaxParts)) {
		// Parts may be spooled, for a stream after many gigabytes that
		// cannot be read again: if the folder cannot take them, they
		// are held in memory instead, as they were before spooling.
		if f, err := newSpoolFile(opt.SpoolDir); err != nil {
			w.noSpool = true
		} else {
			f.close()
		}
	}
	w.wctx, w.cancel = context.WithCancel(ctx)
	return w, nil
}

// checkAbsent returns ErrExists if bucket/key exists, ErrNoBucket if the
// bucket does not. A refusal to say (403: S3 answers so when the caller
// may not list the bucket) is not an error: the conditional commit still
// protects the object where the server supports it.
func (c *Client) checkAbsent(ctx context.Context, bucket, key string) error {
	_, err := c.s3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: &key})
	if err == nil {
		return ErrExists
	}
	switch statusOf(err) {
	case http.StatusNotFound:
		err = c.notFound(ctx, bucket, err)
		if errors.Is(err, ErrNoBucket) || errors.Is(err, ErrAccessDenied) {
			return err
		}
		return nil
	case http.StatusForbidden:
		return nil
	}
	return classify(err)
}

// partSize is the size of part n.
func (w *Writer) partSize(n int32) int64 {
	if w.opt.Size > 0 {
		return w.opt.PartSize
	}
	return min(w.opt.PartSize<<((n-1)/1000), MaxPartSize)
}

// failure returns the first failure, if any.
func (w *Writer) failure() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// doneErr is why the parts were stopped: the first failure, or the end
// of the caller's context.
func (w *Writer) doneErr() error {
	if err := w.failure(); err != nil {
		return err
	}
	return w.wctx.Err()
}

// setErr records err as the failure if it is the first, and stops the
// parts under way.
func (w *Writer) setErr(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.mu.Unlock()
	w.cancel()
}

// fail records err, aborts the upload and returns the first failure.
func (w *Writer) fail(err error) error {
	if err != nil {
		w.setErr(w.c.fail("write", w.bucket, w.key, err))
	}
	w.abort()
	return w.failure()
}

// Write writes p to the object.
func (w *Writer) Write(p []byte) (int, error) {
	if w.closed {
		return 0, w.closedErr()
	}
	if err := w.failure(); err != nil {
		return 0, w.fail(nil)
	}
	n := 0
	for n < len(p) {
		if err := w.room(); err != nil {
			return n, w.fail(err)
		}
		m := int(min(w.partSize(w.next)-w.filled(), int64(len(p)-n)))
		if w.spool != nil {
			if err := w.spool.write(p[n : n+m]); err != nil {
				return n, w.fail(err)
			}
		} else {
			w.buf = append(w.buf, p[n:n+m]...)
		}
		n += m
	}
	return n, nil
}

// filled is the size of the part being filled.
func (w *Writer) filled() int64 {
	if w.spool != nil {
		return w.spool.n
	}
	return int64(len(w.buf))
}

// room makes room for at least one more byte: a full part is sent only
// then, so that an object of exactly one part goes in one PUT.
func (w *Writer) room() error {
	if (w.buf != nil || w.spool != nil) && w.filled() == w.partSize(w.next) {
		w.full = true
		if err := w.flush(); err != nil {
			return err
		}
	}
	return w.ensure()
}

func (w *Writer) closedErr() error {
	if err := w.failure(); err != nil {
		return err
	}
	return w.c.fail("write", w.bucket, w.key, errkind.Errorf(errkind.Usage, "write after close"))
}

// ensure gives the Writer a part buffer to fill, waiting for one to come
// back from an upload if Concurrency are out.
func (w *Writer) ensure() error {
	if w.buf != nil || w.spool != nil {
		return nil
	}
	if w.spooled(w.partSize(w.next)) {
		return w.ensureSpool()
	}
	size := int(w.partSize(w.next))
	for {
		var b []byte
		select {
		case b = <-w.free:
		default:
			if w.buffers < maxBuffers(w.budget, int64(size), w.opt.Concurrency) {
				w.buffers++
				w.buf = w.newBuffer(size)
				return nil
			}
			select {
			case b = <-w.free:
			case <-w.wctx.Done():
				return w.doneErr()
			}
		}
		if cap(b) >= size {
			w.buf = b[:0]
			return nil
		}
		w.buffers-- // the part size grew: let the small buffer go
	}
}

// spooled reports whether parts of size bytes are written to spool files:
// the two buffers (one when Concurrency is 1) that the Writer needs do not
// fit within its budget.
func (w *Writer) spooled(size int64) bool {
	return !w.noSpool && size*int64(min(2, w.opt.Concurrency)) > w.budget
}

// ensureSpool gives the Writer a spool file to fill, waiting for one to
// be closed if two (one when Concurrency is 1) are open.
func (w *Writer) ensureSpool() error {
	// The buffers of the smaller parts before are not needed any more.
	for drained := false; !drained; {
		select {
		case <-w.free:
			w.buffers--
		default:
			drained = true
		}
	}
	select {
	case w.spools <- struct{}{}:
	case <-w.wctx.Done():
		return w.doneErr()
	}
	f, err := newSpoolFile(w.opt.SpoolDir)
	if err != nil {
		<-w.spools
		return err
	}
	w.spool = f
	return nil
}

// maxBuffers is how many part buffers of size bytes a Writer may hold:
// Concurrency, fewer when the part size has grown past the one asked for
// (a large known size, a long stream) so that they stay within budget,
// but two at least (one filled while one is sent) unless Concurrency is 1.
func maxBuffers(budget, size int64, concurrency int) int {
	return max(min(2, concurrency), min(concurrency, int(budget/size)))
}

// newBuffer makes a part buffer. Until a first part is full the object may
// be small, so the buffer starts small and grows as data comes.
func (w *Writer) newBuffer(size int) []byte {
	if w.full {
		return make([]byte, 0, size)
	}
	if w.opt.Size > 0 && !w.small {
		return make([]byte, 0, min(int64(size), w.opt.Size))
	}
	return make([]byte, 0, min(size, 64<<10))
}

// start creates the multipart upload.
func (w *Writer) start() error {
	in := &s3.CreateMultipartUploadInput{Bucket: &w.bucket, Key: &w.key}
	if w.checksum {
		in.ChecksumAlgorithm = types.ChecksumAlgorithmCrc32
	}
	w.started = time.Now()
	out, err := w.c.s3.CreateMultipartUpload(w.wctx, in)
	if err != nil {
		if s := statusOf(err); s < 400 || s >= 500 {
			w.mayOrphan = true
		}
		return err
	}
	if r, ok := retry.GetAttemptResults(out.ResultMetadata); ok && len(r.Results) > 1 {
		w.mayOrphan = true
	}
	w.uploadID = out.UploadId
	w.aborted = false
	return nil
}

// checksumOption keeps the SDK from adding a checksum of its own to an
// upload without checksums.
func (w *Writer) checksumOption(o *s3.Options) {
	if !w.checksum {
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
	}
}

// number takes the next part number, starting the multipart upload for
// the first.
func (w *Writer) number() (int32, error) {
	if w.uploadID == nil {
		if err := w.start(); err != nil {
			return 0, err
		}
	}
	if w.next > MaxParts {
		return 0, &detailed{sentinel: ErrTooLarge, detail: fmt.Sprintf("more than %d parts", MaxParts)}
	}
	n := w.next
	w.next++
	return n, nil
}

// flush sends the buffer as the next part.
func (w *Writer) flush() error {
	n, err := w.number()
	if err != nil {
		return err
	}
	p := w.take()
	err = w.send(func(ctx context.Context) (types.CompletedPart, error) {
		defer w.release(p)
		in := &s3.UploadPartInput{
			Bucket: &w.bucket, Key: &w.key, UploadId: w.uploadID, PartNumber: &n,
			Body: p.body(), ContentLength: aws.Int64(p.size()),
		}
		if w.checksum {
			in.ChecksumAlgorithm = types.ChecksumAlgorithmCrc32
		}
		out, err := w.c.s3.UploadPart(ctx, in, w.checksumOption)
		if err != nil {
			return types.CompletedPart{}, err
		}
		return types.CompletedPart{PartNumber: &n, ETag: out.ETag, ChecksumCRC32: out.ChecksumCRC32}, nil
	})
	if err != nil { // not sent
		w.release(p)
	}
	return err
}

// A part holds the bytes of one part, in memory or in a spool file.
type part struct {
	buf   []byte
	spool *spoolFile
}

func (p part) size() int64 {
	if p.spool != nil {
		return p.spool.n
	}
	return int64(len(p.buf))
}

// body reads the part from its start; it can seek, for the retries.
func (p part) body() io.ReadSeeker {
	if p.spool != nil {
		return io.NewSectionReader(p.spool.f, 0, p.spool.n)
	}
	return bytes.NewReader(p.buf)
}

// take takes the part being filled from the Writer.
func (w *Writer) take() part {
	p := part{buf: w.buf, spool: w.spool}
	w.buf, w.spool = nil, nil
	return p
}

// release gives back what held a part that was sent, or abandoned: a
// buffer to be filled again, a spool file closed.
func (w *Writer) release(p part) {
	if p.spool != nil {
		p.spool.close()
		<-w.spools
		return
	}
	if p.buf != nil {
		select {
		case w.free <- p.buf:
		default:
		}
	}
}

// A spoolFile holds a part on disk.
type spoolFile struct {
	f    *os.File
	n    int64
	dir  string
	name string // to remove when closed, where it could not be removed open
}

// newSpoolFile creates a spool file in dir (os.TempDir() if "") and
// removes its name at once where the system allows it.
func newSpoolFile(dir string) (*spoolFile, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	f, err := os.CreateTemp(dir, ".crypt4gh-part-*")
	if err != nil {
		return nil, spoolError(dir, err)
	}
	s := &spoolFile{f: f, dir: dir}
	if os.Remove(f.Name()) != nil {
		s.name = f.Name()
	}
	return s, nil
}

func (s *spoolFile) write(p []byte) error {
	n, err := s.f.Write(p)
	s.n += int64(n)
	if err != nil {
		return spoolError(s.dir, err)
	}
	return nil
}

// spoolError names the folder of the spool files, not the file: its name
// was removed when it was opened.
func spoolError(dir string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("spool a part in %s: %w", dir, err)
}

func (s *spoolFile) close() {
	s.f.Close()
	if s.name != "" {
		os.Remove(s.name)
	}
}

// send runs a part request once a slot is free.
func (w *Writer) send(do func(context.Context) (types.CompletedPart, error)) error {
	select {
	case w.slots <- struct{}{}:
	case <-w.wctx.Done():
		return w.doneErr()
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer func() { <-w.slots }()
		part, err := do(w.wctx)
		if err != nil {
			if w.wctx.Err() != nil {
				w.stopped.Store(true)
			}
			w.setErr(w.c.fail("write", w.bucket, w.key, err))
			return
		}
		w.mu.Lock()
		w.parts = append(w.parts, part)
		w.mu.Unlock()
	}()
	return nil
}

// Close sends what is left, waits for all parts and commits the object.
// On failure the upload is aborted. Close after Close returns the result
// of the first. Once the request that commits the object is sent, the
// end of the context no longer stops it: Close waits for its answer.
func (w *Writer) Close() error {
	if w.closed {
		return w.failure()
	}
	w.closed = true
	if err := w.failure(); err != nil {
		return w.fail(nil)
	}
	if w.uploadID == nil {
		return w.put()
	}
	if w.filled() > 0 {
		if err := w.flush(); err != nil {
			return w.fail(err)
		}
	} else {
		w.release(w.take())
	}
	w.wg.Wait()
	if err := w.failure(); err != nil {
		return w.fail(nil)
	}
	slices.SortFunc(w.parts, func(a, b types.CompletedPart) int { return int(*a.PartNumber - *b.PartNumber) })
	in := &s3.CompleteMultipartUploadInput{
		Bucket: &w.bucket, Key: &w.key, UploadId: w.uploadID,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: w.parts},
	}
	w.conditions(&in.IfMatch, &in.IfNoneMatch)
	ctx, cancel := w.commitContext()
	defer cancel()
	_, err := w.c.s3.CompleteMultipartUpload(ctx, in, w.c.slowOp)
	if err != nil && (precondition(err) || codeOf(err) == "NoSuchUpload") && w.ours(multipartETag(w.parts)) {
		// A retry of a completion whose answer was lost.
		err = nil
	}
	if err != nil {
		return w.fail(w.conditionFailed(err))
	}
	w.aborted = true // nothing left to abort
	w.sweep()
	w.cancel()
	return nil
}

// commitTimeout bounds the request that commits an object.
const commitTimeout = 10 * time.Minute

// commitContext is the context of the request that commits the object
// (the completion of the upload, or its single PUT). Once that request is
// sent the store may commit the object whatever the client does, so a
// canceled context must not cut it short: the caller would report a
// failure while the object changes. It ends only with commitTimeout.
func (w *Writer) commitContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(w.ctx), commitTimeout)
}

// ours reports whether the object at the key now has the ETag expect,
// that is the bytes this Writer sent: S3 (and the stores that follow it)
// gives a single PUT the MD5 of its bytes, and a multipart upload the MD5
// of its parts' MD5s with their count.
func (w *Writer) ours(expect string) bool {
	if expect == "" {
		return false
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.ctx), 2*time.Minute)
	defer cancel()
	out, err := w.c.s3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &w.bucket, Key: &w.key})
	return err == nil && aws.ToString(out.ETag) == expect
}

// multipartETag is the ETag S3 gives an object made of parts, or "" if a
// part's ETag is not an MD5.
func multipartETag(parts []types.CompletedPart) string {
	h := md5.New()
	for _, p := range parts {
		b, err := hex.DecodeString(strings.Trim(aws.ToString(p.ETag), `"`))
		if err != nil || len(b) != md5.Size {
			return ""
		}
		h.Write(b)
	}
	return fmt.Sprintf(`"%x-%d"`, h.Sum(nil), len(parts))
}

// sweep aborts the uploads of the key that a lost answer to the request
// creating this Writer's upload may have left: those begun in the minute
// before it, but for its own.
func (w *Writer) sweep() {
	if !w.mayOrphan {
		return
	}
	w.mayOrphan = false
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.ctx), 2*time.Minute)
	defer cancel()
	out, err := w.c.s3.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &w.bucket, Prefix: &w.key})
	if err != nil {
		return
	}
	for _, u := range out.Uploads {
		if aws.ToString(u.Key) != w.key || u.UploadId == nil || w.uploadID != nil && *u.UploadId == *w.uploadID ||
			u.Initiated == nil || u.Initiated.Before(w.started.Add(-time.Minute)) {
			continue
		}
		w.c.s3.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &w.bucket, Key: &w.key, UploadId: u.UploadId})
	}
}

// put writes the whole object with one request.
func (w *Writer) put() error {
	defer w.cancel()
	p := w.take()
	defer w.release(p)
	in := &s3.PutObjectInput{
		Bucket: &w.bucket, Key: &w.key,
		Body: p.body(), ContentLength: aws.Int64(p.size()),
	}
	w.conditions(&in.IfMatch, &in.IfNoneMatch)
	ctx, cancel := w.commitContext()
	defer cancel()
	_, err := w.c.s3.PutObject(ctx, in, w.checksumOption)
	if err != nil && precondition(err) {
		// A retry of a PUT whose answer was lost?
		h := md5.New()
		if _, rerr := io.Copy(h, p.body()); rerr == nil && w.ours(`"`+hex.EncodeToString(h.Sum(nil))+`"`) {
			err = nil
		}
	}
	if err != nil {
		w.setErr(w.c.fail("write", w.bucket, w.key, w.conditionFailed(err)))
		return w.failure()
	}
	return nil
}

// conditions sets the preconditions of the commit.
func (w *Writer) conditions(ifMatch, ifNoneMatch **string) {
	switch {
	case w.opt.IfMatch != "":
		*ifMatch = aws.String(w.opt.IfMatch)
	case !w.opt.Force:
		*ifNoneMatch = aws.String("*")
	}
}

// conditionFailed names a failed precondition of the commit.
func (w *Writer) conditionFailed(err error) error {
	if !precondition(err) {
		return err
	}
	if w.opt.IfMatch != "" {
		return &detailed{sentinel: ErrChanged, detail: "ETag is no longer " + w.opt.IfMatch, cause: err}
	}
	return &detailed{sentinel: ErrExists, detail: "written meanwhile", cause: err}
}

// Abort abandons the object: the parts under way are stopped and the
// multipart upload is aborted, so that nothing is left on the server. It
// returns an error only if the abort itself failed (a pending upload may
// then be left, for the bucket's lifecycle rules to remove). Abort after
// a successful Close does nothing: the object stays.
func (w *Writer) Abort() error {
	if w.closed && w.failure() == nil {
		return nil
	}
	w.closed = true
	w.setErr(w.c.fail("write", w.bucket, w.key, ErrAborted))
	return w.abort()
}

// abort waits for the parts under way and aborts the upload, once.
func (w *Writer) abort() error {
	w.cancel()
	w.wg.Wait()
	w.release(w.take())
	if w.aborted {
		w.sweep()
		return nil
	}
	w.aborted = true
	defer w.sweep()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.ctx), 2*time.Minute)
	defer cancel()
	return w.abortUpload(ctx, w.uploadID)
}

// settleChecks are the delays after an abort at which an upload whose
// parts were stopped under way is looked for again.
var settleChecks = []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second}

// abortUpload aborts the upload id. A part that was being sent when the
// abort came may still be stored by the server after it, and bring the
// upload back (S3 says so of AbortMultipartUpload: it may have to be
// called again): when a part request was stopped under way, the upload is
// looked for during a few seconds after the abort, and aborted again
// whenever it is there.
func (w *Writer) abortUpload(ctx context.Context, id *string) error {
	abort := func() error {
		_, err := w.c.s3.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &w.bucket, Key: &w.key, UploadId: id})
		if err != nil && statusOf(err) != http.StatusNotFound {
			return w.c.fail("abort the upload of", w.bucket, w.key, err)
		}
		return nil
	}
	if err := abort(); err != nil {
		return err
	}
	if !w.stopped.Load() {
		return nil
	}
	for _, d := range settleChecks {
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		_, err := w.c.s3.ListParts(ctx, &s3.ListPartsInput{Bucket: &w.bucket, Key: &w.key, UploadId: id, MaxParts: aws.Int32(1)})
		if err != nil {
			continue // NoSuchUpload: gone, for now
		}
		if err := abort(); err != nil {
			return err
		}
	}
	return nil
}
