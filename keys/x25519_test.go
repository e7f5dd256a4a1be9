package keys

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"path/filepath"
	"testing"
)

// TestPublicKeyString checks that String prints a public key as the line
// inside its crypt4gh .pub file, and Hex as the manifest's hex.
func TestPublicKeyString(t *testing.T) {
	n := 0
	for _, k := range loadManifestKeys(t) {
		if k.Format != "c4gh-pub" {
			continue
		}
		n++
		data := readFile(t, filepath.Join(interopDir, k.Path))
		pk, err := ParsePublicKey(data)
		if err != nil {
			t.Fatalf("%s: %v", k.Path, err)
		}
		lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
		if len(lines) != 3 {
			t.Fatalf("%s: %d lines, want 3", k.Path, len(lines))
		}
		if got, want := pk.String(), string(bytes.TrimSpace(lines[1])); got != want {
			t.Errorf("%s: String() = %q, the file holds %q", k.Path, got, want)
		}
		if got := pk.Hex(); got != k.PKHex {
			t.Errorf("%s: Hex() = %q, the manifest says %q", k.Path, got, k.PKHex)
		}
	}
	if n == 0 {
		t.Fatal("no crypt4gh public keys in the manifest")
	}

	// Every byte value, at both ends: padding included, standard alphabet.
	var pk PublicKey
	for i := range pk {
		pk[i] = byte(0xff - i*7)
	}
	s := pk.String()
	if len(s) != 44 || s[43] != '=' {
		t.Errorf("String() = %q, want 44 characters ending in =", s)
	}
	if b, err := base64.StdEncoding.DecodeString(s); err != nil || !bytes.Equal(b, pk[:]) {
		t.Errorf("String() = %q does not decode to the key: %x, %v", s, b, err)
	}
	if b, err := hex.DecodeString(pk.Hex()); err != nil || !bytes.Equal(b, pk[:]) {
		t.Errorf("Hex() = %q does not decode to the key: %v", pk.Hex(), err)
	}
}

// TestReader checks that a prepared reader key computes the packet keys of
// its secret key, opens what that opens, and refuses once zeroed.
func TestReader(t *testing.T) {
	reader, _ := Generate(nil)
	writer, _ := Generate(nil)
	r := NewReader(&reader)
	if r.Public() != reader.Public() {
		t.Fatal("Reader.Public differs from SecretKey.Public")
	}
	want, err := ReaderSharedKey(&reader, writer.Public())
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r.SharedKey(writer.Public()); err != nil || got != want {
		t.Fatalf("SharedKey = %x, %v; want %x", got, err, want)
	}
	if w, _ := WriterSharedKey(&writer, reader.Public()); w != want {
		t.Fatalf("the writer's key %x is not the reader's %x", w, want)
	}
	if _, err := r.SharedKey(PublicKey{}); err != ErrLowOrderPoint {
		t.Errorf("a low-order writer key: %v", err)
	}
	r.Zero()
	var nonce [NonceSize]byte
	if _, err := r.OpenPacket(writer.Public(), &nonce, make([]byte, 32)); !errors.Is(err, ErrPacketAuth) {
		t.Errorf("a zeroed Reader opened a packet: %v", err)
	}
}

// BenchmarkOpenPacketKey is the X25519 cost of one header: a secret key
// against a prepared Reader.
func BenchmarkOpenPacketKey(b *testing.B) {
	reader, _ := Generate(nil)
	writer, _ := Generate(nil)
	wpk := writer.Public()
	b.Run("SecretKey", func(b *testing.B) {
		for range b.N {
			ReaderSharedKey(&reader, wpk)
		}
	})
	b.Run("Reader", func(b *testing.B) {
		r := NewReader(&reader)
		for range b.N {
			r.SharedKey(wpk)
		}
	})
}
