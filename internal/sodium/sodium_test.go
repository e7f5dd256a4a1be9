//go:build sodium

package sodium

import (
	"bytes"
	"crypto/ecdh"
	"crypto/ed25519"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"testing"

	"golang.org/x/crypto/blake2b"
	"golang.org/x/crypto/chacha20poly1305"
)

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func unhex32(t *testing.T, s string) [KeySize]byte {
	t.Helper()
	b := unhex(t, s)
	if len(b) != KeySize {
		t.Fatalf("vector %q is %d bytes, want %d", s, len(b), KeySize)
	}
	return [KeySize]byte(b)
}

// RFC 7748, section 6.1.
const (
	aliceSK = "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a"
	alicePK = "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"
	bobSK   = "5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb"
	bobPK   = "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f"
	aliceXB = "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742"
)

func TestScalarMultBaseRFC7748(t *testing.T) {
	for _, v := range []struct{ sk, pk string }{{aliceSK, alicePK}, {bobSK, bobPK}} {
		got, err := ScalarMultBase(unhex32(t, v.sk))
		if err != nil {
			t.Fatal(err)
		}
		if want := unhex32(t, v.pk); got != want {
			t.Errorf("ScalarMultBase(%s) = %x, want %x", v.sk, got, want)
		}
	}
}

// TestKXRFC7748 checks crypto_kx against its definition, computed here with
// x/crypto's BLAKE2b from the RFC 7748 shared secret: with q the X25519
// shared secret, BLAKE2b-512(q || client_pk || server_pk) is client rx ||
// client tx, and server tx || server rx.
func TestKXRFC7748(t *testing.T) {
	client, server := unhex32(t, alicePK), unhex32(t, bobPK)
	h, err := blake2b.New512(nil)
	if err != nil {
		t.Fatal(err)
	}
	h.Write(unhex(t, aliceXB))
	h.Write(client[:])
	h.Write(server[:])
	sum := h.Sum(nil)

	crx, ctx, err := KXClientSessionKeys(client, unhex32(t, aliceSK), server)
	if err != nil {
		t.Fatal(err)
	}
	srx, stx, err := KXServerSessionKeys(server, unhex32(t, bobSK), client)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(crx[:], sum[:32]) || !bytes.Equal(ctx[:], sum[32:]) {
		t.Errorf("client rx, tx = %x, %x; want %x", crx, ctx, sum)
	}
	if !bytes.Equal(stx[:], sum[:32]) || !bytes.Equal(srx[:], sum[32:]) {
		t.Errorf("server tx, rx = %x, %x; want %x", stx, srx, sum)
	}
}

func TestKXLowOrderPoint(t *testing.T) {
	sk, err := Random32()
	if err != nil {
		t.Fatal(err)
	}
	pk, err := ScalarMultBase(sk)
	if err != nil {
		t.Fatal(err)
	}
	var zero [KeySize]byte // the u-coordinate 0 has order 4: X25519 gives all zeros
	if _, _, err := KXClientSessionKeys(pk, sk, zero); !errors.Is(err, ErrFailed) {
		t.Errorf("KXClientSessionKeys with a low-order server key: err = %v, want ErrFailed", err)
	}
	if _, _, err := KXServerSessionKeys(pk, sk, zero); !errors.Is(err, ErrFailed) {
		t.Errorf("KXServerSessionKeys with a low-order client key: err = %v, want ErrFailed", err)
	}
}

// RFC 8439, section 2.8.2.
func TestAEADRFC8439(t *testing.T) {
	key := unhex32(t, "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f")
	nonce := [AEADNonceSize]byte(unhex(t, "070000004041424344454647"))
	ad := unhex(t, "50515253c0c1c2c3c4c5c6c7")
	plain := []byte("Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.")
	want := unhex(t, "d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d6"+
		"3dbea45e8ca9671282fafb69da92728b1a71de0a9e060b2905d6a5b67ecd3b36"+
		"92ddbd7f2d778b8c9803aee328091b58fab324e4fad675945585808b4831d7bc"+
		"3ff4def08e4b7a9de576d26586cec64b6116"+
		"1ae10b594f09e26a7e902ecbd0600691")
	got, err := AEADEncrypt(key, nonce, plain, ad)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("AEADEncrypt = %x, want %x", got, want)
	}
	opened, err := AEADDecrypt(key, nonce, got, ad)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(opened, plain) {
		t.Fatalf("AEADDecrypt = %q, want %q", opened, plain)
	}
	for i := range got {
		bad := bytes.Clone(got)
		bad[i] ^= 0x01
		if _, err := AEADDecrypt(key, nonce, bad, ad); !errors.Is(err, ErrAuth) {
			t.Fatalf("AEADDecrypt with byte %d flipped: err = %v, want ErrAuth", i, err)
		}
	}
	if _, err := AEADDecrypt(key, nonce, got, nil); !errors.Is(err, ErrAuth) {
		t.Errorf("AEADDecrypt without the associated data: err = %v, want ErrAuth", err)
	}
	if _, err := AEADDecrypt(key, nonce, got[:AEADTagSize-1], nil); !errors.Is(err, ErrAuth) {
		t.Errorf("AEADDecrypt of %d bytes: err = %v, want ErrAuth", AEADTagSize-1, err)
	}
}

// TestAEADMatchesXCrypto compares the binding with x/crypto at the lengths
// that matter to crypt4gh, including the empty message and a full segment.
func TestAEADMatchesXCrypto(t *testing.T) {
	for _, n := range []int{0, 1, 15, 16, 17, 63, 64, 65, 4096, 65535, 65536} {
		key, err := Random32()
		if err != nil {
			t.Fatal(err)
		}
		var nonce [AEADNonceSize]byte
		msg := make([]byte, n)
		if err := errors.Join(RandomBytes(nonce[:]), RandomBytes(msg)); err != nil {
			t.Fatal(err)
		}
		aead, err := chacha20poly1305.New(key[:])
		if err != nil {
			t.Fatal(err)
		}
		want := aead.Seal(nil, nonce[:], msg, nil)
		got, err := AEADEncrypt(key, nonce, msg, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%d bytes: AEADEncrypt differs from x/crypto", n)
		}
		opened, err := AEADDecrypt(key, nonce, want, nil)
		if err != nil {
			t.Fatalf("%d bytes: AEADDecrypt of x/crypto's ciphertext: %v", n, err)
		}
		if !bytes.Equal(opened, msg) {
			t.Fatalf("%d bytes: AEADDecrypt returned other bytes", n)
		}
	}
}

// RFC 8032, section 7.1, test 1.
func TestEd25519SeedKeypairRFC8032(t *testing.T) {
	seed := unhex32(t, "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
	want := unhex32(t, "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
	pk, sk, err := Ed25519SeedKeypair(seed)
	if err != nil {
		t.Fatal(err)
	}
	if pk != want {
		t.Errorf("public key = %x, want %x", pk, want)
	}
	if !bytes.Equal(sk[:], ed25519.NewKeyFromSeed(seed[:])) {
		t.Errorf("secret key = %x, want seed || public key", sk)
	}
}

// TestEd25519ToCurve25519 checks both conversions against their
// definitions: the secret is clamp(SHA-512(seed)[:32]), and the converted
// public key is the X25519 public key of the converted secret (computed
// with crypto/ecdh).
func TestEd25519ToCurve25519(t *testing.T) {
	for i := 0; i < 50; i++ {
		seed, err := Random32()
		if err != nil {
			t.Fatal(err)
		}
		pk, sk, err := Ed25519SeedKeypair(seed)
		if err != nil {
			t.Fatal(err)
		}
		xsk, err := Ed25519SecretToCurve25519(sk[:])
		if err != nil {
			t.Fatal(err)
		}
		h := sha512.Sum512(seed[:])
		h[0] &= 248
		h[31] &= 127
		h[31] |= 64
		if !bytes.Equal(xsk[:], h[:32]) {
			t.Fatalf("seed %x: sk_to_curve25519 = %x, want %x", seed, xsk, h[:32])
		}
		xpk, err := Ed25519PublicToCurve25519(pk[:])
		if err != nil {
			t.Fatal(err)
		}
		priv, err := ecdh.X25519().NewPrivateKey(xsk[:])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(xpk[:], priv.PublicKey().Bytes()) {
			t.Fatalf("seed %x: pk_to_curve25519 = %x, want %x", seed, xpk, priv.PublicKey().Bytes())
		}
	}
}

func TestEd25519ConversionRejects(t *testing.T) {
	// The identity point (y = 1) has small order.
	identity := make([]byte, KeySize)
	identity[0] = 1
	if _, err := Ed25519PublicToCurve25519(identity); !errors.Is(err, ErrFailed) {
		t.Errorf("identity point: err = %v, want ErrFailed", err)
	}
	if _, err := Ed25519PublicToCurve25519(make([]byte, KeySize-1)); !errors.Is(err, ErrFailed) {
		t.Errorf("31-byte public key: err = %v, want ErrFailed", err)
	}
	if _, err := Ed25519SecretToCurve25519(make([]byte, KeySize)); !errors.Is(err, ErrFailed) {
		t.Errorf("32-byte secret key: err = %v, want ErrFailed", err)
	}
}

func TestRandomBytes(t *testing.T) {
	a, err := Random32()
	if err != nil {
		t.Fatal(err)
	}
	b, err := Random32()
	if err != nil {
		t.Fatal(err)
	}
	if a == b || a == [KeySize]byte{} {
		t.Errorf("randombytes_buf gave %x then %x", a, b)
	}
	if err := RandomBytes(nil); err != nil {
		t.Errorf("RandomBytes(nil) = %v", err)
	}
}
