package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/keys"
	"github.com/c4gh-go/crypt4gh/objstore"
	"github.com/urfave/cli/v2"
)

// verifyOptions are the flags of verify.
type verifyOptions struct {
	keyOptions
	store    storeOptions
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
			"edit list keeps what is there), and with --strict it fails with exit 4." + verifyObjectsHelp,
		Flags: slices.Concat([]cli.Flag{
			skFlag(&o.SK),
			senderFlag(&o.Sender),
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print nothing for files that pass", Destination: &o.Quiet},
			passphraseFileFlag(&o.PassphraseFile), jobsFlag(&o.Jobs),
			&cli.BoolFlag{Name: "checksum", Usage: "print the sha256 of each plaintext and encrypted file on stdout, as sha256sum does, instead of FILE: OK", Destination: &o.Checksum},
		}, o.store.flags(), []cli.Flag{strictFlag(&o.Strict)}),
		Action: func(c *cli.Context) error { return verify(e.start(c, o.Quiet, &o.store), o) },
	}, page: page{
		env:      withAWS(secretKeyEnv, passphraseEnv),
		examples: []string{"crypt4gh verify --sk bob.sec *.c4gh"},
	}}
}

// verifyFailed is returned by verify when some of several files failed;
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
	paths, skipped, err := verifySources(e, e.args)
	if err != nil {
		return err
	}
	if len(paths) == 0 && skipped == 0 {
		paths = []string{"-"}
	}
	sk, sender, err := readReaderKeys(e, o.keyOptions)
	if err != nil {
		return err
	}
	defer sk.Zero()

	var worst error
	failed := skipped
	if skipped > 0 {
		worst = errSkipped
	}
	for _, path := range paths {
		name := inputName(path)
		lines, err := verifyFile(e, o, path, sk, sender)
		if err == nil {
			if !o.Checksum && !e.quiet {
				lines = name + ": OK\n"
			}
			if _, err := io.WriteString(e.stdout, lines); err != nil {
				return fmt.Errorf("failed to write the result: %w", err)
			}
			continue
		}
		err = fmt.Errorf("%s: %w", name, err)
		if len(paths) == 1 && skipped == 0 {
			return err
		}
		failed++
		// One line per file: the hint, if any, follows the summary.
		report(e.stderr, errors.New(err.Error()))
		if worst == nil || exitCode(err) > exitCode(worst) {
			worst = err
		}
	}
	if failed > 0 {
		return &verifyFailed{failed: failed, total: len(paths) + skipped, worst: worst}
	}
	return nil
}

// verifyFile opens the header of the file at path with sk, authenticates
// every segment of its body and checks its edit list against the body. It
// returns the checksum lines, with --checksum.
func verifyFile(e *env, o *verifyOptions, path string, sk keys.Opener, sender *keys.PublicKey) (string, error) {
	if _, err := os.Stat(path); path != "-" && !objstore.IsURL(path) && errors.Is(err, os.ErrNotExist) {
		return "", usagef("no such file") // the line starts with the name already
	}
	in, err := e.openSource(path)
	if err != nil {
		return "", err
	}
	defer in.Close()
	size := in.size()
	sums := newFileSums(o.Checksum)
	src := sums.reader(in)
	r, err := c4gh.NewReader(src, sk, &c4gh.DecryptOptions{Sender: sender, Jobs: o.Jobs, Strict: o.Strict})
	if err != nil {
		return "", noPacketHint(err, sk, sender)
	}
	defer r.Close()
	_, err = r.WriteTo(sums.writer(io.Discard))
	if err == nil {
		err = sums.drain(src)
	}
	if err == nil {
		warnMissing(e, path, r.Missing())
		plain := strings.TrimSuffix(singleSumName(path), c4ghSuffix)
		return sums.lines(singleSumName(path), plain, false), nil
	}
	var se *c4gh.SegmentError
	switch {
	case errors.As(err, &se):
		err = withHint(fmt.Errorf("segment %d (at byte %d of the file): %w", se.Index, se.Offset(r.HeaderSize()), se.Err),
			"%s", hintFor(decryptError(err, r.HeaderSize(), size)))
	case errors.Is(err, c4gh.ErrMissingData):
		err = withHint(err, "whole segments are missing at the end of the body, or the edit list is wrong")
	}
	return "", err
}
