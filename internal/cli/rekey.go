package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/internal/batch"
	"github.com/c4gh-go/crypt4gh/internal/objio"
	"github.com/c4gh-go/crypt4gh/internal/outfile"
	"github.com/c4gh-go/crypt4gh/keys"
	"github.com/c4gh-go/crypt4gh/objstore"
	"github.com/c4gh-go/crypt4gh/reencrypt"
)

// Rekeying objects: a new header, then the body of the object as it is,
// copied by the server (objstore's Compose), so that only the header and
// the few MiB that S3 requires of a first part pass through the client,
// whatever the size of the object.
//
// In batch form, "reencrypt --sk K --recipient_pk P --force s3://b/p/ …"
// rekeys in place every object ending in .c4gh under each prefix, and each
// object named: one line per object, failures reported and not stopping
// the others, the exit status the highest of theirs. --force is required:
// every object is replaced. With -o DIR/, files and objects are rekeyed
// into the folder or prefix DIR instead, as decrypt writes its outputs
// there (reencryptFolder).

// rekeyHelp is the paragraph of reencrypt's description about objects.
const rekeyHelp = "\n\n" +
	"With -i and -o s3:// objects of one store (the same one to rekey in\n" +
	"place, which needs --force), the body is copied by the server: a few MiB\n" +
	"pass through, whatever the size. Given s3://BUCKET/PREFIX/ or object FILE\n" +
	"arguments and --force, rekeys in place every object ending in .c4gh under\n" +
	"each prefix, and each object named, printing one line for each. With -o\n" +
	"DIR/ (a name ending in /, an existing folder, or an s3:// prefix), FILE\n" +
	"arguments may also be files: each is rekeyed into DIR under its name (its\n" +
	"key relative to its prefix); an existing output is replaced only with\n" +
	"--force, and between objects of one store the server copies the body."

// rekeyJobs is how many objects a batch rekeys at once.
const rekeyJobs = 4

// rekeyObject writes the object o, whose header f read, with a new header
// to the object of -o.
func rekeyObject(e *env, r *reencryptOptions, f *reencrypt.File, o *objstore.Object, recipients []keys.PublicKey) error {
	loc, err := objectDest(r.Output)
	if err != nil {
		return err
	}
	sk, err := readHolderKey(e, r.keyOptions)
	if err != nil {
		return err
	}
	defer sk.Zero()
	err = e.interruptible(loc.String(), func(ctx context.Context) error {
		_, _, err := rekey(ctx, e, r, sk, f, o, loc, recipients, r.Force, nil)
		return err
	})
	if errors.Is(err, errNothingToDo) {
		if !e.quiet {
			fmt.Fprintf(e.stderr, "crypt4gh: %s: %v: nothing to do\n", loc, err)
		}
		return nil
	}
	return err
}

// rekey composes the object at dest from a new header for recipients and
// the body of o. begin, when not nil, is called just before, with what a
// rewrite in place writes (see batch.Written).
// It returns the size of the new object.
func rekey(ctx context.Context, e *env, r *reencryptOptions, sk keys.Holder, f *reencrypt.File, o *objstore.Object, dest objstore.Location, recipients []keys.PublicKey, force bool, begin func(batch.Written) error) (size int64, sum string, err error) {
	if !force && o.Location() == dest {
		return 0, "", withHint(usagef("output %s is the input", dest), "use --force to rekey it in place")
	}
	inPlace := o.Location() == dest
	if err := rekeyFile(r, f, sk, recipients, inPlace, e.warnf); err != nil {
		return o.Size(), "", err // errNothingToDo too: the caller says so
	}
	// The body is copied by the server, unread: its last segment is
	// authenticated first (one ranged GET), as for a file.
	hs := f.HeaderSize()
	if err := f.CheckLastSegment(o, hs, o.Size()-hs); err != nil {
		return 0, "", bodyError(err, hs, o.Size())
	}
	hb := f.Header()
	size = int64(len(hb)) + o.Size() - hs
	if inPlace && r.scale.Journal != "" {
		// The journal records the sum of what is written, for
		// --verify-journal: the body is read once for it, before the
		// object it comes from is replaced.
		if sum, err = composedSum(e, hb, o, hs); err != nil {
			return 0, "", err
		}
	}
	if begin != nil {
		var w batch.Written
		if inPlace {
			hsum := sha256.Sum256(hb)
			w = batch.Written{HeaderSHA256: hex.EncodeToString(hsum[:]), HeaderSize: int64(len(hb)), Replaces: o.VersionID()}
		}
		if err := begin(w); err != nil {
			return 0, "", err
		}
	}
	parts := []objstore.Part{objstore.Bytes(hb), objstore.Range(o, hs, o.Size()-hs)}
	if err := e.compose(ctx, dest, parts, force); err != nil {
		return 0, "", err
	}
	if inPlace && !r.Add {
		// Packets were removed or replaced: the previous version, where
		// a bucket keeps it, still opens with them.
		// Committed: its previous version is dealt with also after a
		// signal, which would otherwise leave it without a word.
		return size, sum, e.previousVersion(context.WithoutCancel(ctx), o, r.DeletePreviousVersion, "the packets it replaced")
	}
	return size, sum, nil
}

// composedSum is the sha256 (hex) of the header hb followed by the body
// of o, which starts at bodyStart.
func composedSum(e *env, hb []byte, o *objstore.Object, bodyStart int64) (string, error) {
	h := sha256.New()
	h.Write(hb)
	rd, err := o.NewReader(bodyStart, o.Size()-bodyStart, e.readerOptions())
	if err != nil {
		return "", err
	}
	defer rd.Close()
	if _, err := rd.WriteTo(h); err != nil {
		return "", fmt.Errorf("failed to read the body: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// previousVersion deals with the version of o that an in-place rewrite
// replaced, where its bucket keeps versions: it deletes exactly that
// version with del, and else says that it is kept and what it still
// gives (what). A bucket that keeps none, or a version the rewrite
// itself replaced (versioning suspended), needs nothing.
func (e *env) previousVersion(ctx context.Context, o *objstore.Object, del bool, what string) error {
	return e.dropVersion(ctx, o.Location(), o.VersionID(), del, what)
}

// dropVersion is previousVersion for the version prev of the object at
// loc ("" for none).
func (e *env) dropVersion(ctx context.Context, loc objstore.Location, prev string, del bool, what string) error {
	st, err := e.store(loc)
	if err != nil {
		return err
	}
	v, ok := st.(objstore.Versioner)
	if !ok || prev == "" {
		return nil // no version id: no version of it that the bucket keeps (not asked)
	}
	kept, err := v.Versioned(ctx, loc)
	if err != nil {
		e.warnf("%s: could not tell whether the bucket keeps the previous version: %v", loc, err)
		return nil
	}
	if !kept {
		return nil
	}
	if now, err := st.Open(ctx, loc); err == nil && now.VersionID() == prev {
		return nil // overwritten in place: no previous version left
	}
	if !del {
		e.warnf("%s: the bucket keeps versions: the previous version %s, which still opens with %s, is kept; --delete-previous-version deletes it",
			loc, prev, what)
		return nil
	}
	if err := v.DeleteVersion(ctx, loc, prev); err != nil {
		return withHint(fmt.Errorf("%s was rewritten, but its previous version %s was not deleted: %w", loc, prev, err),
			"delete it with: aws s3api delete-object --bucket %s --key %s --version-id %s", loc.Bucket, loc.Key, prev)
	}
	if !e.quiet {
		fmt.Fprintf(e.stderr, "crypt4gh: %s: deleted the previous version %s\n", loc, prev)
	}
	return nil
}

// compose writes the object at dest made of parts (objstore.Compose). ctx
// is that of interruptible, so that a signal aborts the upload.
func (e *env) compose(ctx context.Context, dest objstore.Location, parts []objstore.Part, force bool) error {
	st, err := e.store(dest)
	if err != nil {
		return err
	}
	e.warnPending(st, dest)
	err = st.Compose(ctx, dest, parts, &objstore.ComposeOptions{Force: force, CopyPartSize: copyPart, Concurrency: copyJobs})
	if errors.Is(err, objstore.ErrExists) {
		return withHint(err, "use --force to replace it")
	}
	return err
}

// objectDest parses the s3:// object that -o names.
func objectDest(dest string) (objstore.Location, error) {
	loc, err := objstore.Parse(dest)
	if err != nil {
		return loc, err
	}
	switch {
	case loc.URL != "":
		return loc, usagef("cannot write to %s: only s3:// objects are written", loc)
	case loc.IsPrefix():
		return loc, withHint(usagef("%s is a prefix, not an object", loc), "name the object: s3://BUCKET/KEY")
	}
	return loc, nil
}

// readObjectHeader parses the header at the start of o, fetched in one
// small request.
func readObjectHeader(e *env, o *objstore.Object) (*reencrypt.File, error) {
	in := e.objectInput(o)
	defer in.Close()
	ra, err := in.obj.ReaderAt()
	if err != nil {
		return nil, err
	}
	return reencrypt.ReadFile(io.NewSectionReader(ra, 0, o.Size()))
}

// reencryptBatch rekeys in place the objects of the FILE arguments.
func reencryptBatch(e *env, r *reencryptOptions) error {
	if err := e.flagsFirst(); err != nil {
		return err
	}
	for _, f := range []given{{"input", r.Input != ""}, {"output", r.Output != "" && !isOutputFolder(r.Output)}, {"header-only", r.HeaderOnly}} {
		if f.set {
			return notWithFiles(f.name, r.Output)
		}
	}
	if r.Output != "" {
		return reencryptFolder(e, r)
	}
	args := e.args
	for _, a := range args {
		if loc, err := objstore.Parse(a); !objstore.IsURL(a) || err == nil && loc.URL != "" {
			return withHint(usagef("unexpected argument %q: without -o DIR/, FILE arguments of reencrypt are s3:// objects or prefixes, rekeyed in place", a),
				"use -i and -o for a file, or -o DIR/ to write the files rekeyed into a folder")
		} else if err != nil {
			return err
		}
	}
	if !r.Force {
		return withHint(usagef("rekeying objects in place replaces them"), "add --force to rekey %s in place", strings.Join(args, " "))
	}
	sk, recipients, err := readRekeyKeys(e, r)
	if err != nil {
		return err
	}
	defer sk.Zero()
	run, closeJournal, err := r.scale.runner(e, append(secretNames(sk), publicNames(recipients...)...))
	if err != nil {
		return err
	}
	defer closeJournal()
	run.Workers = rekeyJobs
	run.Empty = usagef("nothing to rekey")
	items := func(yield func(batch.Item) bool) {
		for s := range e.sources(args, r.scale, isC4gh) {
			it := batch.Item{In: s.In, Out: s.In, Err: s.Err}
			if loc, err := objstore.Parse(s.In); it.Err == nil && (!objstore.IsURL(s.In) || err == nil && loc.URL != "") {
				it.Err = usagef("without -o DIR/, reencrypt rekeys s3:// objects in place; use -i and -o for a file")
			} else if it.Err == nil && err != nil {
				it.Err = err
			}
			if !yield(it) {
				return
			}
		}
	}
	var sum batch.Summary
	// One context for the batch: a signal cancels every rekey under way
	// at once, and the exit waits for their uploads to be aborted.
	e.interruptible("", func(ctx context.Context) error { // each rekey says its own result
		run.Stop = ctx.Err // a signal: no object is started after it
		run.Do = func(it batch.Item, _ bool, _ func() error) batch.Outcome {
			var begin func(batch.Written) error
			if j := run.Journal; j != nil {
				begin = func(w batch.Written) error { return j.StartWriting(it.In, w) }
			}
			var (
				o   batch.Outcome
				err error
				now *objstore.Object
			)
			if run.Journal != nil {
				// Rewritten by a run that died before its done line?
				if w, ok := run.Journal.Writing(it.In); ok {
					now, err = e.landed(ctx, r, it.In, w)
				}
			}
			switch {
			case err != nil:
			case now != nil:
				o = batch.Outcome{Text: it.In + ": rekeyed (by the run that stopped before it noted it)\n",
					BytesOut: now.Size(), ETag: now.ETag(), SourceSize: now.Size()}
			default:
				o, err = rekeyOne(ctx, e, r, sk, it.In, it.In, recipients, true, begin)
			}
			if errors.Is(err, errNothingToDo) {
				o.Status, o.Text, err = "unchanged", fmt.Sprintf("%s: unchanged, %v\n", it.In, err), nil
			} else if err == nil && o.Text == "" {
				o.Text = it.In + ": rekeyed\n"
			}
			if e.quiet {
				o.Text = ""
			}
			o.Err = err
			return o
		}
		sum, err = run.Run(items)
		return nil
	})
	if err != nil {
		return err
	}
	return summarize(e, sum, r.scale.used())
}

// rekeyOne rekeys the object in to the object dest (in itself to rekey
// in place), replacing what is there with force. begin, when not nil,
// records the start in the journal, just before the write.
func rekeyOne(ctx context.Context, e *env, r *reencryptOptions, sk keys.Holder, in, dest string, recipients []keys.PublicKey, force bool, begin func(batch.Written) error) (batch.Outcome, error) {
	var out batch.Outcome
	src, err := objstore.Parse(in)
	if err != nil {
		return out, err
	}
	loc, err := objstore.Parse(dest)
	if err != nil {
		return out, err
	}
	st, err := e.store(src)
	if err != nil {
		return out, err
	}
	o, err := st.Open(ctx, src)
	if err != nil {
		return out, err
	}
	out.ETag, out.SourceSize = o.ETag(), o.Size()
	f, err := readObjectHeader(e, o)
	if err != nil {
		return out, err
	}
	if _, err := c4gh.PlaintextSize(o.Size() - f.HeaderSize()); err != nil {
		return out, fmt.Errorf("body %w", err)
	}
	if begin != nil {
		if !force && loc != src {
			// The journal's start line says that an object found at
			// dest is this run's own (the next run replaces it): none
			// may be written for an object that was there before.
			dst, err := e.store(loc)
			if err != nil {
				return out, err
			}
			switch _, err := dst.Open(ctx, loc); {
			case err == nil:
				return out, withHint(fmt.Errorf("%s: %w", loc, objstore.ErrExists), "use --force to replace it")
			case !errors.Is(err, objstore.ErrNotFound):
				return out, err
			}
		}
	}
	size, sum, err := rekey(ctx, e, r, sk, f, o, loc, recipients, force, begin)
	out.BytesOut, out.OutSHA256, out.CryptSHA256 = size, sum, sum
	return out, err
}

// spliceObject writes what rearrange and splice keep of the object of s:
// to an object of the same store, the segments copied by the server; else
// fetched, segment runs in parallel ranged GETs.
func spliceObject(e *env, so *spliceOptions, s *objio.Stream, opts reencrypt.SpliceOptions) error {
	o := s.Object()
	ra, err := s.ReaderAt()
	if err != nil {
		return err
	}
	f, err := reencrypt.ReadFile(io.NewSectionReader(ra, 0, o.Size()))
	if err != nil {
		return err
	}
	dest := so.Output
	var out *outfile.Output
	var loc objstore.Location
	if objstore.IsURL(dest) {
		if loc, err = objectDest(dest); err != nil {
			return err
		}
		if !so.Force && o.Location() == loc {
			return withHint(usagef("output %s is the input", loc), "use --force to replace it")
		}
	} else if out, err = e.openDest(dest, o.Size()+headerRoom, so.outputOptions(outfile.Options{Force: so.Force, Binary: true, Mode: outfile.ModePublic})); err != nil {
		return err
	}
	var done func()
	if opts.Reader, done, err = so.secretKey(e); err != nil {
		if out != nil {
			out.Abort()
		}
		return err
	}
	defer done()
	hs := f.HeaderSize()
	runs, err := f.Splice(o.Size()-hs, opts)
	if err != nil {
		if out != nil {
			out.Abort()
		}
		return noPacketHint(err, opts.Reader, nil)
	}
	if n := len(runs); n > 0 && runs[n-1].Offset+runs[n-1].Length == o.Size()-hs {
		// The last segment is kept: a body cut inside it at a length a
		// whole one could have would be copied as it is, by the server
		// as by a download. It is authenticated first, as splice of a
		// file does.
		if err := f.CheckLastSegment(ra, hs, o.Size()-hs); err != nil {
			if out != nil {
				out.Abort()
			}
			return err
		}
	}
	if out == nil && o.Location() == loc && !so.DropSelf && !f.Opens(opts.Reader) {
		// In place, as for reencrypt: never a result that the owner's
		// key no longer opens.
		return withHint(usagef("cut in place, the object would no longer open with %s, nor for any reader but the recipients", keyName(so.keyOptions)),
			"add your own public key with --recipient_pk, write to another object, or --drop-self to drop your access")
	}
	if out == nil {
		parts := []objstore.Part{objstore.Bytes(f.Header())}
		for _, r := range runs {
			parts = append(parts, objstore.Range(o, hs+r.Offset, r.Length))
		}
		return e.interruptible(loc.String(), func(ctx context.Context) error {
			if err := e.compose(ctx, loc, parts, so.Force); err != nil {
				return err
			}
			if o.Location() == loc {
				return e.previousVersion(ctx, o, so.DeletePreviousVersion, "the whole file")
			}
			return nil
		})
	}
	return out.Finish(copyObjectRuns(e, out, f, o, runs))
}

// copyObjectRuns writes the new header of f, then the runs of the body of
// o.
func copyObjectRuns(e *env, out io.Writer, f *reencrypt.File, o *objstore.Object, runs []reencrypt.Run) error {
	bodyStart := f.HeaderSize()
	if _, err := f.WriteHeader(out); err != nil {
		return fmt.Errorf("failed to write header: %w", err)
	}
	for _, run := range runs {
		r, err := o.NewReader(bodyStart+run.Offset, run.Length, e.readerOptions())
		if err != nil {
			return err
		}
		_, err = r.WriteTo(out)
		r.Close()
		if err != nil {
			return fmt.Errorf("failed to copy segments: %w", err)
		}
	}
	return nil
}

// landed returns the object in when it has the header that a run noted
// it was about to write in place (w), the run having died before its done
// line: its commit landed, and the rekey is done; nil otherwise. The
// previous version it replaced, where the bucket keeps it, is dealt with
// as the run would have.
func (e *env) landed(ctx context.Context, r *reencryptOptions, in string, w batch.Written) (*objstore.Object, error) {
	loc, err := objstore.Parse(in)
	if err != nil || w.HeaderSize <= 0 || w.HeaderSize > 1<<20 {
		return nil, err
	}
	st, err := e.store(loc)
	if err != nil {
		return nil, err
	}
	o, err := st.Open(ctx, loc)
	if err != nil || o.Size() < w.HeaderSize {
		return nil, err
	}
	hb := make([]byte, w.HeaderSize)
	if _, err := o.ReadAt(hb, 0); err != nil {
		return nil, err
	}
	if sum := sha256.Sum256(hb); hex.EncodeToString(sum[:]) != w.HeaderSHA256 {
		return nil, nil
	}
	if !r.Add {
		return o, e.dropVersion(ctx, loc, w.Replaces, r.DeletePreviousVersion, "the packets it replaced")
	}
	return o, nil
}
