package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// A partPool holds the parts of an upload while they are filled and sent:
// buffers in memory within a budget, and spool files on disk for parts
// too large for two of them to fit in it. It holds one part being filled,
// by the writer's goroutine alone; parts given back by release may come
// from any goroutine.
type partPool struct {
	budget      int64 // bytes the buffers may hold
	concurrency int   // buffers at most
	size        int64 // of the object, when known
	spoolDir    string
	small       bool // bytes come in small pieces (Compose): buffers start small
	noSpool     bool // parts are never spooled: small, or spoolDir cannot be used

	// full says that a part was filled: new buffers get the whole part
	// size (before it, the object may be small).
	full    bool
	cur     part // being filled
	lent    int  // bytes of cur's buffer past its length, lent and not yet written
	free    chan []byte
	buffers int           // made
	spools  chan struct{} // one per spool file open, two at most
}

// newPartPool returns the pool of an upload of size bytes (0: unknown)
// with opt's Concurrency, Memory and SpoolDir. maxPart is the largest
// part it may be asked for: when that is spooled, the spool folder is
// tried at once, and if it cannot take a file the parts are held in
// memory instead, as they were before spooling.
func newPartPool(opt WriterOptions, maxPart int64, small bool) *partPool {
	p := &partPool{
		budget:      opt.Memory,
		concurrency: opt.Concurrency,
		size:        opt.Size,
		spoolDir:    opt.SpoolDir,
		small:       small,
		noSpool:     small,
		free:        make(chan []byte, opt.Concurrency),
		spools:      make(chan struct{}, min(2, opt.Concurrency)),
	}
	if p.spooled(maxPart) {
		if f, err := newSpoolFile(p.spoolDir); err != nil {
			p.noSpool = true
		} else {
			f.close()
		}
	}
	return p
}

// A part holds the bytes of one part, in memory or in a spool file.
type part struct {
	buf   []byte
	spool *spoolFile
}

func (p part) empty() bool { return p.buf == nil && p.spool == nil }

func (p part) size() int64 {
	if p.spool != nil {
		return p.spool.n
	}
	return int64(len(p.buf))
}

// body reads the part from its start; it can seek, for the retries.
func (p part) body() io.ReadSeeker {
	if p.spool != nil {
		return io.NewSectionReader(p.spool.f, 0, p.spool.n)
	}
	return bytes.NewReader(p.buf)
}

// filling reports whether a part is being filled.
func (p *partPool) filling() bool { return !p.cur.empty() }

// filled is the size of the part being filled.
func (p *partPool) filled() int64 { return p.cur.size() }

// write appends b to the part being filled. What was lent and not
// written is given up.
func (p *partPool) write(b []byte) error {
	p.lent = 0
	if p.cur.spool != nil {
		return p.cur.spool.write(b)
	}
	p.cur.buf = append(p.cur.buf, b...)
	return nil
}

// lend returns the n bytes of the part's buffer that follow those filled
// and lent, or nil if they do not fit in a part of partSize bytes or the
// part is spooled. A buffer that started small grows first, when nothing
// of it is lent, with room for a few more such regions: those lent while
// the first are filled.
func (p *partPool) lend(n int, partSize int64) []byte {
	b := p.cur.buf
	if b == nil || n <= 0 {
		return nil
	}
	start, end := len(b)+p.lent, len(b)+p.lent+n
	if int64(end) > partSize {
		return nil
	}
	if end > cap(b) {
		if p.lent > 0 {
			return nil
		}
		nb := make([]byte, len(b), min(partSize, int64(max(2*cap(b), end+3*n))))
		copy(nb, b)
		p.cur.buf, b = nb, nb
	}
	p.lent += n
	return b[start:end:end]
}

// fillLent takes b as the bytes of the oldest region lent, if it is that
// region (or its start), and reports whether it was.
func (p *partPool) fillLent(b []byte) bool {
	buf := p.cur.buf
	if p.lent == 0 || len(b) == 0 || len(b) > p.lent || &buf[:len(buf)+1][len(buf)] != &b[0] {
		return false
	}
	p.cur.buf = buf[:len(buf)+len(b)]
	p.lent -= len(b)
	return true
}

// ensure gives the pool a part of size bytes to fill, waiting for one to
// come back from an upload if Concurrency are out. It returns ctx.Err()
// if ctx ends first.
func (p *partPool) ensure(ctx context.Context, size int64) error {
	if p.filling() {
		return nil
	}
	if p.spooled(size) {
		return p.ensureSpool(ctx)
	}
	for {
		var b []byte
		select {
		case b = <-p.free:
		default:
			if p.buffers < maxBuffers(p.budget, size, p.concurrency) {
				p.buffers++
				p.cur.buf = p.newBuffer(int(size))
				return nil
			}
			select {
			case b = <-p.free:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if int64(cap(b)) >= size {
			p.cur.buf = b[:0]
			return nil
		}
		p.buffers-- // the part size grew: let the small buffer go
	}
}

// spooled reports whether parts of size bytes are written to spool files:
// the two buffers (one when Concurrency is 1) that an upload needs do not
// fit within the budget.
func (p *partPool) spooled(size int64) bool {
	return !p.noSpool && size*int64(min(2, p.concurrency)) > p.budget
}

// ensureSpool gives the pool a spool file to fill, waiting for one to be
// closed if two (one when Concurrency is 1) are open.
func (p *partPool) ensureSpool(ctx context.Context) error {
	// The buffers of the smaller parts before are not needed any more.
	for drained := false; !drained; {
		select {
		case <-p.free:
			p.buffers--
		default:
			drained = true
		}
	}
	select {
	case p.spools <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	f, err := newSpoolFile(p.spoolDir)
	if err != nil {
		<-p.spools
		return err
	}
	p.cur.spool = f
	return nil
}

// maxBuffers is how many part buffers of size bytes an upload may hold:
// Concurrency, fewer when the part size has grown past the one asked for
// (a large known size, a long stream) so that they stay within budget,
// but two at least (one filled while one is sent) unless Concurrency is 1.
func maxBuffers(budget, size int64, concurrency int) int {
	return max(min(2, concurrency), min(concurrency, int(budget/size)))
}

// newBuffer makes a part buffer. Until a first part is full the object may
// be small, so the buffer starts small and grows as data comes.
func (p *partPool) newBuffer(size int) []byte {
	if p.full {
		return make([]byte, 0, size)
	}
	if p.size > 0 && !p.small {
		return make([]byte, 0, min(int64(size), p.size))
	}
	return make([]byte, 0, min(size, 64<<10))
}

// take takes the part being filled from the pool.
func (p *partPool) take() part {
	c := p.cur
	p.cur = part{}
	p.lent = 0
	return c
}

// release gives back what held a part that was sent, or abandoned: a
// buffer to be filled again, a spool file closed. It may be called from
// any goroutine.
func (p *partPool) release(c part) {
	if c.spool != nil {
		c.spool.close()
		<-p.spools
		return
	}
	if c.buf != nil {
		select {
		case p.free <- c.buf:
		default:
		}
	}
}

// A spoolFile holds a part on disk.
type spoolFile struct {
	f    *os.File
	n    int64
	dir  string
	name string // to remove when closed, where it could not be removed open
}

// newSpoolFile creates a spool file in dir (os.TempDir() if "") and
// removes its name at once where the system allows it.
func newSpoolFile(dir string) (*spoolFile, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	f, err := os.CreateTemp(dir, ".crypt4gh-part-*")
	if err != nil {
		return nil, spoolError(dir, err)
	}
	s := &spoolFile{f: f, dir: dir}
	if os.Remove(f.Name()) != nil {
		s.name = f.Name()
	}
	return s, nil
}

func (s *spoolFile) write(p []byte) error {
	n, err := s.f.Write(p)
	s.n += int64(n)
	if err != nil {
		return spoolError(s.dir, err)
	}
	return nil
}

// spoolError names the folder of the spool files, not the file: its name
// was removed when it was opened.
func spoolError(dir string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("spool a part in %s: %w", dir, err)
}

func (s *spoolFile) close() {
	s.f.Close()
	if s.name != "" {
		os.Remove(s.name)
	}
}
