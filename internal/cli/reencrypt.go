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
			"unchanged. With --header-only, only the new header is written; the input\n" +
			"may be a bare header, as encrypt --header writes it." + rekeyHelp,
		Flags: []cli.Flag{
			skFlag(),
			recipientFlag("re-encrypt for the public key(s) in the file at `PATH` (repeatable)"),
			&cli.BoolFlag{Name: "trim", Aliases: []string{"t"}, Usage: "drop the packets that --sk cannot open"},
			&cli.BoolFlag{Name: "header-only", Usage: "read and write only a header"},
			passphraseFileFlag(), inputFlag(), outputFlag(), forceFlag(), quietFlag(true),
			s3ConfigFlag(),
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
	nh, err := reencrypt.Header(h, sk, recipients, c.Bool("trim"), nil)
	if err != nil {
		return noPacketHint(err, sk, nil)
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
