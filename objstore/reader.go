package objstore

import (
	"context"
	"io"
	"os"
	"sync"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
)

// ReaderOptions tune a Reader. The zero value gives the defaults.
type ReaderOptions struct {
	// ChunkSize is the size of each ranged request; 0 means
	// [DefaultChunkSize]. A caller that decrypts as it reads may choose a
	// multiple of the segment size so that chunks end on segments.
	ChunkSize int64
	// Concurrency is how many chunks are held at once, fetching or
	// waiting to be read; 0 means [DefaultConcurrency].
	Concurrency int
}

// Defaults of ReaderOptions and WriterOptions.
const (
	DefaultChunkSize   = 8 << 20
	DefaultConcurrency = 8
)

// A Reader reads a range of an Object from the start to the end, fetching
// the chunks ahead of the reader in parallel and delivering them in order.
// It holds at most Concurrency × ChunkSize bytes (64 MiB at the defaults).
// A chunk whose body breaks off or stalls is fetched again from where it
// broke, not from the start. The caller must call Close.
type Reader struct {
	o      *Object
	ctx    context.Context
	cancel context.CancelFunc
	chunk  int64
	next   int64 // offset of the next chunk to schedule
	end    int64
	queue  []*chunk // scheduled, in order
	cur    *chunk   // being read
	pos    int
	err    error
	wg     sync.WaitGroup
}

type chunk struct {
	buf  []byte
	done chan struct{}
	err  error
}

// NewReader returns a Reader of length bytes at off (to the end of the
// object when length is negative).
func (o *Object) NewReader(off, length int64, opts *ReaderOptions) (*Reader, error) {
	if off < 0 || off > o.size {
		return nil, o.fail(errkind.Errorf(errkind.Usage, "offset %d outside the object of %d bytes", off, o.size))
	}
	end := o.size
	if length >= 0 {
		if length > o.size-off {
			return nil, o.fail(errkind.Errorf(errkind.Usage, "range of %d bytes at %d beyond the object of %d bytes", length, off, o.size))
		}
		end = off + length
	}
	var opt ReaderOptions
	if opts != nil {
		opt = *opts
	}
	if opt.ChunkSize <= 0 {
		opt.ChunkSize = DefaultChunkSize
	}
	if opt.Concurrency <= 0 {
		opt.Concurrency = DefaultConcurrency
	}
	ctx, cancel := context.WithCancel(o.ctx)
	r := &Reader{o: o, ctx: ctx, cancel: cancel, chunk: opt.ChunkSize, next: off, end: end}
	for i := 0; i < opt.Concurrency && r.next < r.end; i++ {
		r.schedule(nil)
	}
	return r, nil
}

// schedule starts fetching the next chunk into buf (a new buffer if buf is
// too small).
func (r *Reader) schedule(buf []byte) {
	n := min(r.chunk, r.end-r.next)
	if int64(cap(buf)) < n {
		buf = make([]byte, n)
	}
	c := &chunk{buf: buf[:n], done: make(chan struct{})}
	r.queue = append(r.queue, c)
	off := r.next
	r.next += n
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer close(c.done)
		c.err = r.o.fetch(r.ctx, off, c.buf)
	}()
}

// fill makes cur a chunk with bytes left to read; it returns io.EOF at the
// end of the range.
func (r *Reader) fill() error {
	if r.err != nil {
		return r.err
	}
	if r.cur != nil && r.pos < len(r.cur.buf) {
		return nil
	}
	if r.cur != nil {
		buf := r.cur.buf
		r.cur = nil
		if r.next < r.end {
			r.schedule(buf)
		}
	}
	if len(r.queue) == 0 {
		return io.EOF
	}
	c := r.queue[0]
	r.queue[0] = nil
	r.queue = r.queue[1:]
	<-c.done
	if c.err != nil {
		r.err = c.err
		r.cancel()
		return r.err
	}
	r.cur, r.pos = c, 0
	return nil
}

// Read reads the next bytes of the range.
func (r *Reader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, r.err
	}
	if err := r.fill(); err != nil {
		return 0, err
	}
	n := copy(p, r.cur.buf[r.pos:])
	r.pos += n
	return n, nil
}

// WriteTo writes the rest of the range to w, without a copy of its own.
func (r *Reader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		err := r.fill()
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
		n, err := w.Write(r.cur.buf[r.pos:])
		r.pos += n
		total += int64(n)
		if err != nil {
			r.err = err
			return total, err
		}
	}
}

// Close stops the fetches under way and waits for them. Reads after Close
// fail.
func (r *Reader) Close() error {
	r.cancel()
	r.wg.Wait()
	if r.err == nil || r.err == io.EOF {
		r.err = os.ErrClosed
	}
	r.queue, r.cur = nil, nil
	return nil
}
