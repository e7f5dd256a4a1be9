package c4gh

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/internal/errkind"
	"github.com/c4gh-go/crypt4gh/keys"
)

// ErrMissingData means that the edit list of a file keeps bytes past the
// end of its body (or keeps the rest of it after a skip that ends past the
// body). The specification's ApplyEditList keeps what is there, and other
// implementations write such files, so a reader yields the bytes that are
// present and reports the rest with Missing; with [DecryptOptions.Strict]
// a read that needs the missing bytes fails with this error instead, since
// it may also mean that whole segments were cut off the end (an incomplete
// transfer). Lengths after the last byte the list keeps do not count: a
// list that keeps nothing never misses data.
var ErrMissingData = errkind.New(errkind.Data, "body truncated")

// DecryptOptions configures [NewReader] and [NewReaderAt]. The zero value
// accepts packets from any writer.
type DecryptOptions struct {
	// Sender, when not nil, is the only writer whose header packets are
	// accepted: the file must have been written by its secret key.
	Sender *keys.PublicKey
	// Jobs is the number of goroutines that open segments when a
	// [Reader] is copied with WriteTo (as io.Copy does); 0 means one per
	// CPU.
	Jobs int
	// Serial makes WriteTo decrypt in the calling goroutine, one batch of
	// segments after the other ([body.DecryptSerial]; Jobs is then of no
	// use): for a caller that decrypts many files at once, each in a
	// goroutine of its own.
	Serial bool
	// Strict makes an edit list that keeps bytes past the end of the
	// body an error, [ErrMissingData], where a read reaches them.
	// Without it the file stands for what the body holds of the list
	// (as the specification reads it), and Missing reports the rest.
	Strict bool
	// Whole makes a [Reader] authenticate every segment of the body to
	// its end, also those after what the edit list keeps (or a Select
	// selects), which are otherwise not read: a file passed on as it is
	// (verify, htsget --keep-encrypted) must hold nothing unauthenticated.
	Whole bool
}

func (o *DecryptOptions) strict() bool { return o != nil && o.Strict }

func (o *DecryptOptions) sender() *keys.PublicKey {
	if o == nil {
		return nil
	}
	return o.Sender
}

// opened is a header opened with a secret key.
type opened struct {
	size     int64 // bytes of the header: where the body starts
	contents *header.Contents
	strict   bool // DecryptOptions.Strict
	missing  bool // the edit list was found to keep bytes past the body
}

func open(src io.Reader, key keys.Opener, opts *DecryptOptions) (opened, error) {
	if keys.IsNil(key) {
		return opened{}, errkind.New(errkind.Usage, "no secret key")
	}
	h, err := header.Parse(src)
	if err != nil {
		return opened{}, err
	}
	c, err := h.Decrypt(key, opts.sender())
	if err != nil {
		return opened{}, err
	}
	return opened{size: h.Size(), contents: c, strict: opts.strict()}, nil
}

// HeaderSize returns the length of the header: the body starts at this
// offset of the file.
func (o *opened) HeaderSize() int64 { return o.size }

// EditList returns the lengths of the file's edit list (skip, keep, skip,
// …) and whether it has one. The caller must not modify the list.
func (o *opened) EditList() ([]uint64, bool) {
	if o.contents == nil {
		return nil, false // a Resumable whose keys From handed on
	}
	return o.contents.EditList, o.contents.HasEditList
}

// kept returns what the file stands for, as intervals of the body
// plaintext: its edit list, or nil for everything.
func (o *opened) kept() []edit.Interval {
	if !o.contents.HasEditList {
		return nil
	}
	return edit.List(o.contents.EditList).Intervals()
}

// standsFor returns what the file stands for over a body of plain bytes
// of plaintext.
func (o *opened) standsFor(plain int64) edit.Plaintext {
	return edit.StandsFor(o.contents.EditList, plain) // nil without a list
}

// checkExtent notes when what the edit list keeps reaches past a body of
// plain bytes of plaintext (the lengths after the last kept byte do not
// count, so that Reader, which stops there, and ReaderAt agree), and
// returns ErrMissingData for it in strict mode.
func (o *opened) checkExtent(plain int64) error {
	if !o.standsFor(plain).Missing {
		return nil
	}
	o.missing = true
	if o.strict {
		return fmt.Errorf("%w: the edit list reaches past its %d bytes of plaintext", ErrMissingData, plain)
	}
	return nil
}

// Missing reports whether the edit list keeps bytes past the end of the
// body: the file yields less than its edit list describes, because the
// writer described more than it wrote or because whole segments were lost
// off the end. A [Reader] knows it once a read reached the end of the
// body; a [ReaderAt] from the start. See [ErrMissingData].
func (o *opened) Missing() bool { return o.missing }

func (o *opened) close() {
	if o.contents != nil {
		o.contents.Zero()
	}
}

// Reader decrypts a Crypt4GH stream. Create it with [NewReader].
type Reader struct {
	opened
	src    io.Reader
	jobs   int
	serial bool            // DecryptOptions.Serial
	whole  bool            // DecryptOptions.Whole
	sel    []edit.Interval // what to yield, of the body plaintext; nil: everything
	rng    *edit.Range     // the range given to Select, if any
	// first is the index of the body's segment that src starts with:
	// not 0 for a Reader made by Resumable.From.
	first int64

	stream io.Reader    // built by the first Read
	count  *countReader // the body plaintext under stream
	out    int64        // bytes yielded
	err    error        // sticky
}

var (
	_ io.Reader   = (*Reader)(nil)
	_ io.WriterTo = (*Reader)(nil)
)

// NewReader reads the header of a Crypt4GH file from src and opens it with
// key (a [*keys.SecretKey], or a key agent's client), then returns a Reader of the plaintext that the file stands for
// (after its edit list). opts may be nil.
//
// NewReader fails with an error wrapping [header.ErrNoDecryptablePacket]
// when key opens no packet (the file is for other readers, or opts.Sender
// did not write it), and with the errors of [header.Parse] for input that
// is not a valid header. Every segment is authenticated before any of its
// plaintext is returned. The caller must call Close to erase the data keys.
func NewReader(src io.Reader, key keys.Opener, opts *DecryptOptions) (*Reader, error) {
	o, err := open(src, key, opts)
	if err != nil {
		return nil, err
	}
	r := &Reader{opened: o, src: src, sel: o.kept()}
	if opts != nil {
		r.jobs, r.serial, r.whole = opts.Jobs, opts.Serial, opts.Whole
	}
	return r, nil
}

// Select limits what r yields to bytes [rng.Start, rng.End) of the
// plaintext that the file stands for; rng.End may be [edit.Unbounded]. An
// End past the data is clipped; a Start at or past the end of the data
// makes the first read fail with [edit.ErrBeyondEnd]. Segments after the
// range are not read. Select must be called before the first Read or
// WriteTo, and once: a range with a negative Start or an End not after
// its Start fails with [edit.ErrInvalidRange], as [edit.Normalize] has it.
func (r *Reader) Select(rng edit.Range) error {
	if r.stream != nil || r.out > 0 || r.err != nil {
		return errkind.New(errkind.Usage, "Select after reading")
	}
	if r.rng != nil {
		return errkind.New(errkind.Usage, "Select called twice")
	}
	if _, err := edit.Normalize([]edit.Range{rng}); err != nil {
		return err
	}
	r.sel = edit.Map(r.sel, rng.Start, rng.End)
	r.rng = &rng
	if len(r.sel) == 0 && rng.Start > 0 {
		// The edit list ends before the range starts, whatever the body.
		r.err = fmt.Errorf("%w (%d bytes)", edit.ErrBeyondEnd, r.standsFor(edit.Unbounded).Size)
	}
	return nil
}

// Read reads plaintext into p. It returns io.EOF at the end of the
// selection.
func (r *Reader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if r.stream == nil {
		br, err := body.NewReader(r.src, r.contents.DataKeys)
		if err != nil {
			r.err = err
			return 0, err
		}
		r.count = &countReader{r: br}
		r.stream = r.count
		if r.sel != nil {
			r.stream = edit.NewReader(r.count, r.sel)
		}
	}
	n, err := r.stream.Read(p)
	r.out += int64(n)
	if err == io.EOF && r.drains() && !r.count.eof {
		// The selection ended before the body: authenticate the rest.
		if _, derr := io.Copy(io.Discard, r.count); derr != nil {
			err = derr
		}
	}
	if err == io.EOF && r.count.eof {
		// The body ended: was everything there?
		err = r.end(r.count.n)
	}
	if err != nil {
		err = renumber(err, r.first)
		r.err = err
	}
	return n, err
}

// end checks the stream at its end, when plain bytes of body plaintext
// were decrypted, and returns io.EOF when it is complete.
func (r *Reader) end(plain int64) error {
	if r.rng != nil && r.out == 0 && r.rng.Start > 0 {
		return fmt.Errorf("%w (%d bytes)", edit.ErrBeyondEnd, r.standsFor(plain).Size)
	}
	if err := r.checkExtent(plain); err != nil {
		return err
	}
	return io.EOF
}

// WriteTo writes the rest of the plaintext to w, opening segments with
// opts.Jobs goroutines when nothing was read yet, and returns the number
// of bytes written. It returns nil at the end of the selection. When a
// segment fails, what comes before it has been written and nothing from
// it on.
func (r *Reader) WriteTo(w io.Writer) (int64, error) {
	if r.err != nil {
		if r.err == io.EOF {
			return 0, nil
		}
		return 0, r.err
	}
	if r.stream != nil {
		// Reading has begun: go on one segment at a time.
		n, err := io.Copy(w, struct{ io.Reader }{r})
		return n, err
	}
	cw := &countWriter{w: w}
	var dst io.Writer = cw
	if r.sel != nil {
		dst = edit.NewWriter(cw, r.sel)
		if r.drains() {
			dst = &drainAfter{w: dst}
		}
	}
	var (
		plain int64
		err   error
	)
	if r.serial {
		plain, err = body.DecryptSerial(dst, r.src, r.contents.DataKeys)
	} else {
		plain, err = body.Decrypt(dst, r.src, r.contents.DataKeys, r.jobs)
	}
	r.out = cw.n
	switch {
	case errors.Is(err, edit.ErrDone):
		// Everything selected was written before the body ended.
		err = nil
	case err == nil:
		if err = r.end(plain); err == io.EOF {
			err = nil
		}
	}
	if err == nil {
		r.err = io.EOF
	} else {
		err = renumber(err, r.first)
		r.err = err
	}
	return cw.n, err
}

// drains reports whether the body is read to its end after the selection
// ended: with DecryptOptions.Whole, and for a whole file whose edit list
// reaches past any body (its lengths add up past the largest int64), so
// that its end is found and the list reported as missing data, as a
// ReaderAt reports it.
func (r *Reader) drains() bool {
	return r.whole || (r.rng == nil && r.contents.EditList != nil && edit.List(r.contents.EditList).Extent() == edit.Unbounded)
}

// Close erases the data keys. It does not close the source.
func (r *Reader) Close() error {
	r.close()
	if r.err == nil {
		r.err = errkind.New(errkind.Usage, "read after Close")
	}
	return nil
}

// drainAfter passes writes to w until w is done with them
// (edit.ErrDone), and then takes them without a word: the body goes on
// being decrypted, each segment authenticated, to its end.
type drainAfter struct {
	w    io.Writer
	done bool
}

func (d *drainAfter) Write(p []byte) (int, error) {
	if d.done {
		return len(p), nil
	}
	n, err := d.w.Write(p)
	if errors.Is(err, edit.ErrDone) {
		d.done = true
		return len(p), nil
	}
	return n, err
}

// countReader counts the bytes read through it and notes the end.
type countReader struct {
	r   io.Reader
	n   int64
	eof bool
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	c.eof = c.eof || err == io.EOF
	return n, err
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// ReaderAt gives random access to the plaintext of a Crypt4GH file stored
// in an [io.ReaderAt]. Create it with [NewReaderAt].
type ReaderAt struct {
	opened
	body *body.ReaderAt
	// kept are the intervals of the body plaintext that the file stands
	// for, clipped to the body, and starts[i] is where kept[i] begins in
	// the plaintext that ReadAt reads.
	kept     []edit.Interval
	starts   []int64
	size     int64
	complete error // ErrMissingData when the edit list reaches past the body
}

var _ io.ReaderAt = (*ReaderAt)(nil)

// headerBuffer is how much is read at once while the header is parsed: a
// header of up to about 70 recipients takes one read. It was 64 KiB: new
// memory that a new process pays for by the page (see region's
// parallelMin), for a header that is most often one packet of 108 bytes.
const headerBuffer = 8 << 10

// NewReaderAt opens the Crypt4GH file of size bytes stored in src with
// key, and returns a ReaderAt of the plaintext that the file stands for
// (after its edit list). It reads the header (in reads of up to 8 KiB)
// and nothing of the body but, when the body ends with an empty segment,
// that segment. opts may be nil; opts.Jobs is not used.
//
// ReadAt reads and decrypts only the segments that a read touches, may be
// called from several goroutines at once, and returns a
// [*body.SegmentError] for a segment that fails. The caller must not change
// the file while the ReaderAt is in use, and must call Close to erase the
// data keys.
func NewReaderAt(src io.ReaderAt, size int64, key keys.Opener, opts *DecryptOptions) (*ReaderAt, error) {
	if size < 0 {
		return nil, errkind.Errorf(errkind.Usage, "negative file size %d", size)
	}
	o, err := open(bufio.NewReaderSize(io.NewSectionReader(src, 0, size), headerBuffer), key, opts)
	if err != nil {
		return nil, err
	}
	bodySize := size - o.size
	br, err := body.NewReaderAt(io.NewSectionReader(src, o.size, bodySize), bodySize, o.contents.DataKeys)
	if err != nil {
		o.close()
		return nil, err
	}
	complete := o.checkExtent(br.Size()) // before o is copied: it notes Missing
	r := &ReaderAt{opened: o, body: br, complete: complete}
	p := o.standsFor(br.Size())
	r.kept, r.size = p.Kept, p.Size
	var pos int64
	for _, iv := range r.kept {
		r.starts = append(r.starts, pos)
		pos += iv.Len()
	}
	return r, nil
}

// Size returns the length of the plaintext that the file stands for, as
// far as the body holds it.
func (r *ReaderAt) Size() int64 { return r.size }

// ReadAt reads len(p) bytes of plaintext starting at offset off. When it
// returns fewer, the error says why: io.EOF at the end of the plaintext,
// or [ErrMissingData] when the edit list needs bytes past the end of the
// body.
func (r *ReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errkind.New(errkind.Usage, "negative offset")
	}
	if r.body == nil {
		return 0, errkind.New(errkind.Usage, "read after Close")
	}
	// The interval that holds off: the last one starting at or before it.
	i := sort.Search(len(r.starts), func(i int) bool { return r.starts[i] > off }) - 1
	total := 0
	for ; i < len(r.kept) && len(p) > 0 && i >= 0; i++ {
		skip := off - r.starts[i]
		n := min(int64(len(p)), r.kept[i].Len()-skip)
		if n <= 0 {
			continue
		}
		m, err := r.body.ReadAt(p[:n], r.kept[i].Start+skip)
		total += m
		if err != nil && !(err == io.EOF && int64(m) == n) {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF // the body is shorter than it was
			}
			return total, err
		}
		p, off = p[n:], off+n
	}
	if len(p) > 0 {
		if r.complete != nil {
			return total, r.complete
		}
		return total, io.EOF
	}
	return total, nil
}

// CopyRange writes bytes [start, end) of the plaintext to dst, one
// segment at a time, and returns how many it wrote; end may be
// [edit.Unbounded]. An end past the data is clipped; a start at or past
// the end of the data, but for 0, fails with [edit.ErrBeyondEnd], once the
// last byte of the data is read (a body cut inside its last segment
// fails with that segment's error instead). In
// strict mode a range that reaches past the data, where the edit list
// needs bytes that the body lacks, fails with [ErrMissingData] before
// anything is written. Without an edit list each read ends where a
// segment of the body ends, so that no segment is opened twice.
func (r *ReaderAt) CopyRange(dst io.Writer, start, end int64) (int64, error) {
	switch {
	case start < 0 || end < start:
		return 0, errkind.Errorf(errkind.Usage, "invalid range [%d, %d)", start, end)
	case r.complete != nil && end > r.size:
		return 0, r.complete // strict, and the range needs what is missing
	case start > 0 && start >= r.size:
		// Past the end of a body that was cut short, or damaged at its
		// end: say that, not that the range is wrong.
		if r.size > 0 {
			var last [1]byte
			if _, err := r.ReadAt(last[:], r.size-1); err != nil && err != io.EOF {
				return 0, err
			}
		}
		return 0, fmt.Errorf("%w (%d bytes)", edit.ErrBeyondEnd, r.size)
	}
	// One segment at a time: a larger buffer costs its page faults, and
	// ReadAt opens the segments of one call in turn anyway.
	buf := make([]byte, body.SegmentSize)
	_, edited := r.EditList()
	var written int64
	for off := start; off < end; {
		stop := min(end, off+int64(len(buf)))
		if !edited {
			stop = body.SegmentEnd(off, stop)
		}
		m, err := r.ReadAt(buf[:stop-off], off)
		if m > 0 {
			n, werr := dst.Write(buf[:m])
			written += int64(n)
			if werr != nil {
				return written, werr
			}
		}
		off += int64(m)
		switch {
		case err == io.EOF:
			return written, nil // an end past the data: clipped to it
		case err != nil:
			return written, err
		case m == 0:
			return written, nil
		}
	}
	return written, nil
}

// Close erases the data keys; later reads fail.
func (r *ReaderAt) Close() error {
	r.close()
	r.body = nil
	return nil
}
