package prefault

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/c4gh-go/crypt4gh/internal/clitest"
)

var pageSize = syscall.Getpagesize()

// The advice is golang.org/x/sys/unix's.
const _ = uint(populateWrite-unix.MADV_POPULATE_WRITE) + uint(unix.MADV_POPULATE_WRITE-populateWrite)

// resident counts the pages of [start, end) that are in memory.
func resident(t *testing.T, start, end uintptr) int {
	t.Helper()
	vec := make([]byte, (end-start+uintptr(pageSize)-1)/uintptr(pageSize))
	_, _, errno := syscall.Syscall(syscall.SYS_MINCORE, start, end-start, uintptr(unsafe.Pointer(&vec[0])))
	if errno != 0 {
		t.Fatalf("mincore: %v", errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

// knowsPopulate reports whether the kernel is Linux 5.14 or later, which
// knows MADV_POPULATE_WRITE.
func knowsPopulate(t *testing.T) bool {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	var major, minor int
	fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &major, &minor)
	return major > 5 || major == 5 && minor >= 14
}

func mapAnon(t *testing.T, pages int) (b []byte, start uintptr) {
	t.Helper()
	b, err := syscall.Mmap(-1, 0, pages*pageSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Munmap(b) })
	return b, uintptr(unsafe.Pointer(&b[0]))
}

func TestPopulate(t *testing.T) {
	if !knowsPopulate(t) {
		clitest.Missing(t, "Linux 5.14 or later, which brought MADV_POPULATE_WRITE")
	}
	const pages = 64
	b, start := mapAnon(t, pages)
	end := start + pages*uintptr(pageSize)
	if n := resident(t, start, end); n != 0 {
		t.Fatalf("%d pages of a new mapping are resident before populate", n)
	}
	if err := populate(start, end); err != nil {
		t.Fatal(err)
	}
	if n := resident(t, start, end); n != pages {
		t.Errorf("%d of %d pages resident after populate", n, pages)
	}
	for i, c := range b {
		if c != 0 {
			t.Fatalf("byte %d is %#x after populate, not zero", i, c)
		}
	}
}

// A range that is not all mapped is refused.
func TestPopulateUnmapped(t *testing.T) {
	if !knowsPopulate(t) {
		clitest.Missing(t, "Linux 5.14 or later, which brought MADV_POPULATE_WRITE")
	}
	_, start := mapAnon(t, 4)
	// A hole in the middle (syscall.Munmap unmaps only whole mappings).
	if _, _, errno := syscall.Syscall(syscall.SYS_MUNMAP, start+uintptr(pageSize), 2*uintptr(pageSize), 0); errno != 0 {
		t.Fatal(errno)
	}
	if err := populate(start, start+4*uintptr(pageSize)); !errors.Is(err, syscall.ENOMEM) {
		t.Errorf("populate of a range with a hole: %v, not ENOMEM", err)
	}
}

func TestHeapRangeBounds(t *testing.T) {
	const base = 0x40000000 // a chunk's start
	page := uintptr(pageSize)
	for _, c := range []struct {
		p, start, end uintptr
	}{
		{base + 16, base, base + heapSize},
		{base + 5*page + 100, base + 5*page, base + 5*page + heapSize},
		{base + chunk - heapSize, base + chunk - heapSize, base + chunk},
		{base + chunk - page + 8, base + chunk - page, base + chunk},
		{base + chunk, base + chunk, base + chunk + heapSize},
	} {
		start, end := heapRange(c.p, page)
		if start != c.start || end != c.end {
			t.Errorf("heapRange(%#x) = [%#x, %#x), want [%#x, %#x)", c.p, start, end, c.start, c.end)
		}
	}
}

// The range that init populated is of the heap: in one private,
// writable, anonymous mapping, which holds the first object, and it is
// resident. This is what to check again when Go is upgraded.
func TestHeapRange(t *testing.T) {
	p := uintptr(unsafe.Pointer(first))
	if start > p || p >= end || end-start > heapSize {
		t.Fatalf("populated [%#x, %#x), which does not hold the first object at %#x or is more than %d bytes", start, end, p, heapSize)
	}
	if knowsPopulate(t) && populated != nil {
		t.Errorf("populating the heap: %v", populated)
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	found := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var lo, hi uintptr
		var perms string
		var offset, inode uint64
		var dev string
		fmt.Sscanf(sc.Text(), "%x-%x %s %x %s %d", &lo, &hi, &perms, &offset, &dev, &inode)
		if lo <= start && start < hi {
			found = true
			if end > hi || perms != "rw-p" || inode != 0 || strings.Contains(sc.Text(), "/") {
				t.Errorf("populated [%#x, %#x) in the mapping %q", start, end, sc.Text())
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if !found {
		t.Fatalf("populated [%#x, %#x): in no mapping", start, end)
	}
	if n, want := resident(t, start, end), int(end-start)/pageSize; n != want && populated == nil {
		t.Errorf("%d of the %d pages populated are resident", n, want)
	}
}

// TestAhead checks, in a new process without garbage collection (as a
// command is, whose heap has no holes yet), that what Ahead populates is
// where the next large allocation goes, resident before it is written.
// Like TestHeapRange, this is what to check again when Go is upgraded.
func TestAhead(t *testing.T) {
	if os.Getenv("PREFAULT_AHEAD_CHILD") == "1" {
		aheadChild(t)
		return
	}
	if !knowsPopulate(t) {
		clitest.Missing(t, "Linux 5.14 or later, which brought MADV_POPULATE_WRITE")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestAhead$", "-test.v")
	cmd.Env = append(os.Environ(), "PREFAULT_AHEAD_CHILD=1", "GOGC=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the new process: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

func aheadChild(t *testing.T) {
	const n = 512 << 10
	aheadStart, aheadErr := ahead(n)
	b := make([]byte, 128<<10)
	p := uintptr(unsafe.Pointer(&b[0]))
	if p < aheadStart || p >= aheadStart+n {
		t.Fatalf("the allocation after Ahead is at %#x, outside the range populated [%#x, %#x) (populate: %v)", p, aheadStart, aheadStart+n, aheadErr)
	}
	if aheadErr != nil {
		// The range ran past the heap's mapped memory: populated in part.
		t.Logf("populate: %v", aheadErr)
		return
	}
	end := min(p+uintptr(len(b)), aheadStart+n)
	if r, want := resident(t, p, end), int(end-p)/pageSize; r != want {
		t.Errorf("%d of the %d pages of the allocation in the range are resident before it is written", r, want)
	}
	b[0] = 1
}
