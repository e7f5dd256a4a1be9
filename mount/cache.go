package mount

import (
	"sync"
	"sync/atomic"

	"github.com/c4gh-go/crypt4gh/body"
)

// The cache keeps a few blocks of plaintext of each open encrypted file, so
// that reads which start or end inside a block (the kernel asks for pages,
// not segments) do not decrypt it again. The plaintext that the file shows
// is cut into blocks as a body is cut into segments (body.SegmentOf,
// body.PlaintextOffset: block i starts at i·64 KiB), so that with no edit
// list block i is exactly segment i. Reads that cover whole blocks are
// decrypted straight into the kernel's buffer and not cached.
const (
	blockSize  = body.SegmentSize
	fileBlocks = 4  // blocks cached per open file
	maxBlocks  = 64 // blocks cached by all files together: 4 MiB
)

var blockPool = sync.Pool{New: func() any { return new([blockSize]byte) }}

// blockCache holds up to fileBlocks blocks, the least recently used going
// first. Its buffers count against a budget shared by all files.
type blockCache struct {
	mu     sync.Mutex
	tick   uint64
	closed bool // the file is closed: put gives buffers back
	slots  [fileBlocks]slot
}

type slot struct {
	buf   *[blockSize]byte // nil: empty
	index int64
	n     int
	used  uint64
}

// copyOut copies block index from byte skip on into p, if the cache holds
// it, and returns how many bytes it copied.
func (c *blockCache) copyOut(p []byte, index int64, skip int) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.slots {
		s := &c.slots[i]
		if s.buf != nil && s.index == index {
			c.tick++
			s.used = c.tick
			return copy(p, s.buf[skip:s.n]), true
		}
	}
	return 0, false
}

// take returns a buffer for a new block, or nil when the budget is spent:
// the least recently used block when all slots are full, else a new one.
func (c *blockCache) take(budget *atomic.Int64) *[blockSize]byte {
	c.mu.Lock()
	lru := -1
	for i := range c.slots {
		s := &c.slots[i]
		if s.buf == nil {
			lru = -1
			break
		}
		if lru < 0 || s.used < c.slots[lru].used {
			lru = i
		}
	}
	if lru >= 0 {
		buf := c.slots[lru].buf
		c.slots[lru] = slot{}
		c.mu.Unlock()
		return buf
	}
	c.mu.Unlock()
	if budget.Add(-1) < 0 {
		budget.Add(1)
		return nil
	}
	return blockPool.Get().(*[blockSize]byte)
}

// put stores buf, which holds n bytes of block index, in an empty slot.
func (c *blockCache) put(index int64, buf *[blockSize]byte, n int, budget *atomic.Int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	free := -1
	for i := range c.slots {
		s := &c.slots[i]
		if s.buf != nil && s.index == index {
			free = -1 // another read stored it meanwhile
			break
		}
		if s.buf == nil && free < 0 {
			free = i
		}
	}
	if c.closed || free < 0 {
		blockPool.Put(buf)
		budget.Add(1)
		return
	}
	c.tick++
	c.slots[free] = slot{buf: buf, index: index, n: n, used: c.tick}
}

// giveBack returns a buffer from take that holds nothing.
func (c *blockCache) giveBack(buf *[blockSize]byte, budget *atomic.Int64) {
	blockPool.Put(buf)
	budget.Add(1)
}

// open makes the cache ready for a file that was opened.
func (c *blockCache) open() {
	c.mu.Lock()
	c.closed = false
	c.mu.Unlock()
}

// drop empties the cache: the file is no longer open.
func (c *blockCache) drop(budget *atomic.Int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.slots {
		if c.slots[i].buf != nil {
			blockPool.Put(c.slots[i].buf)
			budget.Add(1)
		}
		c.slots[i] = slot{}
	}
	c.closed = true
}
