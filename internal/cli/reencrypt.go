package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/internal/batch"
	"github.com/c4gh-go/crypt4gh/internal/outfile"
	"github.com/c4gh-go/crypt4gh/keys"
	"github.com/c4gh-go/crypt4gh/objstore"
	"github.com/c4gh-go/crypt4gh/reencrypt"
	"github.com/urfave/cli/v2"
)

// reencryptOptions are the flags of reencrypt.
type reencryptOptions struct {
	keyOptions
	streamOptions
	store      storeOptions
	scale      scaleOptions
	Recipients cli.StringSlice
	Trim       bool // drop the packets that --sk cannot open
	Add        bool // keep every packet, add the recipients'
	DropSelf   bool // in place: allow a result that --sk no longer opens
	HeaderOnly bool
	// DeletePreviousVersion: in place, in a bucket that keeps versions,
	// delete the version that was rekeyed.
	DeletePreviousVersion bool
	Quiet                 bool
}

func reencryptCommand(e *env) command {
	o := &reencryptOptions{}
	return command{Command: &cli.Command{
		Name:      "reencrypt",
		Usage:     "give a file to new recipients without touching its body",
		ArgsUsage: "[FILE.c4gh…]",
		Description: "Every header packet that --sk opens is encrypted again for each --recipient_pk;\n" +
			"packets that --sk cannot open are kept unless --trim. The body is copied\n" +
			"unchanged (its last segment authenticated first). With --header-only, only\n" +
			"the new header is written; the input may be a bare header, as encrypt\n" +
			"--header writes it. With --add, every packet is kept and packets are added\n" +
			"for the recipients who hold none written by --sk. In place, a result that\n" +
			"--sk would no longer open is refused (exit 2) unless --drop-self. Without --sk,\n" +
			"inside crypt4gh agent, the agent's key is --sk: the agent seals the packets." + rekeyHelp + scaleHelp,
		Flags: slices.Concat([]cli.Flag{
			skFlag(&o.SK),
			recipientFlag(&o.Recipients, "re-encrypt for the public key(s) in the file at `PATH` (repeatable)"),
			&cli.BoolFlag{Name: "trim", Aliases: []string{"t"}, Usage: "drop the packets that --sk cannot open", Destination: &o.Trim},
			&cli.BoolFlag{Name: "add", Usage: "keep every packet and add packets for the recipients (give one more reader access)", Destination: &o.Add},
			dropSelfFlag(&o.DropSelf),
			&cli.BoolFlag{Name: "header-only", Usage: "read and write only a header", Destination: &o.HeaderOnly},
			deletePreviousFlag(&o.DeletePreviousVersion),
			passphraseFileFlag(&o.PassphraseFile),
		}, o.streamOptions.flags(), []cli.Flag{quietFlag(&o.Quiet, true)}, o.store.flags(), o.scale.flags(true)),
		Action: func(c *cli.Context) error { return reencryptAction(e.start(c, o.Quiet, &o.store), o) },
	}, page: page{
		env:      withAWS(secretKeyEnv, passphraseEnv),
		examples: []string{"crypt4gh reencrypt --sk archive.sec --recipient_pk requester.pub -i f.c4gh -o out.c4gh"},
	}}
}

// deletePreviousFlag is --delete-previous-version of reencrypt and splice.
func deletePreviousFlag(p *bool) cli.Flag {
	return &cli.BoolFlag{Name: "delete-previous-version", Destination: p,
		Usage: "in place, in a bucket that keeps versions: delete the version that was replaced (it still opens for the keys removed)"}
}

// dropSelfFlag is --drop-self of reencrypt and splice.
func dropSelfFlag(p *bool) cli.Flag {
	return &cli.BoolFlag{Name: "drop-self", Usage: "in place: allow a result that --sk no longer opens", Destination: p}
}

func reencryptAction(e *env, o *reencryptOptions) error {
	if len(o.Recipients.Value()) == 0 {
		return usagef("no recipient: use --recipient_pk PATH")
	}
	if err := o.scale.check(len(e.args) > 0 || o.scale.batch()); err != nil {
		return err
	}
	if len(e.args) > 0 || o.scale.batch() {
		return reencryptBatch(e, o)
	}
	if err := outfile.Distinct(e.stdout, []string{"-o", o.Output}, keyInputs(o.keyOptions, recipientInputs(o.Recipients.Value())...)); err != nil {
		return err
	}
	recipients, err := readPublicKeys(o.Recipients.Value())
	if err != nil {
		return err
	}
	in, err := e.openSource(o.Input)
	if err != nil {
		return err
	}
	defer in.Close()
	// The body length is checked before anything is written: a body cut
	// inside a segment is a damaged file.
	prog := e.newProgress(in.size(), "reencrypting")
	src := prog.Reader(in.Reader) // the *os.File itself: io.Copy to a file is then copy_file_range
	f, err := reencrypt.ReadFile(src)
	if err != nil {
		return err
	}
	if size := in.size(); size >= 0 && !o.HeaderOnly {
		if _, err := c4gh.PlaintextSize(size); err != nil {
			return fmt.Errorf("body %w", err)
		}
	}
	if in.obj != nil && objstore.IsURL(o.Output) && !o.HeaderOnly {
		return rekeyObject(e, o, f, in.obj.Object(), recipients)
	}
	out, err := e.openDest(o.Output, max(in.size(), 0)+headerRoom,
		outfile.Options{Force: o.Force, Binary: true, Mode: outfile.ModePublic, Input: in.file})
	if err != nil {
		return err
	}
	return out.Finish(reencryptTo(e, o, f, in, src, out, recipients))
}

// reencryptTo writes the new header and then the body, unchanged.
func reencryptTo(e *env, o *reencryptOptions, f *reencrypt.File, in *input, src io.Reader, out *outfile.Output, recipients []keys.PublicKey) error {
	sk, err := readHolderKey(e, o.keyOptions)
	if err != nil {
		return err
	}
	defer sk.Zero()
	if err := rekeyFile(o, f, sk, recipients, false, e.warnf); err != nil {
		return err
	}
	if _, err := f.WriteHeader(out); err != nil {
		return fmt.Errorf("failed to write header: %w", err)
	}
	if o.HeaderOnly {
		return nil
	}
	// The body, unchanged. src is the input *os.File (or stdin; wrapped by
	// the progress counter, whose WriteTo keeps the copy in the kernel)
	// and out.Writer the temporary *os.File: io.Copy hands the copy to the
	// kernel (copy_file_range) when both are regular files. On a pipe the
	// length is checked as it is copied.
	//
	// The last segment is authenticated before it is written: a body cut
	// inside it, at a length that looks right, is refused. From a file it
	// is read first; from a pipe each segment is held until the next.
	if in.regular() {
		start, err := in.file.Seek(0, io.SeekCurrent) // after the header
		if err != nil {
			return fmt.Errorf("failed to read input: %w", err)
		}
		size := in.size()
		if size < 0 {
			// Shorter than where the header ended, or no longer a
			// regular file that fstat answers for.
			return errors.New("failed to read input: it changed while it was read")
		}
		if err := f.CheckLastSegment(in.file, start, size); err != nil {
			return bodyError(err, start, start+size)
		}
		n, err := io.Copy(out.Writer, src)
		if err != nil {
			return fmt.Errorf("failed to copy the body: %w", err)
		}
		if n != size {
			return fmt.Errorf("failed to copy the body: %w: the input changed size while it was copied", io.ErrUnexpectedEOF)
		}
		return nil
	}
	_, err = f.CopyBody(out.Writer, src)
	return bodyError(err, f.HeaderSize(), -1)
}

// reencryptFolder rekeys each FILE argument (a file, an object, the
// objects under a prefix) into the output folder or prefix -o DIR/, under
// its name: a new output each, never the input, as decrypt's batch
// writes them. Objects into a prefix of their store are composed by the
// server, as rekeyObject does.
func reencryptFolder(e *env, r *reencryptOptions) error {
	items, err := batchItems(e, r.Output, e.args, r.scale, isC4gh, intoFolder(r.Output))
	if err != nil {
		return err
	}
	sk, recipients, err := readRekeyKeys(e, r)
	if err != nil {
		return err
	}
	defer sk.Zero()
	b := batchOptions{output: r.Output, force: r.Force, keyFiles: keyInputs(r.keyOptions, recipientInputs(r.Recipients.Value())...),
		scale: r.scale, bind: append(secretNames(sk), publicNames(recipients...)...), rekeyed: true}
	b.between = func(it batchItem, resume bool, begin func() error) batch.Outcome {
		var o batch.Outcome
		o.Err = e.interruptible(it.out, func(ctx context.Context) (err error) {
			o, err = rekeyOne(ctx, e, r, sk, it.in, it.out, recipients, r.Force || resume, func(batch.Written) error { return begin() })
			return err
		})
		if errors.Is(o.Err, errNothingToDo) { // a prefix into itself, with --add
			o.Status, o.Err = "unchanged", nil
		}
		return o
	}
	return runBatch(e, b, items, "reencrypting", outfile.ModePublic, false, func(dst io.Writer, src io.Reader, size int64, _ int) (string, error) {
		f, err := reencrypt.ReadFile(src)
		if err != nil {
			return "", err
		}
		if size >= 0 {
			if _, err := c4gh.PlaintextSize(size - f.HeaderSize()); err != nil {
				return "", fmt.Errorf("body %w", err)
			}
		}
		var warning string
		if err := rekeyFile(r, f, sk, recipients, false, func(format string, a ...any) { warning = fmt.Sprintf(format, a...) }); err != nil {
			return "", err
		}
		if _, err := f.WriteHeader(dst); err != nil {
			return "", fmt.Errorf("failed to write header: %w", err)
		}
		_, err = f.CopyBody(dst, src)
		return warning, bodyError(err, f.HeaderSize(), size)
	})
}

// readRekeyKeys reads the recipients' public keys, then the secret key of
// --sk, which the caller must zero.
func readRekeyKeys(e *env, r *reencryptOptions) (holderKey, []keys.PublicKey, error) {
	recipients, err := readPublicKeys(r.Recipients.Value())
	if err != nil {
		return nil, nil, err
	}
	sk, err := readHolderKey(e, r.keyOptions)
	return sk, recipients, err
}

// bodyError names a failed segment of the body that re-encryption checks,
// in a file of fileSize bytes (-1 when unknown) whose header has
// headerSize.
func bodyError(err error, headerSize, fileSize int64) error {
	var se *c4gh.SegmentError
	if !errors.As(err, &se) {
		return err
	}
	return cutShortHint(fmt.Errorf("body %w (at byte %d of the file)", se, se.Offset(headerSize)), se, headerSize, fileSize)
}

// twoEditLists is what reencrypt says of a file that may leave a
// recipient two edit lists (reencrypt.ErrTwoEditLists).
const twoEditLists = "the file has an edit list and packets that --sk cannot open: a recipient who holds one of those may be left two edit lists, and no reader opens a file with two"

// rekeyFile makes the new header of f for the recipients with --trim,
// --add and --drop-self (see reencrypt.File.Rekey), in the words of the
// command: in place, nothing to add is errNothingToDo. A warning goes to
// warnf, also before an error.
func rekeyFile(o *reencryptOptions, f *reencrypt.File, sk keys.Holder, recipients []keys.PublicKey, inPlace bool, warnf func(string, ...any)) error {
	if o.Add && o.Trim {
		return usagef("--add keeps every packet: it cannot be used with --trim")
	}
	err := f.Rekey(sk, reencrypt.FileOptions{RekeyOptions: reencrypt.RekeyOptions{Recipients: recipients, Trim: o.Trim, Add: o.Add},
		InPlace: inPlace, DropSelf: o.DropSelf})
	if f.Warning() != nil {
		warnf("%s; --trim drops those packets", twoEditLists)
	}
	return rekeyError(o, sk, err, inPlace)
}

// rekeyError says err of reencrypt.File.Rekey in the words of the command.
func rekeyError(o *reencryptOptions, sk keys.Holder, err error, inPlace bool) error {
	switch {
	case errors.Is(err, reencrypt.ErrTwoEditLists) && !inPlace:
		// Refused for --add, which keeps every packet and adds more.
		return withHint(usagef("%s", twoEditLists), "leave out --add (the packets that --sk opens are then replaced, with a warning), or leave it out and use --trim (only the recipients can then read the result)")
	case errors.Is(err, reencrypt.ErrTwoEditLists):
		return withHint(usagef("%s", twoEditLists), "use --trim (only the recipients can then read the result), or re-encrypt to a new output")
	case errors.Is(err, reencrypt.ErrNothingToAdd):
		return errNothingToDo
	case errors.Is(err, reencrypt.ErrLocksOut):
		return withHint(usagef("rekeyed in place, the object would no longer open with %s: the packets of that key would be replaced", keyName(o.keyOptions)),
			"add your own public key with --recipient_pk, use --add to keep every reader, or --drop-self to drop your access")
	case err != nil:
		return noPacketHint(err, sk, nil)
	}
	return nil
}

// errNothingToDo is returned by rekeyFile when --add finds that every
// recipient can read the file already: the caller says so and succeeds.
var errNothingToDo = errors.New("every recipient can read it already")
