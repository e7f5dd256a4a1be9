package region

import (
	"cmp"
	"encoding/binary"
	"errors"
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

// indexWindow reads an index from src in windows of chunkSize bytes, each
// read at a multiple of chunkSize (from a Crypt4GH file, each segment
// decrypted once, into the window), for the walker w, whose fill it is.
type indexWindow struct {
	w    *walker
	src  io.ReaderAt
	buf  []byte
	next int64 // where the window's next read starts
	size int64
}

// newWindowWalker returns a walker over the index of size bytes in src,
// and the window whose buffer to give back (putBuf) after the walk.
func newWindowWalker(src io.ReaderAt, size int64) (*walker, *indexWindow) {
	win := &indexWindow{w: &walker{more: int(size)}, src: src, size: size}
	win.w.fill = win.fill
	return win.w, win
}

// fill makes the walker's bytes n or more, unless the index ends first.
func (win *indexWindow) fill(n int) {
	w := win.w
	for len(w.b) < n && win.next < win.size && w.err == nil {
		keep := len(w.b)
		if cap(win.buf) < keep+chunkSize {
			buf := getBuf(max(2*cap(win.buf), keep+chunkSize))
			copy(buf, w.b)
			putBuf(win.buf)
			win.buf = buf[:keep]
		} else {
			win.buf = append(win.buf[:0], w.b...)
		}
		m := int(min(chunkSize, win.size-win.next))
		got, err := win.src.ReadAt(win.buf[keep:keep+m], win.next)
		if got < m {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			w.err = err
			return
		}
		win.next += int64(m)
		w.b, w.more = win.buf[:keep+m], int(win.size-win.next)
	}
}

// maxStreamedTargets is the most targets for which ReadIndexFor keeps
// chunks of a BAI as it reads it (regions of a BED file are merged into
// targets first). Beyond it the index is read whole: the memory of the
// answers grows with the targets times the chunks of the bins they share
// (20,000 exons of an RNA-seq BAM, whose spliced reads fill the large
// bins: a gigabyte), that of the index only with its size.
const maxStreamedTargets = 256

// readBAIFor reads a BAI index of size bytes from r, keeping only the
// answers for ts: targets on references, start < end ≤ 2^29, sorted by
// reference and start and not overlapping (as mergeTargets leaves them).
// Like parseBAI it does not check the magic number.
func readBAIFor(r io.ReaderAt, size int64, ts []target) (*Index, error) {
	if size > maxIndex {
		return nil, fmt.Errorf("a BAI index of %d bytes, more than %d", size, maxIndex)
	}
	w, win := newWindowWalker(r, size)
	defer func() { putBuf(win.buf) }()
	return walkFor(w, r, size, ts)
}

// walkFor is walkBAIFor of w, a walker at the start of the index of size
// bytes in r, keeping the linear index's entries that ts need: unless
// that linear index is out of order, then it walks the index again,
// keeping them all.
func walkFor(w *walker, r io.ReaderAt, size int64, ts []target) (*Index, error) {
	x, err := walkBAIFor(w, ts, false)
	if err != errUnsorted {
		return x, err
	}
	w, win := newWindowWalker(r, size)
	defer func() { putBuf(win.buf) }()
	return walkBAIFor(w, ts, true)
}

// errUnsorted is walkBAIFor's answer, without all, for an index whose
// linear index of a reference of the targets is out of order: its entries
// are sorted before they are used (see baiIndex.chunks), which needs them
// all, where an index in order needs the entries of the targets' tiles
// only (for a reference of 250 Mb, 15,000 entries of 8 bytes).
var errUnsorted = errors.New("linear index out of order")

// walkBAIFor is readBAIFor of the index that w walks, from its start,
// keeping the whole linear index of the targets' references when all is
// true, else only the entries it reads, or failing with errUnsorted.
func walkBAIFor(w *walker, ts []target, all bool) (*Index, error) {
	w.take(4)
	nref := w.count(8)
	answers := make([]baiAnswer, len(ts))
	for i, t := range ts {
		answers[i] = baiAnswer{ref: t.ref, start: t.start, end: t.end}
	}
	// cuts[j] is a bound (see baiIndex.after) for the targets before j
	// on the same reference.
	cuts := make([]uint64, len(ts)+1)
	for i := range cuts {
		cuts[i] = math.MaxUint64
	}
	for ref := range nref {
		lo, _ := slices.BinarySearchFunc(answers, ref, func(a baiAnswer, ref int) int { return cmp.Compare(a.ref, ref) })
		hi := lo
		for hi < len(answers) && answers[hi].ref == ref {
			hi++
		}
		// The last of myCuts is the first of the next reference's,
		// which no answer reads: answerLinear reads cuts[i+1].
		mine, myCuts := answers[lo:hi], cuts[lo:hi+1]
		lasts := make([]uint64, len(mine))
		for i, a := range mine {
			lasts[i] = uint64(a.end - 1)
		}
		for range w.count(8) {
			bin, nchunk := w.bin()
			if bin == baiPseudoBin {
				if nchunk != 2 {
					return nil, fmt.Errorf("statistics bin with %d chunks, not 2", nchunk)
				}
				if b := w.take(32); b != nil {
					w.chunks(b[:16]) // the second holds counts
				}
				continue
			}
			// The chunks of a bin, as many at a time as the window
			// holds (one when it holds none: take reads the next).
			for nchunk > 0 {
				n := min(nchunk, max(len(w.b)/16, 1))
				b := w.take(16 * n)
				if b == nil {
					break
				}
				w.chunks(b)
				if len(mine) > 0 {
					keepChunks(mine, lasts, myCuts, bin, b)
				}
				nchunk -= n
			}
		}
		nintv := w.count(8)
		if w.err != nil {
			return nil, w.err
		}
		// The entries of the linear index at the tiles where the
		// targets of the reference start (in order, as the targets),
		// in the memory of lasts, which the bins were all that needed;
		// with all, every entry too.
		at := lasts
		var offs []uint64
		if all && len(mine) > 0 {
			offs = make([]uint64, 0, nintv)
		}
		sorted, prev := true, uint64(0)
		next, tile := 0, int64(-1) // the next target to pick for, its tile
		if len(mine) > 0 {
			tile = mine[0].start >> 14
		}
		for i := 0; i < nintv; {
			n := min(nintv-i, max(len(w.b)/8, 1))
			b := w.take(8 * n)
			if b == nil {
				return nil, w.err
			}
			var hi uint64
			for ; len(b) >= 8; b, i = b[8:], i+1 {
				u := binary.LittleEndian.Uint64(b)
				hi = max(hi, u)
				sorted = sorted && u >= prev
				prev = u
				for int64(i) == tile {
					at[next] = u
					if next++; next < len(mine) {
						tile = mine[next].start >> 14
					} else {
						tile = -1
					}
				}
				if offs != nil {
					offs = append(offs, u)
				}
			}
			w.offset(hi)
		}
		if len(mine) > 0 {
			switch {
			case nintv == 0:
				clear(at) // no bound, as baiIndex.chunks
			case sorted:
				// Those that start past the linear index: its last
				// entry (linearTile).
				for j := next; j < len(mine); j++ {
					at[j] = prev
				}
			case !all:
				return nil, errUnsorted
			default:
				slices.Sort(offs) // as biogo/hts does: see baiIndex.chunks
				for j, a := range mine {
					at[j] = offs[linearTile(a.start, nintv)]
				}
			}
			answerLinear(mine, myCuts, at)
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
	return &Index{kind: kindBAI, bai: &baiIndex{answers: answers}, stats: w.st, refs: nref}, nil
}

// keepChunks adds the chunks b (16 bytes each) of bin to the answers as
// (of one reference, in the order of readBAIFor), whose last positions
// are lasts, that the bin holds, and notes in cuts the bound the chunks
// set for those that end before a leaf bin.
func keepChunks(as []baiAnswer, lasts []uint64, cuts []uint64, bin uint32, b []byte) {
	l := len(baiFirst) - 1
	for bin < baiFirst[l] {
		l--
	}
	k, shift := int64(bin-baiFirst[l]), baiShift[l]
	// The targets end in order: those the bin holds follow the first
	// that ends at or past the bin's start, while they start before
	// its end.
	lo, _ := slices.BinarySearch(lasts, uint64(k<<shift))
	for j := lo; j < len(as) && as[j].start>>shift <= k; j++ {
		as[j].chunks = appendChunks(as[j].chunks, b, 0) // the linear index's bound later (answerLinear)
	}
	if l == len(baiFirst)-1 && k < 1<<15 {
		// A leaf bin: a bound for the targets whose last tile is before
		// it, those before the first whose last tile is not: the first
		// that ends at or past the bin's start, as above.
		for c := b; len(c) >= 16; c = c[16:] {
			cuts[lo] = min(cuts[lo], binary.LittleEndian.Uint64(c))
		}
	}
}

// answerLinear finishes the answers as of one reference with the entries
// at of its linear index (sorted) at the tiles where they start (see
// linearTile), and the cuts that keepChunk noted.
func answerLinear(as []baiAnswer, cuts []uint64, at []uint64) {
	bound := uint64(math.MaxUint64)
	for i := len(as) - 1; i >= 0; i-- {
		bound = min(bound, cuts[i+1])
		a := &as[i]
		lo := at[i]
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
	if f.format != BAM || size < 4 || size > maxIndex {
		return ReadIndex(r, size, name)
	}
	if s, ok := r.(Serial); ok && s.Serial() {
		// An object: one read of the whole, not a request a window.
		return ReadIndex(r, size, name)
	}
	// The magic number from the walk's first window: read alone, its
	// 4 bytes would cost a Crypt4GH index a segment decrypted twice, the
	// first time into a buffer of its own. Another kind of index (a CSI)
	// is read whole, its first window from there.
	w, win := newWindowWalker(r, size)
	defer func() { putBuf(win.buf) }()
	if w.fill(4); len(w.b) < 4 || string(w.b[:4]) != "BAI\x01" {
		return ReadIndex(headed{w.b, r}, size, name)
	}
	// Regions that do not resolve fail the plan, after the index is
	// read and checked, as for an index read whole: a damaged index or
	// one of another file is reported first.
	all, _ := f.resolve(regions)
	if len(all) > maxStreamedTargets {
		// Each target keeps the chunks of the large bins over it, which
		// many targets share: read whole, the index holds them once.
		return ReadIndex(headed{w.b, r}, size, name)
	}
	var ts []target
	for _, t := range all {
		if t.ref >= 0 && t.start < min(t.end, baiLimit) {
			ts = append(ts, target{ref: t.ref, start: t.start, end: min(t.end, baiLimit)})
		}
	}
	x, err := walkFor(w, r, size, ts)
	if err != nil {
		return nil, fmt.Errorf("%w: index %s: %v", ErrData, name, err)
	}
	x.name = name
	return x, nil
}

// headed is an io.ReaderAt that serves the reads within head, the first
// bytes of r, from there, and the others from r.
type headed struct {
	head []byte
	r    io.ReaderAt
}

func (h headed) ReadAt(p []byte, off int64) (int, error) {
	if off >= 0 && off+int64(len(p)) <= int64(len(h.head)) {
		return copy(p, h.head[off:]), nil
	}
	return h.r.ReadAt(p, off)
}

// answer returns the chunks kept for [start, end) of ref, as chunks and
// after together give them, and whether the index was read for it.
func (x *baiIndex) answer(ref int, start, end int64) ([]bgzf.Chunk, bool, error) {
	i, found := slices.BinarySearchFunc(x.answers, target{ref: ref, start: start}, func(a baiAnswer, t target) int {
		return cmp.Or(cmp.Compare(a.ref, t.ref), cmp.Compare(a.start, t.start))
	})
	if !found || x.answers[i].end != end {
		return nil, false, nil
	}
	if x.answers[i].noChunks {
		return nil, true, errNoChunks
	}
	return x.answers[i].chunks, true, nil
}
