package region

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/biogo/hts/bgzf"
)

// A command plans the regions it was given and ends, so it needs of a
// BAI only the chunks of those regions. readBAIFor walks the index as
// parseBAI does (every count checked, every offset noted) while reading
// it in windows of a segment, and keeps only those chunks: the index is
// not held in memory whole. In a new process, holding it cost a page
// fault for each 4 KiB of it (the 600 kB BAI of a 1 GiB BAM: 147 faults,
// about 2 ms on the development machine), more than decrypting it.

// baiAnswer is what a BAI read for targets keeps for one of them: the
// chunks that [baiIndex.chunks] returns, less those at or after the
// bound that [baiIndex.after] returns.
type baiAnswer struct {
	ref        int
	start, end int64
	chunks     []bgzf.Chunk
	noChunks   bool // chunks returns errNoChunks
}

// windowWalker is a walker over an index read from src in windows of
// chunkSize bytes, each read at a multiple of chunkSize (from a
// Crypt4GH file, each segment decrypted once, into the window).
type windowWalker struct {
	walker
	src  io.ReaderAt
	buf  []byte
	next int64 // where the window's next read starts
	size int64
}

// need makes the window hold n bytes or more, unless the index ends
// first.
func (w *windowWalker) need(n int) {
	for len(w.b) < n && w.next < w.size && w.err == nil {
		keep := len(w.b)
		if cap(w.buf) < keep+chunkSize {
			buf := getBuf(max(2*cap(w.buf), keep+chunkSize))
			copy(buf, w.b)
			putBuf(w.buf)
			w.buf = buf[:keep]
		} else {
			w.buf = append(w.buf[:0], w.b...)
		}
		m := int(min(chunkSize, w.size-w.next))
		got, err := w.src.ReadAt(w.buf[keep:keep+m], w.next)
		if got < m {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			w.err = err
			return
		}
		w.next += int64(m)
		w.b = w.buf[:keep+m]
	}
}

// left is how many bytes of the index are not walked yet.
func (w *windowWalker) left() int { return len(w.b) + int(w.size-w.next) }

func (w *windowWalker) take(n int) []byte {
	if n >= 0 && n <= w.left() {
		w.need(n)
	}
	return w.walker.take(n)
}

func (w *windowWalker) u32() uint32 {
	if p := w.take(4); p != nil {
		return binary.LittleEndian.Uint32(p)
	}
	return 0
}

// count is walker.count against what is left of the whole index.
func (w *windowWalker) count(size int) int {
	n := int32(w.u32())
	if n < 0 || int(n) > w.left()/size {
		if w.err == nil {
			w.err = fmt.Errorf("count %d larger than the index", n)
		}
		return 0
	}
	return int(n)
}

// readBAIFor reads a BAI index of size bytes from r, keeping only the
// answers for ts (targets on references, start < end ≤ 2^29).
func readBAIFor(r io.ReaderAt, size int64, ts []target) (*Index, error) {
	if size > maxIndex {
		return nil, fmt.Errorf("a BAI index of %d bytes, more than %d", size, maxIndex)
	}
	w := &windowWalker{src: r, size: size}
	defer func() { putBuf(w.buf) }()
	if string(w.take(4)) != "BAI\x01" && w.err == nil {
		w.err = fmt.Errorf("not a BAI index")
	}
	nref := w.count(8)
	answers := make([]baiAnswer, len(ts))
	bounds := make([]uint64, len(ts)) // baiIndex.after of each target
	for i, t := range ts {
		answers[i] = baiAnswer{ref: t.ref, start: t.start, end: t.end}
		bounds[i] = math.MaxUint64
	}
	for ref := range nref {
		mine := slices.IndexFunc(ts, func(t target) bool { return t.ref == ref }) >= 0
		for range w.count(8) {
			bin := w.u32()
			nchunk := w.count(16)
			if bin == baiPseudoBin && nchunk != 2 && w.err == nil {
				return nil, fmt.Errorf("statistics bin with %d chunks, not 2", nchunk)
			}
			for c := range nchunk {
				chunk := w.take(16)
				if chunk == nil {
					break
				}
				if bin == baiPseudoBin && c == 1 {
					continue // the second holds counts
				}
				w.walker.chunks(chunk)
				if mine {
					keepChunk(answers, bounds, ref, bin, chunk)
				}
			}
		}
		nintv := w.count(8)
		if w.err != nil {
			return nil, w.err
		}
		var offs []uint64 // the linear index of a reference of ts
		if mine {
			offs = make([]uint64, 0, nintv)
		}
		sorted, prev := true, uint64(0)
		for range nintv {
			p := w.take(8)
			if p == nil {
				return nil, w.err
			}
			u := binary.LittleEndian.Uint64(p)
			w.offset(u)
			sorted = sorted && u >= prev
			prev = u
			if mine {
				offs = append(offs, u)
			}
		}
		if mine {
			if !sorted {
				slices.Sort(offs) // as biogo/hts does: see baiIndex.chunks
			}
			answerLinear(answers, bounds, ref, offs)
		}
	}
	if w.err != nil {
		return nil, w.err
	}
	// A reference of ts past those the index has: no records there.
	for i := range answers {
		if answers[i].ref >= nref {
			answers[i].chunks, answers[i].noChunks = nil, true
		}
	}
	return &Index{kind: kindBAI, bai: &baiIndex{answers: answers}, stats: w.st}, nil
}

// keepChunk adds a chunk of bin on ref to the answers of the targets on
// ref whose bins it is in, and lowers the bound of those it lies past.
func keepChunk(answers []baiAnswer, bounds []uint64, ref int, bin uint32, chunk []byte) {
	cb, ce := binary.LittleEndian.Uint64(chunk), binary.LittleEndian.Uint64(chunk[8:])
	leaf := bin >= baiFirst[5] && bin < baiFirst[5]+1<<15
	for i := range answers {
		a := &answers[i]
		if a.ref != ref {
			continue
		}
		if baiOverlaps(bin, a.start, a.end) {
			a.chunks = append(a.chunks, bgzf.Chunk{Begin: toOffset(cb), End: toOffset(ce)})
		}
		if leaf && int64(bin-baiFirst[5]) > (a.end-1)>>baiShift[5] {
			bounds[i] = min(bounds[i], cb)
		}
	}
}

// answerLinear finishes the answers of the targets on ref with its
// linear index offs, in order.
func answerLinear(answers []baiAnswer, bounds []uint64, ref int, offs []uint64) {
	for i := range answers {
		a := &answers[i]
		if a.ref != ref {
			continue
		}
		tile := a.start >> 14
		if tile >= int64(len(offs)) {
			a.chunks, a.noChunks = nil, true
			continue
		}
		lo, bound := offs[tile], bounds[i]
		a.chunks = slices.DeleteFunc(a.chunks, func(c bgzf.Chunk) bool {
			u, v := uint64(c.Begin.File)<<16|uint64(c.Begin.Block), uint64(c.End.File)<<16|uint64(c.End.Block)
			return v <= lo || u >= bound
		})
		slices.SortStableFunc(a.chunks, func(x, y bgzf.Chunk) int { return compareVoffsets(x.Begin, y.Begin) }) // as baiIndex.chunks
	}
}

// ReadIndexFor reads the index called name, of size bytes, from r, as
// [ReadIndex] does, for planning the regions of f only. Of a BAI for a
// BAM it keeps just the chunks those regions need, reading it in windows
// of 64 KiB; such an index plans those regions of f and fails for others.
// Other indexes are read whole.
func ReadIndexFor(r io.ReaderAt, size int64, name string, f *File, regions []Region) (*Index, error) {
	var head [4]byte
	if f.format != BAM || size < int64(len(head)) {
		return ReadIndex(r, size, name)
	}
	if n, _ := r.ReadAt(head[:], 0); n < len(head) || string(head[:]) != "BAI\x01" {
		return ReadIndex(r, size, name)
	}
	all, err := f.resolve(regions)
	if err != nil {
		return nil, err
	}
	var ts []target
	for _, t := range all {
		if t.ref >= 0 && t.start < min(t.end, baiLimit) {
			ts = append(ts, target{ref: t.ref, start: t.start, end: min(t.end, baiLimit)})
		}
	}
	x, err := readBAIFor(r, size, ts)
	if err != nil {
		return nil, fmt.Errorf("%w: index %s: %v", ErrData, name, err)
	}
	x.name = name
	return x, nil
}

// answer returns the chunks kept for [start, end) of ref, as chunks and
// after together give them, and whether the index was read for it.
func (x *baiIndex) answer(ref int, start, end int64) ([]bgzf.Chunk, bool, error) {
	for _, a := range x.answers {
		if a.ref == ref && a.start == start && a.end == end {
			if a.noChunks {
				return nil, true, errNoChunks
			}
			return a.chunks, true, nil
		}
	}
	return nil, false, nil
}
