package keys

import (
	"bytes"
	"encoding/pem"
	"errors"
	"path/filepath"
	"testing"
)

// TestInspectSecretKeyInterop checks the format, protection and comment
// that InspectSecretKey reports against the manifest of the interop keys.
func TestInspectSecretKeyInterop(t *testing.T) {
	formats := map[string]SecretKeyInfo{
		"c4gh-scrypt":               {Format: FormatCrypt4GH, Protected: true, KDF: KDFScrypt},
		"c4gh-bcrypt":               {Format: FormatCrypt4GH, Protected: true, KDF: KDFBcrypt},
		"c4gh-pbkdf2":               {Format: FormatCrypt4GH, Protected: true, KDF: KDFPBKDF2},
		"c4gh-none":                 {Format: FormatCrypt4GH, KDF: KDFNone},
		"openssh-ed25519":           {Format: FormatOpenSSH, KDF: KDFNone},
		"openssh-ed25519-encrypted": {Format: FormatOpenSSH, Protected: true, KDF: KDFBcrypt},
		"openssl-x25519":            {Format: FormatPKCS8, KDF: KDFNone},
	}
	n := 0
	for _, k := range loadManifestKeys(t) {
		if k.Type != "secret" {
			continue
		}
		n++
		t.Run(filepath.Base(k.Path), func(t *testing.T) {
			want, ok := formats[k.Format]
			if !ok {
				t.Fatalf("format %q not covered by the test", k.Format)
			}
			if k.Comment != nil && !(want.Format == FormatOpenSSH && want.Protected) {
				want.Comment = *k.Comment
			}
			got, err := InspectSecretKey(readFile(t, filepath.Join(interopDir, k.Path)))
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("got %+v, want %+v", got, want)
			}
		})
	}
	if n == 0 {
		t.Fatal("manifest lists no secret keys")
	}
}

// TestInspectSecretKeyRoundTrip checks that the comment and KDF written by
// MarshalSecretKey are read back.
func TestInspectSecretKeyRoundTrip(t *testing.T) {
	sk, err := Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		kdf     KDF
		pass    string
		comment string
	}{
		{KDFNone, "", ""},
		{KDFNone, "", "with a comment"},
		{KDFPBKDF2, "pw", "pbkdf2 key"},
	} {
		data, err := MarshalSecretKey(&sk, []byte(tc.pass), tc.kdf, tc.comment, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := InspectSecretKey(data)
		if err != nil {
			t.Fatal(err)
		}
		want := SecretKeyInfo{Format: FormatCrypt4GH, Protected: tc.kdf != KDFNone, KDF: tc.kdf, Comment: tc.comment}
		if got != want {
			t.Errorf("got %+v, want %+v", got, want)
		}
	}
}

// TestInspectSecretKeyDamaged checks that truncated and foreign inputs give
// the documented errors and never panic.
func TestInspectSecretKeyDamaged(t *testing.T) {
	sk, err := Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	good, err := MarshalSecretKey(&sk, nil, KDFNone, "comment", nil)
	if err != nil {
		t.Fatal(err)
	}
	goodBlock, _ := pem.Decode(good)
	for _, path := range []string{"keys/erin", "keys/frank", "keys/alice.sec.pem"} {
		block, _ := pem.Decode(readFile(t, filepath.Join(interopDir, path)))
		if block == nil {
			t.Fatalf("%s: no PEM block", path)
		}
		for _, cut := range []int{0, 5, len(block.Bytes) / 2, len(block.Bytes) - 1} {
			_, err := InspectSecretKey(armored(block.Type, block.Bytes[:cut]))
			if !errors.Is(err, ErrMalformedKey) {
				t.Errorf("%s cut at %d: got %v, want ErrMalformedKey", path, cut, err)
			}
		}
	}
	for _, tc := range []struct {
		name string
		data []byte
		want error
	}{
		{"public key", readFile(t, filepath.Join(interopDir, "keys/alice.pub.pem")), ErrUnsupportedKey},
		{"rsa", readFile(t, "../testdata/keys/ssh_rsa_plain"), ErrUnsupportedKey},
		{"text", []byte("hello"), ErrMalformedKey},
		{"trailing byte", armored(goodBlock.Type, append(goodBlock.Bytes, 0)), ErrMalformedKey},
		{"unknown kdf", armored(goodBlock.Type, bytes.Replace(goodBlock.Bytes, []byte("\x00\x04none"), []byte("\x00\x04nope"), 1)), ErrUnsupportedKey},
		{"damaged armor", good[:len(good)-10], ErrMalformedKey},
	} {
		if _, err := InspectSecretKey(tc.data); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
}
