package progress

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
)

// TestProgressNotTerminal checks that no bar is made, and nothing
// written, when stderr is not a terminal: a buffer, a regular file, or a
// pipe as in a CI log.
func TestProgressNotTerminal(t *testing.T) {
	file, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	for name, w := range map[string]io.Writer{"buffer": &bytes.Buffer{}, "file": file, "pipe": pw} {
		if p := New(w, 1<<20, "encrypting"); p != nil {
			t.Errorf("%s: got a progress bar on a non-terminal", name)
		}
	}
	if fi, _ := file.Stat(); fi.Size() != 0 {
		t.Errorf("%d bytes written to the stderr file", fi.Size())
	}
}

// TestProgressNilSafe checks that the methods of a nil *Bar leave the
// data alone and do nothing else.
func TestProgressNilSafe(t *testing.T) {
	var p *Bar
	r := strings.NewReader("data")
	if got := p.Reader(r); got != r {
		t.Errorf("nil bar wrapped the reader")
	}
	p.Start()
	called := false
	p.Print(func() { called = true })
	p.Stop()
	if !called {
		t.Errorf("nil bar did not run the print function")
	}
}

// TestCountingReader checks the count and the data through Read and
// through WriteTo, to a file (kernel copy), to a buffer and to a plain
// writer.
func TestCountingReader(t *testing.T) {
	dir := t.TempDir()
	data := bytes.Repeat([]byte("0123456789abcdef"), (copyChunk+12345)/16)
	src := filepath.Join(dir, "src")
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	p := &Bar{}
	if err := iotest.TestReader(p.Reader(bytes.NewReader(data[:100000])), data[:100000]); err != nil {
		t.Fatal(err)
	}
	dsts := map[string]func() (io.Writer, func() []byte){
		"file": func() (io.Writer, func() []byte) {
			f, err := os.Create(filepath.Join(dir, "dst"))
			if err != nil {
				t.Fatal(err)
			}
			return f, func() []byte {
				f.Close()
				b, _ := os.ReadFile(f.Name())
				return b
			}
		},
		"buffer": func() (io.Writer, func() []byte) {
			var b bytes.Buffer
			return &b, b.Bytes
		},
		"writer": func() (io.Writer, func() []byte) {
			var b bytes.Buffer
			return struct{ io.Writer }{&b}, b.Bytes
		},
	}
	for name, mk := range dsts {
		f, err := os.Open(src)
		if err != nil {
			t.Fatal(err)
		}
		p := &Bar{}
		w, got := mk()
		n, err := io.Copy(w, p.Reader(f))
		f.Close()
		if err != nil || n != int64(len(data)) {
			t.Errorf("%s: copied %d, %v; want %d", name, n, err, len(data))
		}
		if c := p.n.Load(); c != int64(len(data)) {
			t.Errorf("%s: counted %d bytes, want %d", name, c, len(data))
		}
		if !bytes.Equal(got(), data) {
			t.Errorf("%s: the copy differs", name)
		}
	}
}
