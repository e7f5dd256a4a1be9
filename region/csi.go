package region

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/biogo/hts/bgzf"
)

// CSI and TBI indexes are read as a BAI is (bai.go): walked once, their
// references located, and the bins of the one reference a region is on
// decoded when it is asked, into chunks that the plan sorts and merges
// once. biogo/hts's readers merged each region's chunks by deleting from
// the middle of a slice, a time that grew with the square of the chunks
// (a CSI of 9 KB that repeats one chunk 200,000 times: 22 s for one
// region, minutes for more), and its TBI reader scanned the linear index
// once for each chunk. A TBI lays out its references as a BAI does (the
// same bins, the same linear index), so it is read as one.

// csiIndex is a CSI index, its references located but not decoded.
type csiIndex struct {
	b     []byte
	refs  []csiRef
	shift int // min_shift
	depth int
}

// csiRef is where one reference's bins are in the index.
type csiRef struct {
	bins uint32 // nbin bins: each its number, loffset, n_chunk and chunks
	nbin uint32
}

// parseCSI locates the references of the CSI index b, which walkCSI found
// sound, of min_shift shift and depth depth, whose references start at
// refsAt (their count).
func parseCSI(b []byte, shift, depth, refsAt int) (*csiIndex, error) {
	w := &walker{b: b[refsAt:]}
	at := func() uint32 { return uint32(len(b) - len(w.b)) }
	nref := w.count(4)
	x := &csiIndex{b: b, refs: make([]csiRef, 0, nref), shift: shift, depth: depth}
	for range nref {
		nbin := w.count(8)
		r := csiRef{bins: at(), nbin: uint32(nbin)}
		for range nbin {
			w.take(12) // bin, loffset
			w.take(16 * w.count(16))
		}
		if w.err != nil {
			return nil, w.err
		}
		x.refs = append(x.refs, r)
	}
	return x, nil
}

// pseudo is the bin of a reference's statistics.
func (x *csiIndex) pseudo() uint32 { return uint32((1<<((x.depth+1)*3))-1)/7 + 1 }

// chunks returns the chunks that may hold records of reference ref that
// overlap [beg, end), 0 ≤ beg < end ≤ 2^(shift+3·depth): those of the
// bins that overlap it whose end is past the bin's loffset, as
// csi.Index.Chunks of biogo/hts gives them before it merges them, sorted
// by their start.
func (x *csiIndex) chunks(ref int, beg, end int64) []bgzf.Chunk {
	if ref < 0 || ref >= len(x.refs) {
		return nil
	}
	pseudo := x.pseudo()
	var out []bgzf.Chunk
	r := &x.refs[ref]
	b := x.b[r.bins:] // parseCSI checked the counts
	for range r.nbin {
		bin, loff := binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint64(b[4:])
		n := int(binary.LittleEndian.Uint32(b[12:]))
		chunks := b[16 : 16+16*n]
		b = b[16+16*n:]
		if bin == pseudo || !x.overlaps(bin, beg, end) {
			continue
		}
		out = appendChunks(out, chunks, loff)
	}
	sortChunks(out)
	return out
}

// appendChunks appends to out the chunks b (16 bytes each) of one bin that
// end past min, a chunk that starts within the last one appended, and
// ends no later, left out: an index that repeats a chunk gives it once.
func appendChunks(out []bgzf.Chunk, b []byte, min uint64) []bgzf.Chunk {
	first := len(out)
	var lastBegin, lastEnd uint64
	for ; len(b) >= 16; b = b[16:] {
		cb, ce := binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:])
		if ce <= min {
			continue
		}
		if len(out) > first && cb >= lastBegin && ce <= lastEnd {
			continue
		}
		out = append(out, bgzf.Chunk{Begin: toOffset(cb), End: toOffset(ce)})
		lastBegin, lastEnd = cb, ce
	}
	return out
}

// sortChunks sorts chunks by their start, keeping the order of those that
// start together; chunks in order (as an index's bins mostly give them)
// are not sorted again.
func sortChunks(cs []bgzf.Chunk) {
	cmp := func(a, b bgzf.Chunk) int { return compareVoffsets(a.Begin, b.Begin) }
	if !slices.IsSortedFunc(cs, cmp) {
		slices.SortStableFunc(cs, cmp)
	}
}

// overlaps reports whether bin holds positions of [beg, end) in the
// binning scheme of x: level l (0 the whole range, depth the smallest
// bins) starts at bin (8^l - 1)/7, its bins 2^(shift+3·(depth-l)) wide.
func (x *csiIndex) overlaps(bin uint32, beg, end int64) bool {
	for l := x.depth; l >= 0; l-- {
		first := uint32((1<<(3*l))-1) / 7
		if bin >= first {
			s := uint(x.shift + 3*(x.depth-l))
			k := int64(bin - first)
			return k >= beg>>s && k <= (end-1)>>s
		}
	}
	return false
}

// tbiAsBAI returns the TBI index b, which walkTBI found sound, as a BAI
// index (its references' part is a BAI's), and the names it holds. It
// writes the BAI's magic number and count of references into b, over the
// end of the TBI's names.
func tbiAsBAI(b []byte) ([]byte, []string, error) {
	nref := binary.LittleEndian.Uint32(b[4:])
	lnm := int(binary.LittleEndian.Uint32(b[32:]))
	names := splitNames(b[36 : 36+lnm])
	if lnm == 0 {
		names = nil
	}
	if len(names) != int(nref) {
		return nil, nil, fmt.Errorf("TBI index of %d references names %d", nref, len(names))
	}
	bai := b[36+lnm-8:]
	copy(bai, "BAI\x01")
	binary.LittleEndian.PutUint32(bai[4:], nref)
	return bai, names, nil
}
