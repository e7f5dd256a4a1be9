package region

import (
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"math"
	"slices"

	"github.com/biogo/hts/bgzf"
)

// A BAI index is read in two steps. parseBAI walks the whole index once,
// without building anything: it checks every count against the bytes
// left, notes the largest offsets (to tell an index of another file) and
// where each reference's bins and linear index are. baiIndex.chunks then
// decodes the bins of the one reference a region is on, when it is asked.
// An index of a large BAM holds some hundred thousand chunks, and a
// region needs the few in a handful of bins: decoding them all into
// objects, as biogo/hts does, cost more than the rest of a region's work.
//
// The chunks are those that bam.Index.Chunks of biogo/hts returns (the
// tests compare the two): the chunks of the bins that overlap the region
// whose end is past the linear index's offset for the region's start.

// baiPseudoBin is the bin of a reference's statistics in BAI and TBI.
const baiPseudoBin = 37450

// baiLimit is the end of the positions a BAI indexes.
const baiLimit = 1 << 29

// baiIndex is a BAI index, its references located but not decoded.
type baiIndex struct {
	b    []byte
	refs []baiRef
	// answers, when not nil, are all that an index read for some
	// targets holds (readBAIFor): b and refs are empty.
	answers []baiAnswer
}

// baiRef is where one reference's part of the index is, in offsets of
// the index (at most maxIndex): 20 bytes for each reference, which takes
// at least 8 bytes of the index.
type baiRef struct {
	bins   uint32 // nbin bins: each its number, n_chunk and n_chunk chunks
	nbin   uint32
	linear uint32 // the linear index: nintv offsets, a 16 kbp tile each
	nintv  uint32
	sorted bool // the linear index's offsets do not decrease
}

// parseBAI walks the BAI index b and returns it, with what the walk
// learnt.
func parseBAI(b []byte) (*baiIndex, walked, error) {
	if len(b) > maxIndex {
		return nil, walked{}, fmt.Errorf("a BAI index of %d bytes, more than %d", len(b), maxIndex)
	}
	w := &walker{b: b}
	at := func() uint32 { return uint32(len(b) - len(w.b)) }
	w.take(4)
	nref := w.count(8)
	x := &baiIndex{b: b, refs: make([]baiRef, 0, nref)}
	for range nref {
		nbin := w.count(8)
		r := baiRef{bins: at(), nbin: uint32(nbin)}
		for range nbin {
			bin := w.u32()
			nchunk := w.count(16)
			chunks := w.take(16 * nchunk)
			if bin == baiPseudoBin {
				if nchunk != 2 {
					return nil, walked{}, fmt.Errorf("statistics bin with %d chunks, not 2", nchunk)
				}
				chunks = chunks[:16] // the second holds counts
			}
			w.chunks(chunks)
		}
		nintv := w.count(8)
		r.linear, r.nintv = at(), uint32(nintv)
		r.sorted = w.linear(w.take(8 * nintv))
		if w.err != nil {
			return nil, walked{}, w.err
		}
		x.refs = append(x.refs, r)
	}
	// An optional count of unplaced reads ends the index.
	return x, w.st, w.err
}

// chunks notes the offsets of the chunks of one bin, 16 bytes each.
// Virtual offsets order as the integers that hold them, so the largest
// of either is the largest integer.
func (w *walker) chunks(b []byte) {
	var hi, end uint64
	for ; len(b) >= 16; b = b[16:] {
		s, e := binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:])
		if e < s && w.err == nil {
			w.err = errReversed
		}
		hi = max(hi, s, e)
		end = max(end, e)
	}
	w.offset(hi)
	if e := makeVoffset(end); w.st.maxEnd.less(e) {
		w.st.maxEnd = e
	}
}

// errReversed is the error of an index with a chunk that ends before it
// begins: no index writer makes one, and it would hold no records.
var errReversed = errors.New("a chunk ends before it begins")

// linear notes the offsets of a linear index and reports whether they
// are sorted.
func (w *walker) linear(b []byte) bool {
	sorted, prev, hi := true, uint64(0), uint64(0)
	for ; len(b) >= 8; b = b[8:] {
		u := binary.LittleEndian.Uint64(b)
		hi = max(hi, u)
		sorted = sorted && u >= prev
		prev = u
	}
	w.offset(hi)
	return sorted
}

// The levels of the BAI binning scheme: the first bin of each and the
// shift that gives a position's bin in it.
var (
	baiFirst = [6]uint32{0, 1, 9, 73, 585, 4681}
	baiShift = [6]uint{29, 26, 23, 20, 17, 14}
)

// errNoChunks is returned by baiIndex.chunks where the index has no
// records: a reference it lacks.
var errNoChunks = errors.New("no records there")

// linearTile returns the entry of a linear index of n > 0 entries that
// bounds the chunks of a region starting at beg: that of beg's 16 kbp
// tile, or the last entry for a start past the index. An index that
// htslib writes has an entry for every tile a record overlaps, so no
// record lies past it; one that stops short (or has no linear index at
// all) must not lose the records its bins hold. htslib then takes no
// bound (a bin's bound is 0 when its first tile is past the linear index,
// update_loff) and @gmod/bam the last entry, which every record past the
// index starts after, since the file is sorted by position.
func linearTile(beg int64, n int) int64 {
	return min(beg>>14, int64(n)-1)
}

// chunks returns the chunks that may hold records of reference ref that
// overlap [beg, end), 0 ≤ beg < end ≤ 2^29, sorted by their start (in
// the order of the index where two start together).
func (x *baiIndex) chunks(ref int, beg, end int64) ([]bgzf.Chunk, error) {
	if ref < 0 || ref >= len(x.refs) {
		return nil, errNoChunks
	}
	r := &x.refs[ref]
	var min uint64 // without a linear index, no bound: every chunk of the bins
	if r.nintv > 0 {
		// A start past the linear index takes its last entry (see
		// linearTile).
		tile := linearTile(beg, int(r.nintv))
		linear := x.b[r.linear : r.linear+8*r.nintv]
		min = binary.LittleEndian.Uint64(linear[8*tile:])
		if !r.sorted {
			// biogo/hts sorts the linear index: the tile's offset is the
			// tile-th smallest.
			offs := make([]uint64, r.nintv)
			for i := range offs {
				offs[i] = binary.LittleEndian.Uint64(linear[8*i:])
			}
			slices.Sort(offs)
			min = offs[tile]
		}
	}
	var out []bgzf.Chunk
	for bin, chunks := range x.bins(r) {
		if !baiOverlaps(bin, beg, end) {
			continue
		}
		out = appendChunks(out, chunks, min)
	}
	sortChunks(out)
	return out, nil
}

// after returns an offset of reference ref's records at or after which
// every record starts at or after position end, or the largest offset
// when the index gives none. It is where the first chunk of the leaf
// bins past end begins: a leaf bin (16 kbp) holds only records that lie
// in its tile, and a BAI indexes a BAM sorted by position. The chunks of
// the larger bins that overlap a region hold records of their whole span,
// most of them past the region (for a region of 200 kbp of a 1 GiB BAM,
// three chunks of 45 MB further on); no record of the region starts
// there.
func (x *baiIndex) after(ref int, end int64) uint64 {
	bound := uint64(math.MaxUint64)
	if ref < 0 || ref >= len(x.refs) {
		return bound
	}
	last := (end - 1) >> baiShift[5]
	for bin, chunks := range x.bins(&x.refs[ref]) {
		if bin < baiFirst[5] || bin >= baiFirst[5]+1<<15 || int64(bin-baiFirst[5]) <= last { // not a leaf past end
			continue
		}
		for ; len(chunks) >= 16; chunks = chunks[16:] {
			bound = min(bound, binary.LittleEndian.Uint64(chunks))
		}
	}
	return bound
}

// bins yields the bins of r: each bin's number and its chunks, 16 bytes
// each. parseBAI checked their counts.
func (x *baiIndex) bins(r *baiRef) iter.Seq2[uint32, []byte] {
	return func(yield func(uint32, []byte) bool) {
		b := x.b[r.bins:]
		for range r.nbin {
			n := int(binary.LittleEndian.Uint32(b[4:]))
			if !yield(binary.LittleEndian.Uint32(b), b[8:8+16*n]) {
				return
			}
			b = b[8+16*n:]
		}
	}
}

// baiOverlaps reports whether bin is a bin of the BAI scheme that holds
// positions of [beg, end).
func baiOverlaps(bin uint32, beg, end int64) bool {
	for l := len(baiFirst) - 1; l >= 0; l-- {
		if bin >= baiFirst[l] {
			k := int64(bin - baiFirst[l])
			return k >= beg>>baiShift[l] && k <= (end-1)>>baiShift[l]
		}
	}
	return false
}

func toOffset(u uint64) bgzf.Offset { return bgzf.Offset{File: int64(u >> 16), Block: uint16(u)} }

func compareVoffsets(a, b bgzf.Offset) int {
	switch {
	case a.File < b.File || (a.File == b.File && a.Block < b.Block):
		return -1
	case a == b:
		return 0
	}
	return 1
}
