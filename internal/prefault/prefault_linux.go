package prefault

import (
	"sync/atomic"
	"syscall"
	"unsafe"
)

const (
	// populateWrite is MADV_POPULATE_WRITE, the same on every Linux
	// architecture (golang.org/x/sys/unix has it, but importing that
	// package would initialise this one after the AWS SDK's: the
	// runtime initialises packages in the order of their paths, once
	// what each imports is initialised).
	populateWrite = 23

	// heapSize is how much of the heap is populated: about what the
	// commands' start-up and a small file's work write.
	heapSize = 2 << 20

	// chunk is the unit in which the Go runtime maps its heap (its
	// pallocChunkBytes, aligned to its size). The heap grows upwards
	// from the chunk of its first allocations, and the next chunk may
	// not be mapped yet, so the range populated ends where that one does.
	chunk = 4 << 20
)

// What init did, for the tests: the range it populated and what the
// kernel answered.
var (
	first      *[16]byte // the first heap object the package allocates
	start, end uintptr
	populated  error
)

func init() {
	first = new([16]byte)
	start, end = heapRange(uintptr(unsafe.Pointer(first)), uintptr(syscall.Getpagesize()))
	populated = populate(start, end)
}

// heapRange returns the range to populate for a heap object at p: from
// its page, heapSize bytes at most, within its chunk.
func heapRange(p, pageSize uintptr) (start, end uintptr) {
	start = p &^ (pageSize - 1)
	return start, min(start+heapSize, (start+chunk)&^(chunk-1))
}

// populate maps the pages of [start, end) of this process's memory
// writable, as if each were written, in one system call. A range the
// kernel refuses (not all mapped, or the advice unknown to it) may be
// populated in part, and the rest is mapped when it is written, as it
// would have been.
func populate(start, end uintptr) error {
	if end <= start {
		return nil
	}
	_, _, errno := syscall.Syscall(syscall.SYS_MADVISE, start, end-start, populateWrite)
	if errno != 0 {
		return errno
	}
	return nil
}

// Ahead populates n bytes of the heap past where its next large
// allocation goes, as init populated its first pages: for a command about
// to write that much new memory. The heap grows upwards within the memory
// the runtime has mapped, so that is where its next allocations go; what
// is not mapped yet is left to be mapped page by page when written.
func Ahead(n uintptr) { ahead(n) }

// ahead is Ahead, and returns where the range it populated starts and
// what the kernel answered. The place is found with a probe: an
// allocation of probeSize bytes on the heap (kept in probes, so that the
// compiler does not put it on the stack), neither written (new memory is
// zero already) nor populated.
func ahead(n uintptr) (uintptr, error) {
	p := make([]byte, probeSize)
	probes.Store(&p)
	page := uintptr(syscall.Getpagesize())
	s := (uintptr(unsafe.Pointer(&p[0])) + probeSize + page - 1) &^ (page - 1)
	return s, populate(s, s+n)
}

// probeSize is the size of Ahead's probe: 16 pages of the runtime (128
// KiB), the least that its page allocator gives from the heap's lowest
// free pages, as it gives the large allocations that follow. A smaller one
// (64 KiB, before) came from the page cache of the P it ran on, 512 KiB
// chunks of their own: after a move to another P under load, the next
// allocation went elsewhere (TestAhead failed 6 times in 100 with two
// busy loops beside it, none in 200 since).
const probeSize = 128 << 10

// probes holds the last probe.
var probes atomic.Pointer[[]byte]
