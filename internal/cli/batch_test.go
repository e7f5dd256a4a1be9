package cli

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// runIn runs the command in-process in dir and returns the exit code,
// stdout and stderr.
func runIn(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	t.Chdir(dir)
	var stdout, stderr bytes.Buffer
	code := Run(append([]string{"crypt4gh"}, args...), bytes.NewReader(nil), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// folderMu lets one runAt at a time hold the process's working folder.
var folderMu sync.Mutex

// runAt runs the command in-process in dir, like runIn, but leaves the
// working folder of the test alone and sets no variable: the tests that
// use only runAt can run in parallel (t.Parallel). The process's folder
// is dir only while the command runs, one run at a time; the tools and
// servers of such tests run meanwhile. A test of runAt must name every
// file it reads itself by its full path.
func runAt(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	return runAtWith(t, dir, bytes.NewReader(nil), args...)
}

// runAtWith is runAt with stdin.
func runAtWith(t *testing.T, dir string, stdin io.Reader, args ...string) (int, string, string) {
	t.Helper()
	folderMu.Lock()
	defer folderMu.Unlock()
	back, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := os.Chdir(back); err != nil {
			panic(err) // every later test would run in the wrong folder
		}
	}()
	var stdout, stderr bytes.Buffer
	code := Run(append([]string{"crypt4gh"}, args...), stdin, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// sumOf is the sha256sum line of the file name in the current folder.
func sumOf(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:]) + "  " + name + "\n"
}

// batchSetup makes a folder with a key pair and three files.
func batchSetup(t *testing.T) (dir string, plains map[string][]byte) {
	t.Helper()
	dir = t.TempDir()
	if code, _, stderr := runIn(t, dir, "keygen", "--sk", "me.sec", "--pk", "me.pub", "--nocrypt"); code != 0 {
		t.Fatalf("keygen: %s", stderr)
	}
	plains = map[string][]byte{
		"one":   bytes.Repeat([]byte{1}, 150000),
		"two":   {},
		"three": bytes.Repeat([]byte("three"), 13108), // 65540 bytes: one full segment and 4
	}
	for name, b := range plains {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, plains
}

// TestBatchChecksum encrypts and decrypts three files in one call each and
// compares the --checksum lines with the sha256 of the files on disk.
func TestBatchChecksum(t *testing.T) {
	dir, plains := batchSetup(t)
	code, stdout, stderr := runIn(t, dir, "encrypt", "--recipient_pk", "me.pub", "--checksum", "--jobs", "3", "one", "two", "three")
	if code != 0 {
		t.Fatalf("encrypt: exit %d: %s", code, stderr)
	}
	want := sumOf(t, "one") + sumOf(t, "one.c4gh") + sumOf(t, "two") + sumOf(t, "two.c4gh") + sumOf(t, "three") + sumOf(t, "three.c4gh")
	if stdout != want {
		t.Errorf("encrypt --checksum printed\n%s\nwant\n%s", stdout, want)
	}
	for name := range plains {
		os.Remove(name)
	}
	code, stdout, stderr = runIn(t, dir, "decrypt", "--sk", "me.sec", "--checksum", "three.c4gh", "one.c4gh", "two.c4gh")
	if code != 0 {
		t.Fatalf("decrypt: exit %d: %s", code, stderr)
	}
	want = sumOf(t, "three") + sumOf(t, "three.c4gh") + sumOf(t, "one") + sumOf(t, "one.c4gh") + sumOf(t, "two") + sumOf(t, "two.c4gh")
	if stdout != want {
		t.Errorf("decrypt --checksum printed\n%s\nwant\n%s", stdout, want)
	}
	for name, b := range plains {
		if got, err := os.ReadFile(name); err != nil || !bytes.Equal(got, b) {
			t.Errorf("%s: decrypted %d bytes (%v), want %d", name, len(got), err, len(b))
		}
	}

	// One input, one output: the same lines, "-" for stdin.
	code, stdout, stderr = runIn(t, dir, "decrypt", "--sk", "me.sec", "--checksum", "-i", "one.c4gh", "-o", "one.again")
	if want := sumOf(t, "one.again") + sumOf(t, "one.c4gh"); code != 0 || stdout != want {
		t.Errorf("decrypt -i -o --checksum: exit %d, printed\n%s\nwant\n%s%s", code, stdout, want, stderr)
	}
}

// TestBatchKeyReadOnce checks that the passphrase of the secret key is
// asked for once for a whole batch.
func TestBatchKeyReadOnce(t *testing.T) {
	dir, _ := batchSetup(t)
	t.Setenv(passphraseEnv, "batch pass")
	if code, _, stderr := runIn(t, dir, "keygen", "--sk", "locked.sec", "--pk", "locked.pub"); code != 0 {
		t.Fatalf("keygen: %s", stderr)
	}
	if code, _, stderr := runIn(t, dir, "encrypt", "--recipient_pk", "locked.pub", "one", "two", "three"); code != 0 {
		t.Fatalf("encrypt: %s", stderr)
	}
	os.Remove("one")
	os.Remove("two")
	os.Remove("three")
	code, _, stderr := runIn(t, dir, "decrypt", "--sk", "locked.sec", "one.c4gh", "two.c4gh", "three.c4gh")
	if code != 0 {
		t.Fatalf("decrypt: %s", stderr)
	}
	if n := strings.Count(stderr, "using the passphrase in "+passphraseEnv); n != 1 {
		t.Errorf("the passphrase was read %d times for three files:\n%s", n, stderr)
	}
}

// TestBatchExitCode checks that a batch exits with the highest code of
// its failed files, and that the good files are still written.
func TestBatchExitCode(t *testing.T) {
	dir, _ := batchSetup(t)
	if code, _, stderr := runIn(t, dir, "encrypt", "--recipient_pk", "me.pub", "one", "two", "three"); code != 0 {
		t.Fatalf("encrypt: %s", stderr)
	}
	if code, _, stderr := runIn(t, dir, "keygen", "--sk", "other.sec", "--pk", "other.pub", "--nocrypt"); code != 0 {
		t.Fatalf("keygen: %s", stderr)
	}
	if code, _, stderr := runIn(t, dir, "encrypt", "--recipient_pk", "other.pub", "-i", "one", "-o", "other.c4gh"); code != 0 {
		t.Fatalf("encrypt: %s", stderr)
	}
	enc, err := os.ReadFile("one.c4gh")
	if err != nil {
		t.Fatal(err)
	}
	enc[len(enc)-1] ^= 1
	if err := os.WriteFile("bad.c4gh", enc, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		files []string
		code  int
	}{
		{[]string{"missing.c4gh"}, exitUsage},
		{[]string{"one"}, exitUsage},
		{[]string{"other.c4gh", "one"}, exitKey},
		{[]string{"other.c4gh", "bad.c4gh", "one"}, exitData},
		{[]string{"bad.c4gh", "two.c4gh"}, exitData},
	}
	for _, tc := range tests {
		os.Remove("two")
		code, _, stderr := runIn(t, dir, append([]string{"decrypt", "--sk", "me.sec"}, tc.files...)...)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d\n%s", tc.files, code, tc.code, stderr)
		}
		for _, f := range tc.files {
			if f == "two.c4gh" { // the good one
				continue
			}
			if !strings.Contains(stderr, "crypt4gh: error: "+f+": ") {
				t.Errorf("%v: no error line for %s:\n%s", tc.files, f, stderr)
			}
			if base, ok := strings.CutSuffix(f, ".c4gh"); ok {
				if _, err := os.Stat(base); err == nil {
					t.Errorf("%v: %s was written", tc.files, base)
				}
			}
		}
	}
	if _, err := os.Stat("two"); err != nil {
		t.Errorf("the good file was not written next to a bad one: %v", err)
	}
}

// TestBatchItems checks the names that batch mode reads and writes.
func TestBatchItems(t *testing.T) {
	items, err := decryptItems([]string{"a.c4gh", "dir/b.c4gh", "c", ".c4gh", "dir/.c4gh", "d.c4gh.c4gh"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a", "dir/b", "", "", "", "d.c4gh"}
	for i, it := range items {
		if it.out != want[i] || (it.err != nil) != (want[i] == "") {
			t.Errorf("%s: output %q (%v), want %q", it.in, it.out, it.err, want[i])
		}
	}
	if _, _, err := encryptItems([]string{"a", "./a"}); err == nil {
		t.Errorf("two inputs written to the same output were accepted")
	}
	if _, err := decryptItems([]string{"x/a.c4gh", "x//a.c4gh"}); exitCode(err) != exitUsage {
		t.Errorf("two inputs written to the same output: %v, want a usage error", err)
	}
}

// TestFileSumsDrain checks that the sum of the input covers the bytes that
// the operation did not read, as when an edit list ends before the body.
func TestFileSumsDrain(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 10000)
	s := newFileSums(true)
	var out bytes.Buffer
	_, err := s.run(&out, bytes.NewReader(data), -1, 1, func(dst io.Writer, src io.Reader, _ int64, _ int) (string, error) {
		_, err := io.CopyN(dst, src, 10)
		return "", err
	})
	if err != nil {
		t.Fatal(err)
	}
	in, written := sha256.Sum256(data), sha256.Sum256(data[:10])
	want := hex.EncodeToString(written[:]) + "  out\n" + hex.EncodeToString(in[:]) + "  in\n"
	if got := s.lines("in", "out", false); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestSumLineEscape checks the escaping of names as GNU sha256sum does it.
func TestSumLineEscape(t *testing.T) {
	h := sha256.New()
	got := sumLine(h, "a\\b\nc")
	want := "\\e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  a\\\\b\\nc\n"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
