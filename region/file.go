package region

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/biogo/hts/bgzf"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
)

// ErrUnknownReference is wrapped by the error of [File.Plan] for a region
// on a reference that the file does not have.
var ErrUnknownReference = errkind.New(errkind.Usage, "unknown reference")

// File is a BAM, CRAM, VCF.gz or BCF file with its index: what regions are
// planned on. Create it with [Open].
type File struct {
	name   string
	src    io.ReaderAt
	size   int64
	format Format
	hdr    header
	idx    *Index
	eof    int64 // where the end-of-file marker starts; size when there is none
	major  byte  // CRAM: the major version
}

// Open reads the header of the plaintext src (size bytes, called name) and
// checks that idx fits it: [OpenData], then [File.UseIndex].
func Open(src io.ReaderAt, size int64, name string, idx *Index) (*File, error) {
	f, err := OpenData(src, size, name)
	if err != nil {
		return nil, err
	}
	if err := f.UseIndex(idx); err != nil {
		return nil, err
	}
	return f, nil
}

// OpenData reads the format and the header of the plaintext src (size
// bytes, called name): the first bytes, the header and, for CRAM, the
// last container; nothing else. The file plans regions once it has an
// index ([File.UseIndex]). It reads src through a cache of the few
// segments that it, its plans and [File.Write] read more than once.
func OpenData(src io.ReaderAt, size int64, name string) (*File, error) {
	c := newCache(src)
	format, err := Detect(c, size)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	f := &File{name: name, src: c, size: size, format: format, eof: size}
	if err := f.readHeader(); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrData, name, err)
	}
	return f, nil
}

// UseIndex checks that idx is an index for f (of a kind for its format,
// no offset past its end) and makes it the index f plans with.
func (f *File) UseIndex(idx *Index) error {
	if idx == nil {
		return errkind.Errorf(errkind.Usage, "no index for %s", f.name)
	}
	f.idx = idx
	if err := f.checkIndex(); err != nil {
		f.idx = nil
		return err
	}
	return nil
}

// readHeader reads the header and finds the end-of-file marker.
func (f *File) readHeader() error {
	var err error
	switch f.format {
	case BAM:
		f.hdr, err = readBAMHeader(f.src, f.size)
	case VCF:
		f.hdr, err = readVCFHeader(f.src, f.size)
	case BCF:
		f.hdr, err = readBCFHeader(f.src, f.size)
	case CRAM:
		if f.hdr, f.major, err = readCRAMHeader(f.src, f.size); err == nil {
			f.eof = cramEOF(f.src, f.size, f.major)
		}
		return err
	}
	if err == nil && f.size >= int64(len(eofBlock)) {
		tail := make([]byte, len(eofBlock))
		if _, err := f.src.ReadAt(tail, f.size-int64(len(tail))); err != nil {
			return err
		}
		if bytes.Equal(tail, eofBlock) {
			f.eof = f.size - int64(len(tail))
		}
	}
	return err
}

// checkIndex checks that the index is of a kind for the format and names
// no offset past the end of the file.
func (f *File) checkIndex() error {
	x := f.idx
	ok := map[Format][]indexKind{
		BAM: {kindBAI, kindCSI}, CRAM: {kindCRAI}, VCF: {kindTBI, kindCSI}, BCF: {kindCSI},
	}[f.format]
	if !slices.Contains(ok, x.kind) {
		return errkind.Errorf(errkind.Usage, "index %s is a %v index, not one for %v file %s", x.name, x.kind, f.format, f.name)
	}
	if x.stats.maxFile > f.size {
		return fmt.Errorf("%w: index %s does not belong to %s: it names offset %d of %d bytes", ErrData, x.name, f.name, x.stats.maxFile, f.size)
	}
	for _, e := range x.crai {
		if e.container >= f.size {
			return fmt.Errorf("%w: index %s does not belong to %s: it names offset %d of %d bytes", ErrData, x.name, f.name, e.container, f.size)
		}
		if e.ref >= int64(len(f.hdr.names)) {
			return fmt.Errorf("%w: index %s does not belong to %s: it names reference %d of %d", ErrData, x.name, f.name, e.ref+1, len(f.hdr.names))
		}
	}
	// A BAM's index has a reference for each of its header's (samtools,
	// htslib, Picard): one of another file has others, and its regions
	// would come out empty.
	if f.format == BAM && x.refs != len(f.hdr.names) {
		return fmt.Errorf("%w: index %s does not belong to %s: it has %d references, the file %d", ErrData, x.name, f.name, x.refs, len(f.hdr.names))
	}
	return nil
}

// Format returns the format of the file.
func (f *File) Format() Format { return f.format }

// Names returns the reference names that regions may name, in the order
// of the index.
func (f *File) Names() []string {
	if f.format == VCF && f.idx.names != nil {
		return f.idx.names
	}
	return f.hdr.names
}

// target is a region resolved to a reference number; ref -1 is the
// unplaced unmapped reads.
type target struct {
	ref        int
	start, end int64
}

// resolve turns regions into targets, sorted in the order of the
// references (the unmapped reads last) and merged where they overlap.
func (f *File) resolve(regions []Region) ([]target, error) {
	names := f.Names()
	ids := make(map[string]int, len(names))
	for i, n := range names {
		if _, dup := ids[n]; !dup {
			ids[n] = i
		}
	}
	var ts []target
	for _, r := range regions {
		if r.Name == Unmapped {
			if f.format != BAM && f.format != CRAM {
				return nil, errkind.Errorf(errkind.Usage, "%v file %s has no unmapped reads (*)", f.format, f.name)
			}
			ts = append(ts, target{ref: -1})
			continue
		}
		r, err := f.disambiguate(r, ids)
		if err != nil {
			return nil, err
		}
		id, ok := ids[r.Name]
		if !ok && f.format == VCF && slices.Contains(f.hdr.names, r.Name) {
			continue // a ##contig without records: none in the index
		}
		if !ok {
			return nil, f.unknown(r.Name, names)
		}
		if r.End > r.Start {
			ts = append(ts, target{ref: id, start: r.Start, end: r.End})
		}
	}
	return mergeTargets(ts), nil
}

// disambiguate returns r as the whole reference r.whole when that is a
// name of the file and r.Name is not ("HLA-A*01:01:01:01"); when both
// are names the region is ambiguous, as samtools says too.
func (f *File) disambiguate(r Region, ids map[string]int) (Region, error) {
	if r.whole == "" {
		return r, nil
	}
	_, whole := ids[r.whole]
	_, split := ids[r.Name]
	switch {
	case whole && split:
		return Region{}, fmt.Errorf("%w %q: both a reference and a region of %q in %s; write {%s} or {%s}:…",
			ErrInvalidRegion, r.whole, r.Name, f.name, r.whole, r.Name)
	case whole:
		return Region{Name: r.whole, End: Unbounded}, nil
	}
	return r, nil
}

// unknown returns the error for a reference the file does not have.
func (f *File) unknown(name string, names []string) error {
	if len(names) <= 20 {
		return fmt.Errorf("%w %q in %s: it has %s", ErrUnknownReference, name, f.name, strings.Join(names, ", "))
	}
	return fmt.Errorf("%w %q in %s (of its %d references)", ErrUnknownReference, name, f.name, len(names))
}

// mergeTargets sorts targets (the unmapped reads last) and merges those
// that overlap or touch.
func mergeTargets(ts []target) []target {
	key := func(t target) int {
		if t.ref < 0 {
			return int(^uint(0) >> 1)
		}
		return t.ref
	}
	slices.SortFunc(ts, func(a, b target) int {
		return cmp.Or(cmp.Compare(key(a), key(b)), cmp.Compare(a.start, b.start))
	})
	var out []target
	for _, t := range ts {
		if n := len(out); n > 0 && out[n-1].ref == t.ref && t.start <= out[n-1].end {
			out[n-1].end = max(out[n-1].end, t.end)
			continue
		}
		out = append(out, t)
	}
	return out
}

// chunks returns the index's chunks for the target t, unmerged. An index
// without references has none.
func (f *File) chunks(t target) (cs []bgzf.Chunk, err error) {
	defer func() {
		if p := recover(); p != nil { // a bug, not a crash: the index is what is wrong
			cs, err = nil, fmt.Errorf("%w: malformed index (%v)", ErrData, p)
		}
	}()
	x := f.idx
	if t.ref < 0 {
		from := f.hdr.end
		if from.less(x.stats.maxEnd) {
			from = x.stats.maxEnd
		}
		return []bgzf.Chunk{{Begin: bgzf.Offset{File: from.file, Block: uint16(from.block)}, End: bgzf.Offset{File: f.eof}}}, nil
	}
	limit := int64(baiLimit)
	if x.kind == kindCSI {
		limit = 1 << (x.minShift + 3*x.depth)
	}
	start, end := t.start, min(t.end, limit)
	if start >= end {
		return nil, nil
	}
	switch {
	case x.kind == kindBAI && x.bai == nil, x.kind == kindCSI && x.csi == nil, x.kind == kindTBI && x.bai == nil:
		return nil, nil
	}
	switch x.kind {
	case kindBAI, kindTBI:
		if x.bai.answers != nil {
			var ok bool
			if cs, ok, err = x.bai.answer(t.ref, start, end); !ok {
				return nil, errkind.Errorf(errkind.Usage, "index %s was read for other regions of %s", x.name, f.name)
			}
			break
		}
		cs, err = x.bai.chunks(t.ref, start, end)
		bound := x.bai.after(t.ref, end)
		cs = slices.DeleteFunc(cs, func(c bgzf.Chunk) bool { return uint64(c.Begin.File)<<16|uint64(c.Begin.Block) >= bound })
	case kindCSI:
		cs = x.csi.chunks(t.ref, start, end)
	}
	if errors.Is(err, errNoChunks) {
		return nil, nil // no records there
	}
	return cs, err
}
