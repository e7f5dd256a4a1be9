package region

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// cramDefinition is the length of a CRAM file definition: "CRAM", the
// major and minor version and a 20-byte file id.
const cramDefinition = 26

// errShort is the error of the CRAM readers for bytes that end too soon.
var errShort = errors.New("truncated")

// cramReader reads the integers of CRAM from a byte slice.
type cramReader struct {
	b   []byte
	err error
}

func (r *cramReader) byte() byte {
	if len(r.b) == 0 {
		r.err = errShort
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *cramReader) int32() int32 {
	if len(r.b) < 4 {
		r.err, r.b = errShort, nil
		return 0
	}
	v := int32(binary.LittleEndian.Uint32(r.b))
	r.b = r.b[4:]
	return v
}

// itf8 reads CRAM's variable-length 32-bit integer.
func (r *cramReader) itf8() int32 {
	b0 := uint32(r.byte())
	switch {
	case b0 < 0x80:
		return int32(b0)
	case b0 < 0xc0:
		return int32((b0&0x3f)<<8 | uint32(r.byte()))
	case b0 < 0xe0:
		v := (b0 & 0x1f) << 16
		v |= uint32(r.byte()) << 8
		return int32(v | uint32(r.byte()))
	case b0 < 0xf0:
		v := (b0 & 0x0f) << 24
		v |= uint32(r.byte()) << 16
		v |= uint32(r.byte()) << 8
		return int32(v | uint32(r.byte()))
	}
	v := (b0 & 0x0f) << 28
	v |= uint32(r.byte()) << 20
	v |= uint32(r.byte()) << 12
	v |= uint32(r.byte()) << 4
	return int32(v | uint32(r.byte())&0x0f)
}

// ltf8 reads CRAM's variable-length 64-bit integer.
func (r *cramReader) ltf8() int64 {
	b0 := r.byte()
	n := 0 // leading ones: the number of bytes that follow
	for n < 8 && b0&(0x80>>n) != 0 {
		n++
	}
	v := uint64(b0) & (0xff >> (n + 1))
	if n == 8 {
		v = 0
	}
	for i := 0; i < n; i++ {
		v = v<<8 | uint64(r.byte())
	}
	return int64(v)
}

// container is what is needed of a CRAM container header.
type container struct {
	size    int64 // header and blocks
	records int32
	blocks  []byte // what follows the header, as far as it was read
}

// readContainer reads the container header at off of the CRAM file src of
// size bytes, version major.
func readContainer(src io.ReaderAt, size, off int64, major byte) (container, error) {
	if off < 0 || off >= size {
		return container{}, fmt.Errorf("no CRAM container at offset %d of %d bytes", off, size)
	}
	buf := make([]byte, min(size-off, 1<<16))
	if _, err := src.ReadAt(buf, off); err != nil && err != io.EOF {
		return container{}, err
	}
	r := &cramReader{b: buf}
	length := r.int32()
	for range 3 { // reference, start, span
		r.itf8()
	}
	c := container{records: r.itf8()}
	r.ltf8() // record counter
	r.ltf8() // bases
	r.itf8() // blocks
	landmarks := r.itf8()
	if landmarks < 0 || int(landmarks) > len(r.b) {
		return container{}, fmt.Errorf("CRAM container at offset %d: bad header", off)
	}
	for range landmarks {
		r.itf8()
	}
	if major >= 3 {
		r.int32() // crc32
	}
	head := int64(len(buf) - len(r.b))
	if r.err != nil || length < 0 || off+head+int64(length) > size {
		return container{}, fmt.Errorf("CRAM container at offset %d: bad or truncated header", off)
	}
	c.size = head + int64(length)
	c.blocks = r.b[:min(len(r.b), int(length))]
	return c, nil
}

// readCRAMHeader reads the file definition and the header container of a
// CRAM file: the end of the header part and the @SQ names of its SAM
// header.
func readCRAMHeader(src io.ReaderAt, size int64) (header, byte, error) {
	var def [cramDefinition]byte
	if _, err := src.ReadAt(def[:], 0); err != nil {
		return header{}, 0, fmt.Errorf("cram file definition: %w", err)
	}
	major := def[4]
	if major < 2 || major > 3 {
		return header{}, 0, fmt.Errorf("CRAM version %d.%d is not supported", major, def[5])
	}
	c, err := readContainer(src, size, cramDefinition, major)
	if err != nil {
		return header{}, 0, err
	}
	text, err := cramHeaderText(c, src, size, major)
	if err != nil {
		return header{}, 0, err
	}
	h := header{end: voffset{file: cramDefinition + c.size}}
	for _, line := range strings.Split(text, "\n") {
		if name, ok := sqName(line); ok {
			h.names = append(h.names, name)
		}
	}
	return h, major, nil
}

// cramHeaderText returns the SAM header text held by the first block of
// the header container c.
func cramHeaderText(c container, src io.ReaderAt, size int64, major byte) (string, error) {
	r := &cramReader{b: c.blocks}
	method := r.byte()
	r.byte() // content type
	r.itf8() // content id
	n, raw := r.itf8(), r.itf8()
	if r.err != nil || n < 0 || raw < 0 || raw > maxHeader || int(n) > len(r.b) {
		return "", errors.New("cram header block: bad or truncated")
	}
	data := r.b[:n]
	switch method {
	case 0:
	case 1:
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return "", fmt.Errorf("cram header block: %w", err)
		}
		if data, err = io.ReadAll(io.LimitReader(zr, int64(raw))); err != nil {
			return "", fmt.Errorf("cram header block: %w", err)
		}
	default:
		return "", fmt.Errorf("cram header block compressed with method %d: only raw and gzip are supported", method)
	}
	hr := &cramReader{b: data}
	l := hr.int32()
	if hr.err != nil || l < 0 || int(l) > len(hr.b) {
		return "", errors.New("cram header block: bad SAM header length")
	}
	return string(hr.b[:l]), nil
}

// sqName returns the SN of an @SQ line of a SAM header.
func sqName(line string) (string, bool) {
	fields := strings.Split(strings.TrimRight(line, "\r"), "\t")
	if fields[0] != "@SQ" {
		return "", false
	}
	for _, f := range fields[1:] {
		if name, ok := strings.CutPrefix(f, "SN:"); ok {
			return name, true
		}
	}
	return "", false
}

// cramEOF returns the offset of the EOF container that ends a CRAM file,
// or size when the file has none.
func cramEOF(src io.ReaderAt, size int64, major byte) int64 {
	for _, n := range []int64{38, 30} { // CRAM 3 and CRAM 2.1
		if size-n < cramDefinition {
			continue
		}
		c, err := readContainer(src, size, size-n, major)
		if err == nil && c.size == n && c.records == 0 {
			return size - n
		}
	}
	return size
}

// craiEntry is one line of a CRAI index: a slice of a container.
type craiEntry struct {
	ref, start, span int64
	container        int64
}

// readCRAI reads a CRAI index, a gzipped table of six numbers a line,
// decompressing at most maxIndex bytes.
func readCRAI(r io.Reader) ([]craiEntry, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("crai: %w", err)
	}
	b, err := io.ReadAll(io.LimitReader(zr, maxIndex+1))
	if err != nil {
		return nil, fmt.Errorf("crai: %w", err)
	}
	if len(b) > maxIndex {
		return nil, fmt.Errorf("crai: decompresses to more than %d bytes", maxIndex)
	}
	return parseCRAI(bytes.NewReader(b))
}

// parseCRAI parses the decompressed text of a CRAI index.
func parseCRAI(r io.Reader) ([]craiEntry, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 4096)
	var out []craiEntry
	for n := 1; sc.Scan(); n++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		f := strings.Fields(sc.Text())
		if len(f) != 6 {
			return nil, fmt.Errorf("crai, line %d: want 6 columns, got %d", n, len(f))
		}
		var v [6]int64
		for i := range v {
			var err error
			if v[i], err = strconv.ParseInt(f[i], 10, 64); err != nil || (i > 0 && v[i] < 0) {
				return nil, fmt.Errorf("crai, line %d: bad number %q", n, f[i])
			}
		}
		// Positions past any region's, and reference numbers past an
		// int32 (as CRAM stores them), are no index's.
		if v[0] < -1 || v[0] > math.MaxInt32 || v[1] > maxPosition || v[2] > maxPosition {
			return nil, fmt.Errorf("crai, line %d: reference %d, start %d or span %d out of range", n, v[0], v[1], v[2])
		}
		out = append(out, craiEntry{ref: v[0], start: v[1], span: v[2], container: v[3]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("crai: %w", err)
	}
	return out, nil
}
