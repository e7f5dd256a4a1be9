package cli

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/c4gh-go/crypt4gh/internal/ptytest"
)

// shown collects what the terminal displays until tty is closed.
func shown(master *os.File) <-chan string {
	ch := make(chan string, 1)
	go func() {
		var b bytes.Buffer
		io.Copy(&b, master) // ends with EIO once the tty side is closed
		ch <- b.String()
	}()
	return ch
}

// TestProgressTerminal draws the bar on a pseudo-terminal: it shows the
// description, the byte counts and 100% at the end, on a line of its own.
func TestProgressTerminal(t *testing.T) {
	old := progressInterval
	progressInterval = time.Millisecond
	defer func() { progressInterval = old }()
	master, tty := ptytest.Open(t)
	out := shown(master)

	const total = 3 << 20
	p := newProgressTo(tty, total, "testing")
	if p == nil {
		t.Fatal("no progress bar on a terminal")
	}
	r := p.reader(bytes.NewReader(make([]byte, total)))
	p.start()
	buf := make([]byte, 1<<20)
	for {
		_, err := r.Read(buf)
		if err == io.EOF {
			break
		}
		time.Sleep(5 * time.Millisecond) // let the bar draw in between
	}
	p.stop()
	tty.Close()
	got := <-out
	for _, want := range []string{"testing", "100%", "3.1/3.1 MB", "\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("terminal shows %q, missing %q", got, want)
		}
	}
	if !strings.HasSuffix(strings.TrimRight(got, "\r\n"), "]") || !strings.HasSuffix(got, "\n") {
		t.Errorf("the last line is not the ended, finished bar: %q", got)
	}
}

// TestRunProgressQuiet runs encrypt in-process with a pseudo-terminal as
// stderr: a bar without -q, nothing at all with -q.
func TestRunProgressQuiet(t *testing.T) {
	old := progressInterval
	progressInterval = time.Millisecond
	defer func() { progressInterval = old }()
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, bytes.Repeat([]byte("acgt"), 4<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	pub := filepath.Join(interopDir, "keys", "dave.pub.pem")
	for _, quiet := range []bool{false, true} {
		master, tty := ptytest.Open(t)
		out := shown(master)
		args := []string{"crypt4gh", "encrypt", "--recipient_pk", pub, "-i", plain, "-o", plain + ".c4gh", "--force"}
		if quiet {
			args = append(args, "-q")
		}
		code := Run(args, nil, io.Discard, tty)
		tty.Close()
		got := <-out
		if code != 0 {
			t.Fatalf("quiet=%v: exit %d: %s", quiet, code, got)
		}
		if quiet && got != "" {
			t.Errorf("-q: the terminal shows %q", got)
		}
		if !quiet && !strings.Contains(got, "encrypting") {
			t.Errorf("no bar on the terminal, got %q", got)
		}
	}
}
