package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/keys"
	"github.com/c4gh-go/crypt4gh/objstore"
	"github.com/c4gh-go/crypt4gh/reencrypt"
	"github.com/urfave/cli/v2"
)

func reencryptCommand() *cli.Command {
	return &cli.Command{
		Name:  "reencrypt",
		Usage: "give a file to new recipients without touching its body",
		Description: "Every header packet that --sk opens is encrypted again for each --recipient_pk;\n" +
			"packets that --sk cannot open are kept unless --trim. The body is copied\n" +
			"unchanged (its last segment authenticated first). With --header-only, only\n" +
			"the new header is written; the input may be a bare header, as encrypt\n" +
			"--header writes it. With --add, every packet is kept and packets are added\n" +
			"for the recipients who hold none written by --sk. In place, a result that\n" +
			"--sk would no longer open is refused (exit 2) unless --drop-self." + rekeyHelp,
		Flags: []cli.Flag{
			skFlag(),
			recipientFlag("re-encrypt for the public key(s) in the file at `PATH` (repeatable)"),
			&cli.BoolFlag{Name: "trim", Aliases: []string{"t"}, Usage: "drop the packets that --sk cannot open"},
			&cli.BoolFlag{Name: "add", Usage: "keep every packet and add packets for the recipients (give one more reader access)"},
			&cli.BoolFlag{Name: "drop-self", Usage: "in place: allow a result that --sk no longer opens"},
			&cli.BoolFlag{Name: "header-only", Usage: "read and write only a header"},
			passphraseFileFlag(), inputFlag(), outputFlag(), forceFlag(), quietFlag(true),
			s3ConfigFlag(), insecureHTTPFlag(),
		},
		Action: reencryptAction,
	}
}

func reencryptAction(c *cli.Context) error {
	if len(c.StringSlice("recipient_pk")) == 0 {
		return usagef("no recipient: use --recipient_pk PATH")
	}
	if c.NArg() > 0 {
		return reencryptBatch(c)
	}
	if err := distinctOutputs([]string{"-o", c.String("output")}, keyInputs(c)); err != nil {
		return err
	}
	recipients, err := readPublicKeys(c.StringSlice("recipient_pk"))
	if err != nil {
		return err
	}
	in, err := openSource(c, c.String("input"))
	if err != nil {
		return err
	}
	defer in.Close()
	// The body length is checked before anything is written: a body cut
	// inside a segment is a damaged file.
	prog := newProgress(c, in.size(), "reencrypting")
	src := prog.reader(in.Reader) // the *os.File itself: io.Copy to a file is then copy_file_range
	h, err := header.Parse(src)
	if err != nil {
		return err
	}
	if size := in.size(); size >= 0 && !c.Bool("header-only") {
		if _, err := body.PlaintextSize(size); err != nil {
			return fmt.Errorf("body %w", err)
		}
	}
	if in.obj != nil && objstore.IsURL(c.String("output")) && !c.Bool("header-only") {
		return rekeyObject(c, h, in.obj.o, c.String("output"), recipients)
	}
	out, err := openDest(c, c.String("output"), max(in.size(), 0)+headerRoom,
		outputOptions{force: c.Bool("force"), binary: true, mode: modePublic, input: in.file})
	if err != nil {
		return err
	}
	return out.finish(reencryptTo(c, h, in, src, out, recipients))
}

// reencryptTo writes the new header and then the body, unchanged.
func reencryptTo(c *cli.Context, h *header.Header, in *input, src io.Reader, out *output, recipients []keys.PublicKey) error {
	sk, err := readSecretKey(c)
	if err != nil {
		return err
	}
	defer sk.Zero()
	nh, err := newHeader(c, h, sk, recipients, false)
	if err != nil {
		return err
	}
	if _, err := nh.WriteTo(out); err != nil {
		return fmt.Errorf("failed to write header: %w", err)
	}
	if c.Bool("header-only") {
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
		size := in.size()
		if err != nil || size < 0 {
			return fmt.Errorf("failed to read input: %w", err)
		}
		if err := reencrypt.CheckLastSegment(in.file, start, size, h, sk); err != nil {
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
	_, err = reencrypt.CopyBody(out.Writer, src, h, sk)
	return bodyError(err, h.Size(), -1)
}

// bodyError names a failed segment of the body that re-encryption checks,
// in a file of fileSize bytes (-1 when unknown) whose header has
// headerSize.
func bodyError(err error, headerSize, fileSize int64) error {
	var se *body.SegmentError
	if !errors.As(err, &se) {
		return err
	}
	return cutShortHint(fmt.Errorf("body %w (at byte %d of the file)", se, se.Offset(headerSize)), se, headerSize, fileSize)
}

// newHeader is the header that reencrypt writes for h: see
// reencrypt.Rekey, with --trim and --add. In place, a result that sk no
// longer opens is refused unless --drop-self, and nothing to add is
// errNothingToDo; for a new output, nothing to add keeps the header as it
// is.
func newHeader(c *cli.Context, h *header.Header, sk *keys.SecretKey, recipients []keys.PublicKey, inPlace bool) (*header.Header, error) {
	if c.Bool("add") && c.Bool("trim") {
		return nil, usagef("--add keeps every packet: it cannot be used with --trim")
	}
	if !c.Bool("trim") {
		if risky, err := reencrypt.OthersMayHoldEditList(h, sk); err == nil && risky {
			msg := "the file has an edit list and packets that --sk cannot open: a recipient who holds one of those may be left two edit lists, and no reader opens a file with two"
			if inPlace || c.Bool("add") {
				return nil, withHint(usagef("%s", msg), "use --trim (only the recipients can then read the result), or re-encrypt to a new output")
			}
			warnf(c, "%s; --trim drops those packets", msg)
		}
	}
	nh, err := reencrypt.Rekey(h, sk, reencrypt.RekeyOptions{Recipients: recipients, Trim: c.Bool("trim"), Add: c.Bool("add")})
	switch {
	case errors.Is(err, reencrypt.ErrNothingToAdd) && inPlace:
		return nil, errNothingToDo
	case errors.Is(err, reencrypt.ErrNothingToAdd):
		return h, nil
	case err != nil:
		return nil, noPacketHint(err, sk, nil)
	}
	if inPlace && !c.Bool("drop-self") && !opensWith(nh, sk) {
		return nil, withHint(usagef("rekeyed in place, the object would no longer open with --sk %s: the packets of that key would be replaced", quoteName(secretKeyPath(c))),
			"add your own public key with --recipient_pk, use --add to keep every reader, or --drop-self to drop your access")
	}
	return nh, nil
}

// opensWith reports whether sk opens the header h: what an in-place
// rewrite must keep true, unless --drop-self.
func opensWith(h *header.Header, sk *keys.SecretKey) bool {
	contents, err := h.Decrypt(sk, nil)
	if err != nil {
		return false
	}
	contents.Zero()
	return true
}

// errNothingToDo is returned by newHeader when --add finds that every
// recipient can read the file already: the caller says so and succeeds.
var errNothingToDo = errors.New("every recipient can read it already")
