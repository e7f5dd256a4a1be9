package region

import (
	"encoding/binary"
	"math/bits"
	"sync"
)

// The blocks that a region makes anew (at most two edges of its own) are
// compressed here rather than by compress/flate: a flate.Writer holds
// about a MiB of state, and in a new process the kernel gives that memory
// a page at a time as it is first written (14 µs a page on the
// development machine, a virtual machine). This encoder keeps a table of
// 16 KiB: greedy LZ77 matching of 4-byte prefixes, one candidate each,
// coded with the fixed Huffman codes of RFC 1951 (section 3.2.6), in one
// final block; data that this would make larger is stored as it is. On
// the reads of a BAM it compresses about as well as flate.BestSpeed
// (BenchmarkCompressBlocks reports both); the output is read by any
// inflater.

const (
	fixedHashBits = 13
	fixedMinMatch = 4
	fixedMaxMatch = 258
	fixedMaxDist  = 1 << 15
	maxStored     = 1<<16 - 1 // the longest stored block
)

var tables = sync.Pool{New: func() any { return new([1 << fixedHashBits]uint16) }}

// deflate appends to dst the raw deflate stream (one final block) of src,
// which is at most maxStored bytes.
func deflate(dst, src []byte) []byte {
	start := len(dst)
	if out, ok := deflateFixed(dst, src); ok {
		return out
	}
	// Stored: BFINAL 1, BTYPE 00, up to the byte boundary; LEN, NLEN.
	dst = append(dst[:start], 1, byte(len(src)), byte(len(src)>>8), ^byte(len(src)), ^byte(len(src)>>8))
	return append(dst, src...)
}

// deflateFixed appends src to dst as a block of fixed Huffman codes, and
// reports false when that would be longer than storing src.
func deflateFixed(dst, src []byte) ([]byte, bool) {
	limit := len(dst) + len(src) + 5 // what a stored block takes
	w := bitWriter{out: dst}
	w.put(0b011, 3) // BFINAL 1, BTYPE 01
	// The table holds a position + 1 for each hash (0: none): positions
	// of a block fit in 16 bits. It is kept between blocks, not on the
	// stack: a server compressing many regions' blocks at once would
	// grow each of their goroutines' stacks by it.
	table := tables.Get().(*[1 << fixedHashBits]uint16)
	defer tables.Put(table)
	clear(table[:])
	lit := 0 // the first byte not yet coded
	for i := 0; i+fixedMinMatch <= len(src); {
		if len(w.out) > limit {
			return nil, false
		}
		v := binary.LittleEndian.Uint32(src[i:])
		h := (v * 0x1e35a7bd) >> (32 - fixedHashBits)
		cand := int(table[h]) - 1
		table[h] = uint16(i + 1)
		if cand < 0 || i-cand > fixedMaxDist || binary.LittleEndian.Uint32(src[cand:]) != v {
			i++
			continue
		}
		n := fixedMinMatch
		for i+n < len(src) && n < fixedMaxMatch && src[cand+n] == src[i+n] {
			n++
		}
		w.literals(src[lit:i])
		w.match(n, i-cand)
		i += n
		lit = i
	}
	w.literals(src[lit:])
	w.symbol(256) // the end of the block
	w.flush()
	return w.out, len(w.out) <= limit
}

// bitWriter writes the bits of a deflate stream, least significant first.
type bitWriter struct {
	out   []byte
	bits  uint64
	nbits uint
}

// put writes the n low bits of v, n ≤ 32.
func (w *bitWriter) put(v uint32, n uint) {
	w.bits |= uint64(v) << w.nbits
	w.nbits += n
	if w.nbits >= 32 {
		w.out = binary.LittleEndian.AppendUint32(w.out, uint32(w.bits))
		w.bits >>= 32
		w.nbits -= 32
	}
}

// flush writes the bits left, padded to a byte.
func (w *bitWriter) flush() {
	for w.nbits > 0 {
		w.out = append(w.out, byte(w.bits))
		w.bits >>= 8
		w.nbits = w.nbits - min(w.nbits, 8)
	}
}

// code writes a Huffman code of n bits, which deflate stores most
// significant bit first.
func (w *bitWriter) code(c uint32, n uint) {
	w.put(uint32(bits.Reverse16(uint16(c)))>>(16-n), n)
}

// symbol writes symbol s (0–287) of the fixed literal/length code.
func (w *bitWriter) symbol(s int) {
	switch {
	case s < 144:
		w.code(uint32(0x30+s), 8)
	case s < 256:
		w.code(uint32(0x190+s-144), 9)
	case s < 280:
		w.code(uint32(s-256), 7)
	default:
		w.code(uint32(0xc0+s-280), 8)
	}
}

func (w *bitWriter) literals(b []byte) {
	for _, c := range b {
		w.symbol(int(c))
	}
}

// match writes a copy of n bytes (3–258) from dist bytes back (1–32768).
func (w *bitWriter) match(n, dist int) {
	// The length: symbols 257–284 take 4 lengths a step from 11 on,
	// twice the step every 4 symbols; 258 is 285.
	switch v := uint32(n - 3); {
	case v < 8:
		w.symbol(257 + int(v))
	case v == 255:
		w.symbol(285)
	default:
		nb := uint(bits.Len32(v)) - 1 // ≥ 3
		w.symbol(257 + 4*int(nb-1) + int(v>>(nb-2)&3))
		w.put(v&(1<<(nb-2)-1), nb-2)
	}
	// The distance: codes of 5 bits, two a doubling from 5 on.
	switch v := uint32(dist - 1); {
	case v < 4:
		w.code(v, 5)
	default:
		nb := uint(bits.Len32(v)) - 1 // ≥ 2
		w.code(uint32(2*nb)+(v>>(nb-1)&1), 5)
		w.put(v&(1<<(nb-1)-1), nb-1)
	}
}
