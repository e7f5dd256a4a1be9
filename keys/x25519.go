package keys

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"golang.org/x/crypto/blake2b"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
	curve "github.com/c4gh-go/crypt4gh/internal/x25519"
)

// KeySize is the size in bytes of X25519 public and secret keys.
const KeySize = 32

// PublicKey is an X25519 public key: the Montgomery u-coordinate of the
// point, as stored in crypt4gh public key files and header packets.
type PublicKey [KeySize]byte

// SecretKey is an X25519 secret key (a 32-byte scalar, clamped when used).
//
// The caller should call [SecretKey.Zero] once the key is no longer needed.
type SecretKey [KeySize]byte

// String returns the public key as it appears in a crypt4gh public key
// file: the standard base64 of its 32 bytes, with padding (44 characters).
func (pk PublicKey) String() string { return base64.StdEncoding.EncodeToString(pk[:]) }

// Hex returns the public key in lowercase hexadecimal (64 characters), as
// libsodium-based tools and the test vectors' manifests print it.
func (pk PublicKey) Hex() string { return hex.EncodeToString(pk[:]) }

// Public returns the public key that belongs to sk: the X25519 of sk and
// the base point, as crypto/ecdh gives it. It is the ladder, not a
// fixed-base multiplication on the twisted Edwards curve: that is three
// times faster once its table of multiples of the base point is built,
// but the table is built on the first call, about 1 ms (0.8 to 1.2 in a
// new process, against 0.04 for the ladder): a cost that each run of the
// command paid for its one or two public keys.
func (sk *SecretKey) Public() PublicKey {
	var pk PublicKey
	base := [KeySize]byte{9}
	if err := curve.X25519((*[KeySize]byte)(&pk), (*[KeySize]byte)(sk), &base); err != nil {
		// The base point is of prime order: no scalar gives zero.
		panic("keys: internal error: " + err.Error())
	}
	return pk
}

// Zero overwrites the key material with zeros.
func (sk *SecretKey) Zero() { clear(sk[:]) }

// Generate returns a new random secret key read from rand, or from
// crypto/rand when rand is nil.
func Generate(r io.Reader) (SecretKey, error) {
	var sk SecretKey
	if r == nil {
		r = rand.Reader
	}
	if _, err := io.ReadFull(r, sk[:]); err != nil {
		return SecretKey{}, fmt.Errorf("failed to generate key: %w", err)
	}
	return sk, nil
}

// ErrLowOrderPoint is returned when a Diffie-Hellman exchange gives the
// all-zero shared secret (the peer's public key is a low-order point).
var ErrLowOrderPoint = errkind.New(errkind.Key, "public key is a low-order point")

// ErrZeroKey is returned for a secret key of 32 zero bytes: one that was
// erased by its Zero method, or never set. Its shared keys are no secret:
// anyone can compute them from the other side's public key.
var ErrZeroKey = errkind.New(errkind.Key, "secret key is all zeros (erased, or never set)")

// x25519 is the shared secret of sk and pk: one scalar multiplication (see
// internal/x25519).
func x25519(sk *SecretKey, pk *PublicKey) ([]byte, error) {
	if subtle.ConstantTimeCompare(sk[:], make([]byte, KeySize)) == 1 {
		return nil, ErrZeroKey
	}
	dh := make([]byte, KeySize)
	if err := curve.X25519((*[KeySize]byte)(dh), (*[KeySize]byte)(sk), (*[KeySize]byte)(pk)); err != nil {
		return nil, ErrLowOrderPoint
	}
	return dh, nil
}

// sessionKey is libsodium's crypto_kx: the first 32 bytes of
// BLAKE2b-512(dh || client_pk || server_pk).
func sessionKey(dh []byte, client, server *PublicKey) [KeySize]byte {
	h, _ := blake2b.New512(nil)
	h.Write(dh)
	h.Write(client[:])
	h.Write(server[:])
	var sum [blake2b.Size]byte
	h.Sum(sum[:0])
	var k [KeySize]byte
	copy(k[:], sum[:KeySize])
	clear(sum[:])
	clear(dh)
	return k
}

// ReaderSharedKey returns the key that protects a header packet, computed on
// the reader's side from the reader's secret key and the writer public key
// stored in the packet (libsodium's crypto_kx_client_session_keys, rx).
func ReaderSharedKey(reader *SecretKey, writer PublicKey) ([KeySize]byte, error) {
	return readerShared(reader, reader.Public(), writer)
}

// readerShared is ReaderSharedKey with the reader's public key rpk given.
func readerShared(reader *SecretKey, rpk, writer PublicKey) ([KeySize]byte, error) {
	dh, err := x25519(reader, &writer)
	if err != nil {
		return [KeySize]byte{}, err
	}
	return sessionKey(dh, &rpk, &writer), nil
}

// WriterSharedKey returns the key that protects a header packet, computed on
// the writer's side from the writer's secret key and the recipient's public
// key (libsodium's crypto_kx_server_session_keys, tx).
func WriterSharedKey(writer *SecretKey, reader PublicKey) ([KeySize]byte, error) {
	dh, err := x25519(writer, &reader)
	if err != nil {
		return [KeySize]byte{}, err
	}
	wpk := writer.Public()
	return sessionKey(dh, &reader, &wpk), nil
}

// A Reader is a secret key made ready to open the headers of many files:
// its public key, which every packet key involves, is computed once
// rather than for each packet, so that opening a packet costs one X25519
// exchange. It is an [Opener].
//
// The caller should call [Reader.Zero] once it is no longer needed.
type Reader struct {
	sk   SecretKey
	pub  PublicKey
	live bool
}

var _ Opener = (*Reader)(nil)

// NewReader returns sk made ready to open headers. sk may be zeroed
// afterwards: the Reader holds its own copy.
func NewReader(sk *SecretKey) *Reader {
	return &Reader{sk: *sk, pub: sk.Public(), live: true}
}

// Public returns the public key of the reader.
func (r *Reader) Public() PublicKey { return r.pub }

// SharedKey returns the packet key of the packets that writer sealed for
// r, as [ReaderSharedKey] does.
func (r *Reader) SharedKey(writer PublicKey) ([KeySize]byte, error) {
	if !r.live {
		return [KeySize]byte{}, errors.New("keys: the reader key was zeroed")
	}
	return readerShared(&r.sk, r.pub, writer)
}

// OpenPacket decrypts a method-0 header packet written by writer, as
// [SecretKey.OpenPacket] does.
func (r *Reader) OpenPacket(writer PublicKey, nonce *[NonceSize]byte, ciphertext []byte) ([]byte, error) {
	if r == nil || !r.live {
		return nil, fmt.Errorf("%w: no reader key", ErrPacketAuth)
	}
	k, err := r.SharedKey(writer)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPacketAuth, err)
	}
	defer clear(k[:])
	return OpenPacketWith(&k, nonce, ciphertext)
}

// Zero overwrites the key with zeros; the Reader opens nothing after it.
func (r *Reader) Zero() {
	r.sk.Zero()
	r.live = false
}
