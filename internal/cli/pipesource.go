package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/keys"
)

// rearrange and splice copy segments by offset. From a pipe, as the
// reference tool does, the segments before the first one that a range
// needs are read and dropped, and the others are held in a temporary
// file (ciphertext only, removed when the command ends) from which they
// are copied by offset.

// pipeSource is a crypt4gh file read from a stream, seen as a file: the
// header, a hole where the dropped segments were, and the spool.
type pipeSource struct {
	header  []byte
	dropped int64    // bytes of the body not kept, after the header
	spool   *os.File // the rest of the body
	size    int64    // of the whole file
	pos     int64
}

var errDropped = errors.New("internal error: read of a segment that was dropped")

// newPipeSource reads the file from r: the header (opened with sk to find
// the first segment that ranges, over what the file stands for, need),
// and the body, keeping it from that segment on in a temporary file in
// dir. The caller must call close.
func newPipeSource(r io.Reader, sk *keys.SecretKey, ranges []edit.Range, dir string) (*pipeSource, error) {
	var hdr bytes.Buffer
	h, err := header.Parse(io.TeeReader(r, &hdr))
	if err != nil {
		return nil, err
	}
	c, err := h.Decrypt(sk, nil)
	if err != nil {
		return nil, err
	}
	var kept []edit.Interval
	if c.HasEditList {
		kept = edit.List(c.EditList).Intervals()
	}
	c.Zero()
	first := int64(edit.Unbounded)
	for _, rg := range ranges {
		if iv := edit.Map(kept, rg.Start, rg.End); len(iv) > 0 {
			first = min(first, iv[0].Start)
		}
	}
	drop := int64(0)
	if first != edit.Unbounded {
		drop = first / body.SegmentSize * body.EncryptedSegmentSize
	}
	n, err := io.CopyN(io.Discard, r, drop)
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("failed to read input: %w", err)
	}
	spool, err := createTemp(filepath.Join(dir, "crypt4gh-spool"), modeSecret)
	if err != nil {
		return nil, fmt.Errorf("failed to create a temporary file for the input in %s: %w", quoteName(dir), pathErr(err))
	}
	s := &pipeSource{header: hdr.Bytes(), dropped: n, spool: spool}
	m, err := io.Copy(spool, r)
	if err != nil {
		s.close()
		return nil, fmt.Errorf("failed to read input: %w", err)
	}
	s.size = int64(len(s.header)) + n + m
	return s, nil
}

func (s *pipeSource) Read(p []byte) (int, error) {
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

func (s *pipeSource) Seek(off int64, whence int) (int64, error) {
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

func (s *pipeSource) close() {
	name := s.spool.Name()
	s.spool.Close()
	os.Remove(name)
	cleanup.forget(name)
}
