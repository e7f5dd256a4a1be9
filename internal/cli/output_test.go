//go:build !windows

package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/c4gh-go/crypt4gh/internal/outfile"
)

// A named pipe given as -o is written in place: it is neither refused as
// an existing file nor replaced by a regular one (as /dev/null would be,
// for root, by a rename).
func TestOutputNamedPipe(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	got := make(chan []byte)
	go func() {
		b, _ := os.ReadFile(fifo)
		got <- b
	}()
	out, err := outfile.Open(fifo, nil, outfile.Options{Mode: 0o600})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := out.Write([]byte("plaintext")); err != nil {
		t.Fatal(err)
	}
	if err := out.Finish(nil); err != nil {
		t.Fatal(err)
	}
	if b := <-got; string(b) != "plaintext" {
		t.Errorf("read %q from the pipe", b)
	}
	fi, err := os.Lstat(fifo)
	if err != nil || fi.Mode().Type() != os.ModeNamedPipe {
		t.Errorf("the pipe was replaced: %v, %v", fi.Mode(), err)
	}
}

// With --force, an output that is a symbolic link has the file it points
// to replaced; the link stays.
func TestOutputThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	link := filepath.Join(dir, "link")
	if err := os.WriteFile(target, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := outfile.Open(link, nil, outfile.Options{Mode: 0o600}); exitCode(err) != exitUsage {
		t.Fatalf("without --force: %v, want a usage error", err)
	}
	out, err := outfile.Open(link, nil, outfile.Options{Force: true, Mode: 0o600})
	if err != nil {
		t.Fatal(err)
	}
	out.Write([]byte("new"))
	if err := out.Finish(nil); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode().Type() != os.ModeSymlink {
		t.Errorf("the link was replaced: %v", err)
	}
	if b, _ := os.ReadFile(target); !bytes.Equal(b, []byte("new")) {
		t.Errorf("target holds %q", b)
	}
}

// A directory is refused as input and as output, with or without --force,
// as a usage error.
func TestDirectoryInputOutput(t *testing.T) {
	dir := t.TempDir()
	if _, err := openInput(dir, nil); exitCode(err) != exitUsage {
		t.Errorf("input: %v (exit %d), want a usage error", err, exitCode(err))
	}
	for _, force := range []bool{false, true} {
		_, err := outfile.Open(dir, nil, outfile.Options{Force: force, Mode: 0o600})
		if err == nil || exitCode(err) != exitUsage || !bytes.Contains([]byte(err.Error()), []byte("is a directory")) {
			t.Errorf("output, force %v: %v, want a usage error saying it is a directory", force, err)
		}
	}
}

// failingWriter is a stdout that cannot be written, as /dev/full.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// TestChecksumStdoutFails: encrypt and decrypt --checksum to a file whose
// checksum lines cannot be written (stdout full or closed) fail (exit 1)
// and leave no output: the lines are printed before the commit.
func TestChecksumStdoutFails(t *testing.T) {
	dir, _ := batchSetup(t)
	t.Chdir(dir)
	for _, args := range [][]string{
		{"encrypt", "--checksum", "--recipient_pk", "me.pub", "-i", "one", "-o", "out"},
		{"decrypt", "--checksum", "--sk", "me.sec", "-i", "a.c4gh.ref", "-o", "out"},
	} {
		if args[0] == "decrypt" {
			if code, _, stderr := runIn(t, dir, "encrypt", "--recipient_pk", "me.pub", "-i", "one", "-o", "a.c4gh.ref"); code != 0 {
				t.Fatal(stderr)
			}
		}
		var stderr bytes.Buffer
		code := Run(append([]string{"crypt4gh"}, args...), bytes.NewReader(nil), failingWriter{}, &stderr)
		if code != exitError || !strings.Contains(stderr.String(), "failed to write the checksums") {
			t.Errorf("%v: exit %d\n%s", args, code, stderr.String())
		}
		if _, err := os.Stat(filepath.Join(dir, "out")); !os.IsNotExist(err) {
			t.Errorf("%v: output left: %v", args, err)
		}
	}
}

// --force replaces no secret key file, and what it does replace it reads
// only as far as a key file may be long: a file larger than that is no
// key file and is replaced unread.
func TestForceKeepsSecretKeys(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := runAt(t, dir, "keygen", "--sk", filepath.Join(dir, "me.sec"), "--pk", filepath.Join(dir, "me.pub"), "--nocrypt"); code != 0 {
		t.Fatalf("keygen: %s", stderr)
	}
	in := filepath.Join(dir, "in.txt")
	if err := os.WriteFile(in, []byte("plaintext"), 0o600); err != nil {
		t.Fatal(err)
	}
	key, _ := os.ReadFile(filepath.Join(dir, "me.sec"))
	// A key, and a key with more after it, but no larger than a key file.
	padded := append(bytes.Clone(key), bytes.Repeat([]byte("\n"), outfile.MaxKeyFile-len(key))...)
	large := append(bytes.Clone(key), make([]byte, outfile.MaxKeyFile)...)
	for name, data := range map[string][]byte{"key.sec": key, "padded.sec": padded, "large.sec": large} {
		out := filepath.Join(dir, name)
		if err := os.WriteFile(out, data, 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := runAt(t, dir, "encrypt", "--recipient_pk", filepath.Join(dir, "me.pub"), "-i", in, "-o", out, "--force")
		b, _ := os.ReadFile(out)
		if name == "large.sec" {
			if code != 0 || bytes.Equal(b, data) {
				t.Errorf("%s, larger than a key file: exit %d (%s), replaced %v", name, code, stderr, !bytes.Equal(b, data))
			}
			continue
		}
		if code != exitUsage || !strings.Contains(stderr, "holds a secret key") || !bytes.Equal(b, data) {
			t.Errorf("%s: exit %d (%s), kept %v", name, code, strings.TrimSpace(stderr), bytes.Equal(b, data))
		}
	}
}

// swapAtEOF is a reader of data that, when it is read to the end, first
// calls swap: a file changed while the command runs, after it read its
// input and before it commits.
type swapAtEOF struct {
	r    *bytes.Reader
	swap func()
}

func (s *swapAtEOF) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if n == 0 && s.swap != nil {
		s.swap()
		s.swap = nil
	}
	return n, err
}

// TestHeaderBackOnFailedBody: encrypt -o BODY --header HDR --force commits
// the header first; when the body then fails to commit (here a secret key
// put at BODY during the run, which nothing replaces), the old header
// comes back: it is what opens the old body. Before, the new header was
// removed and the old one was gone with it, so the old body no longer
// opened. When both commit, nothing of the old ones is left beside them.
func TestHeaderBackOnFailedBody(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustRun(t, dir, "keygen", "--sk", "me.sec", "--pk", "me.pub", "--nocrypt")
	os.WriteFile(filepath.Join(dir, "old"), []byte("the old data\n"), 0o644)
	mustRun(t, dir, "encrypt", "--recipient_pk", "me.pub", "-i", "old", "-o", "body", "--header", "hdr")
	oldHdr := mustRead(t, filepath.Join(dir, "hdr"))
	key := mustRead(t, filepath.Join(dir, "me.sec"))

	in := &swapAtEOF{r: bytes.NewReader([]byte("the new data\n")), swap: func() {
		os.WriteFile(filepath.Join(dir, "body"), key, 0o600)
	}}
	code, _, stderr := runAtWith(t, dir, in, "encrypt", "--recipient_pk", "me.pub", "-o", "body", "--header", "hdr", "--force")
	if code != exitUsage {
		t.Fatalf("the body refused at its commit: exit %d\n%s", code, stderr)
	}
	if got := mustRead(t, filepath.Join(dir, "hdr")); !bytes.Equal(got, oldHdr) {
		t.Errorf("the header is not the old one (%d bytes, the old %d)", len(got), len(oldHdr))
	}
	if got := mustRead(t, filepath.Join(dir, "body")); !bytes.Equal(got, key) {
		t.Errorf("the secret key at the body's name was replaced")
	}
	names := func() []string {
		ents, _ := os.ReadDir(dir)
		var ns []string
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".") {
				ns = append(ns, e.Name())
			}
		}
		return ns
	}
	if left := names(); len(left) > 0 {
		t.Errorf("left in the folder: %v", left)
	}

	// Both committed: the new pair opens, and nothing is left.
	os.Remove(filepath.Join(dir, "body"))
	mustRun(t, dir, "encrypt", "--recipient_pk", "me.pub", "-i", "old", "-o", "body", "--header", "hdr", "--force")
	os.WriteFile(filepath.Join(dir, "new"), []byte("the new data\n"), 0o644)
	mustRun(t, dir, "encrypt", "--recipient_pk", "me.pub", "-i", "new", "-o", "body", "--header", "hdr", "--force")
	both := append(mustRead(t, filepath.Join(dir, "hdr")), mustRead(t, filepath.Join(dir, "body"))...)
	os.WriteFile(filepath.Join(dir, "both.c4gh"), both, 0o644)
	if out := mustRun(t, dir, "decrypt", "--sk", "me.sec", "-i", "both.c4gh"); out != "the new data\n" {
		t.Errorf("the new pair decrypts to %q", out)
	}
	if left := names(); len(left) > 0 {
		t.Errorf("left in the folder after a pair replaced: %v", left)
	}
}

// TestForceKeepsForeignKeys: a secret key of a format that this tool does
// not read, in binary form (GnuPG's export of an OpenPGP secret key), is
// not replaced by an output with --force either; an armoured one was
// refused already (testdata/script/nothing_lost.txtar).
func TestForceKeepsForeignKeys(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustRun(t, dir, "keygen", "--sk", "me.sec", "--pk", "me.pub", "--nocrypt")
	os.WriteFile(filepath.Join(dir, "in.txt"), []byte("plaintext"), 0o600)
	for _, name := range []string{"gpg_ed25519_plain.gpg", "gpg_rsa2048_locked.gpg"} {
		key, err := os.ReadFile(filepath.Join("..", "..", "testdata", "keys", name))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, name), key, 0o600)
		code, _, stderr := runAt(t, dir, "encrypt", "--recipient_pk", "me.pub", "-i", "in.txt", "-o", name, "--force")
		if got := mustRead(t, filepath.Join(dir, name)); code != exitUsage || !strings.Contains(stderr, "holds a secret key") || !bytes.Equal(got, key) {
			t.Errorf("%s: exit %d, kept %v\n%s", name, code, bytes.Equal(got, key), stderr)
		}
	}
	// What only looks like one at its first byte is no key: replaced.
	os.WriteFile(filepath.Join(dir, "notakey"), []byte("\x94\x58 not an OpenPGP packet"), 0o644)
	if code, _, stderr := runAt(t, dir, "encrypt", "--recipient_pk", "me.pub", "-i", "in.txt", "-o", "notakey", "--force"); code != 0 {
		t.Errorf("a file that is no key: exit %d\n%s", code, stderr)
	}
}
