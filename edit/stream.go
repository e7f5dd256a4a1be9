package edit

import (
	"errors"
	"io"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
)

// ErrDone is returned by the Writer of NewWriter once every byte it can
// select has been written: the caller can stop producing input.
var ErrDone = errkind.New(errkind.Other, "all selected bytes written")

type reader struct {
	r    io.Reader
	kept []Interval
	pos  int64 // offset of the next byte of r
	err  error // sticky
	skip io.LimitedReader
}

// NewReader returns a reader that yields exactly the bytes of r that kept
// selects (see the package documentation: nil selects everything, a
// non-nil empty slice nothing). Skipped bytes are read and discarded, in
// constant memory. After the last byte of the last bounded interval the
// reader returns io.EOF without reading any further from r, so r may be an
// expensive stream (a decrypting body reader) that is not drained. When r
// ends early, the reader ends too: an edit list that points past the end of
// the data yields what there is. The reader uses kept as it is: the caller
// must not modify it until done reading.
func NewReader(r io.Reader, kept []Interval) io.Reader {
	if kept == nil {
		kept = []Interval{{0, Unbounded}}
	}
	return &reader{r: r, kept: normalize(kept)}
}

func (r *reader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	for len(r.kept) > 0 && r.pos >= r.kept[0].End {
		r.kept = r.kept[1:]
	}
	if len(r.kept) == 0 {
		r.err = io.EOF
		return 0, r.err
	}
	iv := r.kept[0]
	if r.pos < iv.Start {
		// io.Discard reads into a pooled buffer: no allocation here.
		want := iv.Start - r.pos
		r.skip = io.LimitedReader{R: r.r, N: want}
		n, err := io.Copy(io.Discard, &r.skip)
		r.pos += n
		if err == nil && n < want {
			err = io.EOF
		}
		if err != nil {
			r.err = err
			return 0, err
		}
	}
	p = p[:min(int64(len(p)), iv.End-r.pos)]
	n, err := r.r.Read(p)
	if n < 0 || n > len(p) {
		r.err = errors.New("invalid count from source reader")
		return 0, r.err
	}
	r.pos += int64(n)
	if err != nil {
		r.err = err
	}
	return n, err
}

type writer struct {
	w    io.Writer
	kept []Interval
	pos  int64 // offset of the next byte written to the writer
	err  error // sticky
}

// NewWriter returns a writer that writes to w only the bytes that kept
// selects out of the stream written to it (nil selects everything, a
// non-nil empty slice nothing).
//
// Once the last bounded interval is complete, Write returns ErrDone with
// n == len(p): the whole of p was consumed, and every later Write does the
// same without writing anything. The caller should treat ErrDone as
// success and may stop producing input, e.g.
//
//	_, err := io.Copy(edit.NewWriter(out, kept), body)
//	if errors.Is(err, edit.ErrDone) {
//		err = nil
//	}
//
// The write that completes the last interval already returns ErrDone, and a
// selection of nothing returns it from the first Write. When the last
// interval is unbounded, ErrDone is never returned. An error from w is
// returned with the number of bytes of p consumed up to it, and is sticky.
// The writer uses kept as it is: the caller must not modify it until done
// writing.
func NewWriter(w io.Writer, kept []Interval) io.Writer {
	if kept == nil {
		kept = []Interval{{0, Unbounded}}
	}
	return &writer{w: w, kept: normalize(kept)}
}

func (w *writer) Write(p []byte) (int, error) {
	if w.err != nil {
		if w.err == ErrDone {
			return len(p), ErrDone
		}
		return 0, w.err
	}
	total := len(p)
	for {
		for len(w.kept) > 0 && w.pos >= w.kept[0].End {
			w.kept = w.kept[1:]
		}
		if len(w.kept) == 0 {
			w.err = ErrDone
			return total, ErrDone
		}
		if len(p) == 0 {
			return total, nil
		}
		iv := w.kept[0]
		if w.pos < iv.Start {
			d := min(int64(len(p)), iv.Start-w.pos)
			p = p[d:]
			w.pos += d
			continue
		}
		k := min(int64(len(p)), iv.End-w.pos)
		n, err := w.w.Write(p[:k])
		if err == nil && int64(n) != k {
			err = io.ErrShortWrite
		}
		if err != nil {
			n = max(0, min(n, int(k)))
			w.err = err
			return total - len(p) + n, err
		}
		p = p[k:]
		w.pos += k
	}
}
