package cli

import (
	"bytes"
	"fmt"
	"io"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/keys"
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
			"beside each FILE." + objectHelp("-i, -o and --header") + batchFolderHelp,
		Flags: []cli.Flag{
			skFlag(),
			recipientFlag("encrypt for the public key(s) in the file at `PATH` (repeatable)"),
			&cli.StringFlag{Name: "range", Usage: "encrypt only bytes [START, END) of the input (`START-END` or START)"},
			&cli.StringFlag{Name: "header", Usage: "write the header to `PATH` and only the segments to the output"},
			passphraseFileFlag(), inputFlag(), outputFlag(), forceFlag(), jobsFlag(), checksumFlag(), quietFlag(true),
			s3ConfigFlag(), insecureHTTPFlag(),
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
	rng, err := rangeFlag(c)
	if err != nil {
		return err
	}
	if err := checksumSingle(c, rng); err != nil {
		return err
	}
	if err := distinctOutputs([]string{"-o", c.String("output"), "--header", c.String("header")}, keyInputs(c)); err != nil {
		return err
	}
	recipients, err := readPublicKeys(c.StringSlice("recipient_pk"))
	if err != nil {
		return err
	}
	opts := c4gh.EncryptOptions{Recipients: recipients, Jobs: c.Int("jobs")}
	if files != nil {
		items, skipped, err := encryptBatchItems(c, files)
		if err != nil {
			return err
		}
		for _, f := range skipped {
			warnf(c, "%s already ends in %s: skipped (use -i and -o to encrypt it again)", quoteName(f), c4ghSuffix)
		}
		if len(items) == 0 {
			return usagef("nothing to encrypt")
		}
		if opts.Writer, err = writerKey(c); err != nil {
			return err
		}
		if opts.Writer != nil {
			defer opts.Writer.Zero()
		}
		return runBatch(c, items, "encrypting", modePublic, true, func(dst io.Writer, src io.Reader, _ int64, jobs int) (string, error) {
			o := opts
			o.Jobs = jobs
			if _, err := c4gh.Encrypt(dst, src, o); err != nil {
				return "", fmt.Errorf("failed to encrypt: %w", err)
			}
			return "", nil
		})
	}

	in, out, err := openStreams(c, outputOptions{binary: true, mode: modePublic}, encryptedSize)
	if err != nil {
		return err
	}
	defer in.Close()
	var hdr *output
	if p := c.String("header"); p != "" {
		hdr, err = openDest(c, p, 0, outputOptions{force: c.Bool("force"), binary: true, mode: modePublic, input: in.file})
		if err != nil {
			out.abort()
			return err
		}
		opts.Header = hdr
	}
	if rng == nil {
		out.keepTime(in)
	}
	lines, err := encryptOne(c, in, out, rng, opts)
	if hdr != nil {
		if herr := hdr.finish(err); err == nil {
			err = herr
		}
	}
	if err := out.finish(err); err != nil {
		// The header is of no use without its body, nor the body
		// without it: a header committed already goes again.
		hdr.undo()
		return err
	}
	_, err = io.WriteString(c.App.Writer, lines)
	return err
}

// encryptOne encrypts in to out, and returns the checksum lines if asked.
// The writer key is loaded only now, once the outputs may be written.
func encryptOne(c *cli.Context, in *input, out *output, rng *edit.Range, opts c4gh.EncryptOptions) (string, error) {
	var err error
	if opts.Writer, err = writerKey(c); err != nil {
		return "", err
	}
	if opts.Writer != nil {
		defer opts.Writer.Zero()
	}
	var src io.Reader = in.Reader
	var prog *progress
	if rng != nil {
		if src, err = selectRange(in, *rng); err != nil {
			return "", err
		}
	} else {
		prog = newProgress(c, in.size(), "encrypting")
		// Room for the body (-1 for an input of unknown size: none); the
		// header, when out holds it, goes a few hundred bytes past it.
		out.preallocate(body.EncryptedSize(in.reservable()))
	}
	sums := newFileSums(c.Bool("checksum"))
	at := in.snap() // before the range is selected: what is left of the whole file
	var read int64
	prog.start()
	_, err = sums.run(out, prog.reader(src), -1, opts.Jobs, func(dst io.Writer, src io.Reader, _ int64, _ int) (string, error) {
		n, err := c4gh.Encrypt(dst, src, opts)
		read = n
		return "", err
	})
	prog.stop()
	if err != nil {
		return "", fmt.Errorf("failed to encrypt: %w", err)
	}
	// The output must be of the file as it was: not of a file cut short,
	// grown or written to while it was read (an upload is aborted).
	want := at.size
	if rng != nil {
		want = max(min(rng.End, at.size)-rng.Start, 0)
	}
	if err := in.unchanged(at, want, read); err != nil {
		return "", err
	}
	return sums.lines(singleSumName(c.String("input")), c.String("output"), true), nil
}

// writerKey loads the writer's secret key of --sk, or returns nil for a
// key made for this file only.
func writerKey(c *cli.Context) (*keys.SecretKey, error) {
	if secretKeyPath(c) == "" {
		return nil, nil
	}
	return readSecretKey(c)
}

// selectRange returns a reader of bytes [r.Start, r.End) of in: a section
// of a regular file, or what is left of a stream after Start bytes were
// read and dropped. A range that starts at or after the end of the input
// (Start > 0) is an error wrapping edit.ErrBeyondEnd.
func selectRange(in *input, r edit.Range) (io.Reader, error) {
	if in.obj != nil {
		return in.obj.section(r)
	}
	if size := in.size(); size >= 0 {
		if r.Start > 0 && r.Start >= size {
			return nil, fmt.Errorf("%w (%d bytes)", edit.ErrBeyondEnd, size)
		}
		off, err := in.file.Seek(0, io.SeekCurrent)
		if err != nil {
			return nil, fmt.Errorf("failed to read input: %w", err)
		}
		return io.NewSectionReader(in.file, off+r.Start, min(r.End, size)-r.Start), nil
	}
	var src io.Reader = in.Reader
	if r.Start > 0 {
		if n, err := io.CopyN(io.Discard, in, r.Start); err != nil {
			if err == io.EOF {
				return nil, fmt.Errorf("%w (%d bytes)", edit.ErrBeyondEnd, n)
			}
			return nil, fmt.Errorf("failed to read input: %w", err)
		}
		// One byte more must follow, or the range is empty.
		var b [1]byte
		if _, err := io.ReadFull(in, b[:]); err != nil {
			if err == io.EOF {
				return nil, fmt.Errorf("%w (%d bytes)", edit.ErrBeyondEnd, r.Start)
			}
			return nil, fmt.Errorf("failed to read input: %w", err)
		}
		src = io.MultiReader(bytes.NewReader(b[:]), in)
	}
	if r.End == edit.Unbounded {
		return src, nil
	}
	return io.LimitReader(src, r.End-r.Start), nil
}
