package reencrypt

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/header"
)

// A Spool holds the part of a streamed body that [SpliceStream] keeps:
// written once, in order, then read by offset. A temporary file is one.
type Spool interface {
	io.Writer
	io.ReaderAt
}

// SpliceStream is [Splice] for a file that can only be read in order, such
// as a pipe. It reads and opens the header, reads and drops the segments
// before the first one that the ranges need, and writes the rest of the
// body to the spool that newSpool returns, from which the segments are then
// copied. newSpool is called only once the header opened, so that a wrong
// key costs no spool; the caller removes the spool afterwards. The spool
// holds ciphertext only.
//
// It checks and fails as Splice does.
func SpliceStream(dst io.Writer, src io.Reader, newSpool func() (Spool, error), opts SpliceOptions) error {
	if err := checkSpliceOptions(opts); err != nil {
		return err
	}
	var hdr bytes.Buffer
	h, err := header.Parse(io.TeeReader(src, &hdr))
	if err != nil {
		return err
	}
	c, err := h.Decrypt(opts.Reader, nil)
	if err != nil {
		return err
	}
	kept := c.EditList
	first := firstNeeded(edit.List(kept), opts.Ranges)
	c.Zero()
	drop := int64(0)
	if first != edit.Unbounded {
		drop = body.EncryptedOffset(body.SegmentOf(first))
	}
	n, err := io.CopyN(io.Discard, src, drop)
	if err != nil && err != io.EOF {
		return fmt.Errorf("failed to read input: %w", err)
	}
	spool, err := newSpool()
	if err != nil {
		return err
	}
	m, err := io.Copy(spool, src)
	if err != nil {
		return fmt.Errorf("failed to read input: %w", err)
	}
	s := &streamSource{header: hdr.Bytes(), dropped: n, spool: spool}
	s.size = int64(len(s.header)) + n + m
	return Splice(dst, s, opts)
}

// firstNeeded returns the first byte of the body plaintext that the ranges
// of what the list keeps need, or edit.Unbounded when they need none.
func firstNeeded(l edit.List, ranges []edit.Range) int64 {
	kept := l.Intervals()
	first := int64(edit.Unbounded)
	for _, rg := range ranges {
		if iv := edit.Map(kept, rg.Start, rg.End); len(iv) > 0 {
			first = min(first, iv[0].Start)
		}
	}
	return first
}

// streamSource is a file read from a stream, seen as a Source: the header,
// a hole where the dropped segments were, and the spool.
type streamSource struct {
	header  []byte
	dropped int64 // bytes of the body not kept, after the header
	spool   io.ReaderAt
	size    int64 // of the whole file
	pos     int64
}

var errDropped = errors.New("internal error: read of a segment that was dropped")

func (s *streamSource) Read(p []byte) (int, error) {
	hl := int64(len(s.header))
	switch {
	case s.pos >= s.size:
		return 0, io.EOF
	case s.pos < hl:
		n := copy(p, s.header[s.pos:])
		s.pos += int64(n)
		return n, nil
	case s.pos < hl+s.dropped:
		return 0, errDropped
	}
	n, err := s.spool.ReadAt(p[:min(int64(len(p)), s.size-s.pos)], s.pos-hl-s.dropped)
	s.pos += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

func (s *streamSource) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		off += s.pos
	case io.SeekEnd:
		off += s.size
	}
	if off < 0 {
		return 0, errors.New("negative position")
	}
	s.pos = off
	return off, nil
}
