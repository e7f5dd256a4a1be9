//go:build sodium

package keys_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"testing"

	"filippo.io/edwards25519"

	"github.com/c4gh-go/crypt4gh/internal/sodium"
	"github.com/c4gh-go/crypt4gh/keys"
)

// These tests cross-check the key arithmetic with libsodium, the library
// the reference crypt4gh tools use. Run them with
//
//	CGO_ENABLED=1 go test -tags sodium ./keys/

const sodiumIterations = 200

func sodiumRandom32(t *testing.T) [32]byte {
	t.Helper()
	b, err := sodium.Random32()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSodiumPublic compares SecretKey.Public with crypto_scalarmult_base for
// random, unclamped scalars and for the extreme ones, so that both sides
// must clamp the same way.
func TestSodiumPublic(t *testing.T) {
	scalars := [][32]byte{{}, {0: 1}, {31: 0x80}}
	var ones [32]byte
	for i := range ones {
		ones[i] = 0xff
	}
	scalars = append(scalars, ones)
	for range sodiumIterations {
		scalars = append(scalars, sodiumRandom32(t))
	}
	for _, s := range scalars {
		want, err := sodium.ScalarMultBase(s)
		if err != nil {
			t.Fatalf("crypto_scalarmult_base(%x): %v", s, err)
		}
		sk := keys.SecretKey(s)
		if got := sk.Public(); got != keys.PublicKey(want) {
			t.Fatalf("SecretKey(%x).Public() = %x, crypto_scalarmult_base = %x", s, got, want)
		}
	}
}

// TestSodiumSharedKeys checks that the reader is libsodium's crypto_kx
// client (ReaderSharedKey is the client's rx) and the writer its server
// (WriterSharedKey is the server's tx), and that both sides agree.
func TestSodiumSharedKeys(t *testing.T) {
	for range sodiumIterations {
		rsk, wsk := sodiumRandom32(t), sodiumRandom32(t)
		rpk, err := sodium.ScalarMultBase(rsk)
		if err != nil {
			t.Fatal(err)
		}
		wpk, err := sodium.ScalarMultBase(wsk)
		if err != nil {
			t.Fatal(err)
		}
		rx, _, err := sodium.KXClientSessionKeys(rpk, rsk, wpk)
		if err != nil {
			t.Fatal(err)
		}
		_, tx, err := sodium.KXServerSessionKeys(wpk, wsk, rpk)
		if err != nil {
			t.Fatal(err)
		}
		if rx != tx {
			t.Fatalf("libsodium: client rx %x != server tx %x", rx, tx)
		}

		reader, writer := keys.SecretKey(rsk), keys.SecretKey(wsk)
		rk, err := keys.ReaderSharedKey(&reader, keys.PublicKey(wpk))
		if err != nil {
			t.Fatal(err)
		}
		if rk != rx {
			t.Fatalf("ReaderSharedKey = %x, crypto_kx_client_session_keys rx = %x", rk, rx)
		}
		wk, err := keys.WriterSharedKey(&writer, keys.PublicKey(rpk))
		if err != nil {
			t.Fatal(err)
		}
		if wk != tx {
			t.Fatalf("WriterSharedKey = %x, crypto_kx_server_session_keys tx = %x", wk, tx)
		}
	}
}

// TestSodiumSharedKeysArbitraryPeer uses 32 random bytes as the peer's
// public key, not one derived from a secret: about half have the top bit
// set, which X25519 ignores in the arithmetic but crypto_kx hashes as given.
func TestSodiumSharedKeysArbitraryPeer(t *testing.T) {
	for range sodiumIterations {
		sk, peer := sodiumRandom32(t), sodiumRandom32(t)
		pk, err := sodium.ScalarMultBase(sk)
		if err != nil {
			t.Fatal(err)
		}
		rx, _, cerr := sodium.KXClientSessionKeys(pk, sk, peer)
		_, tx, serr := sodium.KXServerSessionKeys(pk, sk, peer)
		if cerr != nil || serr != nil {
			t.Fatalf("libsodium rejected peer %x: %v, %v", peer, cerr, serr)
		}
		k := keys.SecretKey(sk)
		rk, err := keys.ReaderSharedKey(&k, keys.PublicKey(peer))
		if err != nil {
			t.Fatal(err)
		}
		if rk != rx {
			t.Fatalf("peer %x: ReaderSharedKey = %x, crypto_kx rx = %x", peer, rk, rx)
		}
		wk, err := keys.WriterSharedKey(&k, keys.PublicKey(peer))
		if err != nil {
			t.Fatal(err)
		}
		if wk != tx {
			t.Fatalf("peer %x: WriterSharedKey = %x, crypto_kx tx = %x", peer, wk, tx)
		}
	}
}

// sodiumLowOrderPoints are the u-coordinates whose X25519 product with any
// clamped scalar is zero (libsodium's blacklist), each also with the
// ignored top bit set.
var sodiumLowOrderPoints = []string{
	"0000000000000000000000000000000000000000000000000000000000000000", // 0, order 4
	"0100000000000000000000000000000000000000000000000000000000000000", // 1, order 1
	"e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800", // order 8
	"5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157", // order 8
	"ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", // p-1, order 2
	"edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", // p = 0
	"eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", // p+1 = 1
}

// TestSodiumLowOrderPoints checks that both sides refuse a peer key that
// forces the all-zero shared secret.
func TestSodiumLowOrderPoints(t *testing.T) {
	sk := sodiumRandom32(t)
	pk, err := sodium.ScalarMultBase(sk)
	if err != nil {
		t.Fatal(err)
	}
	k := keys.SecretKey(sk)
	for _, h := range sodiumLowOrderPoints {
		b, err := hex.DecodeString(h)
		if err != nil {
			t.Fatal(err)
		}
		for _, top := range []byte{0, 0x80} {
			peer := [32]byte(b)
			peer[31] |= top
			if _, _, err := sodium.KXClientSessionKeys(pk, sk, peer); err == nil {
				t.Fatalf("libsodium accepted low-order point %x", peer)
			}
			if _, _, err := sodium.KXServerSessionKeys(pk, sk, peer); err == nil {
				t.Fatalf("libsodium accepted low-order point %x", peer)
			}
			if _, err := keys.ReaderSharedKey(&k, keys.PublicKey(peer)); !errors.Is(err, keys.ErrLowOrderPoint) {
				t.Errorf("ReaderSharedKey(%x): err = %v, want ErrLowOrderPoint", peer, err)
			}
			if _, err := keys.WriterSharedKey(&k, keys.PublicKey(peer)); !errors.Is(err, keys.ErrLowOrderPoint) {
				t.Errorf("WriterSharedKey(%x): err = %v, want ErrLowOrderPoint", peer, err)
			}
		}
	}
}

// TestSodiumEd25519ToX25519 converts the Ed25519 key pairs of random seeds
// and compares with crypto_sign_ed25519_sk_to_curve25519 and
// crypto_sign_ed25519_pk_to_curve25519.
func TestSodiumEd25519ToX25519(t *testing.T) {
	for range sodiumIterations {
		seed := sodiumRandom32(t)
		pk, sk, err := sodium.Ed25519SeedKeypair(seed)
		if err != nil {
			t.Fatal(err)
		}
		priv := ed25519.NewKeyFromSeed(seed[:])
		if !bytes.Equal(priv, sk[:]) {
			t.Fatalf("seed %x: crypto/ed25519 key %x, libsodium %x", seed, priv, sk)
		}
		wantSK, err := sodium.Ed25519SecretToCurve25519(sk[:])
		if err != nil {
			t.Fatal(err)
		}
		wantPK, err := sodium.Ed25519PublicToCurve25519(pk[:])
		if err != nil {
			t.Fatal(err)
		}

		gotSK := keys.Ed25519SecretToX25519(priv)
		if gotSK != keys.SecretKey(wantSK) {
			t.Fatalf("seed %x: Ed25519SecretToX25519 = %x, libsodium %x", seed, gotSK, wantSK)
		}
		if fromSeed := keys.Ed25519SecretToX25519(priv.Seed()); fromSeed != gotSK {
			t.Fatalf("seed %x: Ed25519SecretToX25519 of the bare seed = %x, want %x", seed, fromSeed, gotSK)
		}
		gotPK, err := keys.Ed25519PublicToX25519(priv.Public().(ed25519.PublicKey))
		if err != nil {
			t.Fatalf("seed %x: Ed25519PublicToX25519: %v", seed, err)
		}
		if gotPK != keys.PublicKey(wantPK) {
			t.Fatalf("seed %x: Ed25519PublicToX25519 = %x, libsodium %x", seed, gotPK, wantPK)
		}
		if gotSK.Public() != gotPK {
			t.Fatalf("seed %x: converted keys do not match: %x.Public() = %x, converted public %x", seed, gotSK, gotSK.Public(), gotPK)
		}
	}
}

// TestSodiumEd25519PublicAgreement feeds both conversions arbitrary
// encodings: random strings (about half are points, most of those outside
// the prime-order subgroup), the eight small-order points in every
// encoding, non-canonical encodings (y >= p) and points of mixed order. The
// two must accept the same encodings and agree on the result.
func TestSodiumEd25519PublicAgreement(t *testing.T) {
	var candidates [][]byte
	for range sodiumIterations {
		b := sodiumRandom32(t)
		candidates = append(candidates, b[:])
	}

	// A torsion point of order 8: ℓ·P for a point P of order 8ℓ.
	lMinus1, err := new(edwards25519.Scalar).SetCanonicalBytes([]byte{
		0xec, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
	})
	if err != nil {
		t.Fatal(err)
	}
	identity := edwards25519.NewIdentityPoint()
	var torsion *edwards25519.Point
	for torsion == nil {
		b := sodiumRandom32(t)
		p, err := new(edwards25519.Point).SetBytes(b[:])
		if err != nil {
			continue
		}
		q := new(edwards25519.Point).ScalarMult(lMinus1, p)
		q.Add(q, p)
		four := new(edwards25519.Point).Add(q, q)
		four.Add(four, four)
		if four.Equal(identity) == 0 {
			torsion = q
		}
	}
	t8 := new(edwards25519.Point).Set(identity)
	for range 8 {
		t8.Add(t8, torsion)
		enc := t8.Bytes()
		candidates = append(candidates, enc, sodiumWithSignBit(enc), sodiumNonCanonical(enc))
	}
	// Every y in [p, 2^255) (p = 2^255 - 19 is ed ff … ff 7f
	// little-endian), with and without the sign bit.
	for k := range 19 {
		y := bytes.Repeat([]byte{0xff}, 32)
		y[0] = byte(0xed + k)
		y[31] = 0x7f
		candidates = append(candidates, y, sodiumWithSignBit(y))
	}
	// Prime-order points P and -P (sign bit flipped), and P plus a
	// torsion point (mixed order).
	for range 20 {
		pk, _, err := sodium.Ed25519SeedKeypair(sodiumRandom32(t))
		if err != nil {
			t.Fatal(err)
		}
		p, err := new(edwards25519.Point).SetBytes(pk[:])
		if err != nil {
			t.Fatal(err)
		}
		neg := bytes.Clone(pk[:])
		neg[31] ^= 0x80
		candidates = append(candidates, pk[:], neg, p.Add(p, torsion).Bytes())
	}

	var accepted, rejected int
	for _, c := range candidates {
		want, serr := sodium.Ed25519PublicToCurve25519(c)
		got, gerr := keys.Ed25519PublicToX25519(ed25519.PublicKey(c))
		switch {
		case serr != nil && gerr != nil:
			rejected++
			if !errors.Is(gerr, keys.ErrMalformedKey) {
				t.Errorf("%x: err = %v, want ErrMalformedKey", c, gerr)
			}
		case serr == nil && gerr == nil:
			accepted++
			if got != keys.PublicKey(want) {
				t.Errorf("%x: Ed25519PublicToX25519 = %x, libsodium %x", c, got, want)
			}
		case serr != nil:
			t.Errorf("%x: libsodium rejects (%v), Ed25519PublicToX25519 accepts (%x)", c, serr, got)
		default:
			t.Errorf("%x: libsodium accepts (%x), Ed25519PublicToX25519 rejects (%v)", c, want, gerr)
		}
	}
	t.Logf("%d encodings: %d accepted by both, %d rejected by both", len(candidates), accepted, rejected)
	if accepted < 40 || rejected < 100 {
		t.Errorf("only %d accepted and %d rejected: the candidates do not cover both outcomes", accepted, rejected)
	}
}

// sodiumWithSignBit returns enc with the sign bit of x set.
func sodiumWithSignBit(enc []byte) []byte {
	b := bytes.Clone(enc)
	b[31] |= 0x80
	return b
}

// sodiumNonCanonical returns the encoding of y + p when it fits in 255 bits
// (y < 19), else enc unchanged.
func sodiumNonCanonical(enc []byte) []byte {
	b := bytes.Clone(enc)
	for i := 1; i < 31; i++ {
		if b[i] != 0 {
			return b
		}
	}
	if b[31]&0x7f != 0 || b[0] >= 19 {
		return b
	}
	sign := b[31] & 0x80
	b[0] += 0xed
	for i := 1; i < 31; i++ {
		b[i] = 0xff
	}
	b[31] = 0x7f | sign
	return b
}
