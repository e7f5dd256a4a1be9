//go:build sodium

package sodium

/*
#cgo pkg-config: libsodium
#include <sodium.h>
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"
)

// Sizes of the libsodium primitives bound here.
const (
	KeySize           = 32 // X25519 keys, crypto_kx keys, AEAD keys, Ed25519 seeds and public keys
	Ed25519SecretSize = 64 // seed || public key
	AEADNonceSize     = 12 // crypto_aead_chacha20poly1305_IETF_NPUBBYTES
	AEADTagSize       = 16 // crypto_aead_chacha20poly1305_IETF_ABYTES
)

var (
	// ErrInit is returned by every function when sodium_init failed.
	ErrInit = errors.New("sodium: sodium_init failed")
	// ErrAuth is returned by AEADDecrypt when the ciphertext does not
	// authenticate.
	ErrAuth = errors.New("sodium: message forged or corrupted")
	// ErrFailed is returned when a libsodium function reports an error
	// other than a failed authentication (a low-order point, a key that
	// cannot be converted, a wrong length).
	ErrFailed = errors.New("sodium: operation failed")
)

// ensureInit calls sodium_init exactly once.
var ensureInit = sync.OnceValue(func() error {
	if C.sodium_init() < 0 {
		return ErrInit
	}
	// Check that the header we compiled against agrees with the library
	// about the sizes the Go side hard-codes.
	if C.crypto_scalarmult_bytes() != KeySize ||
		C.crypto_kx_sessionkeybytes() != KeySize ||
		C.crypto_aead_chacha20poly1305_ietf_keybytes() != KeySize ||
		C.crypto_aead_chacha20poly1305_ietf_npubbytes() != AEADNonceSize ||
		C.crypto_aead_chacha20poly1305_ietf_abytes() != AEADTagSize ||
		C.crypto_sign_ed25519_secretkeybytes() != Ed25519SecretSize {
		return fmt.Errorf("%w: unexpected primitive sizes", ErrInit)
	}
	return nil
})

// uc returns a C pointer to the first byte of b, or nil when b is empty.
func uc(b []byte) *C.uchar {
	if len(b) == 0 {
		return nil
	}
	return (*C.uchar)(unsafe.Pointer(&b[0]))
}

// ScalarMultBase returns the X25519 public key of sk
// (crypto_scalarmult_base).
func ScalarMultBase(sk [KeySize]byte) ([KeySize]byte, error) {
	var pk [KeySize]byte
	if err := ensureInit(); err != nil {
		return pk, err
	}
	if C.crypto_scalarmult_base(uc(pk[:]), uc(sk[:])) != 0 {
		return [KeySize]byte{}, fmt.Errorf("%w: crypto_scalarmult_base", ErrFailed)
	}
	return pk, nil
}

// KXClientSessionKeys returns the client's receive and transmit keys
// (crypto_kx_client_session_keys). It fails when serverPK is a low-order
// point.
func KXClientSessionKeys(clientPK, clientSK, serverPK [KeySize]byte) (rx, tx [KeySize]byte, err error) {
	if err := ensureInit(); err != nil {
		return rx, tx, err
	}
	if C.crypto_kx_client_session_keys(uc(rx[:]), uc(tx[:]), uc(clientPK[:]), uc(clientSK[:]), uc(serverPK[:])) != 0 {
		return [KeySize]byte{}, [KeySize]byte{}, fmt.Errorf("%w: crypto_kx_client_session_keys", ErrFailed)
	}
	return rx, tx, nil
}

// KXServerSessionKeys returns the server's receive and transmit keys
// (crypto_kx_server_session_keys). It fails when clientPK is a low-order
// point.
func KXServerSessionKeys(serverPK, serverSK, clientPK [KeySize]byte) (rx, tx [KeySize]byte, err error) {
	if err := ensureInit(); err != nil {
		return rx, tx, err
	}
	if C.crypto_kx_server_session_keys(uc(rx[:]), uc(tx[:]), uc(serverPK[:]), uc(serverSK[:]), uc(clientPK[:])) != 0 {
		return [KeySize]byte{}, [KeySize]byte{}, fmt.Errorf("%w: crypto_kx_server_session_keys", ErrFailed)
	}
	return rx, tx, nil
}

// AEADEncrypt seals plaintext with ChaCha20-Poly1305-IETF
// (crypto_aead_chacha20poly1305_ietf_encrypt) and returns
// ciphertext || 16-byte tag in a new slice. ad may be nil.
func AEADEncrypt(key [KeySize]byte, nonce [AEADNonceSize]byte, plaintext, ad []byte) ([]byte, error) {
	if err := ensureInit(); err != nil {
		return nil, err
	}
	if uint64(len(plaintext)) > uint64(C.crypto_aead_chacha20poly1305_ietf_messagebytes_max()) {
		return nil, fmt.Errorf("%w: message of %d bytes is too long", ErrFailed, len(plaintext))
	}
	out := make([]byte, len(plaintext)+AEADTagSize)
	var outLen C.ulonglong
	rc := C.crypto_aead_chacha20poly1305_ietf_encrypt(uc(out), &outLen,
		uc(plaintext), C.ulonglong(len(plaintext)),
		uc(ad), C.ulonglong(len(ad)),
		nil, uc(nonce[:]), uc(key[:]))
	if rc != 0 {
		return nil, fmt.Errorf("%w: crypto_aead_chacha20poly1305_ietf_encrypt", ErrFailed)
	}
	if int(outLen) != len(out) {
		return nil, fmt.Errorf("%w: crypto_aead_chacha20poly1305_ietf_encrypt wrote %d bytes, want %d", ErrFailed, outLen, len(out))
	}
	return out, nil
}

// AEADDecrypt opens ciphertext || tag sealed with ChaCha20-Poly1305-IETF
// (crypto_aead_chacha20poly1305_ietf_decrypt) and returns the plaintext in
// a new slice. It returns ErrAuth when the message does not authenticate.
func AEADDecrypt(key [KeySize]byte, nonce [AEADNonceSize]byte, ciphertext, ad []byte) ([]byte, error) {
	if err := ensureInit(); err != nil {
		return nil, err
	}
	if len(ciphertext) < AEADTagSize {
		return nil, fmt.Errorf("%w: ciphertext of %d bytes is shorter than the tag", ErrAuth, len(ciphertext))
	}
	out := make([]byte, len(ciphertext)-AEADTagSize)
	var outLen C.ulonglong
	rc := C.crypto_aead_chacha20poly1305_ietf_decrypt(uc(out), &outLen, nil,
		uc(ciphertext), C.ulonglong(len(ciphertext)),
		uc(ad), C.ulonglong(len(ad)),
		uc(nonce[:]), uc(key[:]))
	if rc != 0 {
		return nil, ErrAuth
	}
	if int(outLen) != len(out) {
		return nil, fmt.Errorf("%w: crypto_aead_chacha20poly1305_ietf_decrypt wrote %d bytes, want %d", ErrFailed, outLen, len(out))
	}
	return out, nil
}

// Ed25519SeedKeypair returns the Ed25519 key pair for a 32-byte seed
// (crypto_sign_ed25519_seed_keypair). The secret key is seed || public key,
// the layout of crypto/ed25519.PrivateKey.
func Ed25519SeedKeypair(seed [KeySize]byte) (pk [KeySize]byte, sk [Ed25519SecretSize]byte, err error) {
	if err := ensureInit(); err != nil {
		return pk, sk, err
	}
	if C.crypto_sign_ed25519_seed_keypair(uc(pk[:]), uc(sk[:]), uc(seed[:])) != 0 {
		return [KeySize]byte{}, [Ed25519SecretSize]byte{}, fmt.Errorf("%w: crypto_sign_ed25519_seed_keypair", ErrFailed)
	}
	return pk, sk, nil
}

// Ed25519SecretToCurve25519 converts a 64-byte Ed25519 secret key to an
// X25519 secret key (crypto_sign_ed25519_sk_to_curve25519).
func Ed25519SecretToCurve25519(sk []byte) ([KeySize]byte, error) {
	var out [KeySize]byte
	if err := ensureInit(); err != nil {
		return out, err
	}
	if len(sk) != Ed25519SecretSize {
		return out, fmt.Errorf("%w: ed25519 secret key of %d bytes, want %d", ErrFailed, len(sk), Ed25519SecretSize)
	}
	if C.crypto_sign_ed25519_sk_to_curve25519(uc(out[:]), uc(sk)) != 0 {
		return [KeySize]byte{}, fmt.Errorf("%w: crypto_sign_ed25519_sk_to_curve25519", ErrFailed)
	}
	return out, nil
}

// Ed25519PublicToCurve25519 converts a 32-byte Ed25519 public key to an
// X25519 public key (crypto_sign_ed25519_pk_to_curve25519). libsodium
// rejects points that do not decode, have small order or lie outside the
// prime-order subgroup.
func Ed25519PublicToCurve25519(pk []byte) ([KeySize]byte, error) {
	var out [KeySize]byte
	if err := ensureInit(); err != nil {
		return out, err
	}
	if len(pk) != KeySize {
		return out, fmt.Errorf("%w: ed25519 public key of %d bytes, want %d", ErrFailed, len(pk), KeySize)
	}
	if C.crypto_sign_ed25519_pk_to_curve25519(uc(out[:]), uc(pk)) != 0 {
		return [KeySize]byte{}, fmt.Errorf("%w: crypto_sign_ed25519_pk_to_curve25519", ErrFailed)
	}
	return out, nil
}

// RandomBytes fills b with bytes from libsodium's generator (randombytes_buf).
func RandomBytes(b []byte) error {
	if err := ensureInit(); err != nil {
		return err
	}
	if len(b) == 0 {
		return nil
	}
	C.randombytes_buf(unsafe.Pointer(&b[0]), C.size_t(len(b)))
	return nil
}

// Random32 returns 32 bytes from randombytes_buf.
func Random32() ([KeySize]byte, error) {
	var b [KeySize]byte
	err := RandomBytes(b[:])
	return b, err
}
