// Package objio reads and writes the objects of the crypt4gh command: a
// Stream reads an object as a file is read (its header in one small
// request, then the body in parallel ranged GETs), Planned reads only
// the ranges a plan needs, and a Sink uploads an output, aborted on every
// failure and signal.
package objio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/internal/errkind"
	"github.com/c4gh-go/crypt4gh/internal/outfile"
	"github.com/c4gh-go/crypt4gh/objstore"
)

const (
	// HeadSize is what is fetched first of an object, in one request:
	// enough for any usual header.
	HeadSize = 64 << 10
	// ChunkSize is the size of the ranged GETs of a stream of a
	// Crypt4GH object: 128 stored segments, so that the chunks of a body
	// end on segments.
	ChunkSize = 128 * body.EncryptedSegmentSize
	// AbortTimeout is how long an interrupted command waits for its
	// uploads to be aborted before it exits anyway.
	AbortTimeout = 15 * time.Second
)

// NewStream is the Stream of o; opts gives the options of the body's
// reads when they start (the output is open by then).
func NewStream(o *objstore.Object, opts func() *objstore.ReaderOptions) *Stream {
	return &Stream{o: o, opts: opts}
}

// NewStreamAt is a Stream of o from off on, its head not read.
func NewStreamAt(o *objstore.Object, opts func() *objstore.ReaderOptions, off int64) *Stream {
	return &Stream{o: o, opts: opts, fetched: true, pos: min(off, o.Size())}
}

// Object is the object that s reads.
func (s *Stream) Object() *objstore.Object { return s.o }

// Planned returns a Planned reader of the object of s, its head fetched.
func (s *Stream) Planned() (*Planned, error) {
	if err := s.FetchHead(); err != nil {
		return nil, err
	}
	return &Planned{o: s.o, head: s.head}, nil
}

// Size is the size of the object.
func (p *Planned) Size() int64 { return p.o.Size() }

// NewSink is the Sink that writes w, the upload of the object name (for
// messages); cancel stops its requests. It aborts the upload on a signal.
func NewSink(w objstore.ObjectWriter, name string, cancel context.CancelFunc) *Sink {
	s := &Sink{w: w, name: name, cancel: cancel, sem: make(chan struct{}, 1)}
	s.forget = outfile.Signals.OnInterrupt(s.interrupted)
	return s
}

func withHint(err error, format string, args ...any) error {
	return errkind.WithHint(err, format, args...)
}

// Stream reads an object from the start, as a file is read. Its
// first bytes come in one small request; when they start a crypt4gh
// header, the rest (the body) is streamed from the end of the header, in
// parallel ranged GETs of whole segments, only once something reads past
// the header. So inspecting an object costs its header, and decrypting
// one costs its bytes once.
type Stream struct {
	o    *objstore.Object
	opts func() *objstore.ReaderOptions // when the body starts: the output is open by then

	head    []byte // the first bytes
	prefix  int64  // how many of them are served from head
	fetched bool
	pos     int64
	body    *objstore.Reader
	err     error
}

// FetchHead reads the first bytes of the object, once.
func (s *Stream) FetchHead() error {
	if s.fetched {
		return s.err
	}
	s.fetched = true
	if s.head, s.err = s.o.Head(HeadSize); s.err != nil {
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

func (s *Stream) Read(p []byte) (int, error) {
	if err := s.FetchHead(); err != nil {
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
func (s *Stream) WriteTo(w io.Writer) (int64, error) {
	if err := s.FetchHead(); err != nil {
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
func (s *Stream) startBody() error {
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

// Remaining is the number of bytes left to read.
func (s *Stream) Remaining() int64 { return s.o.Size() - s.pos }

// Section returns a reader of bytes [r.Start, r.End) of the object, which
// must not have been read yet, as a section of a file.
func (s *Stream) Section(r edit.Range) (io.Reader, error) {
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

// ReaderAt returns the object as an io.ReaderAt whose first bytes come
// from the head fetched in one request, for c4gh.NewReaderAt: a header
// costs the head, and each segment what it is (with the read-ahead of
// objstore.Object for sequential reads).
func (s *Stream) ReaderAt() (io.ReaderAt, error) {
	if err := s.FetchHead(); err != nil {
		return nil, err
	}
	return headReaderAt{o: s.o, head: s.head}, nil
}

// Close stops the stream.
func (s *Stream) Close() error {
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

// Sink uploads what a command writes to an object. Every call into
// the objstore.ObjectWriter holds sem, so that an interruption, which cancels
// the upload's context and then takes sem for good, aborts the upload
// itself when the command is not inside the Writer (it may be waiting for
// stdin), and else waits for the Writer to return: then no multipart
// upload is left pending.
type Sink struct {
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

func (s *Sink) Write(p []byte) (int, error) {
	s.sem <- struct{}{}
	defer func() { <-s.sem }()
	return s.w.Write(p)
}

// Lend lends the memory of the upload's part buffers, for the segments to
// be sealed in place (see body.Lender).
func (s *Sink) Lend(n int) ([]byte, error) {
	l, ok := s.w.(body.Lender)
	if !ok {
		return nil, nil
	}
	s.sem <- struct{}{}
	defer func() { <-s.sem }()
	return l.Lend(n)
}

// Commit completes the upload.
func (s *Sink) Commit() error {
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

// Abort abandons the upload.
func (s *Sink) Abort() {
	s.sem <- struct{}{}
	s.w.Abort()
	<-s.sem
	s.forget()
	s.cancel()
}

// interrupted runs on a signal: it stops the upload and aborts it, within
// AbortTimeout. An upload that was being completed cannot be stopped
// (the store may commit it whatever the client does): its answer is
// waited for, and the message says when the object was written.
func (s *Sink) interrupted() {
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
	case <-time.After(AbortTimeout):
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

// Interruptible runs fn with a context that a signal cancels, and makes
// the exit on that signal wait (up to AbortTimeout) for fn to return, so
// that what fn has under way on a server (a Compose) is aborted.
//
// An object whose upload was being completed when the signal came may be
// written all the same (see Sink): when fn returns nil
// after the signal, the message says that dest (when not "") was written.
func Interruptible(parent context.Context, dest string, fn func(ctx context.Context) error) error {
	ctx, cancel := context.WithCancel(parent)
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
		case <-time.After(AbortTimeout):
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

// runWindow is the most that one request of a Planned fetches.
const runWindow = 4 << 20

// Planned reads an object for a region. A read is one ranged
// request for what it asks (the object's own read-ahead would fetch past
// what the plan needs, at every range of it), but within a run of the
// segments that the plan reads it fetches ahead, to the end of the run and
// at most runWindow, in one request.
type Planned struct {
	o    *objstore.Object
	head []byte          // the first bytes of the object, fetched already
	runs []edit.Interval // the byte ranges of the planned segments
	mu   sync.Mutex
	win  []byte // what was fetched ahead, at winOff
	at   int64
}

// Plan notes the segments that the plan reads, of a body of bodySize
// bytes after a header of headerSize.
func (p *Planned) Plan(headerSize, bodySize int64, segments []int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.runs = nil
	for _, s := range segments {
		iv := edit.Interval{Start: headerSize + body.EncryptedOffset(s)}
		iv.End = iv.Start + body.StoredLength(bodySize, s)
		if n := len(p.runs); n > 0 && p.runs[n-1].End == iv.Start {
			p.runs[n-1].End = iv.End
			continue
		}
		p.runs = append(p.runs, iv)
	}
}

func (p *Planned) ReadAt(b []byte, off int64) (int, error) {
	end := off + int64(len(b))
	if off >= 0 && end <= int64(len(p.head)) {
		return copy(b, p.head[off:]), nil
	}
	end = min(end, p.o.Size())
	if off >= end {
		return 0, io.EOF
	}
	p.mu.Lock()
	if off >= p.at && end <= p.at+int64(len(p.win)) {
		n := copy(b, p.win[off-p.at:])
		p.mu.Unlock()
		return n, nil
	}
	fetch := end
	for _, r := range p.runs {
		if off >= r.Start && off < r.End {
			fetch = max(end, min(r.End, off+runWindow))
		}
	}
	p.mu.Unlock()
	buf := make([]byte, fetch-off)
	r, err := p.o.NewReader(off, fetch-off, &objstore.ReaderOptions{ChunkSize: fetch - off, Concurrency: 1})
	if err != nil {
		return 0, err
	}
	_, err = io.ReadFull(r, buf)
	r.Close()
	if err != nil {
		return 0, err
	}
	if fetch > end {
		p.mu.Lock()
		p.win, p.at = buf, off
		p.mu.Unlock()
	}
	n := copy(b, buf)
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}
