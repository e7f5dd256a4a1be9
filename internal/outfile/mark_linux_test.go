package outfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/c4gh-go/crypt4gh/internal/clitest"
)

// TestReplaceMarked: an output that may replace the file a killed run
// committed (Options.ReplaceMarked) replaces it while it holds the mark,
// and refuses a file put at its name after it was opened, which holds no
// mark: the check is made again at the commit.
func TestReplaceMarked(t *testing.T) {
	dir := t.TempDir()
	final := filepath.Join(dir, "out")
	mark := func(p, m string) {
		t.Helper()
		if err := unix.Setxattr(p, markAttr, []byte(m), 0); err != nil {
			if errors.Is(err, syscall.ENOTSUP) {
				clitest.Missing(t, "a temporary folder whose file system keeps user extended attributes: %v", err)
			}
			t.Fatal(err)
		}
	}
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(final, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	open := func() *Output {
		t.Helper()
		o, err := Open(final, nil, Options{Mode: ModePublic, ReplaceMarked: "m1", Mark: "m2"})
		if err != nil {
			t.Fatal(err)
		}
		o.Write([]byte("new"))
		return o
	}

	// The killed run's file, marked: replaced, and the new one marked.
	write("killed run's")
	mark(final, "m1")
	if err := open().Commit(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(final); string(b) != "new" || !Marked(final, "m2") {
		t.Errorf("the marked file: now %q, marked %v", b, Marked(final, "m2"))
	}

	// Marked when opened, then replaced by the user's before the commit.
	write("killed run's")
	mark(final, "m1")
	o := open()
	os.Remove(final)
	write("the user's")
	err := o.Commit()
	if err == nil || !strings.Contains(err.Error(), "appeared while this command ran") {
		t.Errorf("a file put there after the open: %v", err)
	}
	if b, _ := os.ReadFile(final); string(b) != "the user's" {
		t.Errorf("the user's file is now %q", b)
	}

	// Not marked at all: refused when opened.
	if _, err := Open(final, nil, Options{Mode: ModePublic, ReplaceMarked: "m1"}); !errors.Is(err, ErrExists) {
		t.Errorf("a file without the mark, opened: %v", err)
	}
	if names, _ := filepath.Glob(filepath.Join(dir, ".*")); len(names) > 0 {
		t.Errorf("left behind: %v", names)
	}
}
