package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// TestKeygenPassphraseTwice: keygen with a passphrase piped on stdin and a
// different C4GH_PASSPHRASE set refuses (exit 2), naming both, and writes
// no key; with only the variable, it says that the new key is locked with
// it, also with -q, and the key opens with it.
func TestKeygenPassphraseTwice(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(secretKeyEnv, "")
	t.Setenv(publicKeyEnv, "")
	t.Setenv(passphraseEnv, "from the variable")
	piped := filepath.Join(dir, "piped")
	if err := os.WriteFile(piped, []byte("from stdin\nfrom stdin\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pipe := func(data string) *os.File {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		w.WriteString(data)
		w.Close()
		t.Cleanup(func() { r.Close() })
		return r
	}
	file := func() *os.File {
		f, err := os.Open(piped)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	late := func() *os.File { // a writer that starts a moment after the command
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			time.Sleep(100 * time.Millisecond)
			w.WriteString("from stdin\nfrom stdin\n")
			w.Close()
		}()
		t.Cleanup(func() { r.Close() })
		return r
	}
	for name, open := range map[string]func() *os.File{
		"pipe":      func() *os.File { return pipe("from stdin\nfrom stdin\n") },
		"file":      file,
		"late pipe": late,
	} {
		stdin := open()
		sk := filepath.Join(dir, name+".sec")
		var stdout, stderr bytes.Buffer
		code := Run([]string{"crypt4gh", "keygen", "--sk", sk, "--pk", sk + ".pub"}, stdin, &stdout, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), "a passphrase is piped on stdin and C4GH_PASSPHRASE is set too") {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 naming both", name, code, stderr.String())
		}
		if _, err := os.Stat(sk); err == nil {
			t.Errorf("%s: a key was written", name)
		}
	}
	// An empty stdin: the variable, said also with -q.
	sk := filepath.Join(dir, "env.sec")
	var stdout, stderr bytes.Buffer
	if code := Run([]string{"crypt4gh", "keygen", "-q", "--sk", sk, "--pk", sk + ".pub"}, pipe(""), &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "warning: locking the new key with the passphrase in C4GH_PASSPHRASE") {
		t.Errorf("stderr %q: no word of the variable", stderr.String())
	}
	data, err := os.ReadFile(sk)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keys.ParseSecretKey(data, func() ([]byte, error) { return []byte("from the variable"), nil }); err != nil {
		t.Errorf("the key does not open with the variable's passphrase: %v", err)
	}
}
