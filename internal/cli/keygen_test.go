package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/c4gh-go/crypt4gh/keys"
)

// runOK runs the command in-process and fails the test unless it succeeds.
func runOK(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := Run(append([]string{"crypt4gh"}, args...), strings.NewReader(""), &stdout, &stderr); code != exitOK {
		t.Fatalf("crypt4gh %s: exit %d: %s", strings.Join(args, " "), code, stderr.String())
	}
	return stdout.String()
}

func inspectFile(t *testing.T, path string) keys.SecretKeyInfo {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	info, err := keys.InspectSecretKey(data)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// TestKeygenRelock checks what --relock keeps and changes: the key itself
// always, the comment and the KDF unless -C or --kdf are given; and that
// it replaces the file a symbolic link points to, leaving no temporary file.
func TestKeygenRelock(t *testing.T) {
	dir := t.TempDir()
	sk, pk := filepath.Join(dir, "me.sec"), filepath.Join(dir, "me.pub")
	link := filepath.Join(dir, "link.sec")
	t.Setenv("C4GH_SECRET_KEY", "")
	t.Setenv("C4GH_PUBLIC_KEY", "")
	t.Setenv(passphraseEnv, "")
	runOK(t, "keygen", "--sk", sk, "--pk", pk, "--nocrypt", "-C", "me@example.org")
	if err := os.Symlink("me.sec", link); err != nil {
		t.Fatal(err)
	}
	wantPub, err := os.ReadFile(pk)
	if err != nil {
		t.Fatal(err)
	}

	steps := []struct {
		oldPass, newPass string
		args             []string
		want             keys.SecretKeyInfo
	}{
		{"", "one", nil, keys.SecretKeyInfo{Format: keys.FormatCrypt4GH, Protected: true, KDF: keys.KDFScrypt, Comment: "me@example.org"}},
		{"one", "two", []string{"--kdf", "pbkdf2_hmac_sha256"}, keys.SecretKeyInfo{Format: keys.FormatCrypt4GH, Protected: true, KDF: keys.KDFPBKDF2, Comment: "me@example.org"}},
		{"two", "three", []string{"-C", "new comment"}, keys.SecretKeyInfo{Format: keys.FormatCrypt4GH, Protected: true, KDF: keys.KDFPBKDF2, Comment: "new comment"}},
		{"three", "", []string{"--nocrypt", "-C", ""}, keys.SecretKeyInfo{Format: keys.FormatCrypt4GH, KDF: keys.KDFNone}},
	}
	for _, s := range steps {
		t.Setenv(passphraseEnv, s.oldPass)
		t.Setenv(newPassphraseEnv, s.newPass)
		runOK(t, append([]string{"keygen", "--relock", "--sk", link}, s.args...)...)
		if got := inspectFile(t, sk); got != s.want {
			t.Errorf("after relock %v: got %+v, want %+v", s.args, got, s.want)
		}
		t.Setenv(passphraseEnv, s.newPass)
		if got := runOK(t, "pubkey", "--sk", sk); got != string(wantPub) {
			t.Errorf("after relock %v: public key changed: %q, want %q", s.args, got, wantPub)
		}
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symbolic link was replaced: %v, %v", fi, err)
	}
	if fi, err := os.Stat(sk); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("secret key mode: %v, %v", fi.Mode(), err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("files left in the folder: %v", names)
	}
}

// TestKeygenConvertComment checks that --convert keeps the comment of an
// unprotected OpenSSH key.
func TestKeygenConvertComment(t *testing.T) {
	out := filepath.Join(t.TempDir(), "erin.sec")
	t.Setenv("C4GH_PUBLIC_KEY", "")
	runOK(t, "keygen", "--convert", "--sk", filepath.Join(interopDir, "keys", "erin"), "-o", out, "--nocrypt")
	want := keys.SecretKeyInfo{Format: keys.FormatCrypt4GH, KDF: keys.KDFNone, Comment: "erin@setA"}
	if got := inspectFile(t, out); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}
