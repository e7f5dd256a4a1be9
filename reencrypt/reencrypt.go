// Package reencrypt gives a Crypt4GH file to new readers, or cuts parts out
// of it, by writing a new header and copying the encrypted segments byte
// for byte: what is copied is never decrypted into a new body nor
// encrypted again.
//
// # Re-encrypting a header
//
// [Header] re-encrypts, for each new recipient, every header packet that a
// secret key opens: the data keys and the edit list. The body stays valid
// because the data keys do not change.
//
// # Rearranging and splicing
//
// [Splice] keeps only the segments that a list of ranges touches and adds
// an edit list that selects exactly those ranges. It composes with an edit
// list the file already has: ranges are taken over the plaintext that the
// file stands for.
//
// # Assembling
//
// [Assemble] writes a file whose plaintext is a sequence of pieces, each a
// range of what a file stands for or new bytes: the segments that the
// ranges touch are copied unchanged, the new bytes are sealed into new
// segments, and an edit list cuts what is not wanted.
package reencrypt

import (
	"errors"
	"fmt"
	"io"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/internal/errkind"
	"github.com/c4gh-go/crypt4gh/keys"
)

// Header returns a header in which every packet of h that reader opens is
// encrypted again for each of the recipients (a recipient listed twice gets
// its packets once), written with reader as the writer key, so that the
// new packets name reader's public key as their sender. Packets that reader
// opens are replaced: reader keeps access only when its own public key is
// among the recipients. Packets that reader cannot open (other readers',
// unknown methods) are kept unchanged, after the new ones, unless trim is
// set; but packets that reader itself wrote for one of the recipients (an
// earlier re-encryption for them) are dropped, so that no recipient is
// left with two sets of packets (two edit lists make a file unreadable).
// Nonces are read from rand (crypto/rand when nil).
//
// Header fails with [header.ErrNoDecryptablePacket] when reader opens no
// packet, [header.ErrNoDataKey] when the packets it opens hold no data key,
// and [header.ErrTooManyPackets] when the new header would hold more than
// [header.MaxPackets] packets.
func Header(h *header.Header, reader keys.Holder, recipients []keys.PublicKey, trim bool, rand io.Reader) (*header.Header, error) {
	return Rekey(h, reader, RekeyOptions{Recipients: recipients, Trim: trim, Rand: rand})
}

// RekeyOptions configures [Rekey].
type RekeyOptions struct {
	// Recipients get packets that hold what the reader opens.
	Recipients []keys.PublicKey
	// Trim drops the packets that the reader cannot open (other
	// readers'): only the recipients can read the result.
	Trim bool
	// Add keeps every packet of the header, the reader's own included,
	// and adds packets only for the recipients that hold none written
	// by the reader: "give one more person access". Trim is ignored.
	Add bool
	// Rand is the source of the nonces; crypto/rand when nil.
	Rand io.Reader
}

// Rekey returns a new header for h: as [Header] describes without
// opts.Add, or with it every packet of h followed by packets for the
// recipients that do not hold packets written by reader already. It fails
// as Header does, and with [ErrNothingToAdd] when Add finds that every
// recipient holds such packets.
func Rekey(h *header.Header, reader keys.Holder, opts RekeyOptions) (*header.Header, error) {
	if len(opts.Recipients) == 0 {
		return nil, errkind.New(errkind.Usage, "no recipient public key")
	}
	c, err := h.Decrypt(reader, nil)
	if err != nil {
		return nil, err
	}
	defer c.Zero()
	unique := uniqueKeys(opts.Recipients)
	if n := len(unique) * len(c.Payloads); n > header.MaxPackets {
		// Before any work per recipient: the new packets alone are
		// too many.
		return nil, fmt.Errorf("%w: the new header would hold %d packets (limit %d)",
			header.ErrTooManyPackets, n, header.MaxPackets)
	}
	// Packets that reader wrote for each recipient, found by opening
	// them as their writer.
	mine := make(map[int]bool)
	var missing []keys.PublicKey
	self := reader.Public()
	for _, r := range unique {
		found := opts.Add && r == self // it opens the header already
		for i := range h.Packets {
			if pt, err := h.Packets[i].OpenAsWriter(reader, r); err == nil {
				clear(pt)
				mine[i], found = true, true
			}
		}
		if !found {
			missing = append(missing, r)
		}
	}
	recipients := opts.Recipients
	if opts.Add {
		if len(missing) == 0 {
			return nil, ErrNothingToAdd
		}
		recipients = missing
	}
	out, err := header.Seal(reader, recipients, c.Payloads, opts.Rand)
	if err != nil {
		return nil, err
	}
	keep := func(i int) bool { return true }
	if !opts.Add {
		if opts.Trim {
			return out, nil
		}
		opened := make(map[int]bool, len(c.Opened))
		for _, i := range c.Opened {
			opened[i] = true
		}
		keep = func(i int) bool { return !opened[i] && !mine[i] }
	}
	var kept []header.Packet
	for i, p := range h.Packets {
		if keep(i) {
			kept = append(kept, p)
		}
	}
	if n := len(out.Packets) + len(kept); n > header.MaxPackets {
		return nil, fmt.Errorf("%w: the new header would hold %d packets (limit %d)",
			header.ErrTooManyPackets, n, header.MaxPackets)
	}
	if opts.Add {
		out.Packets = append(kept, out.Packets...)
	} else {
		out.Packets = append(out.Packets, kept...)
	}
	return out, nil
}

// OthersMayHoldEditList reports whether re-keying h for new recipients
// without trimming could leave one of them two edit lists: reader opens an
// edit list, and h keeps packets that reader cannot open and did not write,
// which may hold an edit list for one of the recipients (Rekey finds the
// packets that reader wrote, but not those of another key). A reader
// refuses a file with two edit lists, as the specification says.
func OthersMayHoldEditList(h *header.Header, reader keys.Holder) (bool, error) {
	c, err := h.Decrypt(reader, nil)
	if err != nil {
		return false, err
	}
	defer c.Zero()
	if !c.HasEditList {
		return false, nil
	}
	opened := make(map[int]bool, len(c.Opened))
	for _, i := range c.Opened {
		opened[i] = true
	}
	self := reader.Public()
	for i, p := range h.Packets {
		if !opened[i] && p.WriterPublicKey != self {
			return true, nil
		}
	}
	return false, nil
}

// ErrNothingToAdd is returned by [Rekey] with Add when every recipient
// holds packets that the reader wrote already.
var ErrNothingToAdd = errkind.New(errkind.Usage, "every recipient can read the file already")

// uniqueKeys returns ks without repeats, in order.
func uniqueKeys(ks []keys.PublicKey) []keys.PublicKey {
	var out []keys.PublicKey
	seen := map[keys.PublicKey]bool{}
	for _, k := range ks {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// Source is a Crypt4GH file that [Splice] reads: positioned at its start
// for reading, and able to seek to the segments it copies. Splice copies
// the segments with io.CopyN from the Source to the destination: when both
// are an *os.File, the kernel copies them (copy_file_range on Linux)
// without the bytes passing through the process.
type Source interface {
	io.ReadSeeker
}

// SpliceOptions configures [Splice].
type SpliceOptions struct {
	// Reader is the secret key that opens the file and writes the new
	// header: a *keys.SecretKey, or a key that an agent holds.
	Reader keys.Holder
	// Recipients of the new file. When empty, the new header is for the
	// reader's own public key.
	Recipients []keys.PublicKey
	// Ranges are the bytes [Start, End) to keep, of the plaintext that the
	// file stands for (after its edit list); End may be edit.Unbounded.
	// They are sorted, and overlapping or adjacent ranges are merged: the
	// new file stands for the selected bytes in increasing order, each
	// byte once. An End beyond the data is clipped to it.
	Ranges []edit.Range
}

// Splice writes to dst a Crypt4GH file that stands for the given ranges of
// the file read from src: a new header followed by the segments of src that
// the ranges touch, copied unchanged and in order. The body is neither
// decrypted nor encrypted again.
//
// The new header holds, for each recipient, every data key that the reader
// found (the segments may be under any of them) and, unless the kept
// segments are wanted whole, an edit list that selects the ranges out of
// them. Packets for other readers are not carried over, and the packets
// name the reader's public key as their sender. Note that the data keys
// decrypt every segment of the input written under them: a recipient who
// also gets the input file can read all of it.
//
// Splice checks everything it can before it writes anything: the ranges
// (errors wrapping [edit.ErrInvalidRange], or [edit.ErrBeyondEnd] for a
// range that starts at or after the end of the data, once the body's
// last segment authenticates: a body cut inside it fails as
// [CheckLastSegment] says), the header
// ([header.ErrNoDecryptablePacket] when the reader opens no packet), the
// body length and, when it is copied, the body's last segment (as
// [CheckLastSegment]). After that, only I/O errors remain.
//
// To splice a file that is not an io.ReadSeeker (an object in a store,
// whose segments a server can copy), see [PlanSplice].
func Splice(dst io.Writer, src Source, opts SpliceOptions) error {
	if err := checkSpliceOptions(opts); err != nil {
		return err
	}
	h, bodyStart, bodySize, err := readSource(src)
	if err != nil {
		return err
	}
	nh, runs, err := PlanSplice(h, bodySize, opts)
	if _, stream := src.(*streamSource); !stream && errors.Is(err, edit.ErrBeyondEnd) && bodySize > 0 {
		// Past the end of a body that was cut short: say that, not that
		// the range is wrong. (A stream dropped its segments already.)
		if cerr := CheckLastSegment(seekReaderAt{src}, bodyStart, bodySize, h, opts.Reader); cerr != nil {
			return cerr
		}
	}
	if err != nil {
		return err
	}
	if n := len(runs); n > 0 && runs[n-1].Offset+runs[n-1].Length == bodySize {
		// The input's last segment is copied: a body cut inside it at a
		// length that looks whole would be copied as it is, the output
		// damaged. It is authenticated first, as reencrypt does.
		if err := CheckLastSegment(seekReaderAt{src}, bodyStart, bodySize, h, opts.Reader); err != nil {
			return err
		}
	}
	if _, err := nh.WriteTo(dst); err != nil {
		return fmt.Errorf("failed to write header: %w", err)
	}
	return copyRuns(dst, src, bodyStart, runs)
}

// seekReaderAt reads a Source at offsets, moving its position.
type seekReaderAt struct{ src io.ReadSeeker }

func (s seekReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if ra, ok := s.src.(io.ReaderAt); ok {
		return ra.ReadAt(p, off)
	}
	if _, err := s.src.Seek(off, io.SeekStart); err != nil {
		return 0, err
	}
	return io.ReadFull(s.src, p)
}

// A Run is a piece of the body of a file that a spliced file keeps:
// Length bytes at Offset, counted from the start of the body. A run holds
// whole segments, consecutive ones (the last segment of the body may be
// shorter than the others).
type Run struct {
	Offset, Length int64
}

// PlanSplice returns what [Splice] writes for the file whose header is h
// and whose body is bodySize bytes long: the new header, to be written
// first, and the runs of the body to copy after it, in order. Nothing is
// read but the header; the caller copies the runs as it can, for example
// as server-side copies between objects of a store.
//
// It checks what Splice checks but the body's last segment, which it does
// not read: a caller whose last run ends at bodySize copies that segment,
// and checks it first with [CheckLastSegment] (or [File.CheckLastSegment]).
func PlanSplice(h *header.Header, bodySize int64, opts SpliceOptions) (*header.Header, []Run, error) {
	if err := checkSpliceOptions(opts); err != nil {
		return nil, nil, err
	}
	ranges, err := edit.Normalize(opts.Ranges)
	if err != nil {
		return nil, nil, err
	}
	c, err := h.Decrypt(opts.Reader, nil)
	if err != nil {
		return nil, nil, err
	}
	defer c.Zero()

	plainSize, err := body.PlaintextSize(bodySize)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to read body: %w", err)
	}

	// The plaintext the file stands for: its edit list, clipped to the
	// data that is present (a list may point past the end of the data).
	stands := edit.StandsFor(c.EditList, plainSize) // nil without a list
	kept, size := stands.Kept, stands.Size
	// Each range as given must start inside the data, also one that
	// merges with a range before it; the error names it as given.
	for _, r := range opts.Ranges {
		if r.Start >= size {
			return nil, nil, fmt.Errorf("%w: range %s, but the data is %d bytes", edit.ErrBeyondEnd, r, size)
		}
	}
	var selected []edit.Interval
	for _, r := range ranges {
		selected = append(selected, edit.Map(kept, r.Start, r.End)...)
	}
	plan, err := edit.PlanSegments(selected, plainSize, body.SegmentSize)
	if err != nil {
		return nil, nil, err
	}

	nh, err := sealFor(c, plan.List, opts.Reader, opts.Recipients, nil)
	if err != nil {
		return nil, nil, err
	}
	return nh, segmentRuns(plan.Segments, bodySize), nil
}

// checkSpliceOptions fails on what makes a splice impossible whatever the
// file.
func checkSpliceOptions(opts SpliceOptions) error {
	if len(opts.Ranges) == 0 {
		return fmt.Errorf("%w: no range to keep", edit.ErrEmpty)
	}
	if keys.IsNil(opts.Reader) {
		return errkind.New(errkind.Usage, "no reader key")
	}
	_, err := edit.Normalize(opts.Ranges)
	return err
}

// segmentRuns groups the stored segments with the given indices
// (increasing) into runs of consecutive ones, in a body of bodySize bytes.
func segmentRuns(segments []int64, bodySize int64) []Run {
	var runs []Run
	for i := 0; i < len(segments); {
		j := i + 1
		for j < len(segments) && segments[j] == segments[j-1]+1 {
			j++
		}
		off := body.EncryptedOffset(segments[i])
		end := min(body.EncryptedOffset(segments[j-1]+1), bodySize)
		runs = append(runs, Run{Offset: off, Length: end - off})
		i = j
	}
	return runs
}

// copyRuns copies the runs of the body that starts at bodyStart of src.
// Each run is one io.CopyN from src, so that *os.File to *os.File is one
// copy_file_range loop in the kernel.
func copyRuns(dst io.Writer, src io.ReadSeeker, bodyStart int64, runs []Run) error {
	for _, r := range runs {
		if _, err := src.Seek(bodyStart+r.Offset, io.SeekStart); err != nil {
			return fmt.Errorf("failed to seek input: %w", err)
		}
		if _, err := io.CopyN(dst, src, r.Length); err != nil {
			if err == io.EOF {
				err = fmt.Errorf("%w: the input shrank while it was copied", io.ErrUnexpectedEOF)
			}
			return fmt.Errorf("failed to copy segments: %w", err)
		}
	}
	return nil
}

// sealFor is the header of a new file that holds the data keys of c and,
// when list is not nil, the edit list list, written by reader for the
// recipients (the reader's own public key when there are none).
func sealFor(c *header.Contents, list edit.List, reader keys.Holder, recipients []keys.PublicKey, rand io.Reader) (*header.Header, error) {
	if len(recipients) == 0 {
		recipients = []keys.PublicKey{reader.Public()}
	}
	payloads := make([][]byte, 0, len(c.DataKeys)+1)
	defer func() {
		for _, p := range payloads {
			clear(p)
		}
	}()
	for i := range c.DataKeys {
		payloads = append(payloads, header.DataKeyPayload(&c.DataKeys[i]))
	}
	if list != nil {
		el, err := header.EditListPayload(list)
		if err != nil {
			return nil, err
		}
		payloads = append(payloads, el)
	}
	return header.Seal(reader, recipients, payloads, rand)
}

// readSource parses the header of src, a Source at its start, and returns
// it with where the body starts and how long it is.
func readSource(src Source) (h *header.Header, bodyStart, bodySize int64, err error) {
	if h, err = header.Parse(src); err != nil {
		return nil, 0, 0, err
	}
	if bodyStart, err = src.Seek(0, io.SeekCurrent); err != nil {
		return nil, 0, 0, fmt.Errorf("failed to seek input: %w", err)
	}
	end, err := src.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("failed to seek input: %w", err)
	}
	return h, bodyStart, end - bodyStart, nil
}
