package body

import (
	"crypto/cipher"
	"fmt"

	"golang.org/x/crypto/chacha20poly1305"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
)

// This file holds every rule about one segment: its geometry, when a body
// that ends inside a segment is truncated, and how a segment is sealed and
// opened. The streams, the ReaderAt and the parallel engine call it.

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
	ErrAuth = errkind.New(errkind.Data, "failed authentication")
	// ErrTruncated means that the body ends inside a segment, too early for
	// that segment to hold anything.
	ErrTruncated = errkind.New(errkind.Data, "truncated")

	errNoKey = errkind.New(errkind.Usage, "no data key")
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

// Offset returns where segment e.Index starts in a body that follows a
// header of headerSize bytes: its offset in the file.
func (e *SegmentError) Offset(headerSize int64) int64 {
	return headerSize + EncryptedOffset(e.Index)
}

// SegmentOf returns the index of the segment that holds byte off of the
// plaintext.
func SegmentOf(off int64) int64 { return off / SegmentSize }

// PlaintextOffset returns where segment index starts in the plaintext.
func PlaintextOffset(index int64) int64 { return index * SegmentSize }

// EncryptedOffset returns where segment index starts in the encrypted
// body.
func EncryptedOffset(index int64) int64 { return index * EncryptedSegmentSize }

// Floor returns off rounded down to the start of its segment: the
// plaintext of whole segments among the first off bytes.
func Floor(off int64) int64 { return PlaintextOffset(SegmentOf(off)) }

// SegmentEnd returns where a read of the plaintext from off should stop
// so as not to go past end nor past the end of off's segment: reads cut
// there open no segment twice.
func SegmentEnd(off, end int64) int64 {
	return min(end, PlaintextOffset(SegmentOf(off)+1))
}

// SegmentCount returns how many segments a plaintext of the given length
// is cut into: the last one may be shorter than SegmentSize. A length of
// 0 or less has none.
func SegmentCount(plaintext int64) int64 {
	if plaintext <= 0 {
		return 0
	}
	return (plaintext-1)/SegmentSize + 1 // not past the largest int64
}

// StoredSegments returns how many segments an encrypted body of the given
// length holds, counting a last one that is shorter than a full segment
// (even one too short to be valid, see [PlaintextSize]). A length of 0 or
// less holds none.
func StoredSegments(encrypted int64) int64 {
	if encrypted <= 0 {
		return 0
	}
	return (encrypted-1)/EncryptedSegmentSize + 1
}

// StoredLength returns the length of segment index as stored in an
// encrypted body of the given length: EncryptedSegmentSize for all but
// the last, which may be shorter, and 0 past the end.
func StoredLength(encrypted, index int64) int64 {
	return max(min(encrypted-EncryptedOffset(index), EncryptedSegmentSize), 0)
}

// ShortLast reports whether segment index is the last of an encrypted
// body of the given length and is shorter than a full segment: where a
// body that was cut short in transfer fails.
func ShortLast(encrypted, index int64) bool {
	n := StoredLength(encrypted, index)
	return n > 0 && n < EncryptedSegmentSize
}

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
		return 0, errkind.Errorf(errkind.Usage, "negative encrypted size %d", encrypted)
	}
	full, r := encrypted/EncryptedSegmentSize, encrypted%EncryptedSegmentSize
	if err := checkLength(full, int(r)); err != nil {
		return 0, err
	}
	n := full * SegmentSize
	if r > 0 {
		n += r - Overhead
	}
	return n, nil
}

// checkLength returns the error for segment index when its stored length
// n is impossible: more than nothing, but too short to hold a nonce and a
// tag. Only the last segment of a body can be shorter than
// EncryptedSegmentSize.
func checkLength(index int64, n int) error {
	if n > 0 && n < Overhead {
		return &SegmentError{Index: index, Err: ErrTruncated}
	}
	return nil
}

// newAEAD returns the cipher of a data key.
func newAEAD(key *[32]byte) cipher.AEAD {
	aead, err := chacha20poly1305.New(key[:])
	if err != nil {
		panic("body: internal error: " + err.Error()) // the key length is fixed
	}
	return aead
}

// seal encrypts plaintext under aead with nonce and appends nonce ||
// ciphertext || tag to dst[:0]. dst may be the buffer that holds
// plaintext at dst[NonceSize:]: sealing is done in place then.
func seal(aead cipher.AEAD, dst, nonce, plaintext []byte) []byte {
	copy(dst[:NonceSize], nonce)
	return aead.Seal(dst[:NonceSize], dst[:NonceSize], plaintext, nil)
}

// keyring holds one AEAD per distinct data key, built once.
type keyring []cipher.AEAD

func newKeyring(keys [][32]byte) (keyring, error) {
	if len(keys) == 0 {
		return nil, errNoKey
	}
	k := make(keyring, 0, len(keys))
	for i := range keys {
		if dup(keys[:i], &keys[i]) {
			continue
		}
		k = append(k, newAEAD(&keys[i]))
	}
	return k, nil
}

func dup(keys [][32]byte, key *[32]byte) bool {
	for i := range keys {
		if keys[i] == *key {
			return true
		}
	}
	return false
}

// inPlace reports whether a segment may be opened in place. A failed Open
// overwrites its output, so with several keys the ciphertext must survive
// each attempt and the plaintext has to go elsewhere.
func (k keyring) inPlace() bool { return len(k) == 1 }

// open authenticates and decrypts seg, segment index of the body (nonce ||
// ciphertext || tag, at least Overhead bytes), by appending to dst, trying
// the key at index *last first and then the others; on success *last is
// the key that worked. dst must not overlap seg unless k.inPlace(), in
// which case it may be seg[NonceSize:NonceSize]. A segment that no key
// opens is a *SegmentError with ErrAuth.
func (k keyring) open(dst, seg []byte, index int64, last *int) ([]byte, error) {
	nonce, ct := seg[:NonceSize], seg[NonceSize:]
	if out, err := k[*last].Open(dst, nonce, ct, nil); err == nil {
		return out, nil
	}
	for i := range k {
		if i == *last {
			continue
		}
		if out, err := k[i].Open(dst, nonce, ct, nil); err == nil {
			*last = i
			return out, nil
		}
	}
	return nil, &SegmentError{Index: index, Err: ErrAuth}
}

// openScratch is open with an output buffer chosen for k: the segment
// itself when k opens in place, scratch (SegmentSize bytes) otherwise.
func (k keyring) openScratch(scratch, seg []byte, index int64, last *int) ([]byte, error) {
	if k.inPlace() {
		return k.open(seg[NonceSize:NonceSize], seg, index, last)
	}
	return k.open(scratch[:0], seg, index, last)
}

// Authenticate checks that the stored segment seg, segment index of a body,
// authenticates under one of the data keys, without keeping its
// plaintext. It fails with a [*SegmentError]: [ErrTruncated] for a segment
// too short to hold a nonce and a tag, [ErrAuth] when no key opens it. seg
// is not changed.
func Authenticate(seg []byte, index int64, keys [][32]byte) error {
	o, err := NewOpener(keys)
	if err != nil {
		return err
	}
	_, err = o.Open(seg, index)
	return err
}

// Opener opens stored segments one at a time, out of the order of a body,
// as a caller that copies some segments and checks each needs: it builds
// the ciphers once and owns one plaintext buffer. Create it with
// [NewOpener]. An Opener is not safe for concurrent use.
type Opener struct {
	k    keyring
	last int // the key that opened the previous segment
	buf  []byte
}

// NewOpener returns an Opener for the data keys of a file.
func NewOpener(keys [][32]byte) (*Opener, error) {
	k, err := newKeyring(keys)
	if err != nil {
		return nil, err
	}
	return &Opener{k: k}, nil
}

// Open authenticates and decrypts the stored segment seg, segment index of
// a body, and returns its plaintext in a buffer of the Opener that the
// next call overwrites. It fails as [Authenticate] does; seg is not
// changed.
func (o *Opener) Open(seg []byte, index int64) ([]byte, error) {
	if len(seg) < Overhead || len(seg) > EncryptedSegmentSize {
		return nil, &SegmentError{Index: index, Err: ErrTruncated}
	}
	if o.buf == nil {
		o.buf = make([]byte, 0, SegmentSize)
	}
	return o.k.open(o.buf[:0], seg, index, &o.last)
}
