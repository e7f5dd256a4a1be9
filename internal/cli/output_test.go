//go:build !windows

package cli

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
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
	out, err := openOutput(fifo, nil, outputOptions{mode: 0o600})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := out.Write([]byte("plaintext")); err != nil {
		t.Fatal(err)
	}
	if err := out.finish(nil); err != nil {
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
	if _, err := openOutput(link, nil, outputOptions{mode: 0o600}); exitCode(err) != exitUsage {
		t.Fatalf("without --force: %v, want a usage error", err)
	}
	out, err := openOutput(link, nil, outputOptions{force: true, mode: 0o600})
	if err != nil {
		t.Fatal(err)
	}
	out.Write([]byte("new"))
	if err := out.finish(nil); err != nil {
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
		_, err := openOutput(dir, nil, outputOptions{force: force, mode: 0o600})
		if err == nil || exitCode(err) != exitUsage || !bytes.Contains([]byte(err.Error()), []byte("is a directory")) {
			t.Errorf("output, force %v: %v, want a usage error saying it is a directory", force, err)
		}
	}
}

// A file output hands what was written to the disk every writebackChunk
// bytes, in order, without gaps and up to multiples of 64 KiB, whether the
// bytes came by Write or by ReadFrom (copy_file_range, also through the
// *io.LimitedReader that the progress counter gives), and a long ReadFrom
// hands them over as it goes; the tail is left to the fsync of the commit.
func TestOutputStartsWriteback(t *testing.T) {
	dir := t.TempDir()
	out, err := openOutput(filepath.Join(dir, "out"), nil, outputOptions{mode: modePublic})
	if err != nil {
		t.Fatal(err)
	}
	defer out.abort()
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
	if err := out.finish(nil); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "out")); err != nil || fi.Size() != total {
		t.Errorf("committed output: %v, %v", fi, err)
	}
}
