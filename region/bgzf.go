package region

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"
)

// eofBlock is the empty BGZF block that ends a BGZF file.
var eofBlock = []byte{
	0x1f, 0x8b, 0x08, 0x04, 0, 0, 0, 0, 0, 0xff, 0x06, 0, 'B', 'C', 0x02, 0,
	0x1b, 0, 0x03, 0, 0, 0, 0, 0, 0, 0, 0, 0,
}

// maxBlock is the largest BGZF block, compressed or not.
const maxBlock = 1 << 16

// blockPayload is how many bytes are packed into one new block, as htslib
// does, so that the compressed block always fits in maxBlock.
const blockPayload = 0xff00

// isBGZF reports whether head starts a BGZF block: gzip with the BC extra
// subfield.
func isBGZF(head []byte) bool {
	_, err := blockSize(head)
	return err == nil
}

// blockSize returns the total length of the BGZF block whose header starts
// head (at least 18 bytes are needed).
func blockSize(head []byte) (int64, error) {
	if len(head) < 18 || head[0] != 0x1f || head[1] != 0x8b || head[2] != 8 || head[3]&4 == 0 {
		return 0, errors.New("not a BGZF block")
	}
	xlen := int(binary.LittleEndian.Uint16(head[10:]))
	extra := head[12:]
	if len(extra) > xlen {
		extra = extra[:xlen]
	}
	for len(extra) >= 4 {
		slen := int(binary.LittleEndian.Uint16(extra[2:]))
		if extra[0] == 'B' && extra[1] == 'C' && slen == 2 && len(extra) >= 6 {
			return int64(binary.LittleEndian.Uint16(extra[4:])) + 1, nil
		}
		if 4+slen > len(extra) {
			break
		}
		extra = extra[4+slen:]
	}
	return 0, errors.New("not a BGZF block: no BC subfield")
}

// block is one BGZF block of a file: where it starts, its stored length
// and its data.
type block struct {
	off, size int64
	data      []byte
}

// readBlock reads and decompresses the BGZF block at off of src, a file of
// size bytes.
func readBlock(src io.ReaderAt, size, off int64) (block, error) {
	return readBlockPrefix(src, size, off, maxBlock)
}

// readBlockPrefix reads the BGZF block at off of src, a file of size
// bytes, and returns at most its first limit bytes: the end of a region
// wants only the start of its last block. The rest is decompressed too,
// but not kept: the CRC covers the whole block, and a block damaged
// before it was encrypted is authenticated by Crypt4GH all the same.
func readBlockPrefix(src io.ReaderAt, size, off int64, limit int) (block, error) {
	if off < 0 || off >= size {
		return block{}, fmt.Errorf("no BGZF block at offset %d of %d bytes", off, size)
	}
	// The header, then the block: reading a block's maximum size would
	// read (and from a Crypt4GH file, decrypt) a segment more for most
	// blocks.
	var head [18]byte
	if _, err := src.ReadAt(head[:min(int64(len(head)), size-off)], off); err != nil && err != io.EOF {
		return block{}, err
	}
	n, err := blockSize(head[:min(int64(len(head)), size-off)])
	if err != nil {
		return block{}, fmt.Errorf("offset %d: %w", off, err)
	}
	xlen := int64(binary.LittleEndian.Uint16(head[10:]))
	if n > size-off || n < 12+xlen+8 {
		return block{}, fmt.Errorf("offset %d: truncated BGZF block", off)
	}
	raw := getScratch(int(n))
	defer putBuf(raw)
	if m, err := src.ReadAt(raw, off); m < len(raw) {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return block{}, err
	}
	isize := binary.LittleEndian.Uint32(raw[n-4:])
	data, sum, err := inflate(raw[12+xlen:n-8], isize, limit)
	if err != nil {
		return block{}, fmt.Errorf("offset %d: %w", off, err)
	}
	if sum != binary.LittleEndian.Uint32(raw[n-8:]) {
		return block{}, fmt.Errorf("offset %d: BGZF block fails its CRC", off)
	}
	return block{off: off, size: n, data: data}, nil
}

// inflate decompresses a raw deflate stream that must hold isize bytes,
// and returns its first limit bytes (all when there are fewer), in a
// buffer for putBuf, and the CRC-32 of all of them. The whole is
// decompressed into the buffer, which holds a block's maximum: for the
// CRC only, the rest would need a buffer more.
func inflate(comp []byte, isize uint32, limit int) ([]byte, uint32, error) {
	if isize > maxBlock {
		return nil, 0, fmt.Errorf("BGZF block of %d bytes", isize)
	}
	out := getBuf(int(isize))
	fr := inflaters.Get().(io.ReadCloser)
	defer inflaters.Put(fr)
	fr.(flate.Resetter).Reset(bytes.NewReader(comp), nil)
	if _, err := io.ReadFull(fr, out); err != nil {
		putBuf(out)
		return nil, 0, fmt.Errorf("bad BGZF block: %w", err)
	}
	// One byte more than it should hold shows a block longer than its
	// size.
	var more [1]byte
	if _, err := io.ReadFull(fr, more[:]); err != io.EOF {
		if err == nil {
			err = errors.New("longer than its size")
		}
		putBuf(out)
		return nil, 0, fmt.Errorf("bad BGZF block: %w", err)
	}
	return out[:min(len(out), max(limit, 0))], crc32.ChecksumIEEE(out), nil
}

// compressBlocks returns data as BGZF blocks of at most blockPayload bytes
// each, compressed by the package's encoder (deflate.go); nothing for no
// data.
func compressBlocks(data []byte) []byte {
	if len(data) == 0 {
		return nil
	}
	var out bytes.Buffer
	out.Grow(len(data)/4 + 64) // a block of BAM reads compresses to a fifth
	e := encoders.Get().(*encoder)
	defer encoders.Put(e)
	for len(data) > 0 {
		n := min(len(data), blockPayload)
		appendBlock(&out, e, data[:n])
		data = data[n:]
	}
	return out.Bytes()
}

// The encoders of blocks, kept between blocks.
var encoders = sync.Pool{New: func() any { return new(encoder) }}

// appendBlock appends data, at most blockPayload bytes, as one BGZF block
// compressed with e straight into out.
func appendBlock(out *bytes.Buffer, e *encoder, data []byte) {
	start := out.Len()
	out.Write([]byte{0x1f, 0x8b, 0x08, 0x04, 0, 0, 0, 0, 0, 0xff, 0x06, 0, 'B', 'C', 0x02, 0, 0, 0})
	out.Write(e.appendDeflate(out.AvailableBuffer(), data))
	var tail [8]byte
	binary.LittleEndian.PutUint32(tail[:], crc32.ChecksumIEEE(data))
	binary.LittleEndian.PutUint32(tail[4:], uint32(len(data)))
	out.Write(tail[:])
	// BSIZE: the block's length less one.
	binary.LittleEndian.PutUint16(out.Bytes()[start+16:], uint16(out.Len()-start-1))
}

// A region's work needs buffers of a block's size for a moment each: the
// stored block, its data, the window an index is read through, the
// chunk a plan is copied through. In a new process each would be new
// memory, a page fault for every 4 KiB of it; those given back with
// putBuf are handed out again by getBuf.
const bufSize = maxBlock + 256 // a window: a chunk and what is left of the one before

var bufs = sync.Pool{New: func() any { return new([bufSize]byte) }}

// getBuf returns a buffer of n bytes, not zeroed. A short one (a stored
// block is mostly a quarter of its data) is made to its size: a server
// making many regions at once holds one for each.
func getBuf(n int) []byte {
	if n > bufSize || n < bufSize/2 {
		return make([]byte, n)
	}
	return bufs.Get().(*[bufSize]byte)[:n]
}

// getScratch returns a buffer of n bytes, not zeroed, for a moment: one
// of the pool's when n fits, however short.
func getScratch(n int) []byte {
	if n > bufSize {
		return make([]byte, n)
	}
	return bufs.Get().(*[bufSize]byte)[:n]
}

// putBuf gives back b, which getBuf returned (other buffers are left to
// the collector); nothing may use it afterwards.
func putBuf(b []byte) {
	if cap(b) == bufSize {
		bufs.Put((*[bufSize]byte)(b[:bufSize]))
	}
}

// inflaters are the decompressors of blocks, kept between blocks.
var inflaters = sync.Pool{New: func() any { return flate.NewReader(bytes.NewReader(nil)) }}

// voffset is a BGZF virtual offset: the file offset of a block and an
// offset in its data.
type voffset struct {
	file  int64
	block int64
}

func (v voffset) less(w voffset) bool {
	return v.file < w.file || (v.file == w.file && v.block < w.block)
}

func makeVoffset(u uint64) voffset { return voffset{int64(u >> 16), int64(u & 0xffff)} }

// stream reads the data of the BGZF blocks of a file in order, and knows
// the virtual offset of what it reads next.
type stream struct {
	src  io.ReaderAt
	size int64
	cur  block // the block being read
	pos  int   // read position in cur.data
	next int64 // the offset of the block after cur
	// after is the offset of the block after the last one that held
	// data: where the next byte is when cur is read to its end, even
	// when empty blocks (the end-of-file marker) were read past.
	after int64
}

// newStream returns a stream of the blocks of src from its start. It
// reads src in windows that start at a segment boundary, of one segment
// first (most headers fit in it) and then twice as many segments as the
// window before, up to four, so that reading a header block by block
// reads (and, from a Crypt4GH file, decrypts) each segment at most twice
// and mostly once.
//
// A [File]'s cache (which keeps the chunks that reads take part of) needs
// no window over it: that would be a second copy of the same segments,
// new memory for nothing.
func newStream(src io.ReaderAt, size int64) *stream {
	if c, ok := src.(*cache); ok {
		return &stream{src: c, size: size}
	}
	return &stream{src: &window{src: src, size: size}, size: size}
}

// windowSize is the most that a window reads at once: four segments. A
// block (at most 64 KiB) always fits in a window of two segments that
// starts at the segment boundary below it, and consecutive windows of
// four overlap by at most one segment.
const windowSize = 4 << 16

// window is an io.ReaderAt that keeps the last aligned window it read.
type window struct {
	src   io.ReaderAt
	size  int64
	start int64
	buf   []byte
	next  int64 // the length of the next window, before it is fit to a read
}

// ReadAt reads from the window, loading the one that holds off when p
// does not fit in the current one.
func (w *window) ReadAt(p []byte, off int64) (int, error) {
	if off < w.start || off+int64(len(p)) > w.start+int64(len(w.buf)) {
		start := off &^ (1<<16 - 1)
		if int64(len(p)) > windowSize-(off-start) {
			return w.src.ReadAt(p, off) // larger than a window
		}
		w.next = min(max(w.next*2, 1<<16), windowSize)
		end := max(start+w.next, (off+int64(len(p))+1<<16-1)&^(1<<16-1))
		n := min(end, w.size) - start
		if n <= 0 {
			return w.src.ReadAt(p, off) // past the end
		}
		w.start = start
		if cap(w.buf) < int(n) {
			w.buf = make([]byte, n)
		}
		w.buf = w.buf[:n]
		m, err := w.src.ReadAt(w.buf, w.start)
		w.buf = w.buf[:m]
		if m < int(n) && err == nil {
			err = io.ErrUnexpectedEOF
		}
		if err != nil && err != io.EOF {
			w.buf = w.buf[:0]
			return 0, err
		}
	}
	if off >= w.start+int64(len(w.buf)) {
		return 0, io.EOF
	}
	n := copy(p, w.buf[off-w.start:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// fill makes sure there is data to read in cur, reading blocks as needed;
// it returns io.EOF at the end of the file.
func (s *stream) fill() error {
	for s.pos >= len(s.cur.data) {
		if s.next >= s.size {
			return io.EOF
		}
		b, err := readBlock(s.src, s.size, s.next)
		if err != nil {
			return err
		}
		s.cur, s.pos, s.next = b, 0, b.off+b.size
		if len(b.data) > 0 {
			s.after = s.next
		}
	}
	return nil
}

// Read reads data of the blocks.
func (s *stream) Read(p []byte) (int, error) {
	if err := s.fill(); err != nil {
		return 0, err
	}
	n := copy(p, s.cur.data[s.pos:])
	s.pos += n
	return n, nil
}

// ReadByte reads one byte of data.
func (s *stream) ReadByte() (byte, error) {
	if err := s.fill(); err != nil {
		return 0, err
	}
	s.pos++
	return s.cur.data[s.pos-1], nil
}

// tell returns the virtual offset of the next byte to read: the start of
// the next block when the current one is read to its end.
func (s *stream) tell() voffset {
	if s.pos >= len(s.cur.data) {
		return voffset{s.after, 0}
	}
	return voffset{s.cur.off, int64(s.pos)}
}
