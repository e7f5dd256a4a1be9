package reencrypt

import (
	"fmt"
	"io"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/internal/errkind"
	"github.com/c4gh-go/crypt4gh/keys"
)

// Piece is one part of the plaintext that [Assemble] writes: the bytes
// Data when Data is not nil (Start and End are then ignored), else the
// bytes [Start, End) of the plaintext that the source stands for (after
// its edit list). End may be edit.Unbounded, the end of that plaintext.
type Piece struct {
	Start, End int64
	Data       []byte
}

// AssembleOptions configures [Assemble].
type AssembleOptions struct {
	// Reader is the secret key that opens the source and writes the new
	// header: a *keys.SecretKey, or a key that an agent holds.
	Reader keys.Holder
	// Recipients of the new file. When empty, the new header is for the
	// reader's own public key.
	Recipients []keys.PublicKey
	// Rand is the source of the header's nonces; crypto/rand when nil.
	// The nonces of new segments always come from crypto/rand.
	Rand io.Reader
}

// Assemble writes to dst a Crypt4GH file whose plaintext is the
// concatenation of the pieces, in the order given: ranges of the plaintext
// that the file read from src stands for, and new bytes. Pieces may
// overlap and come in any order; a range may be given twice.
//
// What is copied is not decrypted into the new body: every segment of src
// that a range touches is copied whole, as it is stored, and the new
// file's edit list cuts what the pieces do not want of it. A range that
// continues in the segment where the piece before it ended (no byte of
// that segment taken twice) shares that segment: a segment is never
// copied twice in a row to no purpose. New bytes are sealed into new
// segments, the new bytes of consecutive pieces together, padded with
// zeros to whole segments (every segment but the last of a body holds
// [body.SegmentSize] bytes), and the edit list cuts the padding. The last
// segment of src, when it is short, can only end the new body: where bytes
// of it are wanted before other pieces, it is opened and those bytes are
// sealed as new bytes. So the new body holds the segments copied, the new
// bytes and at most one segment of padding per run of consecutive new
// pieces; the header holds one edit list per recipient (none when every
// byte of the new body is wanted), the shortest that selects the pieces.
//
// The new segments are sealed under the first data key of src that the
// reader opens, with fresh random nonces: the recipients receive that key
// anyway, for the copied segments, so a second key would protect nothing
// from them, while a file with one data key is what every implementation
// reads (a second data key, which the specification allows, is one more
// thing for a reader to get right). The new header holds, for each
// recipient, every data key that the reader found, as [Splice] gives them.
// Note that whoever else holds that key (a reader of src) can read the
// new bytes too, and that the recipients can read every segment of src
// written under the keys, should they also get src.
//
// Every segment copied is authenticated under the reader's data keys
// before it is written, so that the recipients get a file that they can
// read to the end: a segment that no key opens fails with [body.ErrAuth]
// in a [*body.SegmentError] naming its index in src. Before writing
// anything, Assemble checks the pieces (errors wrapping
// [edit.ErrInvalidRange] for a negative or reversed range and for one that
// ends past the end of the plaintext, [edit.ErrBeyondEnd] for one that
// starts past it), the header ([header.ErrNoDecryptablePacket] when the
// reader opens no packet) and the body length. After that, a failure
// leaves dst holding part of a file, which the caller must discard.
//
// Memory is a few segments and the plan: a few words per piece. No pieces
// make a valid file whose plaintext is empty.
func Assemble(dst io.Writer, src Source, pieces []Piece, opts AssembleOptions) error {
	a, err := prepareAssembly(src, pieces, opts)
	if err != nil {
		return err
	}
	defer a.zero()
	if _, err := a.header.WriteTo(dst); err != nil {
		return fmt.Errorf("failed to write header: %w", err)
	}
	a.dst = dst
	for _, op := range a.plan.ops {
		if err := a.run(op); err != nil {
			return err
		}
	}
	return nil
}

// AssembledSize returns the length of the body that [Assemble] writes
// for pieces from a source whose body holds plainSize bytes of plaintext
// under the edit list list (nil for none): the segments it copies and the
// new segments. It fails where Assemble would fail for the pieces.
func AssembledSize(pieces []Piece, list edit.List, plainSize int64) (int64, error) {
	if err := checkPieces(pieces); err != nil {
		return 0, err
	}
	a, err := planAssembly(pieces, edit.StandsFor(list, plainSize), plainSize)
	if err != nil {
		return 0, err
	}
	return body.EncryptedSize(a.size), nil
}

// prepareAssembly does what Assemble does before it writes: it checks the
// pieces, reads the source's header, plans the new body, seals the new
// header and opens the short last segment when the plan needs it. The
// caller must call zero when done.
func prepareAssembly(src Source, pieces []Piece, opts AssembleOptions) (*assembler, error) {
	if keys.IsNil(opts.Reader) {
		return nil, errkind.New(errkind.Usage, "no reader key")
	}
	if err := checkPieces(pieces); err != nil {
		return nil, err
	}
	h, bodyStart, bodySize, err := readSource(src)
	if err != nil {
		return nil, err
	}
	plainSize, err := body.PlaintextSize(bodySize)
	if err != nil {
		return nil, fmt.Errorf("failed to read body: %w", err)
	}
	c, err := h.Decrypt(opts.Reader, nil)
	if err != nil {
		return nil, err
	}
	a := &assembler{src: src, source: h, contents: c, bodyStart: bodyStart, bodySize: bodySize, pos: -1, key: &c.DataKeys[0]}
	ok := false
	defer func() {
		if !ok {
			a.zero()
		}
	}()
	stands := edit.StandsFor(c.EditList, plainSize)
	if a.plan, err = planAssembly(pieces, stands, plainSize); err != nil {
		return nil, err
	}
	if a.header, err = sealFor(c, a.plan.list, opts.Reader, opts.Recipients, opts.Rand); err != nil {
		return nil, err
	}
	if a.open, err = body.NewOpener(c.DataKeys); err != nil {
		return nil, err
	}
	if a.plan.needsLast {
		// The short last segment, opened once before anything is
		// written: its bytes go into new segments.
		last := body.SegmentOf(plainSize - 1)
		pt, err := a.openSegment(last)
		if err != nil {
			return nil, err
		}
		a.lastPlain = append([]byte(nil), pt...)
	}
	ok = true
	return a, nil
}

// checkPieces fails on a piece that no source can satisfy.
func checkPieces(pieces []Piece) error {
	for i, pc := range pieces {
		if pc.Data == nil && (pc.Start < 0 || pc.End < pc.Start) {
			return fmt.Errorf("%w: piece %d is %v", edit.ErrInvalidRange, i, edit.Interval{Start: pc.Start, End: pc.End})
		}
	}
	return nil
}

// An assembly is what Assemble writes after the header: ops in order, and
// the edit list of the new body (nil when all of it is wanted).
type assembly struct {
	ops  []assemblyOp
	list edit.List
	// needsLast reports that bytes of the source's short last segment
	// are sealed into new segments.
	needsLast bool
	// size is the length of the new body's plaintext, padding included.
	size int64
}

// An assemblyOp is a run of consecutive source segments to copy (first to
// last), or new segments that hold parts (first < 0), padded to whole
// segments unless the op ends the body.
type assemblyOp struct {
	first, last int64
	parts       []newPart
	pad         bool
}

// A newPart is bytes to seal: data, or when data is nil the bytes [lo, hi)
// of the source's short last segment.
type newPart struct {
	data   []byte
	lo, hi int64
}

func (p newPart) len() int64 {
	if p.data != nil {
		return int64(len(p.data))
	}
	return p.hi - p.lo
}

// A span is a piece cut to what one op can hold: bytes [start, end) of the
// source body's plaintext, or (start < 0) the new part n.
type span struct {
	start, end int64
	n          newPart
}

// planAssembly plans the new body for pieces of what the source stands
// for, whose body holds plainSize bytes of plaintext.
func planAssembly(pieces []Piece, stands edit.Plaintext, plainSize int64) (*assembly, error) {
	// The source's last segment, when short, can only be copied at the
	// end of the new body.
	shortFrom := int64(edit.Unbounded)
	if plainSize%body.SegmentSize != 0 {
		shortFrom = body.Floor(plainSize)
	}
	var spans []span
	for i, pc := range pieces {
		if pc.Data != nil {
			if len(pc.Data) > 0 {
				spans = append(spans, span{start: -1, n: newPart{data: pc.Data}})
			}
			continue
		}
		end := pc.End
		if end == edit.Unbounded {
			end = max(stands.Size, pc.Start)
		}
		iv := edit.Interval{Start: pc.Start, End: pc.End}
		switch {
		case pc.Start > stands.Size:
			return nil, fmt.Errorf("%w: piece %d is %v, but the data is %d bytes", edit.ErrBeyondEnd, i, iv, stands.Size)
		case end > stands.Size:
			return nil, fmt.Errorf("%w: piece %d is %v, past the end of the data (%d bytes)", edit.ErrInvalidRange, i, iv, stands.Size)
		}
		for _, iv := range edit.Map(stands.Kept, pc.Start, end) {
			if iv.Start < shortFrom && iv.End > shortFrom {
				spans = append(spans, span{start: iv.Start, end: shortFrom}, span{start: shortFrom, end: iv.End})
			} else {
				spans = append(spans, span{start: iv.Start, end: iv.End})
			}
		}
	}
	// The spans in the short last segment that end the body, in order
	// and without overlap, are copied with it; the others before them
	// are sealed as new bytes.
	copyFrom := len(spans)
	for copyFrom > 0 {
		s := spans[copyFrom-1]
		if s.start < shortFrom || (copyFrom < len(spans) && s.end > spans[copyFrom].start) {
			break
		}
		copyFrom--
	}
	a := &assembly{}
	for i := range spans[:copyFrom] {
		if s := &spans[i]; s.start >= shortFrom {
			*s = span{start: -1, n: newPart{lo: s.start - shortFrom, hi: s.end - shortFrom}}
			a.needsLast = true
		}
	}

	var (
		kept    []edit.Interval
		pending []newPart // new bytes not yet in an op
		pendLen int64
		tail    = int64(-1) // where the last span copied ended, in the source
		opStart int64       // where the last op starts in the new body
	)
	flush := func(pad bool) {
		if pendLen == 0 {
			return
		}
		kept = append(kept, edit.Interval{Start: a.size, End: a.size + pendLen})
		n := pendLen
		if pad {
			n = body.SegmentCount(pendLen) * body.SegmentSize
		}
		a.ops = append(a.ops, assemblyOp{first: -1, parts: pending, pad: pad && n > pendLen})
		a.size += n
		pending, pendLen, tail = nil, 0, -1
	}
	for _, s := range spans {
		if s.start < 0 {
			pending = append(pending, s.n)
			pendLen += s.n.len()
			continue
		}
		flush(true)
		first, last := body.SegmentOf(s.start), body.SegmentOf(s.end-1)
		k := len(a.ops) - 1
		// The span goes on in the segment where the last one ended, after
		// it, or in the next one: the op grows.
		if tail >= 0 && s.start >= tail && (first == a.ops[k].last || first == a.ops[k].last+1) {
			a.ops[k].last = last
		} else {
			a.ops = append(a.ops, assemblyOp{first: first, last: last})
			opStart = a.size
			k++
		}
		base := opStart - body.PlaintextOffset(a.ops[k].first)
		kept = append(kept, edit.Interval{Start: base + s.start, End: base + s.end})
		a.size = base + min(body.PlaintextOffset(last+1), plainSize)
		tail = s.end
	}
	flush(false)

	if a.size == 0 {
		return a, nil
	}
	// FromIntervals merges adjacent keeps: the shortest list.
	if l := edit.FromIntervals(kept); len(l) != 2 || l[0] != 0 || l[1] != uint64(a.size) {
		if err := l.Check(); err != nil {
			return nil, err
		}
		a.list = l
	}
	return a, nil
}

// assembler writes the ops of an assembly.
type assembler struct {
	dst                 io.Writer
	src                 io.ReadSeeker
	source              *header.Header   // the source's header
	contents            *header.Contents // what the reader found in it
	header              *header.Header   // the new header
	plan                *assembly
	bodyStart, bodySize int64
	pos                 int64 // the segment src is positioned at, or -1
	key                 *[32]byte
	open                *body.Opener
	buf                 []byte // one stored segment
	lastPlain           []byte // the plaintext of the short last segment
	zeros               []byte
}

func (a *assembler) run(op assemblyOp) error {
	if op.first >= 0 {
		for k := op.first; k <= op.last; k++ {
			if _, err := a.openSegment(k); err != nil {
				return err
			}
			if _, err := a.dst.Write(a.buf); err != nil {
				return fmt.Errorf("failed to write segment: %w", err)
			}
		}
		return nil
	}
	w, err := body.NewWriter(a.dst, a.key)
	if err != nil {
		return err
	}
	var n int64
	for _, p := range op.parts {
		b := p.data
		if b == nil {
			b = a.lastPlain[p.lo:p.hi]
		}
		if _, err := w.Write(b); err != nil {
			return fmt.Errorf("failed to write segment: %w", err)
		}
		n += int64(len(b))
	}
	if op.pad {
		if a.zeros == nil {
			a.zeros = make([]byte, body.SegmentSize)
		}
		if _, err := w.Write(a.zeros[:body.SegmentCount(n)*body.SegmentSize-n]); err != nil {
			return fmt.Errorf("failed to write segment: %w", err)
		}
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("failed to write segment: %w", err)
	}
	return nil
}

// zero erases the keys and the plaintext that a holds.
func (a *assembler) zero() {
	a.contents.Zero()
	clear(a.lastPlain)
}

// openSegment reads segment k of the source into a.buf and opens it.
func (a *assembler) openSegment(k int64) ([]byte, error) {
	if a.pos != k {
		if _, err := a.src.Seek(a.bodyStart+body.EncryptedOffset(k), io.SeekStart); err != nil {
			return nil, fmt.Errorf("failed to seek input: %w", err)
		}
	}
	if a.buf == nil {
		a.buf = make([]byte, body.EncryptedSegmentSize)
	}
	a.buf = a.buf[:body.StoredLength(a.bodySize, k)]
	if _, err := io.ReadFull(a.src, a.buf); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			err = fmt.Errorf("%w: the input shrank while it was copied", io.ErrUnexpectedEOF)
		}
		return nil, fmt.Errorf("failed to read segment %d: %w", k, err)
	}
	a.pos = k + 1
	return a.open.Open(a.buf, k)
}
