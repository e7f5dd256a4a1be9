package prefault

import (
	"syscall"
	"unsafe"
)

const (
	// populateWrite is MADV_POPULATE_WRITE (Linux 5.14).
	populateWrite = 23

	// heapSize is how much of the heap is populated: about what the
	// commands' start-up and a small file's work write.
	heapSize = 2 << 20

	// chunk is the unit in which the Go runtime maps its heap (its
	// pallocChunkBytes). The heap of a new process starts at a random
	// page of its first chunk, and grows upwards; the next chunk is not
	// mapped yet, so the range populated ends where the first one does.
	chunk = 4 << 20
)

// first is the first heap object the package allocates: its page is
// where the heap is being written now.
var first *[16]byte

func init() {
	first = new([16]byte)
	start := uintptr(unsafe.Pointer(first)) &^ (pageSize - 1)
	end := min(start+heapSize, (start+chunk)&^(chunk-1))
	populate(start, end)
}

const pageSize = 4096

// populate maps the pages of [start, end) of this process's memory
// writable, as if each were written, in one system call. A range the
// kernel refuses (not mapped, or the advice unknown to it) is left as it
// is: the pages are mapped when they are written, as they would have been.
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
