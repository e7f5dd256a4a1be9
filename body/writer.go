package body

import (
	"crypto/cipher"
	"crypto/rand"
	"fmt"
	"io"
	"sync"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
)

// nonceBatch is how many segment nonces a Writer draws from crypto/rand at
// once, to avoid one system call per segment.
const nonceBatch = 128

var errWriterClosed = errkind.New(errkind.Usage, "write to a closed writer")

// Writer encrypts a stream into a Crypt4GH body. Create it with
// [NewWriter]; the caller must call [Writer.Close] to write the last,
// partial segment.
type Writer struct {
	dst  io.Writer
	aead cipher.AEAD
	mem  *writeBuffer // nil once the Writer is closed or failed
	// buf is mem.seg: nonce || plaintext, sealed in place into
	// nonce || ciphertext || tag.
	buf []byte
	n   int // plaintext bytes buffered in buf[NonceSize:]
	err error
}

// writeBuffer is the memory of a Writer, recycled when it is closed: a
// Writer used for a few bytes costs no large allocation.
type writeBuffer struct {
	seg    [EncryptedSegmentSize]byte
	nonces [nonceBatch * NonceSize]byte // random, each used once
	next   int                          // offset of the next unused nonce
}

var writeBuffers = sync.Pool{New: func() any {
	return &writeBuffer{next: nonceBatch * NonceSize}
}}

var (
	_ io.WriteCloser = (*Writer)(nil)
	_ io.ReaderFrom  = (*Writer)(nil)
)

// NewWriter returns a Writer that encrypts what is written to it under key
// and writes the segments to dst, each full segment as soon as it is
// complete. The caller must call Close to flush the last segment; Close
// does not close dst.
func NewWriter(dst io.Writer, key *[32]byte) (*Writer, error) {
	if key == nil {
		return nil, errNoKey
	}
	mem := writeBuffers.Get().(*writeBuffer)
	return &Writer{dst: dst, aead: newAEAD(key), mem: mem, buf: mem.seg[:]}, nil
}

// Write encrypts p. It buffers up to one segment of plaintext and writes
// every full segment to the destination. After an error, or after Close,
// every call returns an error.
func (w *Writer) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	total := 0
	for len(p) > 0 {
		if w.n == 0 && len(p) >= SegmentSize {
			// Seal straight from p: no copy into the buffer.
			if err := w.seal(p[:SegmentSize]); err != nil {
				return total, err
			}
			p = p[SegmentSize:]
			total += SegmentSize
			continue
		}
		c := copy(w.buf[NonceSize+w.n:NonceSize+SegmentSize], p)
		w.n += c
		p = p[c:]
		total += c
		if w.n == SegmentSize {
			if err := w.flush(); err != nil {
				return total, err
			}
		}
	}
	return total, nil
}

// ReadFrom encrypts what it reads from src until io.EOF, reading straight
// into the segment buffer. Like Write, it leaves the last partial segment
// buffered until Close.
func (w *Writer) ReadFrom(src io.Reader) (int64, error) {
	if w.err != nil {
		return 0, w.err
	}
	var total int64
	for {
		n, err := io.ReadFull(src, w.buf[NonceSize+w.n:NonceSize+SegmentSize])
		w.n += n
		total += int64(n)
		if w.n == SegmentSize {
			if ferr := w.flush(); ferr != nil {
				return total, ferr
			}
		}
		switch err {
		case nil:
		case io.EOF, io.ErrUnexpectedEOF:
			return total, nil
		default:
			return total, err
		}
	}
}

// Close writes the last, partial segment, if any, and makes every later
// call fail. It does not close the destination and never writes an empty
// segment.
func (w *Writer) Close() error {
	if w.err != nil {
		return w.err
	}
	if w.n > 0 {
		if err := w.flush(); err != nil {
			return err
		}
	}
	w.fail(errWriterClosed)
	return nil
}

// fail makes err sticky and recycles the memory, which no call touches
// from now on.
func (w *Writer) fail(err error) {
	w.err = err
	if w.mem != nil {
		clear(w.buf)
		writeBuffers.Put(w.mem)
		w.mem, w.buf = nil, nil
	}
}

// flush seals the buffered plaintext in place and writes the segment.
func (w *Writer) flush() error {
	n := w.n
	w.n = 0
	return w.seal(w.buf[NonceSize : NonceSize+n])
}

// seal encrypts plaintext (the buffered plaintext itself, or any slice
// that does not overlap the buffer) into the buffer and writes the segment.
func (w *Writer) seal(plaintext []byte) error {
	m := w.mem
	if m.next == len(m.nonces) {
		if _, err := rand.Read(m.nonces[:]); err != nil {
			err = fmt.Errorf("failed to generate nonces: %w", err)
			w.fail(err)
			return err
		}
		m.next = 0
	}
	seg := seal(w.aead, w.buf, m.nonces[m.next:m.next+NonceSize], plaintext)
	m.next += NonceSize
	if err := writeAll(w.dst, seg); err != nil {
		w.fail(err)
		return err
	}
	return nil
}

// writeAll writes p to dst and turns a short write into an error. Errors
// of dst are returned as they are: dst knows what it is.
func writeAll(dst io.Writer, p []byte) error {
	n, err := dst.Write(p)
	if err == nil && n != len(p) {
		err = io.ErrShortWrite
	}
	return err
}
