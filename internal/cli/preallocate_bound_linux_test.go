package cli

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/c4gh-go/crypt4gh/internal/clitest"
)

// TestPreallocateBounded: a reservation never takes more than the free
// space minus the margin, and nothing is kept when it is refused.
func TestPreallocateBounded(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	if preallocate(f, free-reserveMargin+1) {
		t.Fatal("reserved more than the free space minus the margin")
	}
	var fst syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &fst); err != nil {
		t.Fatal(err)
	}
	if fst.Blocks != 0 {
		t.Fatalf("a refused reservation kept %d blocks", fst.Blocks)
	}
}

// TestSparseInputNotReserved: the size of a sparse input says nothing of
// what it holds: no output is reserved for it.
func TestSparseInputNotReserved(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sparse")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(1 << 40); err != nil {
		clitest.Missing(t, "no sparse files here: %v", err)
	}
	if n := reservable(f); n != -1 {
		t.Errorf("reservable(sparse 1 TiB) = %d, want -1", n)
	}
	g, err := os.Create(filepath.Join(t.TempDir(), "dense"))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	g.Write(make([]byte, 1<<20))
	g.Seek(0, 0)
	if n := reservable(g); n != 1<<20 {
		t.Errorf("reservable(dense 1 MiB) = %d", n)
	}
}
