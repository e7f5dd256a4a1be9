package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/keys"
	"github.com/c4gh-go/crypt4gh/reencrypt"
	"github.com/urfave/cli/v2"
)

func reencryptCommand() *cli.Command {
	return &cli.Command{
		Name:  "reencrypt",
		Usage: "give a file to new recipients without touching its body",
		Description: "Every header packet that --sk opens is encrypted again for each --recipient_pk;\n" +
			"packets that --sk cannot open are kept unless --trim. The body is copied\n" +
			"unchanged. With --header-only, only the new header is written; the input\n" +
			"may be a bare header, as encrypt --header writes it.",
		Flags: []cli.Flag{
			skFlag,
			&cli.StringSliceFlag{Name: "recipient_pk", Aliases: []string{"recipient-pk"}, Usage: "re-encrypt for the public key at `PATH` (repeatable)"},
			&cli.BoolFlag{Name: "trim", Usage: "drop the packets that --sk cannot open"},
			&cli.BoolFlag{Name: "header-only", Usage: "read and write only a header"},
			passphraseFileFlag, inputFlag, outputFlag, forceFlag, quietFlag,
		},
		Action: reencryptAction,
	}
}

func reencryptAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return usagef("unexpected argument %q (use -i for the input file)", c.Args().First())
	}
	if len(c.StringSlice("recipient_pk")) == 0 {
		return usagef("no recipient: use --recipient_pk PATH")
	}
	recipients, err := readPublicKeys(c.StringSlice("recipient_pk"))
	if err != nil {
		return err
	}
	in, inFile, closeIn, err := openInput(c.String("input"), c.App.Reader)
	if err != nil {
		return err
	}
	defer closeIn()
	prog := newProgress(c, inputSize(inFile), "reencrypting")
	in = prog.reader(in)
	h, err := header.Parse(in)
	if err != nil {
		return err
	}
	sk, err := readSecretKey(c)
	if err != nil {
		return err
	}
	defer sk.Zero()
	nh, err := reencrypt.Header(h, sk, recipients, c.Bool("trim"), nil)
	if err != nil {
		return noPacketHint(err, sk, nil)
	}
	out, err := openOutput(c.String("output"), c.App.Writer,
		outputOptions{force: c.Bool("force"), binary: true, mode: 0o644, input: inFile})
	if err != nil {
		return err
	}
	_, err = nh.WriteTo(out)
	if err == nil && !c.Bool("header-only") {
		// The body, unchanged. in is the input *os.File (or stdin; wrapped by
		// the progress counter, whose WriteTo keeps the copy in the kernel)
		// and out.Writer the temporary *os.File: io.Copy hands the copy to the
		// kernel (copy_file_range) when both are regular files.
		prog.start()
		_, err = io.Copy(out.Writer, in)
		prog.stop()
	}
	if err != nil {
		err = fmt.Errorf("failed to write output: %w", err)
	}
	return out.finish(err)
}

func rearrangeCommand() *cli.Command {
	return &cli.Command{
		Name:  "rearrange",
		Usage: "keep one range of a file, for your own key, without decrypting the body",
		Description: "Writes a file that stands for bytes [START, END) of the input: a header with the\n" +
			"data keys and an edit list, encrypted for the public key of --sk, and the\n" +
			"segments that the range touches, copied unchanged. The input must be a file.",
		Flags: []cli.Flag{
			skFlag,
			&cli.StringFlag{Name: "range", Usage: "the bytes to keep: `START-END` (END excluded) or START (required)"},
			passphraseFileFlag, inputFlag, outputFlag, forceFlag,
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
			"for the --recipient_pk keys, or for the public key of --sk when none is given.",
		Flags: []cli.Flag{
			skFlag,
			&cli.StringSliceFlag{Name: "range", Usage: "a range to keep: `START-END` (END excluded) or START (required, repeatable)"},
			&cli.StringSliceFlag{Name: "recipient_pk", Aliases: []string{"recipient-pk"}, Usage: "write the header for the public key at `PATH` (repeatable)"},
			passphraseFileFlag, inputFlag, outputFlag, forceFlag,
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
			return usageError{err}
		}
		ranges = append(ranges, r)
	}
	recipients, err := readPublicKeys(recipientPaths)
	if err != nil {
		return err
	}
	_, inFile, closeIn, err := openInput(c.String("input"), c.App.Reader)
	if err != nil {
		return err
	}
	defer closeIn()
	if inFile == nil || !isRegularFile(inFile) {
		return usagef("%s needs a file as input (-i PATH or a file on stdin), not a pipe", c.Command.Name)
	}
	sk, err := readSecretKey(c)
	if err != nil {
		return err
	}
	defer sk.Zero()
	out, err := openOutput(c.String("output"), c.App.Writer,
		outputOptions{force: c.Bool("force"), binary: true, mode: 0o644, input: inFile})
	if err != nil {
		return err
	}
	// out.Writer is the temporary *os.File (or stdout) and inFile an
	// *os.File: Splice copies the segments with io.CopyN between them, which
	// the kernel does with copy_file_range for a file output.
	err = reencrypt.Splice(out.Writer, inFile, reencrypt.SpliceOptions{Reader: sk, Recipients: recipients, Ranges: ranges})
	return out.finish(noPacketHint(err, sk, nil))
}

func isRegularFile(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode().IsRegular()
}

// noPacketHint adds which public key was tried to an error saying that the
// key opens no packet.
func noPacketHint(err error, sk *keys.SecretKey, sender *keys.PublicKey) error {
	if !errors.Is(err, header.ErrNoDecryptablePacket) {
		return err
	}
	hint := fmt.Sprintf("the file has no packet for the public key %s", sk.Public())
	if sender != nil {
		hint += fmt.Sprintf(" written by %s", *sender)
	}
	return withHint(err, "%s", hint)
}
