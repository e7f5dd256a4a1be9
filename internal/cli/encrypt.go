package cli

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/internal/outfile"
	"github.com/c4gh-go/crypt4gh/internal/progress"
	"github.com/c4gh-go/crypt4gh/keys"
	"github.com/urfave/cli/v2"
)

// encryptOptions are the flags of encrypt.
type encryptOptions struct {
	keyOptions // the writer's key: Sender is not used
	streamOptions
	store      storeOptions
	scale      scaleOptions
	Recipients cli.StringSlice // --recipient_pk
	Range      string
	Header     string // write the header to this path
	Jobs       int
	Checksum   bool
	Quiet      bool
}

func encryptCommand(e *env) command {
	o := &encryptOptions{}
	return command{Command: &cli.Command{
		Name:      "encrypt",
		Usage:     "encrypt a file for one or more recipients",
		ArgsUsage: "[FILE…]",
		Description: "Reads the plaintext from stdin (or -i) and writes a crypt4gh file to stdout\n" +
			"(or -o). Without --sk (or C4GH_SECRET_KEY), a new writer key is made for this\n" +
			"file and discarded. Given FILE arguments (flags first), writes FILE.c4gh\n" +
			"beside each FILE." + objectHelp("-i, -o and --header") + batchFolderHelp + scaleHelp,
		Flags: slices.Concat([]cli.Flag{
			skFlag(&o.SK),
			recipientFlag(&o.Recipients, "encrypt for the public key(s) in the file at `PATH` (repeatable)"),
			rangeFlag(&o.Range, "encrypt only bytes [START, END) of the input (`START-END` or START)"),
			&cli.StringFlag{Name: "header", Usage: "write the header to `PATH` and only the segments to the output", Destination: &o.Header},
			passphraseFileFlag(&o.PassphraseFile),
		}, o.streamOptions.flags(), []cli.Flag{
			jobsFlag(&o.Jobs), checksumFlag(&o.Checksum), quietFlag(&o.Quiet, true),
		}, o.store.flags(), o.scale.flags(true)),
		Action: func(c *cli.Context) error { return encrypt(e.start(c, o.Quiet, &o.store), o) },
	}, page: page{
		env: withAWS(secretKeyEnv, passphraseEnv),
		examples: []string{
			"crypt4gh encrypt --recipient_pk bob.pub -i reads.bam -o reads.bam.c4gh",
			"crypt4gh encrypt --recipient_pk team.pub --checksum *.vcf.gz > sums.txt",
		},
	}}
}

func encrypt(e *env, o *encryptOptions) error {
	files, err := batchArgs(e, o.streamOptions, o.scale, given{"range", o.Range != ""}, given{"header", o.Header != ""})
	if err != nil {
		return err
	}
	if len(o.Recipients.Value()) == 0 {
		return usagef("no recipient: use --recipient_pk PATH")
	}
	rng, err := parseRange(o.Range)
	if err != nil {
		return err
	}
	if err := checksumSingle(e, o.Checksum, o.Output, o.Header, rng); err != nil {
		return err
	}
	keyFiles := keyInputs(o.keyOptions, recipientInputs(o.Recipients.Value())...)
	if err := outfile.Distinct(e.stdout, []string{"-o", o.Output, "--header", o.Header}, keyFiles); err != nil {
		return err
	}
	recipients, err := readPublicKeys(o.Recipients.Value())
	if err != nil {
		return err
	}
	opts := c4gh.EncryptOptions{Recipients: recipients, Jobs: o.Jobs}
	if files != nil {
		items, err := encryptBatchItems(e, o.Output, files, o.scale)
		if err != nil {
			return err
		}
		if opts.Writer, err = writerKey(e, o.keyOptions); err != nil {
			return err
		}
		if opts.Writer != nil {
			defer opts.Writer.Zero()
		}
		b := batchOptions{output: o.Output, force: o.Force, jobs: o.Jobs, checksum: o.Checksum, keyFiles: keyFiles,
			scale: o.scale, bind: publicNames(recipients...)}
		return runBatch(e, b, items, "encrypting", outfile.ModePublic, true, func(dst io.Writer, src io.Reader, _ int64, jobs int) (string, error) {
			opts := opts
			opts.Jobs = jobs
			if _, err := c4gh.Encrypt(dst, src, opts); err != nil {
				return "", fmt.Errorf("failed to encrypt: %w", err)
			}
			return "", nil
		})
	}

	in, out, err := openStreams(e, o.streamOptions, keyFiles, outfile.Options{Binary: true, Mode: outfile.ModePublic}, encryptedSize)
	if err != nil {
		return err
	}
	defer in.Close()
	var hdr *outfile.Output
	if p := o.Header; p != "" {
		hdr, err = e.openDest(p, 0, outfile.Options{Force: o.Force, Binary: true, Mode: outfile.ModePublic, Input: in.file})
		if err != nil {
			out.Abort()
			return err
		}
		opts.Header = hdr
	}
	// The old header opens the old body only: should the new body not be
	// committed, the old header comes back, also on an interrupt. Both
	// commits give their file its name holding pair, and the hook takes
	// it until the process exits: it sees the body named or not, and no
	// commit follows it.
	var pair sync.Mutex
	if hdr != nil {
		hdr.Undoable()
	}
	if hdr != nil && (out.Final() != "" || out.IsSink()) {
		// (A body on stdout is streamed, and has no commit to wait for.)
		hdr.Guard(&pair)
		out.Guard(&pair)
		defer outfile.Signals.OnInterrupt(func() {
			pair.Lock()
			if out.Committed() {
				hdr.Keep()
			} else {
				hdr.Undo()
			}
		})()
	}
	if rng == nil {
		keepTime(out, in)
	}
	lines, err := encryptOne(e, o, in, out, rng, opts)
	err = printSums(e, lines, err)
	if hdr != nil {
		if herr := hdr.Finish(err); err == nil {
			err = herr
		}
	}
	err = out.Finish(err)
	pair.Lock()
	defer pair.Unlock()
	if err != nil {
		// The header is of no use without its body, nor the body
		// without it: a header committed already goes again, and the
		// one it replaced comes back.
		hdr.Undo()
		return err
	}
	hdr.Keep()
	return nil
}

// encryptOne encrypts in to out, and returns the checksum lines if asked.
// The writer key is loaded only now, once the outputs may be written.
func encryptOne(e *env, o *encryptOptions, in *input, out *outfile.Output, rng *edit.Range, opts c4gh.EncryptOptions) (string, error) {
	var err error
	if opts.Writer, err = writerKey(e, o.keyOptions); err != nil {
		return "", err
	}
	if opts.Writer != nil {
		defer opts.Writer.Zero()
	}
	var src io.Reader = in.Reader
	var prog *progress.Bar
	if rng != nil {
		if src, err = selectRange(in, *rng); err != nil {
			return "", err
		}
	} else {
		prog = e.newProgress(in.size(), "encrypting")
		// Room for the body (-1 for an input of unknown size: none); the
		// header, when out holds it, goes a few hundred bytes past it.
		out.Preallocate(c4gh.EncryptedSize(in.reservable()))
	}
	sums := newFileSums(o.Checksum)
	at := in.snap() // before the range is selected: what is left of the whole file
	var read int64
	prog.Start()
	_, err = sums.run(out, prog.Reader(src), -1, opts.Jobs, func(dst io.Writer, src io.Reader, _ int64, _ int) (string, error) {
		n, err := c4gh.Encrypt(dst, src, opts)
		read = n
		return "", err
	})
	prog.Stop()
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
	return sums.lines(singleSumName(o.Input), o.Output, true), nil
}

// writerKey loads the writer's secret key of --sk, or returns nil for a
// key made for this file only.
func writerKey(e *env, k keyOptions) (*keys.SecretKey, error) {
	if k.secretKeyPath() == "" {
		return nil, nil
	}
	return readSecretKey(e, k)
}

// selectRange returns a reader of bytes [r.Start, r.End) of in: a section
// of a regular file, or what is left of a stream after Start bytes were
// read and dropped. A range that starts at or after the end of the input
// (Start > 0) is an error wrapping edit.ErrBeyondEnd.
func selectRange(in *input, r edit.Range) (io.Reader, error) {
	if in.obj != nil {
		return in.obj.Section(r)
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
