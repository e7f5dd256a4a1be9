//go:build sodium

package keys_test

import (
	"encoding/hex"
	"errors"
	"testing"

	"github.com/c4gh-go/crypt4gh/internal/sodium"
	"github.com/c4gh-go/crypt4gh/keys"
)

// These tests cross-check the key arithmetic with libsodium, the library
// the reference crypt4gh tools use. Run them with
//
//	CGO_ENABLED=1 go test -tags sodium ./keys/

const sodiumIterations = 200

func random32(t *testing.T) [32]byte {
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
		scalars = append(scalars, random32(t))
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
		rsk, wsk := random32(t), random32(t)
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
		sk, peer := random32(t), random32(t)
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

// lowOrderPoints are the u-coordinates whose X25519 product with any
// clamped scalar is zero (libsodium's blacklist), each also with the
// ignored top bit set.
var lowOrderPoints = []string{
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
	sk := random32(t)
	pk, err := sodium.ScalarMultBase(sk)
	if err != nil {
		t.Fatal(err)
	}
	k := keys.SecretKey(sk)
	for _, h := range lowOrderPoints {
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
