package body

import (
	"crypto/cipher"
	"fmt"

	"golang.org/x/crypto/chacha20poly1305"
)

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
		aead, err := chacha20poly1305.New(keys[i][:])
		if err != nil {
			return nil, fmt.Errorf("body: %w", err)
		}
		k = append(k, aead)
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

// open authenticates and decrypts seg (nonce || ciphertext || tag, at least
// Overhead bytes) by appending to dst, trying the key at index *last first
// and then the others; on success *last is the key that worked. dst must
// not overlap seg unless k.inPlace(), in which case it may be
// seg[NonceSize:NonceSize].
func (k keyring) open(dst, seg []byte, last *int) ([]byte, bool) {
	nonce, ct := seg[:NonceSize], seg[NonceSize:]
	if out, err := k[*last].Open(dst, nonce, ct, nil); err == nil {
		return out, true
	}
	for i := range k {
		if i == *last {
			continue
		}
		if out, err := k[i].Open(dst, nonce, ct, nil); err == nil {
			*last = i
			return out, true
		}
	}
	return nil, false
}

// openScratch is open with an output buffer chosen for k: the segment
// itself when k opens in place, scratch (SegmentSize bytes) otherwise.
func (k keyring) openScratch(scratch, seg []byte, last *int) ([]byte, bool) {
	if k.inPlace() {
		return k.open(seg[NonceSize:NonceSize], seg, last)
	}
	return k.open(scratch[:0], seg, last)
}
