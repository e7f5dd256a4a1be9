package reencrypt

import (
	"errors"
	"fmt"
	"io"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/keys"
)

// CheckLastSegment checks the body of bodySize bytes that starts at
// bodyStart of src, the file whose header is h, as [CopyBody] does before
// it writes the last segment: its length is possible ([body.ErrTruncated]
// when it ends too early inside a segment), and its last segment
// authenticates under the data keys that reader opens in h ([body.ErrAuth]
// in a [*body.SegmentError]: a body cut inside its last segment at a
// plausible length). It reads that segment only, so that a caller that
// copies a file's body with io.Copy (in the kernel, when both ends are
// files) can check it first.
func CheckLastSegment(src io.ReaderAt, bodyStart, bodySize int64, h *header.Header, reader keys.Opener) error {
	if _, err := body.PlaintextSize(bodySize); err != nil || bodySize == 0 {
		return err
	}
	c, err := h.Decrypt(reader, nil)
	if err != nil {
		return err
	}
	defer c.Zero()
	last := body.StoredSegments(bodySize) - 1
	off := body.EncryptedOffset(last)
	seg := make([]byte, bodySize-off)
	if n, err := src.ReadAt(seg, bodyStart+off); n < len(seg) {
		if err == nil || errors.Is(err, io.EOF) {
			return fmt.Errorf("%w: the input shrank while it was read", io.ErrUnexpectedEOF)
		}
		return fmt.Errorf("failed to read segment %d: %w", last, err)
	}
	return body.Authenticate(seg, last, c.DataKeys)
}

// CopyBody copies the body of the file whose header h was read from src,
// unchanged, from src to dst, and returns its length. src is read to its
// end, one segment at a time, and each segment is held until the next one
// has been read, so that the last one is checked as [CheckLastSegment]
// checks it before it is written: when the check fails, dst lacks the last
// segment. The other segments are not authenticated: re-encryption does
// not decrypt the body.
func CopyBody(dst io.Writer, src io.Reader, h *header.Header, reader keys.Opener) (int64, error) {
	c, err := h.Decrypt(reader, nil)
	if err != nil {
		return 0, err
	}
	defer c.Zero()
	return copyStream(dst, src, c.DataKeys)
}

// copyStream copies a body of unknown length one segment at a time,
// holding each until the next one has been read, so that the last one is
// authenticated before it is written.
func copyStream(dst io.Writer, src io.Reader, keys [][32]byte) (int64, error) {
	held := make([]byte, body.EncryptedSegmentSize)
	next := make([]byte, body.EncryptedSegmentSize)
	var written int64
	held, index := held[:0], int64(0) // the segment held, and its index
	for {
		k, err := io.ReadFull(src, next)
		if k == 0 && err == io.EOF {
			break
		}
		if err != nil && err != io.ErrUnexpectedEOF {
			return written, fmt.Errorf("failed to read the body: %w", err)
		}
		// A segment follows the one held: that one is not the last.
		if len(held) > 0 {
			if _, err := dst.Write(held); err != nil {
				return written, err
			}
			written += int64(len(held))
			index++
		}
		held, next = next[:k], held[:cap(held)]
		if err == io.ErrUnexpectedEOF {
			break // a short segment ends the body
		}
	}
	if len(held) == 0 {
		return written, nil
	}
	if err := body.Authenticate(held, index, keys); err != nil {
		return written, err
	}
	m, err := dst.Write(held)
	return written + int64(m), err
}
