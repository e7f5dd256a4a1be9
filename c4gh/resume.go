package c4gh

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"slices"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/internal/errkind"
	"github.com/c4gh-go/crypt4gh/keys"
)

// ErrResumeEditList is returned by [NewResumable] for a file with an edit
// list: its offsets count from the start of the body, so that the
// plaintext written so far does not tell where in the body to go on.
var ErrResumeEditList = errkind.New(errkind.Usage, "a file with an edit list cannot be resumed")

// Resumable is a Crypt4GH file whose decryption can go on from a segment of
// its body: the segments are sealed independently, so the plaintext of
// whole segments written by an interrupted run can be kept, and the rest of
// the body read from the next segment on. Create it with [NewResumable].
type Resumable struct {
	opened
	plain int64 // bytes of body plaintext
}

// NewResumable opens the header of the Crypt4GH file of size bytes stored
// in src with key, reading nothing of the body. It fails as [NewReaderAt]
// does, and with [ErrResumeEditList] for a file with an edit list. The
// caller must call Close, or hand the keys on with From.
func NewResumable(src io.ReaderAt, size int64, key keys.Opener, opts *DecryptOptions) (*Resumable, error) {
	if size < 0 {
		return nil, errkind.Errorf(errkind.Usage, "negative file size %d", size)
	}
	o, err := open(bufio.NewReaderSize(io.NewSectionReader(src, 0, size), headerBuffer), key, opts)
	if err != nil {
		return nil, err
	}
	if o.contents.HasEditList {
		o.close()
		return nil, ErrResumeEditList
	}
	plain, err := body.PlaintextSize(size - o.size)
	if err != nil {
		o.close()
		return nil, err
	}
	return &Resumable{opened: o, plain: plain}, nil
}

// Size returns the length of the plaintext of the whole file.
func (r *Resumable) Size() int64 { return r.plain }

// KeyID returns a fingerprint of the file's data keys (a SHA-256 of them,
// in hex, which tells nothing of the keys): the same for a file whose
// header was re-encrypted for other readers, whose body is unchanged, and
// different for another file. A caller that kept plaintext of an earlier
// version can tell by it whether the body may still be the same.
func (r *Resumable) KeyID() string {
	if r.contents == nil {
		return "" // handed on by From
	}
	ks := slices.Clone(r.contents.DataKeys)
	slices.SortFunc(ks, func(a, b [32]byte) int { return bytes.Compare(a[:], b[:]) })
	h := sha256.New()
	h.Write([]byte("crypt4gh data keys\x00"))
	for i := range ks {
		h.Write(ks[i][:])
	}
	clear(ks)
	return hex.EncodeToString(h.Sum(nil))
}

// Kept returns how much of done bytes of plaintext, written by an earlier
// run from the start of the file, may be kept: the whole segments among
// them. It is 0 for a done outside [0, Size()].
func (r *Resumable) Kept(done int64) int64 {
	if done < 0 || done > r.plain {
		return 0
	}
	return body.Floor(done)
}

// Offset returns where in the file the body is read from to go on after
// kept bytes of plaintext, a value that Kept returned.
func (r *Resumable) Offset(kept int64) int64 {
	return r.size + body.EncryptedOffset(body.SegmentOf(kept))
}

// From returns a Reader of the plaintext after the first kept bytes (a
// value that Kept returned), whose body is read from rest, which must
// yield the file from Offset(kept) on. The Reader takes over the data
// keys: the caller must call its Close, and must not use r afterwards.
// A segment that fails is named by its index in the whole body. A kept
// that Kept could not have returned, or a second From, gives a Reader
// whose reads fail.
func (r *Resumable) From(kept int64, rest io.Reader, jobs int) *Reader {
	switch {
	case r.contents == nil:
		return &Reader{err: errkind.New(errkind.Usage, "From called twice: the first took the keys")}
	case kept < 0 || kept > r.plain || kept != body.Floor(kept):
		return &Reader{err: errkind.Errorf(errkind.Usage, "From after %d bytes: not a value that Kept returns", kept)}
	}
	rd := &Reader{opened: r.opened, src: rest, jobs: jobs, first: body.SegmentOf(kept)}
	r.opened = opened{}
	return rd
}

// Close erases the data keys, unless From handed them on.
func (r *Resumable) Close() error {
	if r.contents != nil {
		r.close()
	}
	return nil
}

// renumber makes the segment that err names, counted from the first
// segment that a Reader read, an index in the whole body. The error is
// the body's own, made for this reader: it is changed in place, once,
// where the Reader keeps it.
func renumber(err error, first int64) error {
	var se *body.SegmentError
	if first > 0 && errors.As(err, &se) {
		se.Index += first
	}
	return err
}
