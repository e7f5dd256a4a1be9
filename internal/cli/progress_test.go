package cli

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/c4gh-go/crypt4gh/internal/progress"
)

// TestRunNoBarWhenStderrIsAFile runs encrypt and decrypt in-process with a
// regular file, not a terminal, as stderr: it must stay empty.
func TestRunNoBarWhenStderrIsAFile(t *testing.T) {
	old := progress.Interval
	progress.Interval = time.Millisecond
	defer func() { progress.Interval = old }()
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, bytes.Repeat([]byte("acgt"), 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	stderr, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	keysDir := filepath.Join(interopDir, "keys")
	if code := Run([]string{"crypt4gh", "encrypt", "--recipient_pk", filepath.Join(keysDir, "dave.pub.pem"),
		"-i", plain, "-o", plain + ".c4gh"}, nil, io.Discard, stderr); code != 0 {
		t.Fatalf("encrypt: exit %d", code)
	}
	if fi, _ := stderr.Stat(); fi.Size() != 0 {
		b, _ := os.ReadFile(stderr.Name())
		t.Errorf("stderr is not a terminal, but got %q", b)
	}
}
