package keys

import (
	"fmt"

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

// IsNil reports whether o is nil or a nil *SecretKey: no opener at all.
func IsNil(o Opener) bool {
	if o == nil {
		return true
	}
	sk, ok := o.(*SecretKey)
	return ok && sk == nil
}
