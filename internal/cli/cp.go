package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"

	"github.com/c4gh-go/crypt4gh/agent"
	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/internal/outfile"
	"github.com/c4gh-go/crypt4gh/keys"
	"github.com/c4gh-go/crypt4gh/objstore"
	"github.com/urfave/cli/v2"
)

// cpOptions are the flags of cp.
type cpOptions struct {
	keyOptions // Sender is not used
	store      storeOptions
	Verify     bool
	Force      bool
	Continue   bool
	Jobs       int
	Quiet      bool
}

func cpCommand(e *env) command {
	o := &cpOptions{}
	return command{Command: &cli.Command{
		Name:      "cp",
		Usage:     "copy a crypt4gh file or object as it is, between folders and stores",
		ArgsUsage: "SRC DST",
		Description: "Copies the crypt4gh file SRC to DST byte for byte: files, s3:// objects\n" +
			"(SRC also https://), in any direction. DST may be a folder or an s3://\n" +
			"prefix (ending in /; a missing folder is made): the copy keeps the name of\n" +
			"SRC. SRC is checked to be a crypt4gh file (its header parses, its body is\n" +
			"whole segments) before anything is written; with --verify and --sk every\n" +
			"segment is also authenticated on the way, and a failure (exit 4) leaves no\n" +
			"DST. Between objects of one store the server copies the bytes (after they\n" +
			"are authenticated, with --verify): only the header is read. An existing DST\n" +
			"is replaced only with --force; SRC itself never. The copy is committed\n" +
			"atomically, as every output of crypt4gh: a temporary file renamed, or an\n" +
			"upload completed, removed or aborted on failure and on Ctrl-C.\n" +
			"\n" +
			"With --continue (a file SRC, an s3:// DST), a copy that fails or is\n" +
			"interrupted leaves its upload pending instead, and the same command goes on\n" +
			"with it: the parts stored whose bytes are those of SRC are kept, the rest\n" +
			"is sent. crypt4gh cleanup removes such an upload if it is not resumed.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "sk", Usage: "with --verify: the secret key `PATH` that opens SRC", Destination: &o.SK},
			passphraseFileFlag(&o.PassphraseFile),
			&cli.BoolFlag{Name: "verify", Usage: "authenticate every segment of SRC with --sk on the way; nothing is written unless all pass", Destination: &o.Verify},
			forceFlag(&o.Force),
			&cli.BoolFlag{Name: "continue", Usage: "from a file to an s3:// object: keep the upload of a failed or interrupted copy, and go on with the one an earlier run left", Destination: &o.Continue},
			jobsFlag(&o.Jobs), quietFlag(&o.Quiet, false),
		}, o.store.flags()...),
		Action: func(c *cli.Context) error { return copyFile(e.start(c, o.Quiet, &o.store), o) },
	}, page: page{
		env: withAWS(passphraseEnv),
		examples: []string{
			"crypt4gh cp reads.bam.c4gh s3://demo/run1/",
			"crypt4gh cp --verify --sk bob.sec s3://demo/run1/reads.bam.c4gh s3://archive/run1/",
		},
	}}
}

func copyFile(e *env, o *cpOptions) error {
	if err := e.flagsFirst(); err != nil {
		return err
	}
	if len(e.args) != 2 {
		return withHint(usagef("cp takes SRC and DST: got %s", plural(int64(len(e.args)), "argument")), "crypt4gh cp SRC DST")
	}
	src, dst := e.args[0], e.args[1]
	switch {
	case o.Verify && o.SK == "" && os.Getenv(agent.SocketEnv) == "":
		return withHint(usagef("--verify needs the key that opens SRC"), "add --sk KEY")
	case !o.Verify && o.SK != "":
		return withHint(usagef("--sk is used only by --verify"), "add --verify to authenticate SRC on the way")
	}
	folder := ""
	if isOutputFolder(dst) {
		var err error
		folder = dst
		if dst, err = inFolder(dst, baseName(src)); err != nil {
			return err
		}
	}
	if e.sameObject(src, dst) || !objstore.IsURL(src) && !objstore.IsURL(dst) && !outfile.IsStdout(dst) && outfile.SameFile(src, dst) {
		return usagef("%s is SRC itself", quoteName(shownName(dst)))
	}
	var sk readerKey
	if o.Verify {
		var err error
		if sk, err = readReaderKey(e, o.keyOptions); err != nil {
			return err
		}
		defer sk.Zero()
	}
	if o.Continue && (objstore.IsURL(src) || src == "-" || !objstore.IsURL(dst)) {
		return withHint(usagef("--continue goes on with an upload from a file: SRC a file, DST an s3:// object"),
			"between objects the server copies, and a download is cheap to start again")
	}
	if sl, dl, ok := bothObjects(src, dst); ok {
		return copyObject(e, o, sl, dl, sk)
	}
	in, err := e.openSource(src)
	if err != nil {
		return err
	}
	defer in.Close()
	var head bytes.Buffer
	hsize, err := c4gh.HeaderSize(io.TeeReader(in, &head))
	if err != nil {
		return err
	}
	size := int64(-1)
	if rest := in.size(); rest >= 0 {
		size = hsize + rest
		if _, err := c4gh.PlaintextSize(rest); err != nil {
			return fmt.Errorf("body %w", err)
		}
	}
	if o.Continue {
		return resumeCopy(e, o, src, dst, in, &head, size, sk)
	}
	out, err := openBatchOutput(e, folder, dst, max(size, 0), outfile.Options{Force: o.Force, Binary: true, Mode: outfile.ModePublic, Input: in.file})
	if err != nil {
		return err
	}
	keepTime(out, in)
	if sk != nil {
		err = verifyCopy(e, o, src, io.MultiReader(&head, in.Reader), out, sk, size)
	} else if _, err = out.Write(head.Bytes()); err == nil {
		_, err = io.Copy(out, in.Reader)
	}
	return out.Finish(err)
}

// resumeCopy uploads the file in (of size bytes, whose header head was
// read) to the object dst, going on with the upload an earlier run left;
// a failure leaves this one pending.
func resumeCopy(e *env, o *cpOptions, src, dst string, in *input, head *bytes.Buffer, size int64, sk readerKey) error {
	if size < 0 || !in.regular() {
		return usagef("--continue needs a regular file as SRC")
	}
	out, from, err := e.resumeDest(dst, in.file, size, o.Force)
	if err != nil {
		return err
	}
	if from > 0 && !e.quiet {
		fmt.Fprintf(e.stderr, "crypt4gh: resuming the upload of %s: %d of %d bytes stored already\n", quoteName(shownName(dst)), from, size)
	}
	all := io.MultiReader(head, in.Reader)
	switch {
	case sk != nil:
		// Every segment is authenticated, those already stored too.
		err = verifyCopy(e, o, src, all, &skipWriter{w: out, skip: from}, sk, size)
	case from >= int64(head.Len()):
		if _, err = in.file.Seek(from, io.SeekStart); err == nil {
			_, err = io.Copy(out, in.file)
		}
	default:
		_, err = io.Copy(&skipWriter{w: out, skip: from}, all)
	}
	if err == nil {
		err = out.Commit()
	} else {
		out.Abort()
	}
	if err != nil && hintFor(err) == "" {
		// The upload is kept (a refusal to replace DST has its own hint).
		err = withHint(err, "the parts stored are kept: the same command goes on with them (crypt4gh cleanup drops them)")
	}
	return err
}

// skipWriter drops the first skip bytes written to it and passes on the
// rest.
type skipWriter struct {
	w    io.Writer
	skip int64
}

func (s *skipWriter) Write(p []byte) (int, error) {
	n := len(p)
	if s.skip >= int64(n) {
		s.skip -= int64(n)
		return n, nil
	}
	p = p[s.skip:]
	s.skip = 0
	if _, err := s.w.Write(p); err != nil {
		return 0, err
	}
	return n, nil
}

// baseName is the name a copy of src takes in a folder or prefix.
func baseName(src string) string {
	if !objstore.IsURL(src) {
		return filepath.Base(src)
	}
	loc, err := objstore.Parse(src)
	if err != nil {
		return filepath.Base(src)
	}
	if loc.URL != "" {
		return urlBase(loc)
	}
	return path.Base(loc.Key)
}

// bothObjects returns the locations of src and dst when both are s3://
// objects: the one store of the run holds both.
func bothObjects(src, dst string) (objstore.Location, objstore.Location, bool) {
	if !objstore.IsURL(src) || !objstore.IsURL(dst) {
		return objstore.Location{}, objstore.Location{}, false
	}
	sl, err1 := objstore.Parse(src)
	dl, err2 := objstore.Parse(dst)
	ok := err1 == nil && err2 == nil && sl.URL == "" && dl.URL == "" && !sl.IsPrefix() && !dl.IsPrefix()
	return sl, dl, ok
}

// verifyCopy writes what it reads of src to out while it authenticates
// every segment with sk; size is that of the file, -1 when unknown.
func verifyCopy(e *env, o *cpOptions, name string, src io.Reader, out io.Writer, sk keys.Opener, size int64) error {
	tee := io.TeeReader(src, out)
	r, err := c4gh.NewReader(tee, sk, &c4gh.DecryptOptions{Jobs: o.Jobs})
	if err != nil {
		return noPacketHint(err, sk, nil)
	}
	defer r.Close()
	if _, err := r.WriteTo(io.Discard); err != nil {
		return decryptError(err, r.HeaderSize(), size)
	}
	// What an edit list leaves unread is copied too.
	if _, err := io.Copy(io.Discard, tee); err != nil {
		return err
	}
	warnMissing(e, name, r.Missing())
	return nil
}

// copyObject copies the object at sl to dl, in the store that holds
// both: the server copies the bytes. With sk, they are authenticated
// first (read once), and the copy is pinned to the version that was.
func copyObject(e *env, o *cpOptions, sl, dl objstore.Location, sk readerKey) error {
	st, err := e.store(dl)
	if err != nil {
		return err
	}
	if !o.Force {
		// Before anything is read: the commit checks again.
		if _, err := st.Open(e.ctx, dl); err == nil {
			return withHint(usagef("failed to write %s: %v", dl, objstore.ErrExists), "use --force to replace it")
		} else if !errors.Is(err, objstore.ErrNotFound) {
			return err
		}
	}
	so, err := e.openObject(sl.String())
	if err != nil {
		return err
	}
	h, err := readObjectHeader(e, so)
	if err != nil {
		return err
	}
	if _, err := c4gh.PlaintextSize(so.Size() - h.HeaderSize()); err != nil {
		return fmt.Errorf("body %w", err)
	}
	if sk != nil {
		in := e.objectInput(so)
		err := verifyCopy(e, o, sl.String(), in, io.Discard, sk, so.Size())
		in.Close()
		if err != nil {
			return err
		}
	}
	parts := []objstore.Part{objstore.Range(so, 0, so.Size())}
	return e.interruptible(dl.String(), func(ctx context.Context) error { return e.compose(ctx, dl, parts, o.Force) })
}
