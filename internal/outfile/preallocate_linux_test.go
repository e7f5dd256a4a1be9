package outfile

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A reservation larger than what is written leaves neither a longer file
// nor blocks allocated past its end once the output is committed, and an
// output that fails leaves nothing at all.
func TestOutputPreallocateReleased(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out")
	out, err := Open(path, nil, Options{Mode: 0o600})
	if err != nil {
		t.Fatal(err)
	}
	out.Preallocate(16 << 20)
	if !out.reserved {
		out.Abort()
		t.Skip("this file system does not preallocate")
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(out.tmp.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	if st.Size != 0 || st.Blocks*512 < 16<<20 {
		t.Fatalf("after preallocate: size %d, %d bytes allocated; want 0 and 16 MiB", st.Size, st.Blocks*512)
	}
	data := bytes.Repeat([]byte("crypt4gh"), 1000)
	if _, err := out.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := out.Finish(nil); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes (%v), want the %d written", len(got), err, len(data))
	}
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	if st.Blocks*512 >= 1<<20 {
		t.Errorf("committed file of %d bytes holds %d bytes of blocks: the reservation was not released", st.Size, st.Blocks*512)
	}

	failed := filepath.Join(dir, "failed")
	out, err = Open(failed, nil, Options{Mode: 0o600})
	if err != nil {
		t.Fatal(err)
	}
	out.Preallocate(16 << 20)
	if err := out.Finish(os.ErrClosed); err == nil {
		t.Fatal("finish with an error returned nil")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("after a failed output the folder holds %d entries, want only the committed one", len(entries))
	}
}
