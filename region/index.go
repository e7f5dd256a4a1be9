package region

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/biogo/hts/bgzf"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
)

// maxIndex is the most an index may decompress to: far more than the
// index of any file people have (that of a BAM of 100 GB is about 10 MB),
// and little enough that what biogo/hts builds of it (some ten times as
// much) stays in memory.
const maxIndex = 32 << 20

// ErrNoIndex is wrapped by the error of [FindIndex] when no index is found.
var ErrNoIndex = errkind.New(errkind.Usage, "no index found")

// Opener opens a file by name for [FindIndex]: a local file, an object, a
// URL or a Crypt4GH file's plaintext, as the caller decides. It returns an
// error for which errors.Is(err, fs.ErrNotExist) holds when there is no
// such file.
type Opener func(name string) (io.ReaderAt, int64, error)

// Candidates returns the names under which the index of the data file
// called data is looked for, in order: NAME.bai, NAME without .bam plus
// .bai, NAME.csi, NAME.crai and NAME.tbi, each as it is and with .c4gh,
// where NAME is data without its .c4gh suffix.
func Candidates(data string) []string {
	name := strings.TrimSuffix(data, ".c4gh")
	bases := []string{name + ".bai"}
	if stem, ok := strings.CutSuffix(name, ".bam"); ok {
		bases = append(bases, stem+".bai")
	}
	bases = append(bases, name+".csi", name+".crai", name+".tbi")
	var out []string
	for _, b := range bases {
		out = append(out, b, b+".c4gh")
	}
	return out
}

// FindIndex opens the index of the data file called data with open: the
// file explicit when it is not empty, else the first of [Candidates] that
// exists. It returns the index's name, contents and size. When none is
// found the error wraps [ErrNoIndex] and names every path tried; any other
// error of open is returned at once, with the name.
func FindIndex(data, explicit string, open Opener) (string, io.ReaderAt, int64, error) {
	names := Candidates(data)
	if explicit != "" {
		names = []string{explicit}
	}
	for _, name := range names {
		ra, size, err := open(name)
		if err == nil {
			return name, ra, size, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", nil, 0, fmt.Errorf("failed to open index %s: %w", name, err)
		}
	}
	return "", nil, 0, fmt.Errorf("%w for %s: tried %s", ErrNoIndex, data, strings.Join(names, ", "))
}

// indexKind tells the indexes apart.
type indexKind uint8

const (
	kindBAI indexKind = iota + 1
	kindCSI
	kindTBI
	kindCRAI
)

func (k indexKind) String() string {
	return [...]string{"", "BAI", "CSI", "TBI", "CRAI"}[k]
}

// Index is a BAI, CSI, TBI or CRAI index, read by [ReadIndex].
type Index struct {
	name     string
	kind     indexKind
	bai      *baiIndex
	csi      *csiIndex
	crai     []craiEntry
	names    []string // TBI, and CSI of VCF.gz: the reference names
	minShift int      // CSI
	depth    int      // CSI
	stats    walked
	refs     int // the references it has (BAI, CSI): a BAM's header has as many
}

// Names returns the reference names the index holds itself (TBI, and CSI
// made for VCF.gz), or nil when it refers to them by number only.
func (x *Index) Names() []string { return x.names }

// ReadIndex reads the index called name, of size bytes, from r. Which kind
// it is (BAI, CSI, TBI or CRAI) is told by its bytes. A malformed index
// wraps [ErrData]. At most 32 MiB are decompressed.
func ReadIndex(r io.ReaderAt, size int64, name string) (*Index, error) {
	x, err := readIndex(r, size)
	if err != nil {
		return nil, fmt.Errorf("%w: index %s: %v", ErrData, name, err)
	}
	x.name = name
	return x, nil
}

func readIndex(ra io.ReaderAt, size int64) (x *Index, err error) {
	defer func() {
		if p := recover(); p != nil { // a parser of biogo/hts gave up
			x, err = nil, fmt.Errorf("malformed index (%v)", p)
		}
	}()
	var head [4]byte
	if size < int64(len(head)) {
		return nil, fmt.Errorf("too short: %w", io.ErrUnexpectedEOF)
	}
	if n, err := ra.ReadAt(head[:], 0); n < len(head) {
		if err == nil || err == io.EOF {
			return nil, fmt.Errorf("too short: %w", io.ErrUnexpectedEOF)
		}
		return nil, err // a read that failed (a segment that does not authenticate)
	}
	if string(head[:]) == "BAI\x01" {
		return readBAI(ra, size)
	}
	if head[0] != 0x1f || head[1] != 0x8b {
		return nil, errors.New("not a BAI, CSI, TBI or CRAI index")
	}
	r := io.NewSectionReader(ra, 0, size)
	if head[3]&4 == 0 { // gzip without extra fields: not BGZF
		return readCRAIIndex(r)
	}
	return readBGZFIndex(r)
}

// readBAI reads a BAI index of size bytes: at once (in parallel parts of
// whole segments), so that an index that is itself a Crypt4GH file has
// each of its segments decrypted once.
func readBAI(r io.ReaderAt, size int64) (*Index, error) {
	if size > maxIndex {
		return nil, fmt.Errorf("a BAI index of %d bytes, more than %d", size, maxIndex)
	}
	b := make([]byte, size)
	if n, err := readAt(r, b, 0); n < len(b) {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	bai, st, err := parseBAI(b)
	if err != nil {
		return nil, err
	}
	return &Index{kind: kindBAI, bai: bai, stats: st, refs: len(bai.refs)}, nil
}

// readBGZFIndex reads a BGZF-compressed index: CSI, TBI or, written with
// bgzip, CRAI.
func readBGZFIndex(r io.Reader) (*Index, error) {
	br, err := bgzf.NewReader(r, 1)
	if err != nil {
		return nil, err
	}
	defer br.Close()
	// A data file given for its index is told by its first bytes, before
	// it is decompressed in full.
	var head [4]byte
	n, _ := io.ReadFull(br, head[:])
	switch string(head[:n]) {
	case "BAM\x01", "BCF\x02", "##fi":
		return nil, errors.New("a data file (BAM, BCF or VCF), not a BAI, CSI, TBI or CRAI index")
	}
	b, err := io.ReadAll(io.LimitReader(io.MultiReader(bytes.NewReader(head[:n]), br), maxIndex+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxIndex {
		return nil, fmt.Errorf("decompresses to more than %d bytes", maxIndex)
	}
	switch {
	case bytes.HasPrefix(b, []byte("CSI\x01")):
		return readCSI(b)
	case bytes.HasPrefix(b, []byte("TBI\x01")):
		return readTBI(b)
	case len(b) < 4 && (bytes.HasPrefix([]byte("CSI\x01"), b) || bytes.HasPrefix([]byte("TBI\x01"), b)):
		return nil, fmt.Errorf("too short: %w", io.ErrUnexpectedEOF)
	}
	crai, err := parseCRAI(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	return &Index{kind: kindCRAI, crai: crai}, nil
}

func readCRAIIndex(r io.Reader) (*Index, error) {
	crai, err := readCRAI(r)
	if err != nil {
		return nil, err
	}
	return &Index{kind: kindCRAI, crai: crai}, nil
}

func readCSI(b []byte) (*Index, error) {
	st, shift, depth, aux, err := walkCSI(b)
	if err != nil {
		return nil, err
	}
	idx, err := parseCSI(b, shift, depth, 16+len(aux))
	if err != nil {
		return nil, err
	}
	x := &Index{kind: kindCSI, csi: idx, minShift: shift, depth: depth, stats: st, refs: len(idx.refs)}
	if len(aux) >= 28 {
		x.names = splitNames(aux[28:])
	}
	return x, nil
}

// readTBI reads a TBI index, as the BAI that its references' part is.
func readTBI(b []byte) (*Index, error) {
	st, err := walkTBI(b)
	if err != nil {
		return nil, err
	}
	b, names, err := tbiAsBAI(b)
	if err != nil {
		return nil, err
	}
	bai, _, err := parseBAI(b)
	if err != nil {
		return nil, err
	}
	return &Index{kind: kindTBI, bai: bai, names: names, stats: st, refs: len(bai.refs)}, nil
}

// splitNames splits the NUL-terminated names of a TBI-style name block.
func splitNames(b []byte) []string {
	var out []string
	for _, n := range bytes.Split(bytes.TrimRight(b, "\x00"), []byte{0}) {
		out = append(out, string(n))
	}
	return out
}

// walked is what a walk through an index learnt: the largest chunk end
// (where the unplaced unmapped reads start, or later) and the largest file
// offset it names.
type walked struct {
	maxEnd  voffset
	maxFile int64
}

// walker reads an index's integers, checking every count against what
// is left before anything is allocated. It walks b, or an index read in
// windows: then fill makes b at least n bytes long where the index has
// them, and more is how many bytes of it come after b.
type walker struct {
	b    []byte
	more int
	fill func(n int)
	err  error
	st   walked
}

func (w *walker) take(n int) []byte {
	if w.err != nil {
		return nil
	}
	if n > len(w.b) && n <= len(w.b)+w.more && w.fill != nil {
		w.fill(n)
		if w.err != nil {
			return nil
		}
	}
	if n < 0 || n > len(w.b) {
		w.err = errShort
		return nil
	}
	p := w.b[:n:n]
	w.b = w.b[n:]
	return p
}

func (w *walker) u32() uint32 {
	if p := w.take(4); p != nil {
		return binary.LittleEndian.Uint32(p)
	}
	return 0
}

func (w *walker) u64() uint64 {
	if p := w.take(8); p != nil {
		return binary.LittleEndian.Uint64(p)
	}
	return 0
}

// count reads a count of items of at least size bytes each, and fails
// when there cannot be that many in what is left.
func (w *walker) count(size int) int {
	return w.checkCount(w.u32(), size)
}

// checkCount returns u, a count of items of at least size bytes each,
// and fails when there cannot be that many in what is left.
func (w *walker) checkCount(u uint32, size int) int {
	n := int32(u)
	if n < 0 || int64(n)*int64(size) > int64(len(w.b)+w.more) {
		switch {
		case w.err != nil:
		case n < 0:
			w.err = fmt.Errorf("negative count %d", n)
		default:
			w.err = fmt.Errorf("count %d larger than the index", n)
		}
		return 0
	}
	return int(n)
}

// bin reads the head of a bin of a BAI or TBI index: its number and
// the count of its chunks.
func (w *walker) bin() (uint32, int) {
	p := w.take(8)
	if p == nil {
		return 0, 0
	}
	return binary.LittleEndian.Uint32(p), w.checkCount(binary.LittleEndian.Uint32(p[4:]), 16)
}

// offset notes a virtual offset the index holds.
func (w *walker) offset(u uint64) voffset {
	v := makeVoffset(u)
	w.st.maxFile = max(w.st.maxFile, v.file)
	return v
}

// refs walks the nref references of a BAI, TBI (pseudo is the bin of the
// statistics, linear true) or CSI (loffset true) index.
func (w *walker) refs(nref int, pseudo uint32, loffset, linear bool) {
	for range nref {
		nbin := w.count(8)
		for range nbin {
			bin := w.u32()
			if loffset {
				w.offset(w.u64())
			}
			nchunk := w.count(16)
			for c := range nchunk {
				b, e := w.u64(), w.u64()
				if bin == pseudo && c == 1 {
					continue // mapped and unmapped counts
				}
				if e < b && w.err == nil {
					w.err = errReversed
				}
				w.offset(b)
				if end := w.offset(e); w.st.maxEnd.less(end) {
					w.st.maxEnd = end
				}
			}
		}
		if linear {
			for range w.count(8) {
				w.offset(w.u64())
			}
		}
	}
}

// walkTBI checks the structure of a TBI index.
func walkTBI(b []byte) (walked, error) {
	w := &walker{b: b}
	w.take(4)
	nref := w.count(4)
	w.take(24) // format, columns, meta, skip
	w.take(w.count(1))
	w.refs(nref, 37450, false, true)
	return w.st, w.err
}

// walkCSI checks the structure of a CSI index and returns its minimum
// shift, depth and auxiliary data.
func walkCSI(b []byte) (walked, int, int, []byte, error) {
	w := &walker{b: b}
	w.take(4)
	shift, depth := int32(w.u32()), int32(w.u32())
	if shift < 0 || depth < 0 || depth > 7 || shift > 50 || shift+3*depth > 50 { // in that order: no overflow
		return walked{}, 0, 0, nil, fmt.Errorf("unsupported CSI shape: min_shift %d, depth %d", shift, depth)
	}
	aux := w.take(w.count(1))
	pseudo := uint32((1<<((depth+1)*3))-1)/7 + 1
	w.refs(w.count(4), pseudo, true, false)
	return w.st, int(shift), int(depth), aux, w.err
}
