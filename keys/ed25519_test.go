package keys

import (
	"crypto/ecdh"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"filippo.io/edwards25519"
)

// TestEd25519Conversion checks that the secret and public conversions agree
// (the X25519 public key of the converted secret is the converted public
// key), for random keys.
func TestEd25519Conversion(t *testing.T) {
	for range 16 {
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		sk := Ed25519SecretToX25519(priv)
		if sk[0]&7 != 0 || sk[31]&0x80 != 0 || sk[31]&0x40 == 0 {
			t.Errorf("secret %x is not clamped", sk)
		}
		if Ed25519SecretToX25519(priv.Seed()) != sk {
			t.Errorf("seed and full key convert differently")
		}
		pk, err := Ed25519PublicToX25519(pub)
		if err != nil {
			t.Fatal(err)
		}
		if sk.Public() != pk {
			t.Errorf("converted secret gives %s, converted public %s", sk.Public(), pk)
		}
	}
}

func TestEd25519PublicToX25519Rejects(t *testing.T) {
	unhex := func(s string) []byte {
		b, err := hex.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	order8 := unhex("c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a")
	p8, err := new(edwards25519.Point).SetBytes(order8)
	if err != nil || p8.Equal(edwards25519.NewIdentityPoint()) == 1 ||
		new(edwards25519.Point).MultByCofactor(p8).Equal(edwards25519.NewIdentityPoint()) != 1 {
		t.Fatal("test point is not of order 8")
	}
	mixed := new(edwards25519.Point).Add(edwards25519.NewGeneratorPoint(), p8).Bytes()

	tests := []struct {
		name string
		pub  []byte
		msg  string
	}{
		{"short", make([]byte, 31), "bytes"},
		{"not on the curve (y=2)", append([]byte{2}, make([]byte, 31)...), "not a point"},
		{"identity", append([]byte{1}, make([]byte, 31)...), "low-order"},
		{"order 8", order8, "low-order"},
		{"order 2 (y=-1)", unhex("ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"), "low-order"},
		{"generator plus order 8", mixed, "subgroup"},
	}
	for _, tc := range tests {
		pk, err := Ed25519PublicToX25519(tc.pub)
		if !errors.Is(err, ErrMalformedKey) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: got %v, want ErrMalformedKey saying %q", tc.name, err, tc.msg)
		}
		if pk != (PublicKey{}) {
			t.Errorf("%s: key returned with an error", tc.name)
		}
	}
	if _, err := Ed25519PublicToX25519(edwards25519.NewGeneratorPoint().Bytes()); err != nil {
		t.Errorf("generator refused: %v", err)
	}
}

// TestPKCS8 round-trips X25519 keys through crypto/x509 and checks that other
// key types are refused by name.
func TestPKCS8(t *testing.T) {
	priv, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	sk, err := ParseSecretKey(armored(pemPKCS8, der), noPassphrase(t))
	if err != nil || string(sk[:]) != string(priv.Bytes()) {
		t.Errorf("PKCS#8 X25519: %x, %v", sk, err)
	}
	der, err = x509.MarshalPKIXPublicKey(priv.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	pk, err := ParsePublicKey(armored(pemPKIX, der))
	if err != nil || pk != sk.Public() {
		t.Errorf("PKIX X25519: %s, %v", pk, err)
	}

	edPub, edPriv, _ := ed25519.GenerateKey(rand.Reader)
	der, _ = x509.MarshalPKCS8PrivateKey(edPriv)
	if _, err := ParseSecretKey(armored(pemPKCS8, der), nil); !errors.Is(err, ErrUnsupportedKey) || !strings.Contains(err.Error(), "Ed25519") {
		t.Errorf("PKCS#8 Ed25519: %v", err)
	}
	der, _ = x509.MarshalPKIXPublicKey(edPub)
	if _, err := ParsePublicKey(armored(pemPKIX, der)); !errors.Is(err, ErrUnsupportedKey) || !strings.Contains(err.Error(), "Ed25519") {
		t.Errorf("PKIX Ed25519: %v", err)
	}
	p256, _ := ecdh.P256().GenerateKey(rand.Reader)
	der, _ = x509.MarshalPKIXPublicKey(p256.PublicKey())
	if _, err := ParsePublicKey(armored(pemPKIX, der)); !errors.Is(err, ErrUnsupportedKey) || !strings.Contains(err.Error(), "ECDSA") {
		t.Errorf("PKIX P-256: %v", err)
	}
}
