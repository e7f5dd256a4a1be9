package cli

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/c4gh-go/crypt4gh/internal/clitest"
	"github.com/c4gh-go/crypt4gh/keys"
)

// manifest is the part of testdata/interop/manifest.json that the tests use.
// The vectors were made by the reference Python tool (1.8.6 and 1.7), the
// neicnordic Go CLI and ssh-keygen; see testdata/interop/README.md.
type manifest struct {
	Keys []struct {
		Path       string  `json:"path"`
		Type       string  `json:"type"`
		Format     string  `json:"format"`
		Passphrase *string `json:"passphrase"`
		PublicHex  string  `json:"x25519_pk_hex"`
	} `json:"keys"`
	Cases []interopCase `json:"cases"`
}

type interopCase struct {
	Name           string  `json:"name"`
	File           string  `json:"file"`
	BodyFile       string  `json:"body_file"`
	Kind           string  `json:"kind"`
	SecretKey      string  `json:"sk"`
	Passphrase     *string `json:"passphrase"`
	SenderPK       string  `json:"sender_pk"`
	Range          string  `json:"range"`
	ExpectedSHA256 string  `json:"expected_sha256"`
	ExpectedLen    int     `json:"expected_len"`
	ErrorClass     string  `json:"error_class"`
}

const interopDir = "../../testdata/interop"

func loadManifest(t testing.TB) manifest {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(interopDir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Cases) == 0 {
		t.Fatal("manifest has no cases")
	}
	return m
}

// exitCodeFor is the exit code that each error class of the manifest must
// give.
var exitCodeFor = map[string]int{
	"bad-magic":                     exitData,
	"unsupported-version":           exitData,
	"empty-input":                   exitData,
	"header-truncated":              exitData,
	"invalid-packet-length":         exitData,
	"multiple-edit-lists":           exitData,
	"mixed-data-encryption-methods": exitData,
	"body-mac-failure":              exitData,
	"body-truncated":                exitData,
	"no-decryptable-packet":         exitKey,
	"no-data-key":                   exitKey,
	"wrong-passphrase":              exitKey,
}

// TestInterop decrypts every case of the interop manifest with the crypt4gh
// command, as a user would, and checks the output digest or the exit code.
//
// A protected key is opened with its passphrase, at its real cost, in the
// first decrypt case that uses it (and in every reject case), and later
// decrypt cases use an unprotected copy of it: opening the same file with
// the same passphrase again tests nothing new and costs up to half a
// second a case (more than tenfold under the race detector). The keys
// package opens every vector key at its real cost too.
func TestInterop(t *testing.T) {
	m := loadManifest(t)
	unlocked := map[string]string{}
	keyDir := t.TempDir()
	for _, tc := range m.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			input := filepath.Join(interopDir, tc.File)
			if tc.BodyFile != "" {
				input = concat(t, input, filepath.Join(interopDir, tc.BodyFile))
			}
			sk := filepath.Join(interopDir, tc.SecretKey)
			passphrase := tc.Passphrase
			if copyPath, ok := unlocked[sk]; ok && tc.Kind == "decrypt" {
				sk, passphrase = copyPath, nil
			} else if tc.Kind == "decrypt" && tc.Passphrase != nil {
				unlocked[sk] = unlockedCopy(t, sk, *tc.Passphrase, keyDir)
			}
			if passphrase != nil {
				t.Setenv("C4GH_PASSPHRASE", *passphrase)
			} else {
				t.Setenv("C4GH_PASSPHRASE", "")
				os.Unsetenv("C4GH_PASSPHRASE")
			}
			out := filepath.Join(t.TempDir(), "out")
			args := []string{"crypt4gh", "decrypt", "--sk", sk, "-i", input, "-o", out}
			if tc.SenderPK != "" {
				args = append(args, "--sender_pk", filepath.Join(interopDir, tc.SenderPK))
			}
			if tc.Range != "" {
				args = append(args, "--range", tc.Range)
			}
			var stderr bytes.Buffer
			code := Run(args, bytes.NewReader(nil), &bytes.Buffer{}, &stderr)
			switch tc.Kind {
			case "decrypt":
				if code != 0 {
					t.Fatalf("exit %d: %s", code, stderr.String())
				}
				got, err := os.ReadFile(out)
				if err != nil {
					t.Fatal(err)
				}
				sum := sha256.Sum256(got)
				if len(got) != tc.ExpectedLen || hex.EncodeToString(sum[:]) != tc.ExpectedSHA256 {
					t.Errorf("got %d bytes with sha256 %x, want %d bytes with sha256 %s", len(got), sum, tc.ExpectedLen, tc.ExpectedSHA256)
				}
			case "reject":
				want, ok := exitCodeFor[tc.ErrorClass]
				if !ok {
					t.Fatalf("unknown error class %q", tc.ErrorClass)
				}
				if code != want {
					t.Errorf("exit %d, want %d for %s; stderr:\n%s", code, want, tc.ErrorClass, stderr.String())
				}
				if lines := bytes.Count(stderr.Bytes(), []byte("crypt4gh: error: ")); lines != 1 {
					t.Errorf("want one error line, got:\n%s", stderr.String())
				}
				if _, err := os.Stat(out); !os.IsNotExist(err) {
					t.Errorf("a failed decrypt left %s behind", out)
				}
				clitest.EmptyDir(t, filepath.Dir(out))
			default:
				t.Fatalf("unknown kind %q", tc.Kind)
			}
		})
	}
}

// unlockedCopy writes an unprotected copy of the secret key at path into
// dir and returns its path.
func unlockedCopy(t *testing.T, path, passphrase, dir string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sk, err := keys.ParseSecretKey(data, func() ([]byte, error) { return []byte(passphrase), nil })
	if err != nil {
		t.Fatal(err)
	}
	out, err := keys.MarshalSecretKey(&sk, nil, keys.KDFNone, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(dir, filepath.Base(path))
	if err := os.WriteFile(copyPath, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return copyPath
}

func concat(t *testing.T, paths ...string) string {
	t.Helper()
	var b []byte
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b = append(b, data...)
	}
	out := filepath.Join(t.TempDir(), "joined.c4gh")
	if err := os.WriteFile(out, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}
