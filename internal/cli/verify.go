package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/internal/batch"
	"github.com/c4gh-go/crypt4gh/keys"
	"github.com/c4gh-go/crypt4gh/objstore"
	"github.com/urfave/cli/v2"
)

// verifyOptions are the flags of verify.
type verifyOptions struct {
	keyOptions
	store    storeOptions
	scale    scaleOptions
	Jobs     int
	Quiet    bool // nothing for the files that pass
	Checksum bool
	Strict   bool
}

func verifyCommand(e *env) command {
	o := &verifyOptions{}
	return command{Command: &cli.Command{
		Name:      "verify",
		Usage:     "check that files decrypt and authenticate, without writing the plaintext",
		ArgsUsage: "[FILE…]",
		Description: "Opens the header of each FILE (stdin when there is none, or for \"-\") with --sk,\n" +
			"authenticates every segment of the body, in parallel as decrypt does, and\n" +
			"checks the edit list, if any, against the body. Prints \"FILE: OK\"\n" +
			"for each good file (nothing with -q) and a one-line error naming the file\n" +
			"and the first bad segment for each bad one. Every file is checked; the exit\n" +
			"status is 0 when all pass, else the highest code among the failures (4 for\n" +
			"damaged, truncated or tampered data, 3 for key problems). Whole segments\n" +
			"cut off the end of a body cannot be detected, unless an edit list reaches\n" +
			"into them: then the file passes with a warning (such files are valid: the\n" +
			"edit list keeps what is there), and with --strict it fails with exit 4." + verifyObjectsHelp + verifyScaleHelp,
		Flags: slices.Concat([]cli.Flag{
			skFlag(&o.SK),
			senderFlag(&o.Sender),
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print nothing for files that pass", Destination: &o.Quiet},
			passphraseFileFlag(&o.PassphraseFile), jobsFlag(&o.Jobs),
			&cli.BoolFlag{Name: "checksum", Usage: "print the sha256 of each plaintext and encrypted file on stdout, as sha256sum does, instead of FILE: OK", Destination: &o.Checksum},
		}, o.store.flags(), []cli.Flag{strictFlag(&o.Strict)}, o.scale.flags(true)),
		Action: func(c *cli.Context) error { return verify(e.start(c, o.Quiet, &o.store), o) },
	}, page: page{
		env:      withAWS(secretKeyEnv, passphraseEnv),
		examples: []string{"crypt4gh verify --sk bob.sec *.c4gh"},
	}}
}

// verifyFailed is returned by verify and inspect when some of several files failed;
// each was reported already. It unwraps to the failure with the highest
// exit code, which becomes the exit code of the command.
type verifyFailed struct {
	failed, total int
	worst         error
	what          string // what failed: "verification" when empty
}

func (e *verifyFailed) Error() string {
	what := e.what
	if what == "" {
		what = "verification"
	}
	return fmt.Sprintf("%d of %d files failed %s", e.failed, e.total, what)
}

func (e *verifyFailed) Unwrap() error { return e.worst }

func verify(e *env, o *verifyOptions) error {
	if err := e.flagsFirst(); err != nil {
		return err
	}
	many := len(e.args) > 0 || o.scale.batch()
	if err := o.scale.check(many); err != nil {
		return err
	}
	sk, sender, err := readReaderKeys(e, o.keyOptions)
	if err != nil {
		return err
	}
	defer sk.Zero()
	isStream := streamed(e.args, o.scale)
	if !isStream && len(e.args) <= 1 && !o.scale.used() {
		// One file: its error is the command's.
		path := "-"
		if len(e.args) == 1 {
			path = e.args[0]
		}
		sums := newFileSums(o.Checksum)
		if _, err := verifyFile(e, o, path, sk, sender, o.Jobs, sums); err != nil {
			return fmt.Errorf("%s: %w", inputName(path), err)
		}
		_, err := io.WriteString(e.stdout, verifyText(e, o, path, sums))
		if err != nil {
			return fmt.Errorf("failed to write the result: %w", err)
		}
		return nil
	}
	if err := checksumJSON(o.Checksum, o.scale); err != nil {
		return err
	}
	r, closeJournal, err := o.scale.runner(e, secretNames(sk))
	if err != nil {
		return err
	}
	defer closeJournal()
	// Known files one after the other, each with --jobs segment
	// workers; a stream of them --jobs at once.
	jobs := o.Jobs
	r.Workers = 1
	if isStream {
		r.Workers, jobs = c4gh.Jobs(o.Jobs), 1
	}
	r.Report = func(it batch.Item, err error) {
		// One line per file: the hint, if any, follows the summary.
		report(e.stderr, fmt.Errorf("%s: %s", inputName(it.In), err))
	}
	opener := preparedOpener(sk)
	defer opener.Zero() // a keys.Reader holds a copy of the key
	r.Do = func(it batch.Item, _ bool, _ func() error) batch.Outcome {
		sums := newFileSums(o.Checksum || o.scale.JSON)
		id, err := verifyFile(e, o, it.In, opener, sender, jobs, sums)
		out := batch.Outcome{Err: err, BytesRead: id.Size, SourceSize: id.Size, ETag: id.ETag, SourceMtime: id.ModTime}
		if err == nil {
			out.Text = verifyText(e, o, it.In, sums)
			out.PlainSHA256, out.CryptSHA256 = sums.hex(false)
		}
		return out
	}
	items := func(yield func(batch.Item) bool) {
		for s := range e.sources(e.args, o.scale, isC4gh) {
			if !yield(batch.Item{In: s.In, Err: s.Err}) {
				return
			}
		}
	}
	sum, err := r.Run(items)
	if err != nil {
		return err
	}
	if err := summarize(e, sum, o.scale.used()); err != nil {
		return &verifyFailed{failed: sum.Failed, total: sum.Inputs, worst: sum.Worst()}
	}
	return nil
}

// verifyText is what verify prints of a file that passed.
func verifyText(e *env, o *verifyOptions, path string, sums *fileSums) string {
	if o.Checksum {
		// The plaintext is named as decrypt names its output; a file
		// without .c4gh has no such name, and its plaintext is "-", the
		// stream that decrypt writes to stdout (crypt4gh decrypt -i F |
		// sha256sum -c checks it), not the file's own name again.
		name := singleSumName(path)
		plain, ok := strings.CutSuffix(name, c4ghSuffix)
		if !ok || plain == "" || strings.HasSuffix(plain, "/") {
			plain = "-"
		}
		return sums.lines(name, plain, false)
	}
	if e.quiet {
		return ""
	}
	return inputName(path) + ": OK\n"
}

// verifyFile opens the header of the file at path with sk, authenticates
// every segment of its body and checks its edit list against the body,
// with jobs segment workers, hashing both sides with sums. It returns
// what the file was when it was opened.
func verifyFile(e *env, o *verifyOptions, path string, sk keys.Opener, sender *keys.PublicKey, jobs int, sums *fileSums) (identity, error) {
	var id identity
	if _, err := os.Stat(path); path != "-" && !objstore.IsURL(path) && errors.Is(err, os.ErrNotExist) {
		return id, usagef("no such file") // the line starts with the name already
	}
	in, err := e.openSource(path)
	if err != nil {
		return id, err
	}
	defer in.Close()
	size := in.size()
	at := in.snap()
	id = identity{Size: size, ModTime: at.mtime}
	if in.obj != nil {
		id.ETag = in.obj.Object().ETag()
	}
	src := sums.reader(in)
	r, err := c4gh.NewReader(src, sk, &c4gh.DecryptOptions{Sender: sender, Jobs: jobs, Strict: o.Strict, Whole: true})
	if err != nil {
		return id, noPacketHint(err, sk, sender)
	}
	defer r.Close()
	_, err = r.WriteTo(sums.writer(io.Discard))
	if err == nil {
		err = sums.drain(src)
	}
	if err == nil {
		warnMissing(e, path, r.Missing())
		return id, nil
	}
	var se *c4gh.SegmentError
	switch {
	case errors.As(err, &se):
		err = withHint(fmt.Errorf("segment %d (at byte %d of the file): %w", se.Index, se.Offset(r.HeaderSize()), se.Err),
			"%s", hintFor(decryptError(err, r.HeaderSize(), size)))
	case errors.Is(err, c4gh.ErrMissingData):
		err = withHint(err, "whole segments are missing at the end of the body, or the edit list is wrong")
	}
	return id, err
}
