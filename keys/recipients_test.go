package keys

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// manifestPublicKeys returns every public key file of the interop manifest
// with its key.
func manifestPublicKeys(t *testing.T) (files [][]byte, pks []PublicKey) {
	t.Helper()
	for _, k := range loadManifestKeys(t) {
		if k.Type == "public" {
			files = append(files, readFile(t, filepath.Join(interopDir, k.Path)))
			pks = append(pks, wantPK(t, k.PKHex))
		}
	}
	if len(files) < 3 {
		t.Fatalf("only %d public keys in the manifest", len(files))
	}
	return files, pks
}

func equalKeys(a, b []PublicKey) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestParsePublicKeys reads files of several keys in every format, as cat
// makes them, with comments, blank lines and CRLF line breaks, and checks
// that every key comes back in order.
func TestParsePublicKeys(t *testing.T) {
	files, want := manifestPublicKeys(t)
	sshLines := readFile(t, filepath.Join(sshKeysDir, "ssh_ed25519_plain.pub"))
	sshPK, err := ParsePublicKey(sshLines)
	if err != nil {
		t.Fatal(err)
	}

	cat := bytes.Join(files, nil)
	var commented bytes.Buffer
	commented.WriteString("# team keys\n\n")
	for i, f := range files {
		fmt.Fprintf(&commented, "   # key %d\n%s\n\n", i, f)
	}
	crlf := bytes.ReplaceAll(commented.Bytes(), []byte("\n"), []byte("\r\n"))
	noFinalNewline := bytes.TrimRight(cat, "\n")

	for _, tc := range []struct {
		name string
		data []byte
		want []PublicKey
	}{
		{"cat", cat, want},
		{"comments and blank lines", commented.Bytes(), want},
		{"CRLF", crlf, want},
		{"no final newline", noFinalNewline, want},
		{"one key", files[0], want[:1]},
		{"the same key twice", append(bytes.Clone(files[0]), files[0]...), []PublicKey{want[0], want[0]}},
		{"ssh-ed25519 lines", []byte("# ops\n" + string(sshLines) + "\n" + string(sshLines) + "  \n"), []PublicKey{sshPK, sshPK}},
		{"PEM with 64-column base64", armored(pemC4GHPublic, want[0][:]), want[:1]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParsePublicKeys(tc.data)
			if err != nil {
				t.Fatal(err)
			}
			if !equalKeys(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			one, err := ParsePublicKey(tc.data)
			switch {
			case len(tc.want) == 1 && (err != nil || one != tc.want[0]):
				t.Errorf("ParsePublicKey: %s, %v; want %s", one, err, tc.want[0])
			case len(tc.want) > 1 && (!errors.Is(err, ErrMultipleKeys) || one != PublicKey{}):
				t.Errorf("ParsePublicKey of %d keys: %s, %v; want ErrMultipleKeys", len(tc.want), one, err)
			}
		})
	}
}

var lineRE = regexp.MustCompile(`line [0-9]`)

// TestParsePublicKeysErrors checks that what is not a key, anywhere in a
// file, is an error that names its line, and that no key is returned.
func TestParsePublicKeysErrors(t *testing.T) {
	files, _ := manifestPublicKeys(t)
	alice, bob := string(files[0]), string(files[1]) // three lines each
	secret := string(readFile(t, filepath.Join(interopDir, "keys/dave.sec.pem")))
	relabelled := string(readFile(t, filepath.Join(sshKeysDir, "c4gh_scrypt_relabelled")))
	rsa := string(readFile(t, filepath.Join(sshKeysDir, "ssh_rsa_plain.pub")))
	erin := string(readFile(t, filepath.Join(interopDir, "keys/erin.pub")))
	zero := string(armored(pemC4GHPublic, make([]byte, KeySize)))

	for _, tc := range []struct {
		name string
		data string
		want error
		line int
		says string
	}{
		{"garbage after a key", alice + "hello\n", ErrMalformedKey, 4, "not a public key"},
		{"garbage between keys", alice + "\n# ok\nhello world\n" + bob, ErrMalformedKey, 6, "not a public key"},
		{"text before the armor", "Bag Attributes\n" + alice, ErrMalformedKey, 1, "not a public key"},
		{"a secret key", alice + bob + secret, ErrUnsupportedKey, 7, "holds a secret key"},
		{"a relabelled secret key", alice + relabelled, ErrUnsupportedKey, 4, "holds a secret key"},
		{"ssh-rsa line", alice + "\n" + rsa, ErrUnsupportedKey, 5, "ssh-rsa"},
		{"bad base64 on an ssh line", erin + "ssh-ed25519 !!!! x@y\n", ErrMalformedKey, 2, "bad base64"},
		{"armor without END", alice + "-----BEGIN CRYPT4GH PUBLIC KEY-----\nAAAA\n", ErrMalformedKey, 4, "END"},
		{"END of another type", alice + "-----BEGIN CRYPT4GH PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n" + bob,
			ErrMalformedKey, 4, "damaged PEM armor"},
		{"text after END on its line", strings.Replace(alice, "KEY-----\n", "KEY----- bob\n", 2) + bob, ErrMalformedKey, 1, "damaged PEM armor"},
		{"indented armor", alice + "  " + bob, ErrMalformedKey, 4, "damaged PEM armor"},
		{"bad base64 in armor", bob + "-----BEGIN CRYPT4GH PUBLIC KEY-----\n!!!!\n-----END CRYPT4GH PUBLIC KEY-----\n", ErrMalformedKey, 4, ""},
		{"all-zero key", alice + "\n\n" + zero, ErrMalformedKey, 6, "zeros"},
		{"unknown PEM type", alice + string(armored("CERTIFICATE", []byte("x"))), ErrUnsupportedKey, 4, "certificate"},
		{"line count after CRLF armor", strings.ReplaceAll(alice+bob, "\n", "\r\n") + "x\r\n", ErrMalformedKey, 7, "not a public key"},
		{"empty", "", ErrMalformedKey, 0, "no public key"},
		{"comments only", "# nothing\n\n   \n", ErrMalformedKey, 0, "no public key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pks, err := ParsePublicKeys([]byte(tc.data))
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if pks != nil {
				t.Errorf("keys returned with an error: %v", pks)
			}
			prefix := fmt.Sprintf("line %d: ", tc.line)
			if tc.line == 0 {
				prefix = ""
			}
			if !strings.HasPrefix(err.Error(), prefix) || lineRE.MatchString(err.Error()[len(prefix):]) {
				t.Errorf("error %q does not start with %q", err, prefix)
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Errorf("error %q does not say %q", err, tc.says)
			}
			// ParsePublicKey reports the same error, not the first key.
			if pk, err1 := ParsePublicKey([]byte(tc.data)); err1 == nil || err1.Error() != err.Error() || pk != (PublicKey{}) {
				t.Errorf("ParsePublicKey: %s, %v; want %v", pk, err1, err)
			}
		})
	}
}

// TestParsePublicKeyMultiple checks the error that ParsePublicKey gives
// for a file of several keys.
func TestParsePublicKeyMultiple(t *testing.T) {
	files, _ := manifestPublicKeys(t)
	_, err := ParsePublicKey(bytes.Join(files[:3], nil))
	if !errors.Is(err, ErrMultipleKeys) {
		t.Fatalf("got %v, want ErrMultipleKeys", err)
	}
	for _, s := range []string{"3", "list of recipients"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %q", err, s)
		}
	}
}
