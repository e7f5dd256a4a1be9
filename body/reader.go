package body

import (
	"fmt"
	"io"
	"sync"
)

// Reader decrypts a Crypt4GH body. Create it with [NewReader].
type Reader struct {
	src        io.Reader
	keys       keyring
	mem        *[EncryptedSegmentSize]byte // nil once the Reader has ended
	scratchMem *[EncryptedSegmentSize]byte
	last       int    // index in keys of the key that opened the last segment
	buf        []byte // one encrypted segment
	scratch    []byte // plaintext when keys cannot open in place
	plain      []byte // decrypted bytes not yet returned
	index      int64  // index of the next segment to read
	final      bool   // the last segment was short: the body has ended
	err        error
}

var (
	_ io.Reader   = (*Reader)(nil)
	_ io.WriterTo = (*Reader)(nil)
)

// NewReader returns a Reader that decrypts the body read from src with
// keys, the data keys of the file (at least one). Each segment is
// authenticated before any of its plaintext is returned. A segment that no
// key opens, or a body that ends inside a segment, is reported as a
// [*SegmentError]; the error is sticky.
func NewReader(src io.Reader, keys [][32]byte) (*Reader, error) {
	k, err := newKeyring(keys)
	if err != nil {
		return nil, err
	}
	r := &Reader{src: src, keys: k}
	r.mem = segmentBuffers.Get().(*[EncryptedSegmentSize]byte)
	r.buf = r.mem[:]
	if !k.inPlace() {
		r.scratchMem = segmentBuffers.Get().(*[EncryptedSegmentSize]byte)
		r.scratch = r.scratchMem[:SegmentSize]
	}
	return r, nil
}

// segmentBuffers recycles the memory of Readers that reached the end of
// their body: a Reader of a few bytes costs no large allocation.
var segmentBuffers = sync.Pool{New: func() any { return new([EncryptedSegmentSize]byte) }}

// fail makes err (io.EOF included) sticky and, once no plaintext is left to
// return, recycles the memory, which no call touches from now on.
func (r *Reader) fail(err error) {
	r.err = err
	if len(r.plain) > 0 || r.mem == nil {
		return
	}
	clear(r.buf)
	segmentBuffers.Put(r.mem)
	if r.scratchMem != nil {
		clear(r.scratch)
		segmentBuffers.Put(r.scratchMem)
	}
	r.mem, r.scratchMem, r.buf, r.scratch = nil, nil, nil, nil
}

// Read reads decrypted plaintext into p. It returns io.EOF at the end of
// the body.
func (r *Reader) Read(p []byte) (int, error) {
	if len(r.plain) > 0 {
		n := copy(p, r.plain)
		r.plain = r.plain[n:]
		return n, nil
	}
	if r.err != nil {
		return 0, r.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	for {
		seg, err := r.next()
		if err != nil {
			r.fail(err)
			return 0, err
		}
		if len(p) >= len(seg)-Overhead {
			// Decrypt straight into p: no copy.
			out, err := r.keys.open(p[:0], seg, r.index-1, &r.last)
			if err != nil {
				r.fail(err)
				return 0, err
			}
			if len(out) == 0 {
				continue // an empty segment
			}
			return len(out), nil
		}
		out, err := r.keys.openScratch(r.scratch, seg, r.index-1, &r.last)
		if err != nil {
			r.fail(err)
			return 0, err
		}
		n := copy(p, out)
		r.plain = out[n:]
		return n, nil
	}
}

// WriteTo writes the rest of the decrypted plaintext to w, straight from
// the segment buffer. It returns nil at the end of the body; a failed write
// to w is sticky like any other error.
func (r *Reader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		if len(r.plain) > 0 {
			n, err := w.Write(r.plain)
			total += int64(n)
			r.plain = r.plain[n:]
			if err == nil && len(r.plain) > 0 {
				err = io.ErrShortWrite
			}
			if err != nil {
				r.plain = nil
				r.fail(err)
				return total, r.err
			}
		}
		if r.err == io.EOF {
			return total, nil
		}
		if r.err != nil {
			return total, r.err
		}
		seg, err := r.next()
		if err != nil {
			r.fail(err)
			continue
		}
		out, err := r.keys.openScratch(r.scratch, seg, r.index-1, &r.last)
		if err != nil {
			r.fail(err)
			continue
		}
		r.plain = out
	}
}

// next reads the next encrypted segment, which is at least Overhead bytes
// long, or returns io.EOF at the end of the body.
func (r *Reader) next() ([]byte, error) {
	if r.final {
		return nil, io.EOF
	}
	n, err := io.ReadFull(r.src, r.buf)
	switch err {
	case nil:
	case io.EOF:
		return nil, io.EOF
	case io.ErrUnexpectedEOF:
		r.final = true
		if err := checkLength(r.index, n); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("failed to read segment %d: %w", r.index, err)
	}
	r.index++
	return r.buf[:n], nil
}
