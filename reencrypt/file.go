package reencrypt

import (
	"errors"
	"io"

	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/internal/errkind"
	"github.com/c4gh-go/crypt4gh/keys"
)

// A File is a Crypt4GH file that is given to new recipients, or cut, the
// way a command does it, in steps that let the caller check each before
// the next costs anything:
//
//  1. [ReadFile] parses its header: nothing is decrypted, so no key (and
//     no passphrase) is needed yet, and a file that is not Crypt4GH fails
//     first.
//  2. [File.Rekey] or [File.Splice] opens it with the reader's key and
//     makes the new header.
//  3. The new header is written ([File.WriteHeader], [File.Header]), then
//     the body follows as it is stored: [File.CopyBody] from a stream, or
//     io.Copy after [File.CheckLastSegment] from a file, or any copy of the
//     bytes from [File.HeaderSize] on (a server-side copy of an object).
//
// A File is not safe for concurrent use.
type File struct {
	old, new *header.Header
	reader   keys.Holder
	warning  error
}

// ReadFile parses the header of the Crypt4GH file read from src, which is
// left at the start of its body. It fails as [header.Parse] does.
func ReadFile(src io.Reader) (*File, error) {
	h, err := header.Parse(src)
	if err != nil {
		return nil, err
	}
	return &File{old: h}, nil
}

// HeaderSize returns the size of the header that was read: where the body
// starts in the file.
func (f *File) HeaderSize() int64 { return f.old.Size() }

// FileOptions configures [File.Rekey].
type FileOptions struct {
	RekeyOptions
	// InPlace says that the result replaces the file: a result that the
	// reader no longer opens is refused ([ErrLocksOut]) unless DropSelf,
	// and one that would change nothing is [ErrNothingToAdd].
	InPlace  bool
	DropSelf bool
}

// ErrTwoEditLists is returned by [File.Rekey] without Trim, in place or
// with Add, for a file whose packets the reader opens hold an edit list
// while packets of other keys are kept: a recipient who holds one of those
// may be left two edit lists, and no reader opens a file with two (see
// [OthersMayHoldEditList]). For a new output without Add the rekey goes
// on, and [File.Warning] returns it. Add that finds nothing to add is not
// refused: it adds no packet.
var ErrTwoEditLists = errkind.New(errkind.Usage, "a recipient may be left two edit lists")

// ErrLocksOut is returned by [File.Rekey] in place, without DropSelf, when
// the reader's own key would no longer open the result.
var ErrLocksOut = errkind.New(errkind.Usage, "the result would no longer open with the reader's key")

// Rekey makes the new header of f with reader, as [Rekey] does with
// opts.RekeyOptions, and applies the rules of a command around it: those
// of [ErrTwoEditLists] and [ErrLocksOut]; and when Add finds nothing to add,
// [ErrNothingToAdd] in place, else the header kept as it is. It fails
// otherwise as Rekey does.
func (f *File) Rekey(reader keys.Holder, opts FileOptions) error {
	f.reader, f.new, f.warning = reader, nil, nil
	refuse := false
	if !opts.Trim {
		if risky, err := OthersMayHoldEditList(f.old, reader); err == nil && risky {
			refuse = opts.InPlace || opts.Add
			if !refuse {
				f.warning = ErrTwoEditLists
			}
		}
	}
	nh, err := Rekey(f.old, reader, opts.RekeyOptions)
	switch {
	case errors.Is(err, ErrNothingToAdd) && !opts.InPlace:
		// No packet is added: nobody is left a second edit list.
		f.new = f.old
		return nil
	case err != nil:
		return err
	case refuse:
		return ErrTwoEditLists
	}
	if opts.InPlace && !opts.DropSelf && !opens(nh, reader) {
		return ErrLocksOut
	}
	f.new = nh
	return nil
}

// Warning returns what the last [File.Rekey] found worth saying about a
// result that it made anyway ([ErrTwoEditLists]), or nil.
func (f *File) Warning() error { return f.warning }

// Splice plans the new header of f and the runs of its body to copy after
// it, as [PlanSplice] does for a body of bodySize bytes; it fails as
// PlanSplice does.
func (f *File) Splice(bodySize int64, opts SpliceOptions) ([]Run, error) {
	f.reader, f.new, f.warning = opts.Reader, nil, nil
	nh, runs, err := PlanSplice(f.old, bodySize, opts)
	if err != nil {
		return nil, err
	}
	f.new = nh
	return runs, nil
}

// Opens reports whether k opens the new header: what a rewrite in place
// must keep true for the owner's key.
func (f *File) Opens(k keys.Opener) bool { return opens(f.new, k) }

// Header returns the new header, marshalled.
func (f *File) Header() []byte { return f.new.Marshal() }

// WriteHeader writes the new header to w.
func (f *File) WriteHeader(w io.Writer) (int64, error) { return f.new.WriteTo(w) }

// CheckLastSegment checks the body of bodySize bytes at bodyStart of src as
// the package's [CheckLastSegment] does, with the reader's key.
func (f *File) CheckLastSegment(src io.ReaderAt, bodyStart, bodySize int64) error {
	return CheckLastSegment(src, bodyStart, bodySize, f.old, f.reader)
}

// CopyBody copies the body from src to dst as the package's [CopyBody]
// does, with the reader's key.
func (f *File) CopyBody(dst io.Writer, src io.Reader) (int64, error) {
	return CopyBody(dst, src, f.old, f.reader)
}

// opens reports whether k opens the header h.
func opens(h *header.Header, k keys.Opener) bool {
	c, err := h.Decrypt(k, nil)
	if err != nil {
		return false
	}
	c.Zero()
	return true
}
