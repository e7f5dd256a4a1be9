package keys

import (
	"crypto/ed25519"
	"crypto/sha512"
	"fmt"

	"filippo.io/edwards25519"
)

// Ed25519SecretToX25519 returns the X25519 secret key that belongs to an
// Ed25519 key, as libsodium's crypto_sign_ed25519_sk_to_curve25519 computes
// it: the first 32 bytes of SHA-512 of the seed, clamped.
//
// priv must be [ed25519.PrivateKeySize] bytes long (or [ed25519.SeedSize]
// bytes, a bare seed); any other length panics, as in crypto/ed25519.
func Ed25519SecretToX25519(priv ed25519.PrivateKey) SecretKey {
	if len(priv) != ed25519.PrivateKeySize && len(priv) != ed25519.SeedSize {
		panic(fmt.Sprintf("keys: bad ed25519 private key length %d", len(priv)))
	}
	h := sha512.Sum512(priv[:ed25519.SeedSize])
	h[0] &= 248
	h[31] &= 127
	h[31] |= 64
	var sk SecretKey
	copy(sk[:], h[:KeySize])
	clear(h[:])
	return sk
}

// ed25519OrderMinusOne is ℓ-1, little-endian, where ℓ = 2^252 +
// 27742317777372353535851937790883648493 is the order of the prime-order
// subgroup.
var ed25519OrderMinusOne = [32]byte{
	0xec, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58,
	0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14,
	0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0x10,
}

// Ed25519PublicToX25519 returns the X25519 public key that belongs to an
// Ed25519 public key, as libsodium's crypto_sign_ed25519_pk_to_curve25519
// computes it: the Montgomery u = (1+y)/(1-y) of the Edwards point.
//
// Like libsodium it refuses an encoding that is not a point on the curve, a
// point of small order and a point outside the prime-order subgroup; the
// error wraps [ErrMalformedKey].
func Ed25519PublicToX25519(pub ed25519.PublicKey) (PublicKey, error) {
	if len(pub) != ed25519.PublicKeySize {
		return PublicKey{}, fmt.Errorf("%w: ed25519 public key is %d bytes, want %d",
			ErrMalformedKey, len(pub), ed25519.PublicKeySize)
	}
	p, err := new(edwards25519.Point).SetBytes(pub)
	if err != nil {
		return PublicKey{}, fmt.Errorf("%w: ed25519 public key is not a point on the curve", ErrMalformedKey)
	}
	identity := edwards25519.NewIdentityPoint()
	if new(edwards25519.Point).MultByCofactor(p).Equal(identity) == 1 {
		return PublicKey{}, fmt.Errorf("%w: ed25519 %w", ErrMalformedKey, ErrLowOrderPoint)
	}
	// P is in the prime-order subgroup iff (ℓ-1)·P + P is the identity.
	s, err := new(edwards25519.Scalar).SetCanonicalBytes(ed25519OrderMinusOne[:])
	if err != nil {
		panic("keys: internal error: " + err.Error())
	}
	q := new(edwards25519.Point).ScalarMult(s, p)
	if q.Add(q, p).Equal(identity) != 1 {
		return PublicKey{}, fmt.Errorf("%w: ed25519 public key is not in the prime-order subgroup", ErrMalformedKey)
	}
	var pk PublicKey
	copy(pk[:], p.BytesMontgomery())
	return pk, nil
}
