package outfile

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// A file output hands what was written to the disk every writebackChunk
// bytes, in order, without gaps and up to multiples of 64 KiB, whether the
// bytes came by Write or by ReadFrom (copy_file_range, also through the
// *io.LimitedReader that the progress counter gives), and a long ReadFrom
// hands them over as it goes; the tail is left to the fsync of the commit.
func TestOutputStartsWriteback(t *testing.T) {
	dir := t.TempDir()
	out, err := Open(filepath.Join(dir, "out"), nil, Options{Mode: ModePublic})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Abort()
	w := out.Writer.(*writeNamer)
	type call struct{ off, n int64 }
	var calls []call
	w.writeback = func(f *os.File, off, n int64) {
		if f != out.tmp {
			t.Errorf("writeback of %s, not of the output", f.Name())
		}
		calls = append(calls, call{off, n})
	}
	chunk := bytes.Repeat([]byte{2}, 3<<20+17)
	for range 5 {
		if _, err := out.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	const srcSize = 3*writebackChunk + 5
	src := filepath.Join(dir, "src")
	if err := os.WriteFile(src, bytes.Repeat([]byte{1}, srcSize), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	before := len(calls)
	lr := &io.LimitedReader{R: f, N: srcSize - 1000}
	if n, err := w.ReadFrom(lr); err != nil || n != srcSize-1000 || lr.N != 0 {
		t.Fatalf("ReadFrom: %d, %v, %d left", n, err, lr.N)
	}
	if n, err := io.Copy(w, f); err != nil || n != 1000 {
		t.Fatalf("io.Copy: %d, %v", n, err)
	}
	if during := len(calls) - before; during < 2 {
		t.Errorf("%d writebacks during a copy of %d bytes", during, srcSize)
	}
	total := int64(5*len(chunk)) + srcSize
	var next int64
	for _, c := range calls {
		if c.off != next || c.n < writebackChunk || (c.off+c.n)%(64<<10) != 0 {
			t.Errorf("writeback of %d bytes at %d after %d bytes handed over", c.n, c.off, next)
		}
		next = c.off + c.n
	}
	if total-next >= writebackChunk+64<<10 {
		t.Errorf("%d bytes written, the first %d handed over", total, next)
	}
	if err := out.Finish(nil); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "out")); err != nil || fi.Size() != total {
		t.Errorf("committed output: %v, %v", fi, err)
	}
}

// BenchmarkCheckForce checks an existing output of 1.5 MB that --force
// replaces: larger than a key file may be, it is not read.
func BenchmarkCheckForce(b *testing.B) {
	path := filepath.Join(b.TempDir(), "out.c4gh")
	if err := os.WriteFile(path, make([]byte, 1500_000), 0o600); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Check(path, Options{Force: true}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestQuoteName: control characters and bytes that are not UTF-8 are
// shown as \xNN; other characters, U+FFFD among them, as they are.
func TestQuoteName(t *testing.T) {
	for in, want := range map[string]string{
		"plain.c4gh":    "plain.c4gh",
		"café":          "café",
		"a\x1b[2Jb":     `a\x1b[2Jb`,
		"bad\xffutf":    `bad\xffutf`,
		"\xc3":          `\xc3`,
		"real\uFFFD":    "real\uFFFD",
		"nl\nand\u0085": `nl\x0aand\x85`,
	} {
		if got := QuoteName(in); got != want {
			t.Errorf("QuoteName(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzOpenPGPSecretKey: any bytes, no panic; a key packet cut short is no
// key.
func FuzzOpenPGPSecretKey(f *testing.F) {
	f.Add([]byte("\x94\x58\x04\x6b\x14\x1d\x7e\x16\x09"))
	f.Add([]byte("\xc5\xff\x00\x00\x00\x10\x04\x00\x00\x00\x00\x16"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if openPGPSecretKey(b) && len(b) < 10 {
			t.Errorf("%x: a key in %d bytes", b, len(b))
		}
	})
}
