package objstore

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
)

// A partWriter is a backend's side of a multipart upload: the requests
// that the Writer, which decides what is sent when, makes through it.
// writePart (and the copies of Compose) run in parallel, once begin has
// returned, and wrap may be called from any goroutine; the other methods
// are called by the Writer's caller, one at a time.
type partWriter interface {
	// begin starts the upload, before its first part.
	begin(ctx context.Context) error
	// writePart stores body (size bytes) as part n.
	writePart(ctx context.Context, n int32, body io.ReadSeeker, size int64) (donePart, error)
	// complete commits the object made of parts, sorted by number.
	// ctx is the caller's: a request that commits must not be cut short
	// by its end.
	complete(ctx context.Context, parts []donePart) error
	// put writes the whole object (size bytes of body) with one request,
	// instead of an upload that was never begun.
	put(ctx context.Context, body io.ReadSeeker, size int64) error
	// abort abandons the upload, begun or not (a begin whose answer was
	// lost may have left one); stopped says that a part request was
	// stopped under way, so that the store may still store it.
	abort(ctx context.Context, begun, stopped bool) error
	// wrap names the object in err.
	wrap(err error) error
}

// A donePart is a part the store holds.
type donePart struct {
	n        int32
	etag     string
	checksum string // as the store computed it, "" for none
}

// A Writer writes an object as a stream. Data is cut into parts sent in
// parallel as a multipart upload; a stream that ends before its first
// part is full is sent with a single request instead. Memory is bounded
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
//
// The Writer decides what is sent when (parts in flight, the order of
// completion, the abort on failure); the requests themselves are those of
// a backend (S3's, for [Client.NewWriter]).
type Writer struct {
	ctx    context.Context // the caller's
	wctx   context.Context // for the parts, canceled on failure
	cancel context.CancelFunc
	pw     partWriter
	pool   *partPool

	size        int64 // of the object, 0 when unknown
	partSize    int64 // of the first part
	concurrency int
	next        int32         // number of the next part
	slots       chan struct{} // one per request in flight
	wg          sync.WaitGroup

	mu    sync.Mutex
	parts []donePart
	err   error // the first failure

	closed bool
	begun  bool // an upload was begun, and is neither committed nor aborted
	keep   bool // leave a begun upload pending on failure (WriterOptions.Keep)

	// A part request was stopped under way: the store may still store
	// the part after the upload is aborted.
	stopped atomic.Bool
}

// writerOptions checks opts and fills in the defaults: what the part
// size must grow to for a known Size, and what the buffers may hold.
func writerOptions(opts *WriterOptions) (WriterOptions, error) {
	var opt WriterOptions
	if opts != nil {
		opt = *opts
	}
	if opt.PartSize == 0 {
		opt.PartSize = DefaultPartSize
	}
	if opt.PartSize < MinPartSize || opt.PartSize > MaxPartSize {
		return opt, errkind.Errorf(errkind.Usage, "part size %d outside %d to %d", opt.PartSize, MinPartSize, MaxPartSize)
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
			return opt, &detailed{sentinel: ErrTooLarge, detail: fmt.Sprintf("%d bytes", opt.Size)}
		}
	}
	return opt, nil
}

// newWriter returns a Writer that sends its parts through pw; opt has
// been through writerOptions. small says that the bytes will come in
// small pieces between server-side copies (Compose), never to be
// spooled.
func newWriter(ctx context.Context, pw partWriter, opt WriterOptions, small bool) *Writer {
	w := &Writer{
		ctx: ctx, pw: pw,
		size: opt.Size, partSize: opt.PartSize, concurrency: opt.Concurrency,
		next:  1,
		slots: make(chan struct{}, opt.Concurrency),
		keep:  opt.Keep,
	}
	w.pool = newPartPool(opt, w.partSizeOf(MaxParts), small)
	w.wctx, w.cancel = context.WithCancel(ctx)
	return w
}

// partSizeOf is the size of part n.
func (w *Writer) partSizeOf(n int32) int64 {
	if w.size > 0 {
		return w.partSize
	}
	return min(w.partSize<<((n-1)/1000), MaxPartSize)
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
		w.setErr(w.pw.wrap(err))
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
	if w.pool.fillLent(p) {
		return len(p), nil
	}
	n := 0
	for n < len(p) {
		if err := w.room(); err != nil {
			return n, w.fail(err)
		}
		m := int(min(w.partSizeOf(w.next)-w.pool.filled(), int64(len(p)-n)))
		if err := w.pool.write(p[n : n+m]); err != nil {
			return n, w.fail(err)
		}
		n += m
	}
	return n, nil
}

// Lend lends the memory of the n bytes of the object that follow those
// written and lent so far: the caller fills it and then passes it to
// Write, which takes it without a copy (see body.Lender: c4gh.Encrypt
// seals segments into the part buffers so). It returns nil when it cannot
// lend n bytes now, because they would cross the end of the part (the
// caller must then Write those bytes from its own memory before it lends
// again), or at all, because parts are spooled to files. A Write of other
// bytes gives up what was lent and not written; Close and Abort give up
// what was not written.
func (w *Writer) Lend(n int) ([]byte, error) {
	if w.closed {
		return nil, w.closedErr()
	}
	if err := w.failure(); err != nil {
		return nil, w.fail(nil)
	}
	if w.pool.lent == 0 {
		if err := w.room(); err != nil {
			return nil, w.fail(err)
		}
	}
	return w.pool.lend(n, w.partSizeOf(w.next)), nil
}

// room makes room for at least one more byte: a full part is sent only
// then, so that an object of exactly one part goes in one request.
func (w *Writer) room() error {
	if w.pool.filling() && w.pool.filled() == w.partSizeOf(w.next) {
		w.pool.full = true
		if err := w.flush(); err != nil {
			return err
		}
	}
	if err := w.pool.ensure(w.wctx, w.partSizeOf(w.next)); err != nil {
		if w.wctx.Err() != nil {
			return w.doneErr()
		}
		return err
	}
	return nil
}

func (w *Writer) closedErr() error {
	if err := w.failure(); err != nil {
		return err
	}
	return w.pw.wrap(errkind.Errorf(errkind.Usage, "write after close"))
}

// flush sends the part being filled as the next part.
func (w *Writer) flush() error {
	p := w.pool.take()
	err := w.sendPart(func(ctx context.Context, n int32) (donePart, error) {
		defer w.pool.release(p)
		return w.pw.writePart(ctx, n, p.body(), p.size())
	})
	if err != nil { // not sent
		w.pool.release(p)
	}
	return err
}

// sendPart takes the next part number, beginning the upload for the
// first, and runs the request do for it once a slot is free. It returns
// an error only when do was not started.
func (w *Writer) sendPart(do func(ctx context.Context, n int32) (donePart, error)) error {
	if err := w.failure(); err != nil {
		return err // aborted, or about to be: begin no other upload
	}
	if !w.begun {
		if err := w.pw.begin(w.wctx); err != nil {
			return err
		}
		w.begun = true
	}
	if w.next > MaxParts {
		return &detailed{sentinel: ErrTooLarge, detail: fmt.Sprintf("more than %d parts", MaxParts)}
	}
	n := w.next
	w.next++
	select {
	case w.slots <- struct{}{}:
	case <-w.wctx.Done():
		return w.doneErr()
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer func() { <-w.slots }()
		part, err := do(w.wctx, n)
		if err != nil {
			if w.wctx.Err() != nil {
				w.stopped.Store(true)
			}
			w.setErr(w.pw.wrap(err))
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
	if !w.begun {
		return w.put()
	}
	if w.pool.filled() > 0 {
		if err := w.flush(); err != nil {
			return w.fail(err)
		}
	} else {
		w.pool.release(w.pool.take())
	}
	w.wg.Wait()
	if err := w.failure(); err != nil {
		return w.fail(nil)
	}
	slices.SortFunc(w.parts, func(a, b donePart) int { return int(a.n - b.n) })
	if err := w.pw.complete(w.ctx, w.parts); err != nil {
		return w.fail(err)
	}
	w.begun = false // nothing left to abort
	w.cancel()
	return nil
}

// put writes the whole object with one request.
func (w *Writer) put() error {
	defer w.cancel()
	p := w.pool.take()
	defer w.pool.release(p)
	if err := w.pw.put(w.ctx, p.body(), p.size()); err != nil {
		w.setErr(w.pw.wrap(err))
		return w.failure()
	}
	return nil
}

// Abort abandons the object: the parts under way are stopped and the
// multipart upload is aborted, so that nothing is left on the server
// (with WriterOptions.Keep the upload is left pending instead). It
// returns an error only if the abort itself failed (a pending upload may
// then be left, for the bucket's lifecycle rules to remove). Abort after
// a successful Close does nothing: the object stays.
func (w *Writer) Abort() error {
	if w.closed && w.failure() == nil {
		return nil
	}
	w.closed = true
	w.setErr(w.pw.wrap(ErrAborted))
	return w.abort()
}

// abort waits for the parts under way and aborts the upload, once.
func (w *Writer) abort() error {
	w.cancel()
	w.wg.Wait()
	w.pool.release(w.pool.take())
	begun := w.begun
	w.begun = false
	if w.keep && begun {
		return nil // left for a resume
	}
	return w.pw.abort(w.ctx, begun, w.stopped.Load())
}

var _ ObjectWriter = (*Writer)(nil)
