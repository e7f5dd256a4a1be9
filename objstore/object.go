package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/c4gh-go/crypt4gh/internal/errkind"
)

// An Object is one version of an object (or of a web resource), fixed
// when it was opened: every request for its bytes is pinned to the ETag
// seen then (If-Match), so that a replaced or modified object is an
// error wrapping ErrChanged, never a mix of two versions. Bytes it holds
// already are not asked for again: an object replaced after [Object.Head]
// read all of it still reads as the version opened. A rewrite in place
// ([Client.Compose]) is committed only if the object is still that
// version, where the server supports conditional writes.
//
// Object implements io.ReaderAt, and ReadAt is safe for concurrent use.
// Small reads that follow each other are served from a read-ahead cache of
// at most 4 × [ReadAheadSize] bytes, so that reading a
// header a few bytes at a time does not cost a request each; a read that
// does not continue the previous one fetches only what it asks for. For
// streaming a large range, NewReader fetches chunks in parallel.
//
// The context given to Open governs every request made for the Object.
type Object struct {
	ctx      context.Context
	loc      Location
	size     int64
	etag     string
	version  string // the version id, where the bucket keeps versions
	src      RangeGetter
	client   *Client // nil for web resources
	attempts int
	idle     time.Duration

	mu      sync.Mutex
	windows [readAheadWindows]window
	lastEnd int64 // where the previous ReadAt ended, to detect sequential reads
	tick    uint64
}

// ReadAheadSize is how much a small sequential ReadAt fetches at once.
const ReadAheadSize = 1 << 20

// readAheadWindows is how many read-ahead windows an Object keeps.
const readAheadWindows = 4

type window struct {
	off  int64
	data []byte
	used uint64
}

// A RangeGetter is where the bytes of an [Object] come from: the reads of
// a backend, for one version of one object.
type RangeGetter interface {
	// GetRange starts a request for n bytes at off of the version and
	// returns its body, which must hold exactly n bytes; a version that
	// is gone is an error wrapping ErrChanged. It retries what is worth
	// retrying (refused connections, 5xx answers, throttling) before it
	// returns an error. A body that breaks off or stalls is asked for
	// again, from where it broke, by the Object.
	GetRange(ctx context.Context, off, n int64) (io.ReadCloser, error)
}

// NewObject returns the object at loc of size bytes, in the version etag
// ("" if the backend has none), whose bytes src fetches: what the Open of
// a backend returns. Of cfg it uses Attempts and IdleTimeout. The context
// governs every request made for the Object.
func NewObject(ctx context.Context, loc Location, size int64, etag string, src RangeGetter, cfg Config) *Object {
	o := &Object{ctx: ctx, loc: loc, size: size, etag: etag, src: src, attempts: cfg.Attempts, idle: cfg.IdleTimeout}
	if o.attempts <= 0 {
		o.attempts = defaultAttempts
	}
	if o.idle <= 0 {
		o.idle = defaultIdleTimeout
	}
	return o
}

// Open returns the object bucket/key, as it is now. It reports a missing
// object as ErrNotFound and a missing bucket as ErrNoBucket.
func (c *Client) Open(ctx context.Context, bucket, key string) (*Object, error) {
	if key == "" || key[len(key)-1] == '/' {
		return nil, c.fail("open", bucket, key, &detailed{sentinel: ErrInvalidURL, detail: "a prefix, not an object"})
	}
	out, err := c.s3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		return nil, c.fail("open", bucket, key, c.notFound(ctx, bucket, err))
	}
	o := &Object{
		ctx:      ctx,
		loc:      Location{Bucket: bucket, Key: key},
		size:     aws.ToInt64(out.ContentLength),
		etag:     aws.ToString(out.ETag),
		version:  aws.ToString(out.VersionId),
		client:   c,
		attempts: c.attempts,
		idle:     c.idle,
	}
	if o.size < 0 {
		return nil, c.fail("open", bucket, key, fmt.Errorf("server gave a negative size %d", o.size))
	}
	o.src = &s3Source{c: c, bucket: bucket, key: key, etag: o.etag, lastModified: out.LastModified}
	return o, nil
}

// notFound tells a missing bucket from a missing object when err is a 404
// (an answer to HEAD has no body to say which).
func (c *Client) notFound(ctx context.Context, bucket string, err error) error {
	err = classify(err)
	if !errors.Is(err, ErrNotFound) {
		return err
	}
	_, berr := c.s3.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &bucket})
	if berr == nil || statusOf(berr) != http.StatusNotFound {
		return err
	}
	// An answer to HEAD has no error code either: ask again with a
	// request whose answer has one. Some stores answer 404 to an
	// unknown access key (versitygw: XAdminUserNotFound).
	_, lerr := c.s3.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &bucket, MaxKeys: aws.Int32(1)})
	if lerr = classify(lerr); errors.Is(lerr, ErrAccessDenied) {
		return lerr
	}
	return &detailed{sentinel: ErrNoBucket, cause: err}
}

// Size returns the size of the object in bytes.
func (o *Object) Size() int64 { return o.size }

// ETag returns the entity tag the object had when it was opened, quotes
// included; "" if the server gave none.
func (o *Object) ETag() string { return o.etag }

// Location returns where the object is.
func (o *Object) Location() Location { return o.loc }

// Validator returns what tells this version of the object from another,
// and whether it is strong: a strong ETag (true); else what the backend
// knows, a weak ETag or a Last-Modified time (false), or "" (false). Only
// a strong validator shows that two reads are of the same bytes.
func (o *Object) Validator() (string, bool) {
	if v, ok := o.src.(interface{ Validator() (string, bool) }); ok {
		return v.Validator()
	}
	return o.etag, o.etag != ""
}

// Head returns the first n bytes of the object (all of it when it is
// smaller), read with one request of that size: a header costs one
// request, where ReadAt at the start would fetch a read-ahead window
// ([ReadAheadSize]) and a Reader would start its chunks. When that was
// the whole object, the Object keeps a copy in a read-ahead window, and
// every later read of it, by ReadAt, a Reader or a Compose, costs no
// request.
func (o *Object) Head(n int) ([]byte, error) {
	if n < 0 {
		return nil, o.fail(errkind.Errorf(errkind.Usage, "negative length %d", n))
	}
	p := make([]byte, min(int64(n), o.size))
	if len(p) == 0 || o.cached(0, p) {
		return p, nil
	}
	if err := o.fetch(o.ctx, 0, p); err != nil {
		return nil, err
	}
	if int64(len(p)) == o.size && len(p) <= ReadAheadSize {
		o.store(0, append([]byte(nil), p...))
	}
	return p, nil
}

// ReadAt reads len(p) bytes at off, as io.ReaderAt says: fewer only at the
// end of the object, with io.EOF.
func (o *Object) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, o.fail(errkind.Errorf(errkind.Usage, "negative offset %d", off))
	}
	if off >= o.size {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	want := len(p)
	if rest := o.size - off; int64(want) > rest {
		want = int(rest)
	}
	n := 0
	for n < want {
		pos := off + int64(n)
		if c := o.fromCache(pos, p[n:want]); c > 0 {
			n += c
			continue
		}
		rem := want - n
		o.mu.Lock()
		sequential := pos == o.lastEnd
		o.mu.Unlock()
		if !sequential || rem >= ReadAheadSize {
			if err := o.fetch(o.ctx, pos, p[n:want]); err != nil {
				return n, err
			}
			n = want
			break
		}
		wn := int64(ReadAheadSize)
		if rest := o.size - pos; wn > rest {
			wn = rest
		}
		buf := make([]byte, wn)
		if err := o.fetch(o.ctx, pos, buf); err != nil {
			return n, err
		}
		o.store(pos, buf)
		n += copy(p[n:want], buf)
	}
	o.mu.Lock()
	o.lastEnd = off + int64(n)
	o.mu.Unlock()
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// fromCache copies what a window holds at pos into p.
func (o *Object) fromCache(pos int64, p []byte) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := range o.windows {
		w := &o.windows[i]
		if w.data != nil && pos >= w.off && pos < w.off+int64(len(w.data)) {
			o.tick++
			w.used = o.tick
			return copy(p, w.data[pos-w.off:])
		}
	}
	return 0
}

// cached fills p with the bytes at off if one window holds all of them.
func (o *Object) cached(off int64, p []byte) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := range o.windows {
		w := &o.windows[i]
		if w.data != nil && off >= w.off && off+int64(len(p)) <= w.off+int64(len(w.data)) {
			o.tick++
			w.used = o.tick
			copy(p, w.data[off-w.off:])
			return true
		}
	}
	return false
}

// store keeps data read at off in the least recently used window.
func (o *Object) store(off int64, data []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	lru := &o.windows[0]
	for i := range o.windows {
		if w := &o.windows[i]; w.used < lru.used {
			lru = w
		}
	}
	o.tick++
	*lru = window{off: off, data: data, used: o.tick}
}

// fetch fills p with the bytes at off. A body that breaks off or stalls is
// requested again from the first byte not yet received, with backoff,
// up to the attempts of the client; progress renews the attempts.
func (o *Object) fetch(ctx context.Context, off int64, p []byte) error {
	if o.cached(off, p) {
		return nil
	}
	got := 0
	failures := 0
	for got < len(p) {
		if failures > 0 {
			if err := sleep(ctx, failures); err != nil {
				return o.fail(err)
			}
		}
		n, err := o.fetchOnce(ctx, off+int64(got), p[got:])
		got += n
		if err == nil {
			continue
		}
		if n > 0 {
			failures = 0
		}
		var br *bodyError
		if !errors.As(err, &br) || ctx.Err() != nil {
			return o.fail(err)
		}
		failures++
		if failures >= o.attempts {
			return o.fail(fmt.Errorf("failed after %d attempts: %w", failures, br.err))
		}
	}
	return nil
}

// errShortAnswer is a body that ended before the bytes asked for came: a
// failure of the transfer, never io.EOF or io.ErrUnexpectedEOF.
var errShortAnswer = errors.New("the connection ended before the answer did")

// bodyError is a failure while a body was read: worth a new request for
// the rest.
type bodyError struct{ err error }

func (e *bodyError) Error() string { return e.err.Error() }
func (e *bodyError) Unwrap() error { return e.err }

// fetchOnce makes one request for p at off and reads its body; a body that
// brings nothing for the idle timeout is abandoned.
func (o *Object) fetchOnce(ctx context.Context, off int64, p []byte) (int, error) {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	body, err := o.src.GetRange(rctx, off, int64(len(p)))
	if err != nil {
		return 0, err
	}
	defer body.Close()
	var stalled atomic.Bool
	timer := time.AfterFunc(o.idle, func() { stalled.Store(true); cancel() })
	defer timer.Stop()
	n := 0
	for n < len(p) {
		m, err := body.Read(p[n:])
		n += m
		if m > 0 {
			timer.Reset(o.idle)
		}
		if err == io.EOF {
			if n < len(p) {
				return n, &bodyError{errShortAnswer}
			}
			break
		}
		if err != nil {
			switch {
			case stalled.Load():
				err = fmt.Errorf("no data for %v", o.idle)
			case errors.Is(err, io.ErrUnexpectedEOF):
				// Go's HTTP client says so for a body cut short by
				// the network. It is no end of the object: callers
				// that parse what they read (a header) must not take
				// it for a file that ends there.
				err = errShortAnswer
			}
			return n, &bodyError{err}
		}
	}
	return n, nil
}

// sleep waits before the attempt after failures failed ones: exponential
// backoff from 100 ms to 5 s, with jitter.
func sleep(ctx context.Context, failures int) error {
	d := 100 * time.Millisecond << min(failures-1, 6)
	d = min(d, 5*time.Second)
	d = d/2 + rand.N(d/2+1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// fail wraps err as an *Error about reading o.
func (o *Object) fail(err error) error {
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	if o.client != nil {
		return o.client.fail("read", o.loc.Bucket, o.loc.Key, err)
	}
	return urlFail("read", o.loc, err)
}

// s3Source reads one version of an S3 object.
type s3Source struct {
	c            *Client
	bucket, key  string
	etag         string
	lastModified *time.Time
}

// GetRange gets n bytes at off of the version, pinned by If-Match (or
// by If-Unmodified-Since where the object has no ETag).
func (s *s3Source) GetRange(ctx context.Context, off, n int64) (io.ReadCloser, error) {
	in := &s3.GetObjectInput{
		Bucket: &s.bucket,
		Key:    &s.key,
		Range:  aws.String(fmt.Sprintf("bytes=%d-%d", off, off+n-1)),
	}
	if s.etag != "" {
		in.IfMatch = &s.etag
	} else {
		in.IfUnmodifiedSince = s.lastModified
	}
	out, err := s.c.s3.GetObject(ctx, in)
	if err != nil {
		if precondition(err) {
			detail := "ETag is no longer " + s.etag
			if s.etag == "" {
				detail = "the store has no ETag for it, and says it was modified since it was opened"
				if s.lastModified != nil {
					detail += " (" + s.lastModified.UTC().Format(time.RFC3339) + ")"
				}
			}
			return nil, &detailed{sentinel: ErrChanged, detail: detail, cause: err}
		}
		return nil, err
	}
	if s.etag != "" && out.ETag != nil && *out.ETag != s.etag {
		out.Body.Close()
		return nil, &detailed{sentinel: ErrChanged, detail: fmt.Sprintf("ETag %s, not %s", *out.ETag, s.etag)}
	}
	if out.ContentLength != nil && *out.ContentLength != n {
		out.Body.Close()
		return nil, &detailed{sentinel: ErrChanged, detail: fmt.Sprintf("server sent %d bytes for a range of %d", *out.ContentLength, n)}
	}
	return out.Body, nil
}
