package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/internal/outfile"
	"github.com/c4gh-go/crypt4gh/internal/progress"
	"github.com/c4gh-go/crypt4gh/keys"
	"github.com/urfave/cli/v2"
)

// decryptOptions are the flags of decrypt.
type decryptOptions struct {
	keyOptions
	streamOptions
	store    storeOptions
	scale    scaleOptions
	region   regionOptions
	Range    string // --range START-END
	Jobs     int
	Checksum bool
	Quiet    bool
	Continue bool // resume an interrupted download
	Strict   bool // an edit list past the data is an error
}

func decryptCommand(e *env) command {
	o := &decryptOptions{}
	return command{Command: &cli.Command{
		Name:      "decrypt",
		Usage:     "decrypt a file with your secret key",
		ArgsUsage: "[FILE.c4gh…]",
		Description: "Reads a crypt4gh file from stdin (or -i) and writes the plaintext that it stands\n" +
			"for, after its edit list, to stdout (or -o). With --range, only bytes\n" +
			"[START, END) of that plaintext are written; on a file only the segments\n" +
			"that the range needs are read. Given FILE.c4gh arguments (flags first),\n" +
			"writes FILE beside each. A file whose edit list describes more data than\n" +
			"its body holds is valid: what is there is written, with a warning (whole\n" +
			"segments may have been lost in a transfer); --strict makes it exit 4.\n\n" +
			"With --region (or --regions-file), the input is a BAM, CRAM, VCF.gz or BCF\n" +
			"file, and the output a valid file of the same format that holds its header\n" +
			"and every record of the regions (and perhaps some records near them), read\n" +
			"through its index: FILE.bai, FILE.csi, FILE.crai or FILE.tbi beside it, each\n" +
			"plain or encrypted (.c4gh) for the same key, or --index. Only the segments\n" +
			"that the regions need are read." +
			objectHelp("-i and -o") + resumeHelp + batchFolderHelp + scaleHelp,
		Flags: slices.Concat([]cli.Flag{
			skFlag(&o.SK),
			senderFlag(&o.Sender),
			rangeFlag(&o.Range, "output only bytes [START, END) (`START-END`, or START for the rest)"),
		}, o.region.flags(), []cli.Flag{
			passphraseFileFlag(&o.PassphraseFile),
		}, o.streamOptions.flags(), []cli.Flag{
			jobsFlag(&o.Jobs), checksumFlag(&o.Checksum), quietFlag(&o.Quiet, true),
		}, o.store.flags(), []cli.Flag{
			continueFlag(&o.Continue), strictFlag(&o.Strict),
		}, o.scale.flags(true)),
		Action: func(c *cli.Context) error { return decrypt(e.start(c, o.Quiet, &o.store), o) },
	}, page: page{
		env: withAWS(secretKeyEnv, passphraseEnv),
		examples: []string{
			"crypt4gh decrypt --sk bob.sec -i reads.bam.c4gh -o reads.bam",
			"crypt4gh decrypt --sk bob.sec --region chr20:1-100000 -i reads.bam.c4gh -o chr20.bam",
		},
	}}
}

func decrypt(e *env, o *decryptOptions) error {
	files, err := batchArgs(e, o.streamOptions, o.scale, given{"range", o.Range != ""}, given{"continue", o.Continue},
		given{"region", o.region.given()}, given{"index", o.region.Index != ""})
	if err != nil {
		return err
	}
	if err := o.region.check(); err != nil {
		return err
	}
	if o.region.given() {
		switch {
		case o.Range != "":
			return usagef("--range and --region cannot be used together")
		case o.Continue:
			return usagef("--continue cannot be used with --region")
		case o.Checksum:
			return usagef("--checksum cannot be used with --region")
		}
	}
	if files != nil {
		return decryptBatch(e, o, files)
	}
	rng, err := parseRange(o.Range)
	if err != nil {
		return err
	}
	if err := checksumSingle(e, o.Checksum, o.Output, "", rng); err != nil {
		return err
	}
	if o.Continue {
		return decryptResume(e, o, rng)
	}
	warnResumable(e, o.Output)
	in, out, err := openStreams(e, o.streamOptions, keyInputs(o.keyOptions), outfile.Options{Mode: outfile.ModeSecret}, func(in *input) int64 { return max(in.size(), 0) })
	if err != nil {
		return err
	}
	defer in.Close()
	if rng == nil && !o.region.given() {
		keepTime(out, in)
	}
	lines, err := decryptOne(e, o, in, out, rng)
	if err := out.Finish(printSums(e, lines, err)); err != nil {
		return err
	}
	if rng == nil && !o.region.given() {
		removeResumeFiles(e, o.Output)
	}
	return nil
}

// printSums prints the checksum lines of a single file, when err is nil,
// before its output is committed: a stdout that fails (a full disk, a
// closed pipe) then leaves no output, as any failure does.
func printSums(e *env, lines string, err error) error {
	if err != nil || lines == "" {
		return err
	}
	if _, err := io.WriteString(e.stdout, lines); err != nil {
		return fmt.Errorf("failed to write the checksums: %w", err)
	}
	return nil
}

// decryptOne decrypts in to out and returns the checksum lines, if asked.
// The key is loaded, and its passphrase asked, only once the input is
// known to start like a crypt4gh file.
func decryptOne(e *env, o *decryptOptions, in *input, out *outfile.Output, rng *edit.Range) (string, error) {
	if o.region.given() {
		return "", decryptRegion(e, o, in, out)
	}
	if rng != nil && (in.regular() || in.obj != nil) {
		return "", decryptRangeAt(e, o, in, out, *rng)
	}
	size := in.size() // before anything is read: the whole file
	var prog *progress.Bar
	if rng == nil {
		prog = e.newProgress(size, "decrypting")
	}
	sums := newFileSums(o.Checksum)
	src := bufio.NewReaderSize(prog.Reader(sums.reader(in)), 64<<10)
	if err := checkMagic(src); err != nil {
		return "", err
	}
	r, err := openReader(e, o.keyOptions, src, o.Jobs, o.Strict)
	if err != nil {
		return "", err
	}
	defer r.Close()
	if rng != nil {
		if err := r.Select(*rng); err != nil {
			return "", err
		}
	} else if _, has := r.EditList(); !has {
		// What is left of the input is the body.
		if n, err := c4gh.PlaintextSize(in.reservable() + int64(src.Buffered())); err == nil {
			out.Preallocate(n)
		}
	}
	prog.Start()
	_, err = r.WriteTo(sums.writer(out))
	if err == nil {
		err = sums.drain(src)
	}
	prog.Stop()
	if err != nil {
		return "", decryptError(err, r.HeaderSize(), size)
	}
	warnMissing(e, o.Input, r.Missing())
	return sums.lines(singleSumName(o.Input), o.Output, false), nil
}

// decryptRangeAt writes bytes rng of the regular file in to out, reading
// only the header and the segments the range touches.
func decryptRangeAt(e *env, o *decryptOptions, in *input, out *outfile.Output, rng edit.Range) error {
	file, size, err := in.randomAccess()
	if err != nil {
		return err
	}
	if err := checkMagic(bufio.NewReader(io.NewSectionReader(file, 0, 16))); err != nil {
		return err
	}
	sk, sender, err := readReaderKeys(e, o.keyOptions)
	if err != nil {
		return err
	}
	defer sk.Zero()
	r, err := c4gh.NewReaderAt(file, size, sk, &c4gh.DecryptOptions{Sender: sender, Strict: o.Strict})
	if err != nil {
		return noPacketHint(err, sk, sender)
	}
	defer r.Close()
	if _, err := r.CopyRange(out, rng.Start, rng.End); err != nil {
		return decryptError(err, r.HeaderSize(), size)
	}
	if rng.End > r.Size() {
		// The range reached the end of what the file holds.
		warnMissing(e, o.Input, r.Missing())
	}
	return nil
}

// openReader opens the header read from src with --sk, accepting only
// packets from --sender_pk when it is given; jobs and strict are the
// reader's options.
func openReader(e *env, k keyOptions, src io.Reader, jobs int, strict bool) (*c4gh.Reader, error) {
	sk, sender, err := readReaderKeys(e, k)
	if err != nil {
		return nil, err
	}
	defer sk.Zero()
	r, err := c4gh.NewReader(src, sk, &c4gh.DecryptOptions{Sender: sender, Jobs: jobs, Strict: strict})
	return r, noPacketHint(err, sk, sender)
}

// checkMagic fails unless src starts like a crypt4gh file, without
// consuming anything: a cheap check before a passphrase is asked.
func checkMagic(src *bufio.Reader) error {
	b, err := src.Peek(len(header.Magic))
	switch {
	case len(b) == 0 && err == io.EOF:
		return fmt.Errorf("%w: expected a crypt4gh header", header.ErrEmptyInput)
	case len(b) > 0 && string(b) != header.Magic[:len(b)]:
		return fmt.Errorf("%w (bad magic %q)", header.ErrNotCrypt4GH, b)
	case err != nil && err != io.EOF:
		return fmt.Errorf("failed to read input: %w", err)
	}
	return nil
}

// decryptError names where a failed segment lies in the file, and says
// when the failure is most likely a file cut short: the last segment of a
// body whose length is not a whole number of segments. bodyEnd is the size
// of the input, -1 when unknown.
func decryptError(err error, headerSize, fileSize int64) error {
	var se *c4gh.SegmentError
	if !errors.As(err, &se) {
		return err
	}
	return cutShortHint(fmt.Errorf("failed to decrypt: %w (at byte %d of the file)", se, se.Offset(headerSize)), se, headerSize, fileSize)
}

// cutShortHint adds to err, the failure of segment se, that the file may
// have been cut short when se is its last segment and shorter than a full
// one.
func cutShortHint(err error, se *c4gh.SegmentError, headerSize, fileSize int64) error {
	if fileSize >= 0 && c4gh.CutShort(se, fileSize-headerSize) {
		return withHint(err, "the encrypted data was modified or damaged; it is the last segment and shorter than a full one, so the file may also have been cut short in transfer")
	}
	return err
}

// rangeFlag is --range, with its usage.
func rangeFlag(p *string, usage string) cli.Flag {
	return &cli.StringFlag{Name: "range", Usage: usage, Destination: p}
}

// parseRange parses a --range; nil when s is empty.
func parseRange(s string) (*edit.Range, error) {
	if s == "" {
		return nil, nil
	}
	r, err := edit.ParseRange(s)
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// noPacketHint adds which public key was tried to an error saying that the
// key opens no packet.
func noPacketHint(err error, key keys.Opener, sender *keys.PublicKey) error {
	if errors.Is(err, header.ErrWrongSender) {
		return withHint(err, "the file is for your key, but --sender_pk names another writer")
	}
	if !errors.Is(err, header.ErrNoDecryptablePacket) || errors.Is(err, header.ErrNoPackets) {
		return err
	}
	var pk keys.PublicKey
	ok := true
	switch k := key.(type) {
	case *keys.SecretKey:
		pk = k.Public()
	case *keys.Reader:
		pk = k.Public()
	default:
		ok = false
	}
	switch {
	case !ok && sender != nil:
		return withHint(err, "no packet for the keys of the agent was written by %s (crypt4gh agent --list shows its keys)", *sender)
	case !ok:
		return withHint(err, "the file has no packet for the keys of the agent (crypt4gh agent --list shows them)")
	case sender != nil:
		return withHint(err, "no packet for the public key %s was written by %s", pk, *sender)
	}
	return withHint(err, "the file has no packet for the public key %s", pk)
}

// strictFlag is --strict of decrypt and verify.
func strictFlag(p *bool) cli.Flag {
	return &cli.BoolFlag{
		Name:        "strict",
		Destination: p,
		Usage:       "fail (exit 4) when the edit list describes more data than the file holds, instead of a warning",
	}
}

// missingWarning is what a file whose edit list describes more data than
// its body holds gets, missing when it does: such files are valid (the
// specification keeps what is there), but whole segments may have been
// lost off the end.
func missingWarning(missing bool) string {
	if !missing {
		return ""
	}
	return "the edit list describes more data than the file holds: decrypted what is there (were whole segments lost in a transfer? --strict makes this an error)"
}

// warnMissing prints missingWarning for the input at path ("" or "-" for
// stdin), unless -q.
func warnMissing(e *env, path string, missing bool) {
	w := missingWarning(missing)
	if w == "" || e.quiet {
		return
	}
	e.warnf("%s: %s", inputName(path), w)
}
