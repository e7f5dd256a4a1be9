package keys

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const interopDir = "../testdata/interop"

type manifestKey struct {
	Path       string  `json:"path"`
	Type       string  `json:"type"`
	Format     string  `json:"format"`
	Passphrase *string `json:"passphrase"`
	PKHex      string  `json:"x25519_pk_hex"`
	Comment    *string `json:"comment"`
}

func loadManifestKeys(t testing.TB) []manifestKey {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(interopDir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Keys []manifestKey `json:"keys"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Keys) == 0 {
		t.Fatal("manifest lists no keys")
	}
	return m.Keys
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func constPass(p string) func() ([]byte, error) {
	return func() ([]byte, error) { return []byte(p), nil }
}

// noPassphrase fails the test when the parser asks for a passphrase.
func noPassphrase(t *testing.T) func() ([]byte, error) {
	return func() ([]byte, error) {
		t.Error("passphrase requested for an unprotected key")
		return nil, errors.New("no passphrase")
	}
}

func wantPK(t *testing.T, hexpk string) PublicKey {
	t.Helper()
	b, err := hex.DecodeString(hexpk)
	if err != nil || len(b) != KeySize {
		t.Fatalf("bad x25519_pk_hex %q", hexpk)
	}
	return PublicKey(b)
}

// TestInteropKeys parses every key of the interop manifest and compares it
// with the manifest's x25519_pk_hex, which libsodium computed (for
// ed25519 keys, after its own conversion).
func TestInteropKeys(t *testing.T) {
	for _, k := range loadManifestKeys(t) {
		t.Run(k.Path, func(t *testing.T) {
			data := readFile(t, filepath.Join(interopDir, k.Path))
			want := wantPK(t, k.PKHex)
			switch k.Type {
			case "public":
				pk, err := ParsePublicKey(data)
				if err != nil {
					t.Fatalf("ParsePublicKey: %v", err)
				}
				if pk != want {
					t.Errorf("got %s, want %s", pk, want)
				}
			case "secret":
				pass := noPassphrase(t)
				if k.Passphrase != nil {
					calls := 0
					pass = func() ([]byte, error) { calls++; return []byte(*k.Passphrase), nil }
					defer func() {
						if calls != 1 {
							t.Errorf("passphrase function called %d times, want 1", calls)
						}
					}()
				}
				sk, err := ParseSecretKey(data, pass)
				if err != nil {
					t.Fatalf("ParseSecretKey: %v", err)
				}
				if got := sk.Public(); got != want {
					t.Errorf("got %s, want %s", got, want)
				}
			default:
				t.Fatalf("unknown key type %q in manifest", k.Type)
			}
		})
	}
}

// TestInteropWrongPassphrase checks that every protected key of the
// manifest reports a wrong passphrase as such, and a missing one as
// ErrPassphraseRequired.
func TestInteropWrongPassphrase(t *testing.T) {
	n := 0
	for _, k := range loadManifestKeys(t) {
		if k.Type != "secret" || k.Passphrase == nil {
			continue
		}
		n++
		t.Run(k.Path, func(t *testing.T) {
			data := readFile(t, filepath.Join(interopDir, k.Path))
			skipBcryptUnderRace(t, usesBcrypt(data))
			sk, err := ParseSecretKey(data, constPass(*k.Passphrase+"x"))
			if !errors.Is(err, ErrWrongPassphrase) {
				t.Errorf("wrong passphrase: got %v, want ErrWrongPassphrase", err)
			}
			if sk != (SecretKey{}) {
				t.Errorf("key returned with an error")
			}
			if err != nil && !strings.Contains(err.Error(), "wrong passphrase") {
				t.Errorf("message %q does not say wrong passphrase", err)
			}
			if _, err := ParseSecretKey(data, nil); !errors.Is(err, ErrPassphraseRequired) {
				t.Errorf("nil passphrase function: got %v, want ErrPassphraseRequired", err)
			}
			boom := errors.New("boom")
			if _, err := ParseSecretKey(data, func() ([]byte, error) { return nil, boom }); !errors.Is(err, boom) {
				t.Errorf("failing passphrase function: got %v, want its error", err)
			}
		})
	}
	if n < 5 {
		t.Errorf("only %d protected keys in the manifest", n)
	}
}

// TestInteropMarshalPublicKey checks that MarshalPublicKey writes the
// crypt4gh 1.8.6 public key files byte for byte.
func TestInteropMarshalPublicKey(t *testing.T) {
	n := 0
	for _, k := range loadManifestKeys(t) {
		if k.Format != "c4gh-pub" || strings.HasPrefix(k.Path, "keys/gina") { // gina: written by the Go tool
			continue
		}
		n++
		data := readFile(t, filepath.Join(interopDir, k.Path))
		if got := MarshalPublicKey(wantPK(t, k.PKHex)); string(got) != string(data) {
			t.Errorf("%s: MarshalPublicKey gives\n%s\nwant\n%s", k.Path, got, data)
		}
	}
	if n == 0 {
		t.Fatal("no crypt4gh public keys in the manifest")
	}
}

// TestKeyFileEdits: key files as an editor may leave them: after a UTF-8
// byte-order mark, or the armor after spaces, still read as the key. Two
// secret keys in one file are refused, not the first taken in silence:
// the user meant one of them.
func TestKeyFileEdits(t *testing.T) {
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(interopDir, "keys", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	sec, pub, other := read("dave.sec.pem"), read("dave.pub.pem"), read("erin")
	want, err := ParseSecretKey(sec, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, edited := range [][]byte{append([]byte("\uFEFF"), sec...), append([]byte("  \n\t"), sec...)} {
		if got, err := ParseSecretKey(edited, nil); err != nil || got != want {
			t.Errorf("ParseSecretKey(%q…): %v", edited[:8], err)
		}
		if _, err := InspectSecretKey(edited); err != nil {
			t.Errorf("InspectSecretKey(%q…): %v", edited[:8], err)
		}
	}
	wantPK, err := ParsePublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ParsePublicKey(append([]byte("\uFEFF"), pub...)); err != nil || got != wantPK {
		t.Errorf("a public key after a byte-order mark: %v", err)
	}
	two := append(append([]byte{}, sec...), other...)
	if _, err := ParseSecretKey(two, nil); !errors.Is(err, ErrMalformedKey) || !strings.Contains(err.Error(), "more than one secret key") {
		t.Errorf("two secret keys: %v", err)
	}
	// A public key after the secret key, as some tools write them, is
	// no second secret key.
	if got, err := ParseSecretKey(append(append([]byte{}, sec...), pub...), nil); err != nil || got != want {
		t.Errorf("a secret key followed by its public key: %v", err)
	}
}
