package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/c4gh-go/crypt4gh/internal/objio"
	"github.com/c4gh-go/crypt4gh/internal/outfile"
	"github.com/c4gh-go/crypt4gh/objstore"
)

// input is what a command reads: stdin, a file, or an object (s3.go).
type input struct {
	io.Reader
	name string        // for messages: the path, or "stdin"
	file *os.File      // the file (or stdin when it is one), nil for other readers
	own  bool          // the file was opened here and is closed by Close
	obj  *objio.Stream // an object, read through Reader; nil for files and stdin
}

// openInput opens path for reading ("" or "-" is stdin). The caller must
// call Close.
func openInput(path string, stdin io.Reader) (*input, error) {
	if path == "" || path == "-" {
		f, _ := stdin.(*os.File)
		return &input{Reader: stdin, name: "stdin", file: f}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, usagef("input file %q does not exist", path)
		}
		return nil, fmt.Errorf("failed to open input %s: %w", quoteName(path), pathErr(err))
	}
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		f.Close()
		return nil, folderInput(path)
	}
	return &input{Reader: f, name: path, file: f, own: true}, nil
}

// Close closes the file if openInput opened it.
func (in *input) Close() error {
	if in.obj != nil {
		return in.obj.Close()
	}
	if in.own {
		return in.file.Close()
	}
	return nil
}

// closeFile closes the file early, if openInput opened it (Close then
// does nothing): what it read is all the command needs of it.
func (in *input) closeFile() {
	if in.own {
		in.file.Close()
		in.own = false
	}
}

// regular reports whether the input is a regular file.
func (in *input) regular() bool {
	if in.file == nil {
		return false
	}
	fi, err := in.file.Stat()
	return err == nil && fi.Mode().IsRegular()
}

// size is the number of bytes left to read in the input, or -1 when it is
// not a regular file.
func (in *input) size() int64 {
	if in.obj != nil {
		return in.obj.Remaining()
	}
	if in.file == nil {
		return -1
	}
	return remaining(in.file)
}

// remaining is the number of bytes left to read in f, or -1 when f is not
// a regular file.
func remaining(f *os.File) int64 {
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return -1
	}
	off, err := f.Seek(0, io.SeekCurrent)
	if err != nil || off > fi.Size() {
		return -1
	}
	return fi.Size() - off
}

// reservable is the size of f to reserve an output for: remaining(f),
// or -1 when f is sparse, when its size says little about what it holds.
func reservable(f *os.File) int64 {
	if f == nil {
		return -1
	}
	if fi, err := f.Stat(); err != nil || outfile.Sparse(fi) {
		return -1
	}
	return remaining(f)
}

// openStreams opens the input of -i (or stdin) and the output of -o (or
// stdout) of a command; the output may not be the input nor one of the
// keyFiles (see keyInputs). The caller must
// close the input and finish the output.
//
// Either may be an object (s3://, https://); size(in) is what the output
// will hold, as far as it is known, for the parts of an upload.
func openStreams(e *env, s streamOptions, keyFiles []string, opts outfile.Options, size func(*input) int64) (*input, *outfile.Output, error) {
	if err := outfile.Distinct(e.stdout, []string{"-o", s.Output}, keyFiles); err != nil {
		return nil, nil, err
	}
	if e.sameObject(s.Input, s.Output) {
		// As for a file: the object would be replaced by what is made
		// of it (only reencrypt, rearrange and splice work in place).
		return nil, nil, usagef("-o %s is the input object", s.Output)
	}
	in, err := e.openSource(s.Input)
	if err != nil {
		return nil, nil, err
	}
	opts.Force = s.Force
	opts.Input = in.file
	out, err := e.openDest(s.Output, size(in), opts)
	if err != nil {
		in.Close()
		return nil, nil, err
	}
	return in, out, nil
}

// snapshot is what tells whether a regular file changed while it was
// read: its size and modification time when it was opened.
type snapshot struct {
	size  int64 // left to read; -1 for what is not a regular file
	mtime time.Time
	// regular: the input is a regular file; sparse: one whose size says
	// little about what it holds (outfile.Sparse).
	regular, sparse bool
}

// snap returns the snapshot of in as it is now: for a file, what one
// fstat says (and its offset), as size and reservable would.
func (in *input) snap() snapshot {
	if in.obj != nil || in.file == nil {
		return snapshot{size: in.size()}
	}
	fi, err := in.file.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return snapshot{size: -1}
	}
	s := snapshot{size: -1, regular: true, sparse: outfile.Sparse(fi)}
	if off, err := in.file.Seek(0, io.SeekCurrent); err == nil && off <= fi.Size() {
		s.size, s.mtime = fi.Size()-off, fi.ModTime()
	}
	return s
}

// reservable is the size to reserve an output for, as in.reservable() was
// when s was taken.
func (s snapshot) reservable() int64 {
	if s.sparse {
		return -1
	}
	return s.size
}

// unchanged fails when the regular file in, as at was when it was opened,
// was read for n bytes where want were to be read (at.size for all of
// it), or now holds more, or was written to meanwhile (another mtime):
// what was made of it is of no file that ever was. Other inputs pass.
func (in *input) unchanged(at snapshot, want, n int64) error {
	if at.size < 0 || in.obj != nil {
		return nil
	}
	now := in.snap()
	switch {
	case !now.regular:
		return nil
	case n != want || want == at.size && now.size > 0:
		return fmt.Errorf("%s changed while it was read: %d bytes when opened, %d read, %d more now",
			quoteName(in.name), at.size, n, max(now.size, 0))
	case !now.mtime.Equal(at.mtime):
		return fmt.Errorf("%s changed while it was read: it was written to (modified %s, it was %s when opened)",
			quoteName(in.name), now.mtime.Format(time.RFC3339Nano), at.mtime.Format(time.RFC3339Nano))
	}
	return nil
}

// countedReader counts the bytes read through it.
type countedReader struct {
	r io.Reader
	n int64
}

func (c *countedReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// sameObject reports whether in and out name one object of a store: the
// same s3:// location, or an https:// URL of the S3 endpoint of the run
// (path or virtual-hosted style, presigned or not) and its s3:// location.
func (e *env) sameObject(in, out string) bool {
	if !objstore.IsURL(in) || !objstore.IsURL(out) {
		return false
	}
	a, err := objstore.Parse(in)
	if err != nil {
		return false
	}
	b, err := objstore.Parse(out)
	if err != nil || (a.URL != "") == (b.URL != "") {
		return err == nil && a.URL == "" && sameObjectKey(a, b)
	}
	web, obj := a, b
	if b.URL != "" {
		web, obj = b, a
	}
	st, err := e.store(obj)
	if err != nil {
		return false // said when the object is opened
	}
	ep, ok := st.(interface{ Endpoint() string })
	if !ok {
		return false
	}
	loc, ok := objstore.ObjectOfURL(web.URL, ep.Endpoint())
	return ok && sameObjectKey(loc, obj)
}

// sameObjectKey reports whether a and b are one object, also on a store that
// keeps objects as files (versitygw's posix backend, a gateway to a file
// system), where x/./p, x//p and x/p are one file: their keys are compared
// as cleaned paths. On AWS S3 they are three objects, and a command of
// one into another is refused, which costs nothing real.
func sameObjectKey(a, b objstore.Location) bool {
	return a.Bucket == b.Bucket && path.Clean("/"+a.Key) == path.Clean("/"+b.Key)
}

// keepTime makes a file output take the modification time of the regular
// file in, as gzip does; other outputs and inputs keep theirs.
func keepTime(out *outfile.Output, in *input) {
	if in == nil || in.obj != nil || !in.regular() {
		return
	}
	if fi, err := in.file.Stat(); err == nil {
		out.SetModTime(fi.ModTime())
	}
}

// keyInputs are the files of key material that a command reads: pairs of
// a flag and a path, for outfile.Distinct. more are further pairs (the
// recipients' public keys, a new passphrase's file).
func keyInputs(k keyOptions, more ...string) []string {
	var in []string
	add := func(name, path string) {
		if path != "" && path != "-" {
			in = append(in, name, expandHome(path))
		}
	}
	add("--sk", k.SK)
	add("--sender_pk", k.Sender)
	add("--passphrase-file", k.PassphraseFile)
	for i := 0; i+1 < len(more); i += 2 {
		add(more[i], more[i+1])
	}
	return in
}

// recipientInputs are the pairs of keyInputs for the recipients' public
// key files.
func recipientInputs(paths []string) []string {
	var in []string
	for _, p := range paths {
		in = append(in, "--recipient_pk", p)
	}
	return in
}

// folderInput is the error of a local folder given as an input: a batch
// takes the files in it, or a prefix of objects, not the folder.
func folderInput(path string) error {
	return withHint(usagef("input %s is a directory", quoteName(path)),
		"give the files in it as FILE arguments (%s), or an s3:// prefix", filepath.Join(path, "*"))
}

// stdoutIs reports whether stdout is a regular file and the file that
// stat describes.
func stdoutIs(e *env, stat func() (fs.FileInfo, error)) bool {
	f, ok := e.stdout.(*os.File)
	if !ok {
		return false
	}
	so, err := f.Stat()
	if err != nil || !so.Mode().IsRegular() {
		return false
	}
	fi, err := stat()
	return err == nil && os.SameFile(so, fi)
}
