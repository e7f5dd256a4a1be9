package region

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
)

// Format is the kind of file a region is cut from.
type Format uint8

const (
	// BAM is BGZF-compressed binary alignments.
	BAM Format = iota + 1
	// CRAM is reference-compressed alignments in containers.
	CRAM
	// VCF is BGZF-compressed VCF text (VCF.gz).
	VCF
	// BCF is BGZF-compressed binary VCF, major version 2.
	BCF
)

// String names the format.
func (f Format) String() string {
	switch f {
	case BAM:
		return "BAM"
	case CRAM:
		return "CRAM"
	case VCF:
		return "VCF.gz"
	case BCF:
		return "BCF"
	}
	return "unknown"
}

// ErrFormat is returned for a file that is not BAM, CRAM, VCF.gz or BCF.
var ErrFormat = errkind.New(errkind.Usage, "not BAM, CRAM, VCF.gz or BCF")

// ErrData is wrapped by the errors for a file or an index that is corrupt,
// or an index that does not belong to its file.
var ErrData = errkind.New(errkind.Data, "bad data")

// maxHeader is the largest header (BAM, VCF or BCF text, CRAM SAM header)
// that is read.
const maxHeader = 256 << 20

// Detect tells the format of the plaintext src of size bytes from its
// first bytes: BGZF holding "BAM\1", "##fileformat=VCF" or "BCF\2", or
// "CRAM". Anything else wraps [ErrFormat].
func Detect(src io.ReaderAt, size int64) (Format, error) {
	head := make([]byte, min(size, 18))
	if _, err := src.ReadAt(head, 0); err != nil && err != io.EOF {
		return 0, err
	}
	if bytes.HasPrefix(head, []byte("CRAM")) {
		return CRAM, nil
	}
	if !isBGZF(head) {
		return 0, ErrFormat
	}
	b, err := readBlock(src, size, 0)
	if err != nil { // BGZF, damaged
		return 0, fmt.Errorf("%w: %v", ErrData, err)
	}
	defer putBuf(b.data)
	switch d := b.data; {
	case bytes.HasPrefix(d, []byte("BAM\x01")):
		return BAM, nil
	case bytes.HasPrefix(d, []byte("BCF\x02")):
		return BCF, nil
	case bytes.HasPrefix(d, []byte("##fileformat=VCF")):
		return VCF, nil
	}
	return 0, ErrFormat
}

// header is what a region plan needs of a file's header: where the first
// record starts and the names of the references, in the order records
// refer to them.
type header struct {
	end   voffset // the first record (BGZF formats)
	names []string
	lens  []int64 // BAM: reference lengths
}

// readBAMHeader reads the header of a BAM file.
func readBAMHeader(src io.ReaderAt, size int64) (header, error) {
	s := newStream(src, size)
	var fixed [8]byte
	if _, err := io.ReadFull(s, fixed[:]); err != nil {
		return header{}, fmt.Errorf("bam header: %w", err)
	}
	text := int64(binary.LittleEndian.Uint32(fixed[4:]))
	if text > maxHeader {
		return header{}, fmt.Errorf("bam header text of %d bytes", text)
	}
	if _, err := io.CopyN(io.Discard, s, text); err != nil {
		return header{}, fmt.Errorf("bam header: %w", err)
	}
	n, err := readU32(s)
	if err != nil {
		return header{}, fmt.Errorf("bam header: %w", err)
	}
	var h header
	for i := uint32(0); i < n; i++ {
		name, length, err := readBAMRef(s)
		if err != nil {
			return header{}, fmt.Errorf("bam header, reference %d: %w", i, err)
		}
		h.names, h.lens = append(h.names, name), append(h.lens, length)
	}
	h.end = s.tell()
	return h, nil
}

// readBAMRef reads one reference of a BAM header: l_name, name, l_ref.
func readBAMRef(s *stream) (string, int64, error) {
	l, err := readU32(s)
	if err != nil {
		return "", 0, err
	}
	if l == 0 || l > 1<<16 {
		return "", 0, fmt.Errorf("name of %d bytes", l)
	}
	name := make([]byte, l)
	if _, err := io.ReadFull(s, name); err != nil {
		return "", 0, err
	}
	length, err := readU32(s)
	if err != nil {
		return "", 0, err
	}
	return string(bytes.TrimRight(name, "\x00")), int64(length), nil
}

func readU32(r io.Reader) (uint32, error) {
	var b [4]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b[:]), nil
}

// readVCFHeader reads the header lines of a VCF.gz file, up to the first
// line that does not start with "#", and the names of its ##contig lines.
func readVCFHeader(src io.ReaderAt, size int64) (header, error) {
	s := newStream(src, size)
	var h header
	var line []byte
	var read int64
	for {
		start := s.tell()
		line = line[:0]
		for {
			c, err := s.ReadByte()
			if err == io.EOF {
				if len(line) == 0 {
					h.end = start
					return h, nil
				}
				break
			}
			if err != nil {
				return header{}, fmt.Errorf("vcf header: %w", err)
			}
			if len(line) == 0 && c != '#' {
				h.end = start
				return h, nil
			}
			if read++; read > maxHeader {
				return header{}, fmt.Errorf("vcf header longer than %d bytes", maxHeader)
			}
			if c == '\n' {
				break
			}
			line = append(line, c)
		}
		h.addContig(string(line))
		h.lens = nil // VCF has no IDX dictionary
	}
}

// readBCFHeader reads the header of a BCF file: its magic, its text and
// the contig dictionary of that text.
func readBCFHeader(src io.ReaderAt, size int64) (header, error) {
	s := newStream(src, size)
	var fixed [9]byte
	if _, err := io.ReadFull(s, fixed[:]); err != nil {
		return header{}, fmt.Errorf("bcf header: %w", err)
	}
	n := int64(binary.LittleEndian.Uint32(fixed[5:]))
	if n > maxHeader {
		return header{}, fmt.Errorf("bcf header text of %d bytes", n)
	}
	var text bytes.Buffer
	if _, err := io.CopyN(&text, s, n); err != nil {
		return header{}, fmt.Errorf("bcf header: %w", err)
	}
	var h header
	for _, line := range strings.Split(text.String(), "\n") {
		h.addContig(line)
	}
	if err := h.indexContigs(); err != nil {
		return header{}, err
	}
	h.end = s.tell()
	return h, nil
}

// addContig notes the ID of a ##contig line, with its IDX when it has one
// (kept in lens until indexContigs).
func (h *header) addContig(line string) {
	rest, ok := strings.CutPrefix(line, "##contig=<")
	if !ok {
		return
	}
	rest = strings.TrimSuffix(rest, ">")
	id, idx := "", int64(-1)
	for _, field := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(field, "=")
		switch k {
		case "ID":
			id = v
		case "IDX":
			if n, err := strconv.ParseInt(v, 10, 32); err == nil && n >= 0 {
				idx = n
			}
		}
	}
	if id != "" {
		h.names, h.lens = append(h.names, id), append(h.lens, idx)
	}
}

// indexContigs orders the contigs as the BCF dictionary does: in the
// order of the header, or at their IDX when the header gives one.
func (h *header) indexContigs() error {
	hasIdx := false
	for _, idx := range h.lens {
		hasIdx = hasIdx || idx >= 0
	}
	if !hasIdx {
		h.lens = nil
		return nil
	}
	names := make([]string, len(h.names))
	for i, idx := range h.lens {
		if idx < 0 || idx >= int64(len(names)) || names[idx] != "" {
			return errors.New("bcf header: contig IDX out of order")
		}
		names[idx] = h.names[i]
	}
	h.names, h.lens = names, nil
	return nil
}
