package cli

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/c4gh-go/crypt4gh/internal/clitest"
)

// TestJournalRetryKeepsOthersFiles: a run with a journal that starts an
// input and does not finish it (it failed, or was killed) leaves a start
// line without its done line. The run after it replaces the file at that
// output's name only when it is the one the killed run committed (it
// holds the mark the start line recorded), and removes only the
// temporary files that no live process holds. Before, it replaced any
// file there without --force (a user's, put there after a failed run,
// or one refused as it appeared during the run), and removed the
// temporary files of another crypt4gh writing the same name.
func TestJournalRetryKeepsOthersFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustRun(t, dir, "keygen", "--sk", "me.sec", "--pk", "me.pub", "--nocrypt")
	plain := make([]byte, 200_000)
	rand.Read(plain)
	write := func(name string, b []byte) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(name string) []byte {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	write("p", plain)
	mustRun(t, dir, "encrypt", "--recipient_pk", "me.pub", "-i", "p", "-o", "good.c4gh")
	good := read("good.c4gh")
	bad := bytes.Clone(good)
	bad[len(bad)-70_000] ^= 1 // in the second segment
	os.Mkdir(filepath.Join(dir, "out"), 0o755)
	args := []string{"decrypt", "--sk", "me.sec", "--journal", "j", "-o", "out/"}

	// A run that fails on x, then the user's own file under its name,
	// then the retry: refused, the file kept.
	write("x.c4gh", bad)
	if code, _, stderr := runAt(t, dir, append(args, "x.c4gh")...); code != exitData {
		t.Fatalf("the damaged input: exit %d, want %d\n%s", code, exitData, stderr)
	}
	mine := []byte("my own notes\n")
	write("out/x", mine)
	write("x.c4gh", good)
	code, _, stderr := runAt(t, dir, append(args, "x.c4gh")...)
	if code != exitUsage || !strings.Contains(stderr, "already exists") || !bytes.Equal(read("out/x"), mine) {
		t.Errorf("the retry after a failed run, with a file of the user's there: exit %d, the user's file kept: %v\n%s", code, bytes.Equal(read("out/x"), mine), stderr)
	}
	if code, _, stderr := runAt(t, dir, append(args, "--force", "x.c4gh")...); code != 0 || !bytes.Equal(read("out/x"), plain) {
		t.Errorf("with --force: exit %d\n%s", code, stderr)
	}

	// A run killed after it committed y and before its done line: the
	// file holds the mark of the start line, and the retry replaces it.
	write("y.c4gh", good)
	write("out/y", []byte("what the killed run wrote\n"))
	if err := unix.Setxattr(filepath.Join(dir, "out/y"), "user.crypt4gh.run", []byte("0123456789abcdef"), 0); err != nil {
		if errors.Is(err, syscall.ENOTSUP) {
			clitest.Missing(t, "a temporary folder whose file system keeps user extended attributes: %v", err)
		}
		t.Fatal(err)
	}
	appendLine := func(s string) {
		t.Helper()
		f, err := os.OpenFile(filepath.Join(dir, "j"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(f, s)
		f.Close()
	}
	appendLine(`{"start":"y.c4gh","output":"out/y","mark":"0123456789abcdef"}`)
	if code, _, stderr := runAt(t, dir, append(args, "y.c4gh")...); code != 0 || !bytes.Equal(read("out/y"), plain) {
		t.Errorf("the retry after a run killed past its commit: exit %d\n%s", code, stderr)
	}
	if n, err := unix.Getxattr(filepath.Join(dir, "out/y"), "user.crypt4gh.run", make([]byte, 64)); err == nil {
		t.Errorf("the output done keeps a mark of %d bytes", n)
	}
	// The same, but the file there holds another mark (or none): not
	// that run's.
	write("w.c4gh", good)
	write("out/w", mine)
	unix.Setxattr(filepath.Join(dir, "out/w"), "user.crypt4gh.run", []byte("fedcba9876543210"), 0)
	appendLine(`{"start":"w.c4gh","output":"out/w","mark":"0123456789abcdef"}`)
	if code, _, stderr := runAt(t, dir, append(args, "w.c4gh")...); code != exitUsage || !bytes.Equal(read("out/w"), mine) {
		t.Errorf("the retry, another mark on the file there: exit %d\n%s", code, stderr)
	}

	// A run killed while it wrote z: its temporary file goes; the one
	// that a live process holds (this one, locked as crypt4gh locks its
	// own) stays.
	write("z.c4gh", good)
	dead, live := "out/.z.partial-00000000000000aa", "out/.z.partial-00000000000000bb"
	write(dead, []byte("part"))
	write(live, []byte("part"))
	f, err := os.Open(filepath.Join(dir, live))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	appendLine(`{"start":"z.c4gh","output":"out/z","mark":"00000000000000cc"}`)
	if code, _, stderr := runAt(t, dir, append(args, "z.c4gh")...); code != 0 || !bytes.Equal(read("out/z"), plain) {
		t.Errorf("the retry after a run killed while writing: exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, dead)); err == nil {
		t.Errorf("the killed run's temporary file is still there")
	}
	if _, err := os.Stat(filepath.Join(dir, live)); err != nil {
		t.Errorf("the temporary file of a live process was removed: %v", err)
	}
}
