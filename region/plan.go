package region

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"sort"
	"sync"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/internal/errkind"
)

// Piece is a part of the output of a plan: new bytes when Data is not nil,
// else the bytes [Start, End) of the source's plaintext.
type Piece struct {
	Start, End int64
	Data       []byte
}

// Len returns the number of bytes the piece adds to the output.
func (p Piece) Len() int64 {
	if p.Data != nil {
		return int64(len(p.Data))
	}
	return p.End - p.Start
}

// Plan is how to write the part of a file that holds some regions: its
// header, the records of the regions and its end-of-file marker, as
// pieces to write in order.
type Plan struct {
	// Pieces are what to write, in order; copied ranges are sorted and
	// disjoint.
	Pieces []Piece
	// Copied and New are the bytes the pieces copy from the source and
	// the new bytes they hold (BGZF blocks cut at a region's edge).
	Copied, New int64
	// Read are the ranges of the source's plaintext that must be read:
	// the copied ones and the blocks that the new pieces were cut from.
	Read []edit.Interval
	// spans are the merged virtual-offset spans of a BGZF plan, for the
	// tests.
	spans []span
	// edges are the new pieces still to make.
	edges []edge
}

// Size returns the length of the output.
func (p *Plan) Size() int64 { return p.Copied + p.New }

// add appends a piece, joining a copy to the copy it continues.
func (p *Plan) add(pc Piece) {
	if pc.Len() == 0 {
		return
	}
	if pc.Data != nil {
		p.New += int64(len(pc.Data))
		p.Pieces = append(p.Pieces, pc)
		return
	}
	p.Copied += pc.End - pc.Start
	p.read(pc.Start, pc.End)
	if n := len(p.Pieces); n > 0 && p.Pieces[n-1].Data == nil && p.Pieces[n-1].End == pc.Start {
		p.Pieces[n-1].End = pc.End
		return
	}
	p.Pieces = append(p.Pieces, pc)
}

// read notes that [start, end) of the source is read.
func (p *Plan) read(start, end int64) {
	if n := len(p.Read); n > 0 && p.Read[n-1].End >= start {
		p.Read[n-1].End = max(p.Read[n-1].End, end)
		return
	}
	p.Read = append(p.Read, edit.Interval{Start: start, End: end})
}

// Plan returns the plan for the regions (nil or empty: none, which gives
// the header and the end-of-file marker, a valid file without records).
// Regions are sorted and merged in the order of the index. A region on a
// reference the file lacks wraps [ErrUnknownReference]; an index whose
// chunks do not fit the file wraps [ErrData].
func (f *File) Plan(regions []Region) (*Plan, error) {
	if f.idx == nil {
		return nil, errkind.Errorf(errkind.Usage, "no index for %s", f.name)
	}
	ts, err := f.resolve(regions)
	if err != nil {
		return nil, err
	}
	if f.format == CRAM {
		return f.planCRAM(ts)
	}
	return f.planBGZF(ts)
}

// span is a range of virtual offsets [begin, end).
type span struct{ begin, end voffset }

// planBGZF plans a BAM, VCF.gz or BCF file.
func (f *File) planBGZF(ts []target) (*Plan, error) {
	spans := []span{{voffset{}, f.hdr.end}}
	// The spans are merged as they come, whenever they have doubled:
	// regions that share the chunks of large bins (thousands of BED
	// lines, each with the chunks of the spliced reads over it) hold
	// them once, not once a region.
	merged := len(spans)
	for _, t := range ts {
		cs, err := f.chunks(t)
		if err != nil {
			return nil, fmt.Errorf("index %s: %w", f.idx.name, err)
		}
		for _, c := range cs {
			s := span{voffset{c.Begin.File, int64(c.Begin.Block)}, voffset{c.End.File, int64(c.End.Block)}}
			if s.begin.less(f.hdr.end) {
				s.begin = f.hdr.end
			}
			if !s.begin.less(s.end) {
				continue
			}
			if n := len(spans); n > merged && !spans[n-1].end.less(s.begin) && !s.begin.less(spans[n-1].begin) {
				// The chunks come sorted: one that overlaps or
				// touches the last joins it.
				spans[n-1].end = later(spans[n-1].end, s.end)
				continue
			}
			spans = append(spans, s)
		}
		if len(spans) >= 2*merged+1024 {
			spans = mergeSpans(spans)
			merged = len(spans)
		}
	}
	p := &Plan{spans: mergeSpans(spans)}
	for _, s := range p.spans {
		if err := f.planSpan(p, s); err != nil {
			return nil, fmt.Errorf("%w: index %s does not fit %s: %v", ErrData, f.idx.name, f.name, err)
		}
	}
	if err := f.makeEdges(p); err != nil {
		return nil, fmt.Errorf("%w: index %s does not fit %s: %v", ErrData, f.idx.name, f.name, err)
	}
	if f.eof < f.size {
		p.add(Piece{Start: f.eof, End: f.size})
	} else {
		p.add(Piece{Data: eofBlock})
	}
	return p, nil
}

// later returns the later of two offsets.
func later(a, b voffset) voffset {
	if a.less(b) {
		return b
	}
	return a
}

// mergeSpans sorts spans and merges those that overlap or touch.
func mergeSpans(spans []span) []span {
	slices.SortFunc(spans, func(a, b span) int {
		switch {
		case a.begin.less(b.begin):
			return -1
		case b.begin.less(a.begin):
			return 1
		}
		return 0
	})
	var out []span
	for _, s := range spans {
		if n := len(out); n > 0 && !out[n-1].end.less(s.begin) {
			if out[n-1].end.less(s.end) {
				out[n-1].end = s.end
			}
			continue
		}
		out = append(out, s)
	}
	return out
}

// planSpan adds the pieces of the span s: the whole blocks inside it
// copied, the parts of the blocks at its edges to be compressed again
// (by makeEdges).
func (f *File) planSpan(p *Plan, s span) error {
	if s.end.file > f.eof || (s.end.file == f.eof && s.end.block > 0) {
		return fmt.Errorf("offset %d is past the data", s.end.file)
	}
	// Every offset that starts or ends a copy must be where a block
	// starts (or the end marker): an index of another file could name
	// any byte, and the copy would hold half a block.
	for _, v := range []voffset{s.begin, s.end} {
		if v.block == 0 && v.file != f.eof {
			if _, err := f.blockSize(v.file); err != nil {
				return err
			}
		}
	}
	start := s.begin.file
	if s.begin.block > 0 {
		size, err := f.blockSize(s.begin.file)
		if err != nil {
			return err
		}
		e := edge{off: s.begin.file, lo: s.begin.block, hi: -1}
		if s.end.file == s.begin.file {
			e.hi = s.end.block
		}
		p.read(e.off, e.off+size)
		p.edge(e)
		start = e.off + size
		if s.end.file == e.off {
			return nil
		}
	}
	if start < s.end.file {
		p.add(Piece{Start: start, End: s.end.file})
	}
	if s.end.block > 0 {
		size, err := f.blockSize(s.end.file)
		if err != nil {
			return err
		}
		p.read(s.end.file, s.end.file+size)
		p.edge(edge{off: s.end.file, hi: s.end.block})
	}
	return nil
}

// An edge is a new piece to make: the data [lo, hi) of the BGZF block at
// off (hi < 0: to the end of its data), compressed again. Its piece, at
// index at of the plan's pieces, waits for it with empty Data.
type edge struct {
	at     int
	off    int64
	lo, hi int64
}

// edge adds the piece of e, to be made by makeEdges.
func (p *Plan) edge(e edge) {
	e.at = len(p.Pieces)
	p.edges = append(p.edges, e)
	p.Pieces = append(p.Pieces, Piece{Data: []byte{}})
}

// parallelEdges is the fewest edges that makeEdges makes on several
// cores. A core decompresses and compresses in buffers of its own, new
// memory for a new process (see parallelMin), and its thread must be
// woken: for the two edges of a region, one core was faster.
const parallelEdges = 8

// makeEdges decompresses the edge blocks of p, cuts them and compresses
// them again, on as many cores as there are when there are parallelEdges
// or more, unless the source is [Serial], and then drops the pieces that
// came out empty. It returns the error of the first edge that fails.
func (f *File) makeEdges(p *Plan) error {
	errs := make([]error, len(p.edges))
	work := func(i int) {
		e := p.edges[i]
		data, buf, err := f.cut(e)
		errs[i] = err
		if err == nil {
			p.Pieces[e.at].Data = compressBlocks(data)
			putBuf(buf)
		}
	}
	workers := 1
	if len(p.edges) >= parallelEdges {
		workers = min(len(p.edges), jobs(f.src))
	}
	if workers == 1 {
		// On this goroutine: the buffers it used already (sync.Pool
		// keeps them by processor) are used again.
		for i := range p.edges {
			work(i)
		}
	} else {
		var wg sync.WaitGroup
		next := make(chan int)
		for range workers {
			wg.Go(func() {
				for i := range next {
					work(i)
				}
			})
		}
		for i := range p.edges {
			next <- i
		}
		close(next)
		wg.Wait()
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	pieces := p.Pieces
	p.Pieces, p.edges, p.New = nil, nil, 0
	for _, pc := range pieces {
		n := len(p.Pieces)
		switch {
		case pc.Len() == 0:
		case pc.Data != nil:
			p.New += int64(len(pc.Data))
			p.Pieces = append(p.Pieces, pc)
		case n > 0 && p.Pieces[n-1].Data == nil && p.Pieces[n-1].End == pc.Start:
			p.Pieces[n-1].End = pc.End // the edge between them was empty
		default:
			p.Pieces = append(p.Pieces, pc)
		}
	}
	return nil
}

// cut reads the block of e and returns the data it wants, and the
// buffer that holds it, for putBuf.
func (f *File) cut(e edge) (data, buf []byte, err error) {
	limit := maxBlock
	if e.hi >= 0 {
		limit = int(min(e.hi, maxBlock))
	}
	b, err := readBlockPrefix(f.src, f.size, e.off, limit)
	if err != nil {
		return nil, nil, err
	}
	hi := e.hi
	if hi < 0 {
		hi = int64(len(b.data))
	}
	switch {
	case e.lo > int64(len(b.data)):
		return nil, nil, fmt.Errorf("offset %d in a block of %d bytes", e.lo, len(b.data))
	case hi > int64(len(b.data)), hi < e.lo:
		return nil, nil, fmt.Errorf("offset %d in a block of %d bytes", hi, len(b.data))
	}
	return b.data[e.lo:hi], b.data, nil
}

// blockSize returns the stored length of the BGZF block at off, and
// fails unless one starts there.
func (f *File) blockSize(off int64) (int64, error) {
	if off < 0 || off > f.size {
		return 0, fmt.Errorf("offset %d is past the data", off)
	}
	head := make([]byte, 18)
	if _, err := f.src.ReadAt(head, off); err != nil && err != io.EOF {
		return 0, err
	}
	n, err := blockSize(head)
	if err != nil {
		return 0, fmt.Errorf("offset %d: %w", off, err)
	}
	return n, nil
}

// planCRAM plans a CRAM file: the file definition and header container,
// the whole containers that hold the targets, the EOF container.
func (f *File) planCRAM(ts []target) (*Plan, error) {
	var offs []int64
	byRef := craiByRef(f.idx.crai)
	for _, t := range ts {
		for _, e := range byRef.holding(t) {
			if e.container < f.hdr.end.file {
				// Inside the header: the index of another file (one
				// written with other settings, whose header differs).
				return nil, fmt.Errorf("%w: index %s does not fit %s: a container at offset %d, inside the header (%d bytes)",
					ErrData, f.idx.name, f.name, e.container, f.hdr.end.file)
			}
			offs = append(offs, e.container)
		}
	}
	slices.Sort(offs)
	offs = slices.Compact(offs)
	p := &Plan{}
	p.add(Piece{Start: 0, End: f.hdr.end.file})
	for _, off := range offs {
		c, err := readContainer(f.src, f.size, off, f.major)
		if err != nil {
			return nil, fmt.Errorf("%w: index %s does not fit %s: %v", ErrData, f.idx.name, f.name, err)
		}
		if n := len(p.Pieces); n > 0 && p.Pieces[n-1].End > off {
			continue // inside a container already planned
		}
		p.add(Piece{Start: off, End: off + c.size})
	}
	p.add(Piece{Start: f.eof, End: f.size})
	return p, nil
}

// craiRefs are the entries of a CRAI index by reference, each sorted by
// start, with the longest span among them: a target's slices are then
// found by a search, not by a scan of the index (whose lines a region
// request may multiply by thousands of BED lines).
type craiRefs map[int64]*craiRef

type craiRef struct {
	entries []craiEntry // sorted by start
	maxSpan int64
	always  []craiEntry // span 0: taken whenever the reference matches
}

func craiByRef(entries []craiEntry) craiRefs {
	m := craiRefs{}
	for _, e := range entries {
		r := m[e.ref]
		if r == nil {
			r = &craiRef{}
			m[e.ref] = r
		}
		if e.span <= 0 && e.ref >= 0 {
			r.always = append(r.always, e)
			continue
		}
		r.entries = append(r.entries, e)
		r.maxSpan = max(r.maxSpan, e.span)
	}
	for _, r := range m {
		slices.SortFunc(r.entries, func(a, b craiEntry) int { return cmp.Compare(a.start, b.start) })
	}
	return m
}

// holding returns the entries whose slices may hold records of t.
func (m craiRefs) holding(t target) []craiEntry {
	ref := int64(t.ref)
	if t.ref < 0 {
		ref = -1
	}
	r := m[ref]
	if r == nil {
		return nil
	}
	if t.ref < 0 {
		return r.entries
	}
	out := slices.Clone(r.always)
	// Slices that start before t.start - maxSpan end before it.
	from := sort.Search(len(r.entries), func(i int) bool { return r.entries[i].start-1+r.maxSpan >= t.start })
	for _, e := range r.entries[from:] {
		if e.start-1 >= t.end {
			break
		}
		if craiHolds(e, t) {
			out = append(out, e)
		}
	}
	return out
}

// craiHolds reports whether the CRAI slice e may hold records of t. CRAI
// starts count from 1; a slice of span 0 is taken whenever its reference
// matches.
func craiHolds(e craiEntry, t target) bool {
	if t.ref < 0 {
		return e.ref == -1
	}
	if e.ref != int64(t.ref) {
		return false
	}
	begin := e.start - 1
	return e.span <= 0 || (begin < t.end && begin+e.span >= t.start)
}

// Write writes the output of the plan p of f to dst, copying its ranges
// from f's source as [Write] does, through the chunks that f read already
// (the header's, the edge blocks', the end-of-file marker's), so that
// from a Crypt4GH file no segment is decrypted twice for a plan.
func (f *File) Write(dst io.Writer, p *Plan) (int64, error) {
	return Write(dst, f.src, p.Pieces)
}

// Write writes the output of pieces, copying their ranges from src (the
// plaintext the plan was made for), and returns how many bytes it wrote.
// A range of 8 MiB or more is read in parts of 256 KiB that start at
// multiples of 256 KiB, as many at once as GOMAXPROCS (one at a time from
// a [Serial] source), and a shorter range in reads that start at
// multiples of 64 KiB, so that from a [c4gh.ReaderAt] of a file without
// an edit list no segment is decrypted twice.
func Write(dst io.Writer, src io.ReaderAt, pieces []Piece) (int64, error) {
	var written int64
	var buf []byte // the chunk of the shorter ranges, one for them all
	defer func() { putBuf(buf) }()
	for _, pc := range pieces {
		var n int64
		var err error
		if pc.Data == nil && (pc.Start < 0 || pc.End < pc.Start) {
			return written, errkind.Errorf(errkind.Usage, "invalid piece [%d, %d)", pc.Start, pc.End)
		}
		if pc.Data != nil {
			var m int
			m, err = dst.Write(pc.Data)
			n = int64(m)
		} else {
			n, err = copyRange(dst, src, pc.Start, pc.End, &buf)
		}
		written += n
		if err != nil {
			return written, err
		}
	}
	return written, nil
}

// copyRange writes [start, end) of src to dst: a range of parallelMin
// bytes or more in parallel (copyParallel), a shorter one a chunk at a
// time through *buf, made when it is nil.
func copyRange(dst io.Writer, src io.ReaderAt, start, end int64, bufp *[]byte) (int64, error) {
	if end-start >= parallelMin && jobs(src) > 1 {
		return copyParallel(dst, src, start, end)
	}
	if *bufp == nil {
		*bufp = getBuf(chunkSize)
	}
	buf := *bufp
	var written int64
	for off := start; off < end; {
		next := min(end, off&^(chunkSize-1)+chunkSize)
		m, err := src.ReadAt(buf[:next-off], off)
		n, werr := dst.Write(buf[:m])
		written += int64(n)
		switch {
		case werr != nil:
			return written, werr
		case m < int(next-off):
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return written, err
		}
		off = next
	}
	return written, nil
}

// Cost is what a plan costs in a Crypt4GH file: the stored segments that
// hold what it reads.
type Cost struct {
	// Segments are the indices of the stored segments that must be read
	// and decrypted, increasing.
	Segments []int64
	// Stored is their length as stored, nonces and tags included.
	Stored int64
}

// Cost returns the segments of a Crypt4GH body of encrypted bytes (the
// file without its header), whose edit list is list (nil for none), that
// hold the plaintext the plan reads. The plan's offsets are of the
// plaintext the file stands for, after its edit list.
func (p *Plan) Cost(list edit.List, encrypted int64) (Cost, error) {
	plain, err := body.PlaintextSize(encrypted)
	if err != nil {
		return Cost{}, err
	}
	kept := edit.StandsFor(list, plain).Kept
	var c Cost
	if len(p.Read) == 0 {
		return c, nil
	}
	for _, iv := range edit.Compose(kept, p.Read) {
		if iv.End > plain {
			iv.End = plain
		}
		for s := body.SegmentOf(iv.Start); iv.Start < iv.End && s <= body.SegmentOf(iv.End-1); s++ {
			if n := len(c.Segments); n == 0 || c.Segments[n-1] < s {
				c.Segments = append(c.Segments, s)
				c.Stored += body.StoredLength(encrypted, s)
			}
		}
	}
	return c, nil
}
