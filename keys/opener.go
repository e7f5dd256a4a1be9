package keys

import (
	"crypto/hkdf"
	cryptorand "crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"

	"golang.org/x/crypto/chacha20poly1305"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
)

// NonceSize is the size in bytes of the ChaCha20-Poly1305 nonce of a
// header packet.
const NonceSize = chacha20poly1305.NonceSize

// ErrPacketAuth is returned by [Opener.OpenPacket] when a header packet
// cannot be opened with the opener's keys: it does not authenticate (it
// belongs to another reader or was altered). The header package adds its
// own header.ErrPacketAuth to it.
var ErrPacketAuth = errkind.New(errkind.Key, "header packet cannot be opened with this key")

// An Opener opens the header packets sealed for a reader (method 0:
// X25519 and ChaCha20-Poly1305). A [*SecretKey] is one; the client of a
// key agent, which asks the agent that holds the secret key and never sees
// it, is another.
type Opener interface {
	// OpenPacket decrypts the ciphertext (tag included) of a method-0
	// header packet that writer sealed with nonce, and returns its
	// plaintext payload, which the caller should clear when done.
	//
	// It returns an error wrapping [ErrPacketAuth] when the packet is not
	// for the opener's keys or was altered: a reader skips such packets.
	// Any other error means that the opener itself failed (an agent that
	// is unreachable, locked, or whose key expired): the caller should stop
	// and report it.
	OpenPacket(writer PublicKey, nonce *[NonceSize]byte, ciphertext []byte) ([]byte, error)
}

var _ Opener = (*SecretKey)(nil)

// OpenPacket decrypts a method-0 header packet written by writer with the
// packet key of sk and writer ([ReaderSharedKey]).
func (sk *SecretKey) OpenPacket(writer PublicKey, nonce *[NonceSize]byte, ciphertext []byte) ([]byte, error) {
	if sk == nil {
		return nil, fmt.Errorf("%w: no reader key", ErrPacketAuth)
	}
	k, err := ReaderSharedKey(sk, writer)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPacketAuth, err)
	}
	defer clear(k[:])
	return OpenPacketWith(&k, nonce, ciphertext)
}

// OpenPacketWith decrypts a method-0 header packet with its packet key k,
// as computed by [ReaderSharedKey] or [WriterSharedKey]. It fails with
// [ErrPacketAuth] when the packet does not authenticate under k.
func OpenPacketWith(k *[KeySize]byte, nonce *[NonceSize]byte, ciphertext []byte) ([]byte, error) {
	aead, err := chacha20poly1305.New(k[:])
	if err != nil {
		panic("keys: internal error: " + err.Error())
	}
	if len(ciphertext) < aead.Overhead() {
		return nil, fmt.Errorf("%w: ciphertext of %d bytes is shorter than the tag", ErrPacketAuth, len(ciphertext))
	}
	pt, err := aead.Open(nil, nonce[:], ciphertext, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: authentication failed", ErrPacketAuth)
	}
	return pt, nil
}

// IsNil reports whether o is nil, a nil *SecretKey or a nil *Reader: no
// opener at all.
func IsNil(o Opener) bool {
	switch k := o.(type) {
	case nil:
		return true
	case *SecretKey:
		return k == nil
	case *Reader:
		return k == nil
	}
	return false
}

// A Writer seals header packets with a secret key as their writer, and
// opens the packets it wrote: a [*SecretKey] is one; a key held by an
// agent, which seals for its client without giving out the key, is
// another.
type Writer interface {
	// Public returns the writer public key that the packets record.
	Public() PublicKey
	// SealPacketFor encrypts payload for recipient (method 0) and
	// returns the nonce and the ciphertext with its tag. The nonce is
	// read from rand (crypto/rand when nil), except by an agent, which
	// draws its own.
	SealPacketFor(recipient PublicKey, payload []byte, rand io.Reader) (nonce [NonceSize]byte, ciphertext []byte, err error)
	// OpenPacketAsWriter decrypts a method-0 packet that this key wrote
	// for recipient. It fails with an error wrapping [ErrPacketAuth]
	// for a packet written for another recipient or by another key.
	OpenPacketAsWriter(recipient PublicKey, nonce *[NonceSize]byte, ciphertext []byte) ([]byte, error)
}

// A Holder is the secret key of a reader that writes header packets as
// itself (re-encryption, splicing): it opens the packets sealed for it
// and seals new ones with itself as the writer.
type Holder interface {
	Opener
	Writer
}

var _ Holder = (*SecretKey)(nil)

// SealPacketFor encrypts payload for recipient with the packet key of sk
// and recipient ([WriterSharedKey]) under a nonce read from rand.
func (sk *SecretKey) SealPacketFor(recipient PublicKey, payload []byte, rand io.Reader) (nonce [NonceSize]byte, ciphertext []byte, err error) {
	if sk == nil {
		return nonce, nil, errors.New("no writer key")
	}
	if rand == nil {
		rand = cryptorand.Reader
	}
	if _, err := io.ReadFull(rand, nonce[:]); err != nil {
		return nonce, nil, fmt.Errorf("reading nonce: %w", err)
	}
	k, err := WriterSharedKey(sk, recipient)
	if err != nil {
		return nonce, nil, err
	}
	defer clear(k[:])
	aead, err := chacha20poly1305.New(k[:])
	if err != nil {
		panic("keys: internal error: " + err.Error())
	}
	return nonce, aead.Seal(make([]byte, 0, len(payload)+aead.Overhead()), nonce[:], payload, nil), nil
}

// OpenPacketAsWriter decrypts a method-0 packet that sk wrote for
// recipient.
func (sk *SecretKey) OpenPacketAsWriter(recipient PublicKey, nonce *[NonceSize]byte, ciphertext []byte) ([]byte, error) {
	if sk == nil {
		return nil, fmt.Errorf("%w: no writer key", ErrPacketAuth)
	}
	k, err := WriterSharedKey(sk, recipient)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPacketAuth, err)
	}
	defer clear(k[:])
	return OpenPacketWith(&k, nonce, ciphertext)
}

// Derive returns a 32-byte secret for the purpose that label names,
// derived from sk with HKDF-SHA256 (sk as the input key, no salt, label
// as the info): the same for every holder of sk, and telling nothing of
// sk itself. A server that signs its URLs with it needs no key of its
// own, and every instance of it that holds sk signs alike.
func (sk *SecretKey) Derive(label string) ([]byte, error) {
	return hkdf.Key(sha256.New, sk[:], nil, label, 32)
}
