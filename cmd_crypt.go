package main

import (
	"fmt"
	"io"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/urfave/cli/v2"
)

func encryptCommand() *cli.Command {
	return &cli.Command{
		Name:      "encrypt",
		Usage:     "encrypt a file for one or more recipients",
		ArgsUsage: "[FILE…]",
		Description: "Reads the plaintext from stdin (or -i) and writes a crypt4gh file to stdout\n" +
			"(or -o). Without --sk (or C4GH_SECRET_KEY), a new writer key is made for this\n" +
			"file and discarded. Given FILE arguments (flags first), writes FILE.c4gh\n" +
			"beside each FILE.",
		Flags: []cli.Flag{
			skFlag,
			&cli.StringSliceFlag{Name: "recipient_pk", Aliases: []string{"recipient-pk"}, Usage: "encrypt for the public key at `PATH` (repeatable)"},
			&cli.StringFlag{Name: "range", Usage: "encrypt only bytes [START, END) of the input (`START-END` or START)"},
			&cli.StringFlag{Name: "header", Usage: "write the header to `PATH` and only the segments to the output"},
			passphraseFileFlag, inputFlag, outputFlag, forceFlag, jobsFlag, checksumFlag, quietFlag,
		},
		Action: encrypt,
	}
}

func encrypt(c *cli.Context) error {
	files, err := batchArgs(c, "range", "header")
	if err != nil {
		return err
	}
	if len(c.StringSlice("recipient_pk")) == 0 {
		return usagef("no recipient: use --recipient_pk PATH")
	}
	recipients, err := readPublicKeys(c.StringSlice("recipient_pk"))
	if err != nil {
		return err
	}
	rng, err := rangeFlag(c)
	if err != nil {
		return err
	}
	if err := checksumSingle(c, rng); err != nil {
		return err
	}
	opts := c4gh.EncryptOptions{Recipients: recipients, Range: rng, Jobs: c.Int("jobs")}
	if c.String("sk") != "" {
		sk, err := readSecretKey(c)
		if err != nil {
			return err
		}
		defer sk.Zero()
		opts.Writer = sk
	}
	if files != nil {
		items, err := encryptItems(files)
		if err != nil {
			return err
		}
		return runBatch(c, items, "encrypting", 0o644, true, func(dst io.Writer, src io.Reader, jobs int) error {
			o := opts
			o.Jobs = jobs
			if _, err := c4gh.Encrypt(dst, src, o); err != nil {
				return fmt.Errorf("failed to encrypt: %w", err)
			}
			return nil
		})
	}
	in, inFile, closeIn, err := openInput(c.String("input"), c.App.Reader)
	if err != nil {
		return err
	}
	defer closeIn()
	out, err := openOutput(c.String("output"), c.App.Writer,
		outputOptions{force: c.Bool("force"), binary: true, mode: 0o644, input: inFile})
	if err != nil {
		return err
	}
	var hdr *output
	if p := c.String("header"); p != "" {
		hdr, err = openOutput(p, c.App.Writer, outputOptions{force: c.Bool("force"), binary: true, mode: 0o644, input: inFile})
		if err != nil {
			out.abort()
			return err
		}
		opts.Header = hdr
	}
	// With --range the input is left unwrapped so that c4gh.Encrypt can
	// seek to the start of the range: no bar then.
	var prog *progress
	if rng == nil {
		prog = newProgress(c, inputSize(inFile), "encrypting")
		// Room for the body (-1 for an input of unknown size: none); the
		// header, when out holds it, goes a few hundred bytes past it.
		out.preallocate(body.EncryptedSize(inputSize(inFile)))
	}
	sums := newFileSums(c.Bool("checksum"))
	prog.start()
	err = sums.run(out, prog.reader(in), opts.Jobs, func(dst io.Writer, src io.Reader, _ int) error {
		_, err := c4gh.Encrypt(dst, src, opts)
		return err
	})
	prog.stop()
	if err != nil {
		err = fmt.Errorf("failed to encrypt: %w", err)
	}
	if hdr != nil {
		if herr := hdr.finish(err); err == nil {
			err = herr
		}
	}
	if err := out.finish(err); err != nil {
		return err
	}
	_, err = io.WriteString(c.App.Writer, sums.lines(singleSumName(c.String("input")), c.String("output"), true))
	return err
}

func decryptCommand() *cli.Command {
	return &cli.Command{
		Name:      "decrypt",
		Usage:     "decrypt a file with your secret key",
		ArgsUsage: "[FILE.c4gh…]",
		Description: "Reads a crypt4gh file from stdin (or -i) and writes the plaintext that it stands\n" +
			"for, after its edit list, to stdout (or -o). With --range, only bytes\n" +
			"[START, END) of that plaintext are written; on a seekable input only the\n" +
			"segments that the range needs are read. Given FILE.c4gh arguments (flags\n" +
			"first), writes FILE beside each.",
		Flags: []cli.Flag{
			skFlag,
			&cli.StringFlag{Name: "sender_pk", Aliases: []string{"sender-pk"}, Usage: "accept only packets written by the public key at `PATH`"},
			&cli.StringFlag{Name: "range", Usage: "output only bytes [START, END) (`START-END`, or START for the rest)"},
			passphraseFileFlag, inputFlag, outputFlag, forceFlag, jobsFlag, checksumFlag, quietFlag,
		},
		Action: decrypt,
	}
}

func decrypt(c *cli.Context) error {
	files, err := batchArgs(c, "range")
	if err != nil {
		return err
	}
	if files != nil {
		return decryptBatch(c, files)
	}
	rng, err := rangeFlag(c)
	if err != nil {
		return err
	}
	if err := checksumSingle(c, rng); err != nil {
		return err
	}
	in, inFile, closeIn, err := openInput(c.String("input"), c.App.Reader)
	if err != nil {
		return err
	}
	defer closeIn()
	// With --range the input is left unwrapped so that File.Decrypt can
	// read only the segments that the range needs: no bar then.
	var prog *progress
	if rng == nil {
		prog = newProgress(c, inputSize(inFile), "decrypting")
	}
	sums := newFileSums(c.Bool("checksum"))
	src := prog.reader(sums.reader(in))
	f, err := openFile(c, src)
	if err != nil {
		return err
	}
	defer f.Close()
	out, err := openOutput(c.String("output"), c.App.Writer,
		outputOptions{force: c.Bool("force"), binary: false, mode: 0o600, input: inFile})
	if err != nil {
		return err
	}
	if rng == nil && !f.Contents.HasEditList {
		// The header has been read: what is left of the input is the body.
		if n, err := body.PlaintextSize(inputSize(inFile)); err == nil {
			out.preallocate(n)
		}
	}
	prog.start()
	_, err = f.Decrypt(sums.writer(out), rng, c.Int("jobs"))
	if err != nil {
		err = fmt.Errorf("failed to decrypt: %w", err)
	} else {
		err = sums.drain(src)
	}
	prog.stop()
	if err := out.finish(err); err != nil {
		return err
	}
	_, err = io.WriteString(c.App.Writer, sums.lines(singleSumName(c.String("input")), c.String("output"), false))
	return err
}

// openFile reads the header from in and opens it with --sk, accepting only
// packets from --sender_pk when it is given.
func openFile(c *cli.Context, in io.Reader) (*c4gh.File, error) {
	sk, sender, err := readReaderKeys(c)
	if err != nil {
		return nil, err
	}
	defer sk.Zero()
	f, err := c4gh.Open(in, sk, sender)
	return f, noPacketHint(err, sk, sender)
}

// rangeFlag parses --range.
func rangeFlag(c *cli.Context) (*edit.Range, error) {
	s := c.String("range")
	if s == "" {
		return nil, nil
	}
	r, err := edit.ParseRange(s)
	if err != nil {
		return nil, usageError{err}
	}
	return &r, nil
}
