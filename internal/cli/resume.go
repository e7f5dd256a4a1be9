package cli

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/internal/objio"
	"github.com/c4gh-go/crypt4gh/internal/outfile"
	"github.com/c4gh-go/crypt4gh/internal/resume"
	"github.com/c4gh-go/crypt4gh/objstore"
	"github.com/urfave/cli/v2"
)

// decrypt --continue: see internal/resume for the files it keeps beside
// the output and how a run resumes.

func continueFlag(p *bool) cli.Flag {
	return &cli.BoolFlag{
		Name:        "continue",
		Destination: p,
		Usage:       "keep the partial output of a download beside -o FILE and resume it after an interruption (s3:// and https:// inputs)",
	}
}

// decryptResume decrypts the object of -i to -o with --continue.
func decryptResume(e *env, d *decryptOptions, rng *edit.Range) error {
	src, path := d.Input, d.Output
	switch {
	case rng != nil:
		return usagef("--continue cannot be used with --range")
	case d.Checksum:
		return usagef("--continue cannot be used with --checksum")
	case !objstore.IsURL(src):
		return withHint(usagef("--continue resumes the download of an object or a web resource"),
			"use -i s3://BUCKET/KEY or -i https://…")
	case outfile.IsStdout(path):
		return withHint(usagef("--continue needs an output file"), "use -o FILE")
	case objstore.IsURL(path):
		return usagef("--continue writes a local file, not %s", path)
	}
	final, err := outfile.Check(path, outfile.Options{Force: d.Force})
	// An output that resume.Exists without a partial one beside it may be the
	// complete download of an earlier run: then there is nothing to do
	// (as wget -c has it), so that a retry loop ends. Its size, against
	// the object's plaintext, tells.
	var done os.FileInfo
	if err != nil && !d.Force {
		// Only a regular file of the caller's, private as a decrypt
		// leaves it, is taken for the earlier run's: not a link, not a
		// file that another user planted at the name.
		if fi, serr := os.Lstat(path); serr == nil && fi.Mode().IsRegular() && outfile.OwnedPrivate(fi) && !resume.Exists(resume.File(path, resume.Suffix)) {
			done, final = fi, path
		}
		if done == nil {
			return err
		}
	}
	existsErr := err
	if final == "" {
		return usagef("--continue needs a regular file as output, not %s", quoteName(path))
	}
	if len(filepath.Base(resume.File(final, resume.RecordSuffix))) > outfile.MaxName {
		return usagef("the name %s is too long for the files of --continue beside it", quoteName(path))
	}
	partial := resume.File(final, resume.Suffix)

	in, err := e.openSource(src)
	if err != nil {
		return err
	}
	defer in.Close()
	o := in.obj.Object()
	ra, size, err := in.randomAccess()
	if err != nil {
		return err
	}
	if err := c4gh.CheckMagic(bufio.NewReader(io.NewSectionReader(ra, 0, 16))); err != nil {
		return err
	}
	sk, sender, err := readReaderKeys(e, d.keyOptions)
	if err != nil {
		return err
	}
	defer sk.Zero()
	res, err := c4gh.NewResumable(ra, size, sk, &c4gh.DecryptOptions{Sender: sender})
	switch {
	case errors.Is(err, c4gh.ErrResumeEditList):
		return withHint(usagef("%s has an edit list: --continue cannot resume it", o.Location()),
			"decrypt it without --continue")
	case errors.As(err, new(*c4gh.SegmentError)):
		return fmt.Errorf("body %w", err)
	case err != nil:
		return noPacketHint(err, sk, sender)
	}
	defer res.Close()
	hsize, plainSize := res.HeaderSize(), res.Size()
	if done != nil {
		if done.Size() != plainSize {
			return existsErr
		}
		if !e.quiet {
			fmt.Fprintf(e.stderr, "crypt4gh: %s is complete (%d bytes of plaintext): nothing to do\n", quoteName(path), plainSize)
		}
		return nil
	}

	validator, strong := o.Validator()
	urlSum := sha256.Sum256([]byte(src))
	rec := resume.Record{Source: o.Location().String(), URL: hex.EncodeToString(urlSum[:]), ETag: validator, Strong: strong,
		KeyID: res.KeyID(), Size: size, HeaderSize: hsize}
	rw, err := resume.Open(partial, rec, res, e.resumeReporter())
	if err != nil {
		return err
	}
	defer rw.Close()

	from := res.Offset(rw.Start())
	rest := objio.NewStreamAt(o, e.readerOptions, from)
	defer rest.Close()
	prog := e.newProgress(size-from, "decrypting")
	r := res.From(rw.Start(), prog.Reader(rest), d.Jobs)
	defer r.Close()
	prog.Start()
	_, err = r.WriteTo(rw)
	prog.Stop()
	if err != nil {
		err = decryptError(err, hsize, size)
		if serr := rw.Sync(); serr != nil {
			return err
		}
		if hintFor(err) == "" {
			err = withHint(err, "the plaintext decrypted so far is kept in %s: run the same command again to resume", quoteName(partial))
		}
		return err
	}
	if n := rw.Written(); n != plainSize {
		return fmt.Errorf("failed to decrypt %s: %d bytes of plaintext, want %d", o.Location(), n, plainSize)
	}
	return rw.Commit(final, path, d.Force)
}

// removeResumeFiles removes the partial output and the record of an
// interrupted download to path that a complete download has made
// obsolete: they are removed only when they are the caller's own private
// files, as --continue would have used them.
func removeResumeFiles(e *env, path string) {
	if outfile.IsStdout(path) || objstore.IsURL(path) {
		return
	}
	removed := false
	for _, suffix := range []string{resume.Suffix, resume.RecordSuffix} {
		name := resume.File(path, suffix)
		f, err := os.Open(name)
		if err != nil {
			continue
		}
		if resume.CheckPrivate(f, name) == nil && os.Remove(name) == nil {
			removed = true
		}
		f.Close()
	}
	if removed && !e.quiet {
		fmt.Fprintf(e.stderr, "crypt4gh: removed the partial output of the interrupted download to %s, which is complete now\n", quoteName(path))
	}
}

// warnResumable says when the output of a decrypt without --continue
// has the partial output of an interrupted download with --continue
// beside it, which this run does not use (and removes once complete).
func warnResumable(e *env, path string) {
	if outfile.IsStdout(path) || objstore.IsURL(path) {
		return
	}
	partial := resume.File(path, resume.Suffix)
	if fi, err := os.Lstat(partial); err == nil && fi.Mode().IsRegular() {
		e.warnf("%s holds the plaintext of an interrupted download: add --continue to resume it; this run removes it and %s once it is complete",
			quoteName(partial), quoteName(resume.File(path, resume.RecordSuffix)))
	}
}

// resumeReporter is where a resumed download says what it keeps.
func (e *env) resumeReporter() resume.Reporter {
	r := resume.Reporter{Warn: e.warnf}
	if !e.quiet {
		r.Note = func(format string, args ...any) {
			fmt.Fprintf(e.stderr, "crypt4gh: %s\n", oneLine(fmt.Sprintf(format, args...)))
		}
	}
	return r
}
