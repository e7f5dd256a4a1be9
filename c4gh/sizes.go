package c4gh

import "github.com/c4gh-go/crypt4gh/body"

// The sizes of a body and the error of one of its segments, for programs
// that plan storage or report failures without the segment layer itself
// (package body).

// SegmentSize is the plaintext that one segment holds, and
// EncryptedSegmentSize what that segment takes stored.
const (
	SegmentSize          = body.SegmentSize
	EncryptedSegmentSize = body.EncryptedSegmentSize
)

// EncryptedSize returns the length of the body that encrypts plaintext
// bytes.
func EncryptedSize(plaintext int64) int64 { return body.EncryptedSize(plaintext) }

// PlaintextSize returns the plaintext that a body of encrypted bytes
// holds, or an error when no body has that length.
func PlaintextSize(encrypted int64) (int64, error) { return body.PlaintextSize(encrypted) }

// SegmentError is the error of a segment that cannot be decrypted: its
// index, and whether it failed authentication or is truncated.
type SegmentError = body.SegmentError

// CutShort reports whether se failed authentication as the last segment
// of a body of encrypted bytes, shorter than a full one: the failure of a
// file cut short in transfer.
func CutShort(se *SegmentError, encrypted int64) bool {
	return se.Err == body.ErrAuth && body.ShortLast(encrypted, se.Index)
}

// Jobs returns how many segments are decrypted or sealed at once for a
// --jobs of jobs: runtime.GOMAXPROCS(0) when jobs is 0 or less, and at
// most 256.
func Jobs(jobs int) int { return body.Jobs(jobs) }
