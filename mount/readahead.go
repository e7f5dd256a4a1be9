package mount

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Read-ahead: the kernel sends the reads of a sequential reader one after
// the other (cat's 256 KiB, each waited for), so a mount that decrypts
// only when asked leaves the cores idle while the kernel and the reader
// copy. Each open file handle therefore watches its reads, and while they
// follow each other it keeps a window of the blocks just past the last
// one decrypting in the background, on a pool of one worker per CPU, so
// that the next read finds them ready. The window starts small and
// doubles with every sequential read up to raMax blocks; a read anywhere
// else forgets it. Blocks of all handles together are bounded by
// raBudget, so memory stays bounded however many files are read.
//
// It serves the handles of Options.DirectIO only, where the kernel reads
// nothing ahead itself. Through the page cache the kernel's own copy into
// new pages of its cache took most of the time (perf: 48% of the
// mounter's CPU, decryption 20%) and reading ahead as well made a first
// cat slower, not faster, in every run on a shared 2-core machine
// (scripts/bench-mount.sh: 0.97-1.33 of the time without it).
const (
	raFirst  = 4   // blocks read ahead after the first sequential read
	raMax    = 16  // blocks read ahead by one handle: 1 MiB
	raBudget = 128 // blocks read ahead by all handles together: 8 MiB
)

// readAhead turns read-ahead on; the benchmarks turn it off to compare.
var readAhead = true

// raBlock is a block of plaintext read ahead. refs counts its holders
// (the window of a handle, the worker until it is done, each read copying
// out of it); the last to let go gives the buffer back.
type raBlock struct {
	f     *file
	index int64
	n     int // bytes of the block
	buf   *[blockSize]byte
	err   error         // set before done is closed
	done  chan struct{} // closed when decrypted (or failed)
	refs  atomic.Int32
}

func (b *raBlock) release() {
	if b.refs.Add(-1) == 0 {
		blockPool.Put(b.buf)
		b.buf = nil
		b.f.t.raBudget.Add(1)
	}
}

// workers decrypt read-ahead blocks, in the order they were asked for.
type workers struct {
	jobs chan *raBlock
	quit chan struct{}
	wg   sync.WaitGroup
}

func newWorkers() *workers {
	w := &workers{jobs: make(chan *raBlock, raBudget), quit: make(chan struct{})}
	for range runtime.GOMAXPROCS(0) {
		w.wg.Go(w.run)
	}
	return w
}

func (w *workers) run() {
	for {
		select {
		case <-w.quit:
			return
		case b := <-w.jobs:
			// Read through the file's ReaderAt, which returns the
			// error of a damaged segment: the read that needs the
			// block then reads it again itself and fails.
			b.err = b.f.readFull(b.buf[:b.n], b.index*blockSize)
			close(b.done)
			b.release()
		}
	}
}

// submit queues b, or reports false when the workers have stopped.
func (w *workers) submit(b *raBlock) bool {
	select {
	case w.jobs <- b:
		return true
	case <-w.quit:
		return false
	}
}

// stop ends the workers; blocks still queued fail, so that nothing waits
// for them.
func (w *workers) stop() {
	close(w.quit)
	w.wg.Wait()
	for {
		select {
		case b := <-w.jobs:
			b.err = errClosed
			close(b.done)
			b.release()
		default:
			return
		}
	}
}

// reader is the read-ahead state of one open handle of an encrypted file.
type reader struct {
	f *file

	mu    sync.Mutex
	next  int64      // where the last read ended
	ahead int        // blocks to keep read ahead; 0 until reads are sequential
	win   []*raBlock // consecutive blocks, read ahead or being read
}

// read reads exactly len(p) bytes of plaintext at off, within the file:
// the blocks that the window holds are copied out of it, the others
// decrypted as [file.readPlain] does, and the window moves on past the
// read when the reads are sequential.
func (r *reader) read(p []byte, off int64) error {
	end := off + int64(len(p))
	first, last := off/blockSize, (end-1)/blockSize
	r.mu.Lock()
	inWin := len(r.win) > 0 && first >= r.win[0].index && first <= r.win[len(r.win)-1].index
	switch {
	case off == r.next || inWin:
		switch {
		case r.ahead == 0:
			r.ahead = raFirst
		case r.ahead < raMax:
			r.ahead = min(2*r.ahead, raMax)
		}
	default:
		r.forgetLocked(len(r.win))
		r.ahead = 0
	}
	r.next = end
	// The blocks of this read that the window holds, one reference each.
	var held []*raBlock
	for _, b := range r.win {
		if b.index >= first && b.index <= last {
			b.refs.Add(1)
			held = append(held, b)
		}
	}
	// Blocks before the last one of the read are used up; so is the last
	// when the read ends with it.
	done := 0
	for done < len(r.win) && (r.win[done].index < last || (r.win[done].index == last && end >= r.win[done].index*blockSize+int64(r.win[done].n))) {
		done++
	}
	r.forgetLocked(done)
	r.fillLocked(last + 1)
	r.mu.Unlock()

	err := r.copyOut(p, off, held)
	for _, b := range held {
		b.release()
	}
	return err
}

// copyOut reads the bytes of p (at off) from the held blocks where they
// are, and decrypts the rest.
func (r *reader) copyOut(p []byte, off int64, held []*raBlock) error {
	end := off + int64(len(p))
	pos := off // p[:pos-off] is filled
	for _, b := range held {
		start := b.index * blockSize
		if start > pos {
			if err := r.f.readPlain(p[pos-off:start-off], pos); err != nil {
				return err
			}
			pos = start
		}
		<-b.done
		stop := min(end, start+int64(b.n))
		if b.err != nil {
			// Read it again, as if it were not read ahead: the error is
			// reported and logged as every read error is.
			if err := r.f.readPlain(p[pos-off:stop-off], pos); err != nil {
				return err
			}
		} else {
			copy(p[pos-off:stop-off], b.buf[pos-start:stop-start])
			r.f.t.raUsed.Add(1)
		}
		pos = stop
	}
	if pos < end {
		return r.f.readPlain(p[pos-off:], pos)
	}
	return nil
}

// fillLocked extends the window to r.ahead blocks from block from on, as
// far as the file and the budget go.
func (r *reader) fillLocked(from int64) {
	if r.ahead == 0 {
		return
	}
	t := r.f.t
	next := from
	if len(r.win) > 0 {
		next = max(next, r.win[len(r.win)-1].index+1)
	}
	for ; next < from+int64(r.ahead) && next*blockSize < r.f.size; next++ {
		if t.raBudget.Add(-1) < 0 {
			t.raBudget.Add(1)
			return
		}
		b := &raBlock{f: r.f, index: next, n: int(min(blockSize, r.f.size-next*blockSize)), buf: blockPool.Get().(*[blockSize]byte), done: make(chan struct{})}
		b.refs.Store(2) // the window and the worker
		if !t.workers.submit(b) {
			b.refs.Store(1)
			b.release()
			return
		}
		r.win = append(r.win, b)
	}
}

// forgetLocked drops the first n blocks of the window.
func (r *reader) forgetLocked(n int) {
	for _, b := range r.win[:n] {
		b.release()
	}
	r.win = append(r.win[:0], r.win[n:]...)
}

// close forgets the window: the handle was released.
func (r *reader) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.forgetLocked(len(r.win))
}
