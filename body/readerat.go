package body

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
)

// ReaderAt gives random access to the plaintext of a Crypt4GH body stored
// in an [io.ReaderAt]. Create it with [NewReaderAt].
//
// ReadAt decrypts only the segments that a read touches and is safe for
// concurrent use. Each decrypted segment is kept in a per-goroutine cache
// (through a sync.Pool), so small sequential reads do not decrypt the same
// segment again; the caller must not change the underlying data while the
// ReaderAt is in use.
type ReaderAt struct {
	src   io.ReaderAt
	size  int64 // encrypted
	plain int64 // plaintext
	keys  keyring
	last  atomic.Int32 // index in keys of the key that opened a segment last
	bufs  sync.Pool    // of *segmentBuffer
}

// segmentBuffer is the plaintext a ReadAt call kept. It remembers the
// segment whose plaintext it holds. The ciphertext a call reads is in a
// buffer of segmentBuffers for the call only, shared with every other
// ReaderAt and Reader: a command that opens a file and its index reads
// both through the same memory, which in a new process is mapped once.
type segmentBuffer struct {
	// plain is made by the first read of part of a segment: reads of
	// whole segments decrypt into the caller's memory, and a new process
	// pays for new memory by the page.
	plain []byte
	index int64 // segment held in plain[:n], -1 for none
	n     int
}

var _ io.ReaderAt = (*ReaderAt)(nil)

// NewReaderAt returns a ReaderAt over the encrypted body of length size
// that starts at offset 0 of src (use an [io.SectionReader] to skip a
// header), decrypted with keys, the data keys of the file. It fails when
// size is impossible for a body (see [PlaintextSize]) and, when the body
// ends with an empty segment, when that segment does not authenticate.
func NewReaderAt(src io.ReaderAt, size int64, keys [][32]byte) (*ReaderAt, error) {
	plain, err := PlaintextSize(size)
	if err != nil {
		return nil, err
	}
	k, err := newKeyring(keys)
	if err != nil {
		return nil, err
	}
	r := &ReaderAt{src: src, size: size, plain: plain, keys: k}
	r.bufs.New = func() any { return &segmentBuffer{index: -1} }
	if size%EncryptedSegmentSize == Overhead {
		// A trailing empty segment holds no plaintext that ReadAt would
		// ever decrypt: authenticate it now, as the streams do.
		index := size / EncryptedSegmentSize
		var seg [Overhead]byte
		n, err := src.ReadAt(seg[:], size-Overhead)
		if n < Overhead {
			if err == nil || err == io.EOF {
				return nil, &SegmentError{Index: index, Err: ErrTruncated}
			}
			return nil, fmt.Errorf("failed to read segment %d: %w", index, err)
		}
		if _, err := r.open(nil, seg[:], index); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Size returns the length of the plaintext.
func (r *ReaderAt) Size() int64 { return r.plain }

// ReadAt reads len(p) bytes of plaintext starting at offset off, following
// the io.ReaderAt contract: when it returns fewer than len(p) bytes the
// error says why, io.EOF at the end of the plaintext.
func (r *ReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errkind.New(errkind.Usage, "negative offset")
	}
	if off >= r.plain {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	b := r.bufs.Get().(*segmentBuffer)
	defer r.bufs.Put(b)
	enc := segmentBuffers.Get().(*[EncryptedSegmentSize]byte)
	defer segmentBuffers.Put(enc)
	total := 0
	for len(p) > 0 && off < r.plain {
		index, skip := off/SegmentSize, int(off%SegmentSize)
		segLen := int(min(EncryptedSegmentSize, r.size-index*EncryptedSegmentSize))
		plainLen := segLen - Overhead
		var out []byte
		if b.index != index {
			seg := enc[:segLen]
			n, err := r.src.ReadAt(seg, index*EncryptedSegmentSize)
			if n < segLen {
				if err == nil || err == io.EOF {
					return total, &SegmentError{Index: index, Err: ErrTruncated}
				}
				return total, fmt.Errorf("failed to read segment %d: %w", index, err)
			}
			if skip == 0 && len(p) >= plainLen {
				// The whole segment is wanted: decrypt straight into p.
				if _, err := r.open(p[:0], seg, index); err != nil {
					return total, err
				}
				p = p[plainLen:]
				total += plainLen
				off += int64(plainLen)
				continue
			}
			b.index = -1
			if b.plain == nil {
				b.plain = make([]byte, SegmentSize)
			}
			out, err = r.open(b.plain[:0], seg, index)
			if err != nil {
				return total, err
			}
			b.index, b.n = index, len(out)
		}
		out = b.plain[skip:b.n]
		n := copy(p, out)
		p = p[n:]
		total += n
		off += int64(n)
	}
	if len(p) > 0 {
		return total, io.EOF
	}
	return total, nil
}

// open authenticates and decrypts segment index into dst, which must not
// overlap seg.
func (r *ReaderAt) open(dst, seg []byte, index int64) ([]byte, error) {
	last := int(r.last.Load())
	prev := last
	out, err := r.keys.open(dst, seg, index, &last)
	if err != nil {
		return nil, err
	}
	if last != prev {
		r.last.Store(int32(last))
	}
	return out, nil
}
