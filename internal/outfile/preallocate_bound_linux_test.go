package outfile

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
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
