// Package c4gh encrypts and decrypts whole Crypt4GH files (GA4GH file
// encryption, version 1): a header followed by the segment stream. It ties
// together the packages that handle each part ([header], [body], [edit])
// the way the crypt4gh command uses them, and is the place to start.
//
// # Keys
//
// Readers and writers are X25519 key pairs, [keys.SecretKey] and
// [keys.PublicKey]. [keys.ParseSecretKey] and [keys.ParsePublicKey] read
// the key files of every Crypt4GH tool (crypt4gh, OpenSSH ed25519, PKCS#8
// and PKIX X25519); [keys.Generate] makes a new key.
//
// # Encrypting
//
// [Encrypt] writes a header with one packet per recipient and the
// encrypted body of the input, sealed in parallel by the segment engine of
// package body. The writer key may be the sender's own secret key, so that
// readers can check who wrote the file, or a key made for this file only.
//
// # Decrypting
//
// [Open] reads a header and opens the packets that a secret key can open;
// [File.Decrypt] then writes the plaintext that the file stands for (after
// its edit list), or a range of it. When the input is a file, a range is
// read through a [body.ReaderAt] so that only the segments it touches are
// read and decrypted. For random access of your own, build a
// [body.ReaderAt] over the bytes that follow the header
// (File.Header.Size() onwards), with File.Contents.DataKeys.
//
// To give a file to new readers or cut ranges out of it without decrypting
// the body, see package [reencrypt].
//
// # Errors
//
// Errors wrap sentinels of the package that found the problem; test them
// with [errors.Is]: [keys.ErrWrongPassphrase] for a key file,
// [header.ErrNotCrypt4GH] and [header.ErrTruncated] for a damaged header,
// [header.ErrNoDecryptablePacket] when the secret key is not a recipient,
// [body.ErrAuth] and [body.ErrTruncated] for a damaged body, and
// [edit.ErrBeyondEnd] for a range that starts after the data. A file that
// fails while decrypting may already have written part of its plaintext
// to dst: write to a temporary file and keep it only on success.
//
// [header]: https://pkg.go.dev/github.com/c4gh-go/crypt4gh/header
// [body]: https://pkg.go.dev/github.com/c4gh-go/crypt4gh/body
// [edit]: https://pkg.go.dev/github.com/c4gh-go/crypt4gh/edit
// [reencrypt]: https://pkg.go.dev/github.com/c4gh-go/crypt4gh/reencrypt
package c4gh

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/keys"
)

// EncryptOptions configures [Encrypt].
type EncryptOptions struct {
	// Writer is the writer's secret key. When nil, a new key pair is
	// generated for this file and discarded afterwards.
	Writer *keys.SecretKey
	// Recipients are the public keys that can decrypt the file. A key
	// given twice is written once. At least one is required.
	Recipients []keys.PublicKey
	// Range, when not nil, selects the bytes [Start, End) of the input;
	// only those are encrypted.
	Range *edit.Range
	// Header, when not nil, receives the header instead of dst, so that
	// dst holds only the segments.
	Header io.Writer
	// Jobs is the number of goroutines that seal segments; 0 means one
	// per CPU.
	Jobs int
}

// Encrypt writes to dst a Crypt4GH file holding the bytes read from src
// until EOF, and returns the number of plaintext bytes encrypted. The data
// key is random and erased when Encrypt returns. Encrypt does not close
// dst; when it fails, dst holds a partial file that the caller must
// discard.
func Encrypt(dst io.Writer, src io.Reader, opts EncryptOptions) (int64, error) {
	if len(opts.Recipients) == 0 {
		return 0, errors.New("no recipient public key")
	}
	writer := opts.Writer
	if writer == nil {
		sk, err := keys.Generate(nil)
		if err != nil {
			return 0, err
		}
		defer sk.Zero()
		writer = &sk
	}
	var dataKey [32]byte
	if _, err := io.ReadFull(rand.Reader, dataKey[:]); err != nil {
		return 0, fmt.Errorf("failed to generate data key: %w", err)
	}
	defer clear(dataKey[:])
	h, err := header.New(writer, opts.Recipients, &dataKey, nil, nil)
	if err != nil {
		return 0, err
	}
	// The range is checked before the header is written, so that a range
	// past the end of the input leaves dst untouched.
	if opts.Range != nil {
		src, err = selectRange(src, *opts.Range)
		if err != nil {
			return 0, err
		}
	}
	hw := dst
	if opts.Header != nil {
		hw = opts.Header
	}
	if _, err := h.WriteTo(hw); err != nil {
		return 0, fmt.Errorf("failed to write header: %w", err)
	}
	return body.Encrypt(dst, src, &dataKey, opts.Jobs)
}

// selectRange returns a reader of bytes [r.Start, r.End) of src, seeking
// when src is a regular file. A range that starts at or after the end of
// src (Start > 0) gives an error wrapping [edit.ErrBeyondEnd], whether src
// is a file or a stream, as [File.Decrypt] does.
func selectRange(src io.Reader, r edit.Range) (io.Reader, error) {
	if r.Start > 0 {
		if _, pos, size, ok := bodySection(src); ok {
			if r.Start >= size-pos {
				return nil, fmt.Errorf("%w (%d bytes)", edit.ErrBeyondEnd, size-pos)
			}
			// bodySection reports ok only for an *os.File.
			if _, err := src.(io.Seeker).Seek(r.Start, io.SeekCurrent); err != nil {
				return nil, fmt.Errorf("failed to seek input: %w", err)
			}
		} else {
			if n, err := io.CopyN(io.Discard, src, r.Start); err != nil {
				if err == io.EOF {
					return nil, fmt.Errorf("%w (%d bytes)", edit.ErrBeyondEnd, n)
				}
				return nil, fmt.Errorf("failed to read input: %w", err)
			}
			// One byte more must follow, or the range is empty.
			var b [1]byte
			if _, err := io.ReadFull(src, b[:]); err != nil {
				if err == io.EOF {
					return nil, fmt.Errorf("%w (%d bytes)", edit.ErrBeyondEnd, r.Start)
				}
				return nil, fmt.Errorf("failed to read input: %w", err)
			}
			src = io.MultiReader(bytes.NewReader(b[:]), src)
		}
	}
	if r.End == edit.Unbounded {
		return src, nil
	}
	return io.LimitReader(src, r.End-r.Start), nil
}

// File is a Crypt4GH file whose header has been read and opened with a
// secret key, ready to decrypt its body. The caller must call [File.Close]
// to erase the data keys.
type File struct {
	// Header is the parsed header.
	Header *header.Header
	// Contents holds what the secret key opened: data keys, edit list.
	Contents *header.Contents

	src io.Reader
}

// Open reads the header of a Crypt4GH file from src and opens the packets
// that reader can open. When sender is not nil, only packets written by
// that public key are accepted. On success src is positioned at the body
// and the returned File reads it from there.
//
// Open fails with an error wrapping [header.ErrNoDecryptablePacket] when
// reader opens no packet (the file is for other readers, or sender did not
// write it), and with the errors of [header.Parse] for input that is not a
// valid header.
func Open(src io.Reader, reader *keys.SecretKey, sender *keys.PublicKey) (*File, error) {
	h, err := header.Parse(src)
	if err != nil {
		return nil, err
	}
	c, err := h.Decrypt(reader, sender)
	if err != nil {
		return nil, err
	}
	if c.HasEditList {
		if err := edit.List(c.EditList).Check(); err != nil {
			c.Zero()
			return nil, fmt.Errorf("%w: %w", header.ErrInvalidPacket, err)
		}
	}
	return &File{Header: h, Contents: c, src: src}, nil
}

// Close erases the data keys held by f. It does not close the source.
func (f *File) Close() error {
	f.Contents.Zero()
	return nil
}

// Selection returns the intervals [Start, End) of the body plaintext that
// the file stands for (its edit list, or the whole body), restricted to
// bytes [rng.Start, rng.End) of that output when rng is not nil. The last
// interval may end at [edit.Unbounded]: up to the end of the body.
func (f *File) Selection(rng *edit.Range) []edit.Interval {
	kept := []edit.Interval{{Start: 0, End: edit.Unbounded}}
	if f.Contents.HasEditList {
		kept = edit.List(f.Contents.EditList).Intervals()
	}
	if rng != nil {
		kept = edit.Map(kept, rng.Start, rng.End)
	}
	return kept
}

// Decrypt writes to dst the plaintext that the file stands for (after its
// edit list), or only its bytes [Start, End) when rng is not nil, and
// returns the number of bytes written. jobs is the number of goroutines
// that open segments; 0 means one per CPU.
//
// When rng is not nil and the source given to [Open] is a regular
// *os.File, only the segments that the range touches are read; any other
// source is read as a stream up to the end of the range. A range that
// starts at or after the end of the output gives an error wrapping
// [edit.ErrBeyondEnd]; one that ends after it is clipped. Call Decrypt
// once: it reads the source from where [Open] left it.
func (f *File) Decrypt(dst io.Writer, rng *edit.Range, jobs int) (int64, error) {
	kept := f.Selection(rng)
	if rng != nil {
		if ra, start, end, ok := bodySection(f.src); ok {
			return f.decryptAt(dst, io.NewSectionReader(ra, start, end-start), kept, rng)
		}
	}
	w := dst
	var cw *countWriter
	if !selectsAll(kept) {
		cw = &countWriter{w: edit.NewWriter(dst, kept)}
		w = cw
	}
	n, err := body.Decrypt(w, f.src, f.Contents.DataKeys, jobs)
	if err != nil && !errors.Is(err, edit.ErrDone) {
		return 0, err
	}
	if cw != nil {
		n = cw.kept(kept)
		if rng != nil && n == 0 && rng.Start > 0 {
			return 0, fmt.Errorf("%w (%d bytes)", edit.ErrBeyondEnd, edit.Size(f.Selection(nil), cw.n))
		}
	}
	return n, nil
}

func (f *File) decryptAt(dst io.Writer, section *io.SectionReader, kept []edit.Interval, rng *edit.Range) (int64, error) {
	r, err := body.NewReaderAt(section, section.Size(), f.Contents.DataKeys)
	if err != nil {
		return 0, err
	}
	plain := r.Size()
	var written int64
	for _, iv := range kept {
		if iv.Start >= plain {
			break
		}
		end := min(iv.End, plain)
		n, err := io.Copy(dst, io.NewSectionReader(r, iv.Start, end-iv.Start))
		written += n
		if err != nil {
			return written, err
		}
	}
	if written == 0 && rng.Start > 0 {
		return 0, fmt.Errorf("%w (%d bytes)", edit.ErrBeyondEnd, edit.Size(f.Selection(nil), plain))
	}
	return written, nil
}

func selectsAll(kept []edit.Interval) bool {
	return len(kept) == 1 && kept[0].Start == 0 && kept[0].End == edit.Unbounded
}

// countWriter counts the bytes handed to the edit writer so that the
// number of bytes it kept can be derived.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func (c *countWriter) kept(kept []edit.Interval) int64 { return edit.Size(kept, c.n) }
