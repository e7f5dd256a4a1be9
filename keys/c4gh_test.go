package keys

import (
	"bytes"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
)

// TestMarshalSecretKeyRoundTrip writes a key with every KDF, with and without
// a comment, checks the layout that crypt4gh 1.8.6 writes, and reads it back.
func TestMarshalSecretKeyRoundTrip(t *testing.T) {
	sk, err := Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	pass := []byte("correct horse battery staple")
	tests := []struct {
		kdf        KDF
		stored     KDF
		rounds     uint32
		passphrase []byte
	}{
		{"", KDFScrypt, 0, pass},
		{KDFScrypt, KDFScrypt, 0, pass},
		{KDFBcrypt, KDFBcrypt, 100, pass},
		{KDFPBKDF2, KDFPBKDF2, 100000, pass},
		{KDFNone, KDFNone, 0, nil},
	}
	for i, tc := range tests {
		for _, comment := range []string{"", "alice@example.org ✓"} {
			t.Run(string(tc.stored)+"/"+comment, func(t *testing.T) {
				skipBcryptUnderRace(t, tc.stored == KDFBcrypt)
				// The same salt and nonce with and without a comment:
				// the second key derives what the first did, which the
				// tests' KDF memo (kdfmemo_test.go) then does not repeat.
				random := rand.NewChaCha8([32]byte{byte(i)})
				out, err := MarshalSecretKey(&sk, tc.passphrase, tc.kdf, comment, random)
				if err != nil {
					t.Fatal(err)
				}
				lines := strings.Split(string(out), "\n")
				if len(lines) != 4 || lines[0] != "-----BEGIN CRYPT4GH PRIVATE KEY-----" ||
					lines[2] != "-----END CRYPT4GH PRIVATE KEY-----" || lines[3] != "" {
					t.Fatalf("layout:\n%s", out)
				}
				block, _ := pem.Decode(out)
				blob := block.Bytes
				want := c4ghBlob(string(tc.stored))
				if !bytes.HasPrefix(blob, want) {
					t.Fatalf("blob %x does not start with %x", blob, want)
				}
				rest := blob[len(want):]
				if tc.stored == KDFNone {
					want = c4ghBlob("none", string(sk[:]))[len(c4ghMagic):]
				} else {
					opts, _, _ := string16(rest)
					if len(opts) != 20 || binary.BigEndian.Uint32(opts) != tc.rounds {
						t.Errorf("kdf options %x, want rounds %d and a 16-byte salt", opts, tc.rounds)
					}
					_, r2, _ := string16(rest)
					if !bytes.HasPrefix(r2, c4ghBlob(c4ghCipherChaCha)[len(c4ghMagic):]) {
						t.Errorf("cipher is not %s", c4ghCipherChaCha)
					}
					r2 = r2[2+len(c4ghCipherChaCha):]
					kd, _, _ := string16(r2)
					if len(kd) != 60 || bytes.Contains(kd, sk[:]) {
						t.Errorf("key data %x", kd)
					}
					want = nil
				}
				if !bytes.HasPrefix(rest, want) {
					t.Errorf("unencrypted key data: got %x, want %x", rest, want)
				}
				if comment != "" && !bytes.HasSuffix(blob, c4ghBlob(comment)[len(c4ghMagic):]) {
					t.Errorf("comment missing")
				}

				var passFn func() ([]byte, error)
				if tc.passphrase != nil {
					passFn = constPass(string(tc.passphrase))
				}
				got, err := ParseSecretKey(out, passFn)
				if err != nil || got != sk {
					t.Fatalf("read back: %v", err)
				}
				if tc.passphrase != nil && comment == "" {
					if _, err := ParseSecretKey(out, constPass("wrong")); !errors.Is(err, ErrWrongPassphrase) {
						t.Errorf("wrong passphrase: %v", err)
					}
				}
			})
		}
	}
}

// TestMarshalSecretKeyMatchesReference re-encrypts the interop keys written
// by crypt4gh 1.8.6 with their own salt and nonce and expects the very same
// file.
func TestMarshalSecretKeyMatchesReference(t *testing.T) {
	for _, k := range loadManifestKeys(t) {
		if k.Type != "secret" || !strings.HasPrefix(k.Format, "c4gh-") || strings.HasPrefix(k.Path, "keys/gina") {
			continue
		}
		t.Run(k.Path, func(t *testing.T) {
			data := readFile(t, filepath.Join(interopDir, k.Path))
			skipBcryptUnderRace(t, usesBcrypt(data))
			var pass []byte
			var passFn func() ([]byte, error)
			if k.Passphrase != nil {
				pass = []byte(*k.Passphrase)
				passFn = constPass(*k.Passphrase)
			}
			sk, err := ParseSecretKey(data, passFn)
			if err != nil {
				t.Fatal(err)
			}
			// Salt and nonce, in the order MarshalSecretKey reads them.
			block, _ := pem.Decode(data)
			rest := block.Bytes[len(c4ghMagic):]
			kdf, rest, _ := string16(rest)
			var random []byte
			if string(kdf) != "none" {
				opts, r, _ := string16(rest)
				_, r, _ = string16(r)
				kd, _, _ := string16(r)
				random = append(append(random, opts[4:]...), kd[:12]...)
			}
			comment := ""
			if k.Comment != nil {
				comment = *k.Comment
			}
			out, err := MarshalSecretKey(&sk, pass, KDF(kdf), comment, bytes.NewReader(random))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out, data) {
				t.Errorf("got\n%s\nwant\n%s", out, data)
			}
		})
	}
}

func TestMarshalSecretKeyErrors(t *testing.T) {
	sk := SecretKey{1}
	if _, err := MarshalSecretKey(&sk, nil, "", "", nil); !errors.Is(err, ErrPassphraseRequired) {
		t.Errorf("no passphrase with scrypt: %v", err)
	}
	if _, err := MarshalSecretKey(&sk, []byte("x"), KDFNone, "", nil); err == nil {
		t.Errorf("passphrase with kdf none: no error")
	}
	if _, err := MarshalSecretKey(&sk, []byte("x"), "argon2", "", nil); !errors.Is(err, ErrUnsupportedKey) {
		t.Errorf("unknown kdf: %v", err)
	}
	if _, err := MarshalSecretKey(&SecretKey{}, nil, KDFNone, "", nil); err == nil {
		t.Errorf("zero key: no error")
	}
	if _, err := MarshalSecretKey(&sk, nil, KDFNone, strings.Repeat("c", 1<<16), nil); err == nil {
		t.Errorf("65536-byte comment: no error")
	}
	if _, err := MarshalSecretKey(&sk, []byte("x"), KDFScrypt, "", bytes.NewReader(nil)); err == nil {
		t.Errorf("failing rand: no error")
	}
}
