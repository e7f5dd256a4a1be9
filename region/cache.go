package region

import (
	"io"
	"sync"
)

// A plan reads the same few places of its source several times: the
// first bytes (the format, then the header), the last (the end-of-file
// marker, then its copy), and each edge block, whose bytes share a
// segment with the copy that follows or precedes it. From a Crypt4GH file
// every read of part of a segment decrypts the whole segment, so a [File]
// reads its source through a cache of the aligned chunks (of one
// segment's plaintext each) that reads took only part of. Reads of whole
// chunks, the bulk of a copy, go straight to the source.

// chunkSize is the length of a chunk: a Crypt4GH segment's plaintext.
const chunkSize = 1 << 16

// cachedChunks is how many chunks a cache keeps: those of a header, the
// end-of-file marker and a few edge blocks.
const cachedChunks = 8

// cache is an io.ReaderAt over src that keeps the last cachedChunks
// chunks that reads took part of. It is safe for concurrent use.
type cache struct {
	src io.ReaderAt
	mu  sync.Mutex
	// ring holds the chunks kept, next the slot to fill next. A slot's
	// data is only read or written while mu is held, or by the one
	// goroutine that took it out of the ring (off -1).
	ring [cachedChunks]chunk
	next int
}

// chunk is the data of src at off, a multiple of chunkSize; shorter than
// chunkSize only at the end of src.
type chunk struct {
	off  int64 // -1 for none
	data []byte
}

func newCache(src io.ReaderAt) *cache {
	c := &cache{src: src}
	for i := range c.ring {
		c.ring[i].off = -1
	}
	return c
}

// Serial reports whether src wants its reads one at a time.
func (c *cache) Serial() bool { return jobs(c.src) == 1 }

// ReadAt reads p from off, following the io.ReaderAt contract.
func (c *cache) ReadAt(p []byte, off int64) (int, error) {
	total := 0
	for len(p) > 0 {
		base := off &^ (chunkSize - 1)
		if n, ok := c.copyFrom(p, off); ok {
			total, p, off = total+n, p[n:], off+int64(n)
			if len(p) > 0 && off < base+chunkSize {
				return total, io.EOF // the chunk ends early: the end of src
			}
			continue
		}
		if off == base && len(p) >= chunkSize {
			// Whole chunks, up to one that is kept.
			n := chunkSize
			for n+chunkSize <= len(p) && !c.has(off+int64(n)) {
				n += chunkSize
			}
			m, err := c.src.ReadAt(p[:n], off)
			total += m
			if m < n {
				return total, err
			}
			p, off = p[n:], off+int64(n)
			continue
		}
		if err := c.load(base); err != nil {
			return total, err
		}
	}
	return total, nil
}

// copyFrom copies to p what the kept chunk holding off has from off on,
// and reports whether that chunk is kept.
func (c *cache) copyFrom(p []byte, off int64) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	base := off &^ (chunkSize - 1)
	for i := range c.ring {
		if ch := &c.ring[i]; ch.off == base {
			skip := int(off - base)
			if skip >= len(ch.data) {
				return 0, true
			}
			return copy(p, ch.data[skip:]), true
		}
	}
	return 0, false
}

// has reports whether the chunk at base is kept.
func (c *cache) has(base int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.ring {
		if c.ring[i].off == base {
			return true
		}
	}
	return false
}

// load reads the chunk at base into the oldest slot. A chunk cut short by
// the end of src is kept as it is.
func (c *cache) load(base int64) error {
	c.mu.Lock()
	slot := c.next
	c.next = (c.next + 1) % cachedChunks
	buf := c.ring[slot].data
	c.ring[slot] = chunk{off: -1}
	c.mu.Unlock()
	if cap(buf) < chunkSize {
		buf = make([]byte, chunkSize)
	}
	n, err := c.src.ReadAt(buf[:chunkSize], base)
	if n < chunkSize && err != io.EOF {
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	c.mu.Lock()
	c.ring[slot] = chunk{off: base, data: buf[:n]}
	c.mu.Unlock()
	return nil
}
