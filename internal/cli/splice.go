package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/reencrypt"
	"github.com/urfave/cli/v2"
)

func rearrangeCommand() *cli.Command {
	return &cli.Command{
		Name:  "rearrange",
		Usage: "keep one range of a file, for your own key, without decrypting the body",
		Description: "Writes a file that stands for bytes [START, END) of the input: a header with the\n" +
			"data keys and (unless the range is whole segments) an edit list, encrypted for\n" +
			"the public key of --sk, and the segments that the range touches, copied\n" +
			"unchanged. From a pipe, the segments before the range are read and dropped,\n" +
			"the others held in a temporary file." + spliceObjectsHelp,
		Flags: []cli.Flag{
			skFlag(),
			&cli.StringFlag{Name: "range", Usage: "the bytes to keep: `START-END` (END excluded) or START (required)"},
			passphraseFileFlag(), inputFlag(), outputFlag(), forceFlag(), quietFlag(false),
			s3ConfigFlag(), insecureHTTPFlag(),
		},
		Action: func(c *cli.Context) error {
			if !c.IsSet("range") {
				return usagef("no range: use --range START-END or --range START")
			}
			return splice(c, []string{c.String("range")}, nil)
		},
	}
}

func spliceCommand() *cli.Command {
	return &cli.Command{
		Name:  "splice",
		Usage: "keep several ranges of a file in one output, for new recipients, without decrypting the body",
		Description: "Like rearrange, for several ranges at once: the output stands for the ranges\n" +
			"in increasing order, overlapping or adjacent ranges merged. The header is\n" +
			"for the --recipient_pk keys, or for the public key of --sk when none is given." + spliceObjectsHelp,
		Flags: []cli.Flag{
			skFlag(),
			&cli.StringSliceFlag{Name: "range", Usage: "a range to keep: `START-END` (END excluded) or START (required, repeatable)"},
			recipientFlag("write the header for the public key(s) in the file at `PATH` (repeatable)"),
			&cli.BoolFlag{Name: "drop-self", Usage: "in place: allow a result that --sk no longer opens"},
			passphraseFileFlag(), inputFlag(), outputFlag(), forceFlag(), quietFlag(false),
			s3ConfigFlag(), insecureHTTPFlag(),
		},
		Action: func(c *cli.Context) error {
			if len(c.StringSlice("range")) == 0 {
				return usagef("no range: use --range START-END or --range START (repeatable)")
			}
			return splice(c, c.StringSlice("range"), c.StringSlice("recipient_pk"))
		},
	}
}

func splice(c *cli.Context, rangeArgs, recipientPaths []string) error {
	if c.NArg() > 0 {
		return usagef("unexpected argument %q (use -i for the input file)", c.Args().First())
	}
	var ranges []edit.Range
	for _, s := range rangeArgs {
		r, err := edit.ParseRange(s)
		if err != nil {
			return err
		}
		ranges = append(ranges, r)
	}
	recipients, err := readPublicKeys(recipientPaths)
	if err != nil {
		return err
	}
	if err := distinctOutputs([]string{"-o", c.String("output")}, keyInputs(c)); err != nil {
		return err
	}
	in, err := openSource(c, c.String("input"))
	if err != nil {
		return err
	}
	defer in.Close()
	if in.obj != nil {
		return spliceObject(c, in.obj, reencrypt.SpliceOptions{Recipients: recipients, Ranges: ranges})
	}
	out, err := openDest(c, c.String("output"), max(in.size(), 0)+headerRoom,
		outputOptions{force: c.Bool("force"), binary: true, mode: modePublic, input: in.file})
	if err != nil {
		return err
	}
	sk, err := readSecretKey(c)
	if err != nil {
		out.abort()
		return err
	}
	defer sk.Zero()
	opts := reencrypt.SpliceOptions{Reader: sk, Recipients: recipients, Ranges: ranges}
	if !in.regular() {
		// From a pipe, as the reference tool does: the segments before
		// the first one that a range needs are dropped, the others held
		// in a temporary file (ciphertext only) beside the output.
		dir := os.TempDir()
		if out.final != "" {
			dir = filepath.Dir(out.final)
		}
		var spool *os.File
		err = reencrypt.SpliceStream(out.Writer, in, func() (reencrypt.Spool, error) {
			f, err := createTemp(filepath.Join(dir, "crypt4gh-spool"), modeSecret)
			if err != nil {
				return nil, fmt.Errorf("failed to create a temporary file for the input in %s: %w", quoteName(dir), pathErr(err))
			}
			spool = f
			return f, nil
		}, opts)
		if spool != nil {
			spool.Close()
			os.Remove(spool.Name())
			cleanup.forget(spool.Name())
		}
		return out.finish(noPacketHint(err, sk, nil))
	}
	// out.Writer is the temporary *os.File (or stdout) and in.file an
	// *os.File: Splice copies the segments with io.CopyN between them, which
	// the kernel does with copy_file_range for a file output.
	err = reencrypt.Splice(out.Writer, in.file, opts)
	return out.finish(noPacketHint(err, sk, nil))
}
