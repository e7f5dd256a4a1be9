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

// ReadAhead returns how many blocks s may still read ahead (the budget
// of all its handles) and how many blocks that were read ahead reads
// have used.
func ReadAhead(s *Server) (free, used int64) {
	return s.tree.raBudget.Load(), s.tree.raUsed.Load()
}

// ReadAheadBudget is the budget of a mount with no file open.
const ReadAheadBudget = raBudget

// SetReadAhead turns the read-ahead of the mounts made next on or off.
func SetReadAhead(on bool) { readAhead = on }

// PoisonFreed makes the blocks read ahead be overwritten as they are given
// back, in the mounts of this process.
func PoisonFreed(on bool) { poisonFreed = on }

// KernelReadAheadKB is the kernel's read-ahead that a mount sets where it
// may.
func KernelReadAheadKB() int { return readAheadKB }
