package region

import (
	"encoding/binary"
	"math/bits"
	"slices"
)

// The edge blocks of a region are compressed by a deflate encoder of the
// package's own (RFC 1951: one block, with Huffman codes made for its
// data, or stored when that is shorter). compress/flate's writer at
// BestSpeed gives blocks of about the same size, but writes about 300 kB
// of state for a block (a table of 128 kB, copies of the data, its
// tokens); in a new process each 4 KiB of that is a page fault, about 90
// of them for the first edge, more than the work. This one's state is a
// table of 16 KiB and its tokens, 4 bytes a token.
//
// Matches are found as compress/flate's BestSpeed finds them: the
// position of the last 4 bytes that hashed alike, taken when the bytes
// are equal and at most 32 KiB back, extended to at most 258 bytes; after
// a run of misses more positions are skipped between tries, so that data
// that does not compress is not slow.

const (
	encTableBits = 13
	encMinMatch  = 4
	encMaxMatch  = 258
	encMaxDist   = 1 << 15

	// The code lengths' limits: 15 bits for literals, lengths and
	// distances, 7 for the code of the code lengths.
	maxCodeBits   = 15
	maxLengthBits = 7
)

// The bases and extra bits of the 29 length codes (257 to 285) and the
// 30 distance codes.
var (
	lengthBase  = [29]uint16{3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258}
	lengthExtra = [29]uint8{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0}
	distBase    = [30]uint16{1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577}
	distExtra   = [30]uint8{0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13}

	// lengthOrder is the order in which the code of the code lengths
	// has its lengths written.
	lengthOrder = [19]uint8{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15}
)

// lengthCode returns the index of the length code of a match of n bytes,
// 3 ≤ n ≤ 258.
func lengthCode(n int) int {
	l := n - 3
	switch {
	case l < 8:
		return l
	case l == 255:
		return 28
	}
	b := bits.Len(uint(l))
	return 4*(b-2) + (l>>(b-3))&3
}

// distCode returns the distance code of a distance d, 1 ≤ d ≤ 32768.
func distCode(d int) int {
	l := d - 1
	if l < 4 {
		return l
	}
	b := bits.Len(uint(l))
	return 2*(b-1) + (l>>(b-2))&1
}

// An encoder compresses blocks of at most 65535 bytes; it keeps its
// memory between them. A token is a run of literals, its length (the
// bytes are read again from the data), or a match: matchFlag, its length
// less 3 from bit 15, its distance less 1. A token for each literal
// would take 4 bytes for each byte of data that does not compress, all
// of it new memory in a new process.
type encoder struct {
	table    [1 << encTableBits]uint16 // a position + 1, 0 for none
	tokens   []uint32
	litFreq  [286]uint32
	distFreq [30]uint32
	extra    int // the extra bits of the tokens' matches
	litLens  [286]uint8
	distLens [30]uint8
	litCodes [286]uint16
	dstCodes [30]uint16
	hf       huffScratch
}

const matchFlag = 1 << 31

func load32(b []byte, i int) uint32 { return binary.LittleEndian.Uint32(b[i:]) }

func hash4(u uint32) uint32 { return (u * 0x1e35a7bd) >> (32 - encTableBits) }

// appendDeflate appends to dst data, at most 65535 bytes, as a deflate
// stream of one final block.
func (e *encoder) appendDeflate(dst, data []byte) []byte {
	if len(data) < 64 {
		return appendStored(dst, data) // too short to be worth codes of its own
	}
	e.parse(data)
	w := bitWriter{dst: dst}
	if !e.writeDynamic(&w, data) {
		return appendStored(dst, data)
	}
	return w.flush()
}

// appendStored appends data as a final stored block.
func appendStored(dst, data []byte) []byte {
	dst = append(dst, 1) // BFINAL, BTYPE 00, then to the byte
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(data)))
	dst = binary.LittleEndian.AppendUint16(dst, ^uint16(len(data)))
	return append(dst, data...)
}

// parse finds the tokens of data and counts their codes.
func (e *encoder) parse(data []byte) {
	clear(e.table[:])
	clear(e.litFreq[:])
	clear(e.distFreq[:])
	// A match takes 4 bytes or more, a run of literals 1 or more and is
	// followed by a match: at most a token for every 2 bytes, and one.
	if most := len(data)/2 + 1; cap(e.tokens) < most {
		// Room for the most there can be: grown by append, the slice
		// would be copied as it doubles, and in a new process only the
		// part that is written is mapped.
		e.tokens = make([]uint32, 0, most)
	}
	e.tokens, e.extra = e.tokens[:0], 0
	lit := 0 // the first byte not yet a token
	literals := func(end int) {
		if end == lit {
			return
		}
		for _, c := range data[lit:end] {
			e.litFreq[c]++
		}
		e.tokens = append(e.tokens, uint32(end-lit))
	}
	last := len(data) - encMinMatch // the last position 4 bytes start at
	skip := 32
	for s := 0; s <= last; {
		u := load32(data, s)
		h := hash4(u)
		cand := int(e.table[h]) - 1
		e.table[h] = uint16(s + 1)
		if cand < 0 || s-cand > encMaxDist || load32(data, cand) != u {
			s += skip >> 5
			skip++
			continue
		}
		n, limit := encMinMatch, min(encMaxMatch, len(data)-s)
		for n < limit && data[cand+n] == data[s+n] {
			n++
		}
		literals(s)
		lc, dc := lengthCode(n), distCode(s-cand)
		e.tokens = append(e.tokens, matchFlag|uint32(n-3)<<15|uint32(s-cand-1))
		e.litFreq[257+lc]++
		e.distFreq[dc]++
		e.extra += int(lengthExtra[lc]) + int(distExtra[dc])
		s += n
		lit, skip = s, 32
		if s-1 <= last {
			e.table[hash4(load32(data, s-1))] = uint16(s)
		}
	}
	literals(len(data))
	e.litFreq[256]++ // the end of the block
}

// writeDynamic writes the tokens of data as a final block with codes of
// their own, unless that would be longer than data stored, and reports
// whether it did.
func (e *encoder) writeDynamic(w *bitWriter, data []byte) bool {
	if e.distFreq == [30]uint32{} {
		// All literals: the distance code still needs a code.
		e.distFreq[0] = 1
	}
	if !huffLengths(e.litFreq[:], e.litLens[:], maxCodeBits, &e.hf) || !huffLengths(e.distFreq[:], e.distLens[:], maxCodeBits, &e.hf) {
		return false
	}
	nlit, ndist := 257, 1
	for i := range e.litLens {
		if e.litLens[i] > 0 {
			nlit = max(nlit, i+1)
		}
	}
	for i := range e.distLens {
		if e.distLens[i] > 0 {
			ndist = max(ndist, i+1)
		}
	}
	// The code lengths of both codes in one sequence, run-length coded:
	// 16 repeats the previous length 3-6 times, 17 and 18 write 3-10 and
	// 11-138 zeros.
	var seq [286 + 30]uint8
	lens := append(append(seq[:0], e.litLens[:nlit]...), e.distLens[:ndist]...)
	var runs [286 + 30]uint16 // a symbol, its extra value from bit 8
	var clFreq [19]uint32
	rs := runs[:0]
	for i := 0; i < len(lens); {
		l := lens[i]
		run := 1
		for i+run < len(lens) && lens[i+run] == l {
			run++
		}
		i += run
		if l == 0 {
			for run >= 11 {
				r := min(run, 138)
				rs = append(rs, 18|uint16(r-11)<<8)
				run -= r
			}
			if run >= 3 {
				rs = append(rs, 17|uint16(run-3)<<8)
				run = 0
			}
		} else {
			rs = append(rs, uint16(l))
			run--
			for run >= 3 {
				r := min(run, 6)
				rs = append(rs, 16|uint16(r-3)<<8)
				run -= r
			}
		}
		for ; run > 0; run-- {
			rs = append(rs, uint16(l))
		}
	}
	for _, r := range rs {
		clFreq[r&0xff]++
	}
	// zlib refuses a code of code lengths with one code (incomplete):
	// give it two.
	if used := countNonzero(clFreq[:]); used < 2 {
		if clFreq[0] == 0 {
			clFreq[0] = 1
		} else {
			clFreq[1] = 1
		}
	}
	var clLens [19]uint8
	var clCodes [19]uint16
	if !huffLengths(clFreq[:], clLens[:], maxLengthBits, &e.hf) {
		return false
	}
	nclen := 19
	for nclen > 4 && clLens[lengthOrder[nclen-1]] == 0 {
		nclen--
	}

	// The block's size in bits, against the stored block's.
	size := 3 + 5 + 5 + 4 + 3*nclen + e.extra
	for _, r := range rs {
		sym := r & 0xff
		size += int(clLens[sym]) + int(runExtra(sym))
	}
	for i, f := range e.litFreq {
		size += int(f) * int(e.litLens[i])
	}
	for i, f := range e.distFreq {
		size += int(f) * int(e.distLens[i])
	}
	if size/8+1 >= len(data)+5 {
		return false
	}

	canonical(e.litLens[:], e.litCodes[:])
	canonical(e.distLens[:], e.dstCodes[:])
	canonical(clLens[:], clCodes[:])
	w.write(1, 1) // BFINAL
	w.write(2, 2) // BTYPE 10: dynamic codes
	w.write(uint64(nlit-257), 5)
	w.write(uint64(ndist-1), 5)
	w.write(uint64(nclen-4), 4)
	for _, sym := range lengthOrder[:nclen] {
		w.write(uint64(clLens[sym]), 3)
	}
	for _, r := range rs {
		sym := r & 0xff
		w.write(uint64(clCodes[sym]), uint(clLens[sym]))
		w.write(uint64(r>>8), runExtra(sym))
	}
	pos := 0 // in data
	for _, t := range e.tokens {
		if t&matchFlag == 0 {
			for _, c := range data[pos : pos+int(t)] {
				w.write(uint64(e.litCodes[c]), uint(e.litLens[c]))
			}
			pos += int(t)
			continue
		}
		n, d := int(t>>15&0xff)+3, int(t&0x7fff)+1
		pos += n
		lc, dc := lengthCode(n), distCode(d)
		w.write(uint64(e.litCodes[257+lc]), uint(e.litLens[257+lc]))
		w.write(uint64(n-int(lengthBase[lc])), uint(lengthExtra[lc]))
		w.write(uint64(e.dstCodes[dc]), uint(e.distLens[dc]))
		w.write(uint64(d-int(distBase[dc])), uint(distExtra[dc]))
	}
	w.write(uint64(e.litCodes[256]), uint(e.litLens[256]))
	return true
}

// runExtra is the number of extra bits of a symbol of the code of code
// lengths: those of the repeat codes 16, 17 and 18.
func runExtra(sym uint16) uint {
	switch sym {
	case 16:
		return 2
	case 17:
		return 3
	case 18:
		return 7
	}
	return 0
}

func countNonzero(f []uint32) int {
	n := 0
	for _, v := range f {
		if v > 0 {
			n++
		}
	}
	return n
}

// huffScratch is the memory huffLengths works in: at most 286 symbols.
type huffScratch struct {
	syms   [286]uint16
	weight [2 * 286]uint32
	parent [2 * 286]uint16
	depth  [2 * 286]uint8
}

// huffLengths sets lens to the lengths of a Huffman code for the
// frequencies freq (a length of 0 for a frequency of 0), none longer than
// maxBits, and complete: a single symbol gets a code of 1 bit, which
// decoders accept. It reports false (lens undefined) only if its own
// arithmetic failed, which would be a bug.
func huffLengths(freq []uint32, lens []uint8, maxBits int, s *huffScratch) bool {
	clear(lens)
	syms := s.syms[:0]
	for i, f := range freq {
		if f > 0 {
			syms = append(syms, uint16(i))
		}
	}
	n := len(syms)
	switch n {
	case 0:
		return true
	case 1:
		lens[syms[0]] = 1
		return true
	}
	// The least frequent first; ties by symbol, for the same codes on
	// every run.
	slices.SortFunc(syms, func(a, b uint16) int {
		if freq[a] != freq[b] {
			if freq[a] < freq[b] {
				return -1
			}
			return 1
		}
		return int(a) - int(b)
	})
	// The tree: leaves 0..n-1 in that order, inner nodes from n on, made
	// of the two lightest of the leaves and nodes not yet taken (two
	// queues, each in order of weight).
	for i, sym := range syms {
		s.weight[i] = freq[sym]
	}
	leaf, inner := 0, n
	take := func(next int) int {
		if leaf < n && (inner >= next || s.weight[leaf] <= s.weight[inner]) {
			leaf++
			return leaf - 1
		}
		inner++
		return inner - 1
	}
	for next := n; next < 2*n-1; next++ {
		a := take(next)
		b := take(next)
		s.weight[next] = s.weight[a] + s.weight[b]
		s.parent[a], s.parent[b] = uint16(next), uint16(next)
	}
	// Depths from the root down: a node's parent was made after it.
	root := 2*n - 2
	s.depth[root] = 0
	var count [maxCodeBits + 1]int
	for i := root - 1; i >= 0; i-- {
		d := min(int(s.depth[s.parent[i]])+1, 255)
		s.depth[i] = uint8(d)
		if i < n {
			count[min(d, maxBits)]++
		}
	}
	// Lengths cut to maxBits make the code over-full: move a leaf of
	// the deepest level below maxBits down a level, with one of those at
	// maxBits beside it, until the code is complete (zlib's way).
	kraft := 0 // in units of 2^-maxBits
	for l := 1; l <= maxBits; l++ {
		kraft += count[l] << (maxBits - l)
	}
	for kraft > 1<<maxBits {
		l := maxBits - 1
		for l > 0 && count[l] == 0 {
			l--
		}
		if l == 0 || count[maxBits] == 0 {
			return false
		}
		count[l]--
		count[l+1] += 2
		count[maxBits]--
		kraft--
	}
	if kraft != 1<<maxBits {
		return false
	}
	// The longest codes to the least frequent symbols.
	i := 0
	for l := maxBits; l >= 1; l-- {
		for range count[l] {
			lens[syms[i]] = uint8(l)
			i++
		}
	}
	return i == n
}

// canonical sets codes to the canonical Huffman codes of lens (RFC 1951,
// 3.2.2), bit-reversed, as deflate writes them from their first bit.
func canonical(lens []uint8, codes []uint16) {
	var count [maxCodeBits + 1]uint16
	for _, l := range lens {
		count[l]++
	}
	count[0] = 0
	var next [maxCodeBits + 1]uint16
	code := uint16(0)
	for l := 1; l <= maxCodeBits; l++ {
		code = (code + count[l-1]) << 1
		next[l] = code
	}
	for i, l := range lens {
		if l == 0 {
			codes[i] = 0
			continue
		}
		codes[i] = bits.Reverse16(next[l]) >> (16 - l)
		next[l]++
	}
}

// bitWriter appends bits to dst from each byte's lowest bit, as deflate
// has them.
type bitWriter struct {
	dst []byte
	acc uint64
	n   uint
}

// write writes the n lowest bits of v, n ≤ 32.
func (w *bitWriter) write(v uint64, n uint) {
	w.acc |= v << w.n
	w.n += n
	if w.n >= 32 {
		w.dst = binary.LittleEndian.AppendUint32(w.dst, uint32(w.acc))
		w.acc >>= 32
		w.n -= 32
	}
}

// flush writes what is left, to the byte, and returns the bytes.
func (w *bitWriter) flush() []byte {
	for w.n > 0 {
		w.dst = append(w.dst, byte(w.acc))
		w.acc >>= 8
		w.n -= min(w.n, 8)
	}
	return w.dst
}
