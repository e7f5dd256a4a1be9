package progress

import (
	"bytes"
	"io"
	"os"
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
	old := Interval
	Interval = time.Millisecond
	defer func() { Interval = old }()
	master, tty := ptytest.Open(t)
	out := shown(master)

	const total = 3 << 20
	p := New(tty, total, "testing")
	if p == nil {
		t.Fatal("no progress bar on a terminal")
	}
	r := p.Reader(bytes.NewReader(make([]byte, total)))
	p.Start()
	buf := make([]byte, 1<<20)
	for {
		_, err := r.Read(buf)
		if err == io.EOF {
			break
		}
		time.Sleep(5 * time.Millisecond) // let the bar draw in between
	}
	p.Stop()
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
