// Package prefault maps, when it is initialised, the first pages of a new
// process's heap in one system call, where the heap would otherwise be
// mapped a page at a time as it is first written.
//
// Every command of crypt4gh runs in a new process, whose memory is new: the
// kernel maps each page of it at its first write, and on the virtual
// machines where this tool is developed and run in CI a page fault costs
// 10 to 14 µs, against about 5 µs a page when a range is populated at
// once (madvise MADV_POPULATE_WRITE, Linux 5.14 and later). The packages
// that the command links (the AWS SDK's clients above all) allocate about
// 850 kB while they are initialised, and a command's heap grows to 1.5–2.5
// MB before it does any work; faulting it in page by page was a quarter
// of the time of `crypt4gh --version` (docs/performance.md, Start-up).
//
// A command that is about to write much new memory (a region's work:
// its buffers, the index's window, an encoder) populates that too, with
// Ahead, from where the heap's next large allocation goes.
//
// The command imports the package (main.go, internal/cli); the library
// does not. The memory's contents do not change: the pages are of the
// heap that the runtime has mapped already, private and writable,
// populated as the zero pages they were. What a program can see is its resident memory: the
// pages populated and not yet used (at most 2 MiB, about 0.6 MiB for
// `--version`) are resident while the runtime counts them as released,
// until the heap grows over them. Where the kernel refuses the advice
// (older kernels, sandboxes), nothing happens.
//
// The range rests on how the Go runtime lays out its heap (it maps the
// heap in chunks of 4 MiB, and starts it at a random page of the first
// where it randomises the heap's base), not on a promise of it: were that
// to change, the call would populate less or fail, and nothing else. It
// is worth checking when Go is upgraded (TestHeapRange, TestAhead).
package prefault
