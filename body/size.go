package body

import (
	"errors"
	"fmt"
)

// Segment geometry of the Crypt4GH body (data method 0,
// chacha20_ietf_poly1305).
const (
	// SegmentSize is the length of a full plaintext segment.
	SegmentSize = 65536
	// NonceSize is the length of the random nonce that starts every
	// encrypted segment.
	NonceSize = 12
	// TagSize is the length of the Poly1305 tag that ends every encrypted
	// segment.
	TagSize = 16
	// Overhead is what encryption adds to each segment.
	Overhead = NonceSize + TagSize
	// EncryptedSegmentSize is the length of a full encrypted segment.
	EncryptedSegmentSize = SegmentSize + Overhead
)

var (
	// ErrAuth means that a segment failed authentication under every data
	// key: a wrong key, or corrupted or forged data.
	ErrAuth = errors.New("failed authentication")
	// ErrTruncated means that the body ends inside a segment, too early for
	// that segment to hold anything.
	ErrTruncated = errors.New("truncated")

	errNoKey = errors.New("body: no data key")
)

// SegmentError reports a segment that cannot be decrypted. Err is [ErrAuth]
// or [ErrTruncated].
type SegmentError struct {
	Index int64 // index of the segment in the body, from 0
	Err   error
}

// Error names the segment and what happened to it, as in "segment 3 failed
// authentication" or "segment 3 is truncated": the message a user sees.
func (e *SegmentError) Error() string {
	switch e.Err {
	case ErrAuth:
		return fmt.Sprintf("segment %d failed authentication", e.Index)
	case ErrTruncated:
		return fmt.Sprintf("segment %d is truncated", e.Index)
	}
	return fmt.Sprintf("segment %d: %v", e.Index, e.Err)
}

// Unwrap returns e.Err, so that errors.Is(err, ErrAuth) works.
func (e *SegmentError) Unwrap() error { return e.Err }

// maxPlaintext is the largest plaintext whose encrypted size fits in an
// int64.
const (
	maxInt64     = 1<<63 - 1
	maxPlaintext = maxInt64/EncryptedSegmentSize*SegmentSize +
		max(maxInt64%EncryptedSegmentSize-Overhead, 0)
)

// EncryptedSize returns the length of the encrypted body of a plaintext of
// the given length. It returns -1 for a negative length or one whose
// encryption would be longer than the largest int64.
func EncryptedSize(plaintext int64) int64 {
	if plaintext < 0 || plaintext > maxPlaintext {
		return -1
	}
	n := plaintext / SegmentSize * EncryptedSegmentSize
	if r := plaintext % SegmentSize; r != 0 {
		n += r + Overhead
	}
	return n
}

// PlaintextSize returns the length of the plaintext held by an encrypted
// body of the given length. A length whose last segment is shorter than
// [Overhead] bytes is impossible and yields a [*SegmentError] with
// [ErrTruncated]; a last segment of exactly Overhead bytes is an empty
// segment and holds no plaintext.
func PlaintextSize(encrypted int64) (int64, error) {
	if encrypted < 0 {
		return 0, fmt.Errorf("body: negative encrypted size %d", encrypted)
	}
	full, r := encrypted/EncryptedSegmentSize, encrypted%EncryptedSegmentSize
	n := full * SegmentSize
	switch {
	case r == 0:
	case r < Overhead:
		return 0, &SegmentError{Index: full, Err: ErrTruncated}
	default:
		n += r - Overhead
	}
	return n, nil
}
