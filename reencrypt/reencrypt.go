// Package reencrypt gives a Crypt4GH file to new readers, or cuts parts out
// of it, by writing a new header and copying the encrypted segments byte
// for byte: the body is never decrypted nor encrypted again.
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
package reencrypt

import (
	"errors"
	"fmt"
	"io"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/keys"
)

// Header returns a header in which every packet of h that reader opens is
// encrypted again for each of the recipients, written with reader as the
// writer key. Packets that reader cannot open are kept unchanged, after
// the new ones, unless trim is set. It fails with
// [header.ErrNoDecryptablePacket] when reader opens no packet.
func Header(h *header.Header, reader *keys.SecretKey, recipients []keys.PublicKey, trim bool, rand io.Reader) (*header.Header, error) {
	if len(recipients) == 0 {
		return nil, errors.New("no recipient public key")
	}
	c, err := h.Decrypt(reader, nil)
	if err != nil {
		return nil, err
	}
	defer c.Zero()
	out, err := seal(reader, recipients, c.Payloads, rand)
	if err != nil {
		return nil, err
	}
	if !trim {
		opened := make(map[int]bool, len(c.Opened))
		for _, i := range c.Opened {
			opened[i] = true
		}
		for i, p := range h.Packets {
			if !opened[i] {
				out.Packets = append(out.Packets, p)
			}
		}
	}
	return out, nil
}

// seal encrypts each payload for each recipient, recipient by recipient.
func seal(writer *keys.SecretKey, recipients []keys.PublicKey, payloads [][]byte, rand io.Reader) (*header.Header, error) {
	out := &header.Header{}
	seen := make(map[keys.PublicKey]bool, len(recipients))
	for _, r := range recipients {
		if seen[r] {
			continue
		}
		seen[r] = true
		for _, payload := range payloads {
			p, err := header.SealPacket(writer, r, payload, rand)
			if err != nil {
				return nil, err
			}
			out.Packets = append(out.Packets, p)
		}
	}
	return out, nil
}

// Source is a Crypt4GH file that [Splice] reads: positioned at its start
// for reading, and able to seek to the segments it copies. An *os.File is a
// Source; copying from one *os.File to another lets the kernel copy the
// segments (copy_file_range).
type Source interface {
	io.ReadSeeker
}

// SpliceOptions configures [Splice].
type SpliceOptions struct {
	// Reader is the secret key that opens the file.
	Reader *keys.SecretKey
	// Recipients of the new file. When empty, the new header is for the
	// reader's own public key.
	Recipients []keys.PublicKey
	// Ranges are the bytes [Start, End) to keep, of the plaintext that the
	// file stands for (after its edit list). They are sorted, and
	// overlapping or adjacent ranges are merged.
	Ranges []edit.Range
}

// Splice writes to dst a Crypt4GH file that stands for the given ranges of
// the file read from src: a new header (the data keys and a new edit list,
// for the recipients) followed by the segments of src that the ranges
// touch, copied unchanged and in order.
func Splice(dst io.Writer, src Source, opts SpliceOptions) error {
	if len(opts.Ranges) == 0 {
		return errors.New("no range to keep")
	}
	ranges, err := edit.Normalize(opts.Ranges)
	if err != nil {
		return err
	}
	h, err := header.Parse(src)
	if err != nil {
		return err
	}
	c, err := h.Decrypt(opts.Reader, nil)
	if err != nil {
		return err
	}
	defer c.Zero()

	bodyStart, err := src.Seek(0, io.SeekCurrent)
	if err != nil {
		return fmt.Errorf("failed to seek input: %w", err)
	}
	end, err := src.Seek(0, io.SeekEnd)
	if err != nil {
		return fmt.Errorf("failed to seek input: %w", err)
	}
	plainSize, err := body.PlaintextSize(end - bodyStart)
	if err != nil {
		return err
	}

	kept := []edit.Interval{{Start: 0, End: edit.Unbounded}}
	if c.HasEditList {
		kept = edit.List(c.EditList).Intervals()
	}
	size := selectionSize(kept, plainSize)
	var selected []edit.Interval
	for _, r := range ranges {
		if r.Start >= size {
			return fmt.Errorf("%w: range %d-%s but the data is %d bytes", edit.ErrBeyondEnd, r.Start, endString(r.End), size)
		}
		selected = append(selected, edit.Map(kept, r.Start, r.End)...)
	}
	plan, err := edit.PlanSegments(selected, plainSize, body.SegmentSize)
	if err != nil {
		return err
	}

	recipients := opts.Recipients
	if len(recipients) == 0 {
		recipients = []keys.PublicKey{opts.Reader.Public()}
	}
	payloads := make([][]byte, 0, len(c.DataKeys)+1)
	for i := range c.DataKeys {
		payloads = append(payloads, header.DataKeyPayload(&c.DataKeys[i]))
	}
	payloads = append(payloads, header.EditListPayload(plan.List))
	defer func() {
		for _, p := range payloads {
			clear(p)
		}
	}()
	nh, err := seal(opts.Reader, recipients, payloads, nil)
	if err != nil {
		return err
	}
	if _, err := nh.WriteTo(dst); err != nil {
		return fmt.Errorf("failed to write header: %w", err)
	}
	return copySegments(dst, src, bodyStart, end, plan.Segments)
}

// copySegments copies the stored segments with the given indices, a run
// of consecutive ones at a time.
func copySegments(dst io.Writer, src io.ReadSeeker, bodyStart, end int64, segments []int64) error {
	for i := 0; i < len(segments); {
		j := i + 1
		for j < len(segments) && segments[j] == segments[j-1]+1 {
			j++
		}
		off := bodyStart + segments[i]*body.EncryptedSegmentSize
		n := min(int64(j-i)*body.EncryptedSegmentSize, end-off)
		if _, err := src.Seek(off, io.SeekStart); err != nil {
			return fmt.Errorf("failed to seek input: %w", err)
		}
		if _, err := io.CopyN(dst, src, n); err != nil {
			return fmt.Errorf("failed to copy segments: %w", err)
		}
		i = j
	}
	return nil
}

func selectionSize(kept []edit.Interval, plain int64) int64 {
	var n int64
	for _, iv := range kept {
		if iv.Start >= plain {
			break
		}
		n += min(iv.End, plain) - iv.Start
	}
	return n
}

func endString(end int64) string {
	if end == edit.Unbounded {
		return ""
	}
	return fmt.Sprint(end)
}
