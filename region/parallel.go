package region

import (
	"io"
	"runtime"
	"sync"
)

// From a Crypt4GH file, reading is decrypting, and a region's reads (its
// index, the segments of its chunks) take a core each at a time. The
// helpers here read in parts of whole segments (partSize), on as many
// goroutines as GOMAXPROCS: parts that start where a segment starts,
// so that no segment is decrypted twice where the plaintext's offsets
// are those of the body (a file without an edit list).

// Serial is implemented by a source whose reads should come one at a
// time: an object that a reader fetches ahead in windows, where reads at
// once would each fetch a window and download bytes twice. [File.Plan]
// and [Write] read such a source (given to [Open], or to Write) on one
// goroutine, in order.
type Serial interface {
	// Serial reports whether reads should come one at a time.
	Serial() bool
}

// jobs returns how many goroutines read src at once.
func jobs(src io.ReaderAt) int {
	if s, ok := src.(Serial); ok && s.Serial() {
		return 1
	}
	return runtime.GOMAXPROCS(0)
}

// partSize is how much one goroutine reads at once: four segments.
const partSize = 4 << 16

// parallelMin is the least that is read in parallel parts; less is read
// on one goroutine. Each goroutine that reads at once needs memory of its
// own (a part, and the segment buffers of a c4gh.ReaderAt), and a command
// runs in a new process, whose memory is new: the kernel maps it a page
// at a time as it is first written, at 14 µs a page of 4 KiB on the
// development machine (a virtual machine), against about 3 µs to decrypt
// those 4 KiB. For the 1.3 MB that a region of about 1 MiB reads, two
// cores saved less than their pages and the waking of a thread cost
// (docs/performance.md, Regions); from 8 MiB on they save more.
const parallelMin = 8 << 20

// parts splits [off, off+n) at multiples of partSize.
func parts(off, n int64) [][2]int64 {
	var out [][2]int64
	for end := off + n; off < end; {
		next := min((off/partSize+1)*partSize, end)
		out = append(out, [2]int64{off, next})
		off = next
	}
	return out
}

// readAt fills p with the bytes of r from off, as io.ReaderAt does, in
// parts read at once when p is of parallelMin bytes or more.
func readAt(r io.ReaderAt, p []byte, off int64) (int, error) {
	ps := parts(off, int64(len(p)))
	workers := min(len(ps), jobs(r))
	if workers < 2 || len(p) < parallelMin {
		return r.ReadAt(p, off)
	}
	ns := make([]int, len(ps))
	errs := make([]error, len(ps))
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Go(func() {
			for i := range next {
				a, b := ps[i][0]-off, ps[i][1]-off
				ns[i], errs[i] = r.ReadAt(p[a:b], ps[i][0])
			}
		})
	}
	for i := range ps {
		next <- i
	}
	close(next)
	wg.Wait()
	total := 0
	for i := range ps {
		total += ns[i]
		if ns[i] < int(ps[i][1]-ps[i][0]) {
			return total, errs[i]
		}
	}
	return total, nil
}

// copyParallel writes bytes [start, end) of src to dst: GOMAXPROCS parts
// read at once, then written in order, and again. Memory is a part a
// core. What comes before a part that fails to read is written.
func copyParallel(dst io.Writer, src io.ReaderAt, start, end int64) (int64, error) {
	ps := parts(start, end-start)
	workers := min(len(ps), jobs(src))
	bufs := make([][]byte, workers)
	for i := range bufs {
		bufs[i] = make([]byte, partSize)
	}
	ns := make([]int, workers)
	errs := make([]error, workers)
	var written int64
	for len(ps) > 0 {
		round := ps[:min(workers, len(ps))]
		ps = ps[len(round):]
		var wg sync.WaitGroup
		for i, pt := range round {
			wg.Go(func() {
				ns[i], errs[i] = src.ReadAt(bufs[i][:pt[1]-pt[0]], pt[0])
			})
		}
		wg.Wait()
		for i, pt := range round {
			n, err := dst.Write(bufs[i][:ns[i]])
			written += int64(n)
			if err != nil {
				return written, err
			}
			if ns[i] < int(pt[1]-pt[0]) {
				if errs[i] == nil || errs[i] == io.EOF {
					errs[i] = io.ErrUnexpectedEOF
				}
				return written, errs[i]
			}
		}
	}
	return written, nil
}
