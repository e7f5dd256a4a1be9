package mount

import (
	"sync"
	"sync/atomic"

	"github.com/c4gh-go/crypt4gh/body"
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

// poisonFreed, set by the tests, overwrites each block read ahead as it
// is given back, so that a reply sent from a block given back too early
// shows wrong bytes.
var poisonFreed bool

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

// end returns where the block ends in the file.
func (b *raBlock) end() int64 { return body.PlaintextOffset(b.index) + int64(b.n) }

func (b *raBlock) release() {
	if b.refs.Add(-1) == 0 {
		if poisonFreed {
			for i := range b.buf {
				b.buf[i] = 0xa5
			}
		}
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

func newWorkers(n int) *workers {
	w := &workers{jobs: make(chan *raBlock, raBudget), quit: make(chan struct{})}
	for range n {
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
			b.err = b.f.readFull(b.buf[:b.n], body.PlaintextOffset(b.index))
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

// read reads exactly len(p) bytes of plaintext at off, within the file,
// and returns them as a reply: the blocks that the window holds as they
// are (not copied: the reply holds them until it is sent), the others
// decrypted into p as [file.readPlain] does. The window moves on past the
// read when the reads are sequential.
func (r *reader) read(p []byte, off int64) (*reply, error) {
	end := off + int64(len(p))
	first, last := body.SegmentOf(off), body.SegmentOf(end-1)
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
	rep := &reply{}
	for _, b := range r.win {
		if b.index >= first && b.index <= last {
			b.refs.Add(1)
			rep.held = append(rep.held, b)
		}
	}
	// Blocks before the last one of the read are used up; so is the last
	// when the read ends with it.
	done := 0
	for done < len(r.win) && (r.win[done].index < last || (r.win[done].index == last && end >= r.win[done].end())) {
		done++
	}
	r.forgetLocked(done)
	r.fillLocked(last + 1)
	r.mu.Unlock()

	if err := r.gather(rep, p, off); err != nil {
		rep.done()
		return nil, err
	}
	return rep, nil
}

// reply is the answer to a read: its bytes are the slices of vecs, in
// order, which point into p and into the blocks held.
type reply struct {
	vecs [][]byte
	held []*raBlock
}

// size returns the length of the reply.
func (rp *reply) size() int {
	n := 0
	for _, v := range rp.vecs {
		n += len(v)
	}
	return n
}

// done gives the blocks back: the reply was sent, or failed.
func (rp *reply) done() {
	for _, b := range rp.held {
		b.release()
	}
	rp.held = nil
	rp.vecs = nil
}

// gather fills rep.vecs with the bytes of p (at off): the held blocks'
// own buffers where they are, and the rest decrypted into p.
func (r *reader) gather(rep *reply, p []byte, off int64) error {
	end := off + int64(len(p))
	pos := off // the bytes up to pos are in rep.vecs
	own := func(stop int64) error {
		part := p[pos-off : stop-off]
		if err := r.f.readPlain(part, pos); err != nil {
			return err
		}
		rep.add(part)
		pos = stop
		return nil
	}
	for _, b := range rep.held {
		start := body.PlaintextOffset(b.index)
		if start > pos {
			if err := own(start); err != nil {
				return err
			}
		}
		<-b.done
		stop := min(end, b.end())
		if b.err != nil {
			// Read it again, as if it were not read ahead: the error is
			// reported and logged as every read error is.
			if err := own(stop); err != nil {
				return err
			}
			continue
		}
		rep.add(b.buf[pos-start : stop-start])
		r.f.t.raUsed.Add(1)
		pos = stop
	}
	if pos < end {
		return own(end)
	}
	return nil
}

// add appends v to the reply.
func (rp *reply) add(v []byte) { rp.vecs = append(rp.vecs, v) }

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
	for ; next < from+int64(r.ahead) && body.PlaintextOffset(next) < r.f.size; next++ {
		if t.raBudget.Add(-1) < 0 {
			t.raBudget.Add(1)
			return
		}
		start := body.PlaintextOffset(next)
		b := &raBlock{f: r.f, index: next, n: int(body.SegmentEnd(start, r.f.size) - start), buf: blockPool.Get().(*[blockSize]byte), done: make(chan struct{})}
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
