package prefault

import (
	"syscall"
	"testing"
	"unsafe"
)

// resident counts the pages of b that are in memory.
func resident(t *testing.T, b []byte) int {
	t.Helper()
	vec := make([]byte, (len(b)+pageSize-1)/pageSize)
	_, _, errno := syscall.Syscall(syscall.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0])))
	if errno != 0 {
		t.Fatalf("mincore: %v", errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

func TestPopulate(t *testing.T) {
	const pages = 64
	b, err := syscall.Mmap(-1, 0, pages*pageSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(b)
	if n := resident(t, b); n != 0 {
		t.Fatalf("%d pages of a new mapping are resident before populate", n)
	}
	start := uintptr(unsafe.Pointer(&b[0]))
	if err := populate(start, start+pages*pageSize); err == syscall.EINVAL {
		t.Skip("the kernel does not know MADV_POPULATE_WRITE (Linux 5.14)")
	} else if err != nil {
		t.Fatal(err)
	}
	if n := resident(t, b); n != pages {
		t.Errorf("%d of %d pages resident after populate", n, pages)
	}
	for i, c := range b {
		if c != 0 {
			t.Fatalf("byte %d is %#x after populate, not zero", i, c)
		}
	}
}

// A range that is not all mapped is refused, and what is mapped stays
// as it was.
func TestPopulateUnmapped(t *testing.T) {
	b, err := syscall.Mmap(-1, 0, 4*pageSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(b)
	start := uintptr(unsafe.Pointer(&b[0]))
	// A hole in the middle (syscall.Munmap unmaps only whole mappings).
	if _, _, errno := syscall.Syscall(syscall.SYS_MUNMAP, start+pageSize, 2*pageSize, 0); errno != 0 {
		t.Fatal(errno)
	}
	if err := populate(start, start+4*pageSize); err == nil {
		t.Error("populate of a range with a hole did not fail")
	}
	b[0], b[3*pageSize] = 1, 1 // still writable on both sides of the hole
}
