package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/internal/outfile"
	"github.com/c4gh-go/crypt4gh/reencrypt"
	"github.com/urfave/cli/v2"
)

// spliceOptions are the flags of rearrange and splice.
type spliceOptions struct {
	keyOptions
	streamOptions
	store      storeOptions
	region     regionOptions   // splice's regions, instead of ranges
	Range      string          // rearrange's one range
	Ranges     cli.StringSlice // splice's ranges
	Recipients cli.StringSlice
	DropSelf   bool
	// DeletePreviousVersion: in place, in a bucket that keeps versions,
	// delete the version that was cut.
	DeletePreviousVersion bool
	Quiet                 bool
	scale                 scaleOptions
	// key is the secret key of a batch, read once for all its files.
	key holderKey
	// below, in a batch into a local folder, is that folder (-o DIR/),
	// and folders holds the folders of its outputs (outfile.Folders).
	below   string
	folders *outfile.Folders
	// mark, in a batch with a journal, is the output's mark, and
	// replaceMarked that of a killed run's output that it may replace
	// (outfile.Options.Mark, ReplaceMarked).
	mark, replaceMarked string
}

// outputOptions is opts for the output of o: in a batch into a local
// folder, made in its folder held open, as the other batches' outputs,
// and marked for its journal.
func (o *spliceOptions) outputOptions(opts outfile.Options) outfile.Options {
	if o.below != "" {
		opts.Beneath, opts.Folders = o.below, o.folders
	}
	opts.Mark, opts.ReplaceMarked = o.mark, o.replaceMarked
	return opts
}

// secretKey is the secret key of --sk: the batch's, or read for this run.
// The caller calls done once it no longer needs it.
func (o *spliceOptions) secretKey(e *env) (sk holderKey, done func(), err error) {
	if o.key != nil {
		return o.key, func() {}, nil
	}
	if sk, err = readHolderKey(e, o.keyOptions); err != nil {
		return nil, nil, err
	}
	return sk, sk.Zero, nil
}

// flags are the flags that rearrange and splice share, around theirs.
func (o *spliceOptions) flags(own ...cli.Flag) []cli.Flag {
	return slices.Concat([]cli.Flag{skFlag(&o.SK)}, own, []cli.Flag{passphraseFileFlag(&o.PassphraseFile)},
		o.streamOptions.flags(), []cli.Flag{quietFlag(&o.Quiet, false)}, o.scale.flags(true), o.store.flags())
}

func rearrangeCommand(e *env) command {
	o := &spliceOptions{}
	return command{Command: &cli.Command{
		Name:      "rearrange",
		ArgsUsage: "[FILE.c4gh…]",
		Usage:     "keep one range of a file, for your own key, without decrypting the body",
		Description: "Writes a file that stands for bytes [START, END) of the input: a header with the\n" +
			"data keys and (unless the range is whole segments) an edit list, encrypted for\n" +
			"the public key of --sk, and the segments that the range touches, copied\n" +
			"unchanged. From a pipe, the segments before the range are read and dropped,\n" +
			"the others held in a temporary file. Without --sk, inside crypt4gh agent, the\n" +
			"agent's key is --sk: the agent seals the packets." + spliceObjectsHelp + spliceBatchHelp,
		Flags: o.flags(rangeFlag(&o.Range, "the bytes to keep: `START-END` (END excluded) or START (required)"), deletePreviousFlag(&o.DeletePreviousVersion)),
		Action: func(c *cli.Context) error {
			if o.Range == "" {
				return usagef("no range: use --range START-END or --range START")
			}
			return o.run(e.start(c, o.Quiet, &o.store), func(e *env, o *spliceOptions) error {
				return splice(e, o, []string{o.Range}, nil)
			})
		},
	}, page: page{
		env: withAWS(secretKeyEnv, passphraseEnv),
		examples: []string{
			"crypt4gh rearrange --sk me.sec --range 70000-140000 -i f.c4gh -o part.c4gh",
			"crypt4gh rearrange --sk me.sec --range 0-65536 -o heads/ --files-from list --journal j",
		},
	}}
}

func spliceCommand(e *env) command {
	o := &spliceOptions{}
	return command{Command: &cli.Command{
		Name:      "splice",
		ArgsUsage: "[FILE.c4gh…]",
		Usage:     "keep several ranges of a file in one output, for new recipients, without decrypting the body",
		Description: "Like rearrange, for several ranges at once: the output stands for the ranges\n" +
			"in increasing order, overlapping or adjacent ranges merged. The header is\n" +
			"for the --recipient_pk keys, or for the public key of --sk when none is given\n" +
			"(inside crypt4gh agent, without --sk, the agent's key, which seals it).\n\n" +
			"With --region (BAM, CRAM, VCF.gz, BCF; see decrypt), the output holds the\n" +
			"file's header, the regions' records and its end marker: the segments that\n" +
			"hold them copied as they are, the blocks cut at a region's edge compressed\n" +
			"again in new segments, so that the recipient decrypts a valid file.\n\n" +
			"The recipient gets the file's data key: every byte of the copied segments\n" +
			"(more than the ranges or regions), and all of the file if they ever get its\n" +
			"ciphertext. To give out only a part for good, decrypt it and encrypt that." + spliceObjectsHelp + spliceBatchHelp,
		Flags: o.flags(slices.Concat([]cli.Flag{
			&cli.StringSliceFlag{Name: "range", Usage: "a range to keep: `START-END` (END excluded) or START (repeatable; or --region)", Destination: &o.Ranges},
		}, o.region.flags(), []cli.Flag{
			recipientFlag(&o.Recipients, "write the header for the public key(s) in the file at `PATH` (repeatable)"),
			dropSelfFlag(&o.DropSelf), deletePreviousFlag(&o.DeletePreviousVersion),
		})...),
		Action: func(c *cli.Context) error {
			e := e.start(c, o.Quiet, &o.store)
			if err := o.region.check(); err != nil {
				return err
			}
			switch {
			case o.region.given() && len(o.Ranges.Value()) > 0:
				return usagef("--range and --region cannot be used together")
			case o.region.given():
				return o.run(e, spliceRegions)
			case len(o.Ranges.Value()) == 0:
				return usagef("no range: use --range START-END or --range START (repeatable), or --region")
			}
			return o.run(e, func(e *env, o *spliceOptions) error { return splice(e, o, o.Ranges.Value(), o.Recipients.Value()) })
		},
	}, page: page{
		env: withAWS(secretKeyEnv, passphraseEnv),
		examples: []string{
			"crypt4gh splice --sk archive.sec --region chr20:1-100000 --recipient_pk requester.pub -i reads.bam.c4gh -o chr20.bam.c4gh",
			"crypt4gh splice --sk archive.sec --range 0-5000 --range 1000000-2000000 --recipient_pk requester.pub -i f.c4gh -o slice.c4gh",
		},
	}}
}

// run runs one of rearrange and splice: on -i and -o, or on each FILE
// argument (and --files-from) into the folder -o.
func (o *spliceOptions) run(e *env, one func(*env, *spliceOptions) error) error {
	files, err := batchArgs(e, o.streamOptions, o.scale)
	if err != nil {
		return err
	}
	if files != nil || o.scale.batch() {
		return spliceBatch(e, o, files, one)
	}
	return one(e, o)
}

// spliceRegions is splice --region: see spliceRegion.
func spliceRegions(e *env, o *spliceOptions) error {
	if err := outfile.Distinct(e.stdout, []string{"-o", o.Output}, keyInputs(o.keyOptions, recipientInputs(o.Recipients.Value())...)); err != nil {
		return err
	}
	recipients, err := readPublicKeys(o.Recipients.Value())
	if err != nil {
		return err
	}
	return spliceRegion(e, o, recipients)
}

func splice(e *env, o *spliceOptions, rangeArgs, recipientPaths []string) error {
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
	if err := outfile.Distinct(e.stdout, []string{"-o", o.Output}, keyInputs(o.keyOptions, recipientInputs(recipientPaths)...)); err != nil {
		return err
	}
	in, err := e.openSource(o.Input)
	if err != nil {
		return err
	}
	defer in.Close()
	if in.obj != nil {
		return spliceObject(e, o, in.obj, reencrypt.SpliceOptions{Recipients: recipients, Ranges: ranges})
	}
	out, err := e.openDest(o.Output, max(in.size(), 0)+headerRoom,
		o.outputOptions(outfile.Options{Force: o.Force, Binary: true, Mode: outfile.ModePublic, Input: in.file}))
	if err != nil {
		return err
	}
	sk, done, err := o.secretKey(e)
	if err != nil {
		out.Abort()
		return err
	}
	defer done()
	opts := reencrypt.SpliceOptions{Reader: sk, Recipients: recipients, Ranges: ranges}
	if !in.regular() {
		// From a pipe, as the reference tool does: the segments before
		// the first one that a range needs are dropped, the others held
		// in a temporary file (ciphertext only) beside the output.
		dir := os.TempDir()
		if out.Final() != "" {
			dir = filepath.Dir(out.Final())
		}
		var spool *os.File
		err = reencrypt.SpliceStream(out.Writer, in, func() (reencrypt.Spool, error) {
			f, err := outfile.CreateTemp(filepath.Join(dir, "crypt4gh-spool"), outfile.ModeSecret)
			if err != nil {
				return nil, fmt.Errorf("failed to create a temporary file for the input in %s: %w", quoteName(dir), pathErr(err))
			}
			spool = f
			return f, nil
		}, opts)
		if spool != nil {
			spool.Close()
			os.Remove(spool.Name())
			outfile.Signals.Forget(spool.Name())
		}
		return out.Finish(noPacketHint(err, sk, nil))
	}
	// out.Writer is the temporary *os.File (or stdout) and in.file an
	// *os.File: Splice copies the segments with io.CopyN between them, which
	// the kernel does with copy_file_range for a file output.
	err = reencrypt.Splice(out.Writer, in.file, opts)
	return out.Finish(noPacketHint(err, sk, nil))
}
