// Package prefault maps, when it is initialised, the first pages of a new
// process's heap in one system call, where the heap would otherwise be
// mapped a page at a time as it is first written.
//
// Every command of crypt4gh runs in a new process, whose memory is new: the
// kernel maps each 4 KiB page of it at its first write, and on the
// virtual machines where this tool is developed and run in CI a page
// fault costs 10 to 14 µs, against about 5 µs a page when a range is
// populated at once (madvise MADV_POPULATE_WRITE, Linux 5.14 and later).
// The packages that the command links (the AWS SDK's clients above all)
// allocate about 850 kB while they are initialised, and a command's heap
// grows to 1.5–2.5 MB before it does any work; faulting it in page by
// page was a quarter of the time of `crypt4gh --version`
// (docs/performance.md, Start-up).
//
// Importing the package is all there is to it; only the command does. It
// changes nothing that a program can see: the pages are of the heap's
// memory that the runtime has mapped already, populated as the zero pages
// they were. Where the advice is unknown (older kernels, other systems)
// nothing happens.
package prefault
