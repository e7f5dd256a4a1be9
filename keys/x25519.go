package keys

import (
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"golang.org/x/crypto/blake2b"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
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

// Public returns the public key that belongs to sk.
func (sk *SecretKey) Public() PublicKey { return publicOf(ecdhKey(sk)) }

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

// ecdhKey is sk as a crypto/ecdh key, which computes the public key
// once, as it is made.
func ecdhKey(sk *SecretKey) *ecdh.PrivateKey {
	priv, err := ecdh.X25519().NewPrivateKey(sk[:])
	if err != nil {
		// NewPrivateKey only fails on a wrong length, which the type rules out.
		panic("keys: internal error: " + err.Error())
	}
	return priv
}

// publicOf is the public key of priv.
func publicOf(priv *ecdh.PrivateKey) PublicKey {
	var pk PublicKey
	copy(pk[:], priv.PublicKey().Bytes())
	return pk
}

func x25519(priv *ecdh.PrivateKey, pk *PublicKey) ([]byte, error) {
	pub, err := ecdh.X25519().NewPublicKey(pk[:])
	if err != nil {
		panic("keys: internal error: " + err.Error())
	}
	dh, err := priv.ECDH(pub)
	if err != nil {
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
	return readerShared(ecdhKey(reader), writer)
}

func readerShared(priv *ecdh.PrivateKey, writer PublicKey) ([KeySize]byte, error) {
	dh, err := x25519(priv, &writer)
	if err != nil {
		return [KeySize]byte{}, err
	}
	rpk := publicOf(priv)
	return sessionKey(dh, &rpk, &writer), nil
}

// WriterSharedKey returns the key that protects a header packet, computed on
// the writer's side from the writer's secret key and the recipient's public
// key (libsodium's crypto_kx_server_session_keys, tx).
func WriterSharedKey(writer *SecretKey, reader PublicKey) ([KeySize]byte, error) {
	priv := ecdhKey(writer)
	dh, err := x25519(priv, &reader)
	if err != nil {
		return [KeySize]byte{}, err
	}
	wpk := publicOf(priv)
	return sessionKey(dh, &reader, &wpk), nil
}

// A Reader is a secret key made ready to open the headers of many files:
// its public key, which every packet key involves, is computed once
// rather than for each packet, so that opening a header costs one X25519
// exchange. It is an [Opener].
//
// The caller should call [Reader.Zero] once it is no longer needed.
type Reader struct {
	priv *ecdh.PrivateKey
	pub  PublicKey
}

var _ Opener = (*Reader)(nil)

// NewReader returns sk made ready to open headers. sk may be zeroed
// afterwards: the Reader holds its own copy.
func NewReader(sk *SecretKey) *Reader {
	priv := ecdhKey(sk)
	return &Reader{priv: priv, pub: publicOf(priv)}
}

// Public returns the public key of the reader.
func (r *Reader) Public() PublicKey { return r.pub }

// SharedKey returns the packet key of the packets that writer sealed for
// r, as [ReaderSharedKey] does.
func (r *Reader) SharedKey(writer PublicKey) ([KeySize]byte, error) {
	if r.priv == nil {
		return [KeySize]byte{}, errors.New("keys: the reader key was zeroed")
	}
	return readerShared(r.priv, writer)
}

// OpenPacket decrypts a method-0 header packet written by writer, as
// [SecretKey.OpenPacket] does.
func (r *Reader) OpenPacket(writer PublicKey, nonce *[NonceSize]byte, ciphertext []byte) ([]byte, error) {
	if r == nil || r.priv == nil {
		return nil, fmt.Errorf("%w: no reader key", ErrPacketAuth)
	}
	k, err := r.SharedKey(writer)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPacketAuth, err)
	}
	defer clear(k[:])
	return OpenPacketWith(&k, nonce, ciphertext)
}

// Zero drops the key. crypto/ecdh gives no way to overwrite its copy of
// the scalar: it is left to the garbage collector, as the copies made by
// every exchange are.
func (r *Reader) Zero() { r.priv = nil }
