package mount

// Knobs for the benchmarks in package mount_test.

// SetMaxRead sets max_read and the readahead of the mounts made next.
func SetMaxRead(n int) { maxRead = n }

// ObserveReads makes the mounts call f with the length of every read that
// the kernel sends. It must be called before Mount.
func ObserveReads(f func(n int)) { readObserver = f }

// SetBlksize sets the block size that stat reports in the mounts made
// next.
func SetBlksize(n int) { blksize = uint32(n) }
