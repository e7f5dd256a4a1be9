package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"

	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/internal/batch"
	"github.com/c4gh-go/crypt4gh/internal/outfile"
	"github.com/c4gh-go/crypt4gh/objstore"
)

// Batch form of rearrange and splice: the same ranges (or regions) kept
// of each input, "crypt4gh rearrange --sk K --range 0-1000 -o DIR/
// FILE.c4gh…". Each output goes into the output folder under the name of
// its input (both are crypt4gh files); the secret key is read once.

// spliceBatchHelp is the paragraph of their descriptions about batches.
const spliceBatchHelp = "\n\n" +
	"Given FILE arguments (or --files-from), each FILE is cut the same way into\n" +
	"-o DIR/ under its own name, the key read once." + scaleHelp

// spliceBatch runs one of rearrange or splice (run, on the input and
// output of its options) on each of files, into the output folder -o.
func spliceBatch(e *env, o *spliceOptions, files []string, run func(*env, *spliceOptions) error) error {
	if !isOutputFolder(o.Output) {
		return withHint(usagef("a batch of %s writes its outputs into a folder", e.command),
			"use -o DIR/: each output takes the name of its input")
	}
	list, err := batchItems(e, o.Output, files, o.scale, isC4gh, intoFolder(o.Output))
	if err != nil {
		return err
	}
	recipients, err := readPublicKeys(o.Recipients.Value())
	if err != nil {
		return err
	}
	sk, err := readHolderKey(e, o.keyOptions)
	if err != nil {
		return err
	}
	defer sk.Zero()
	o.key = sk
	var cut []string
	if o.scale.Journal != "" {
		if cut, err = o.cut(); err != nil {
			return err
		}
	}
	r, closeJournal, err := o.scale.runner(e, append(secretNames(sk), publicNames(recipients...)...), cut...)
	if err != nil {
		return err
	}
	defer closeJournal()
	r.Workers = c4gh.Jobs(0)
	folders := &outfile.Folders{}
	defer folders.Close()
	sums := o.scale.JSON || o.scale.Journal != ""
	r.Do = func(it batch.Item, resume bool, begin func() error) batch.Outcome {
		fail := func(err error) batch.Outcome { return batch.Outcome{Err: err} }
		local := !objstore.IsURL(it.Out)
		if it.Out == it.In || local && outfile.SameFile(it.In, it.Out) {
			return fail(usagef("it would be written to itself (%s)", quoteName(it.Out)))
		}
		below, err := e.makeOutputFolder(o.Output, it.Out, outfile.ModePublic)
		if err != nil {
			return fail(err)
		}
		src, err := e.identify(it.In)
		if err != nil {
			return fail(err)
		}
		force, replace := o.Force, ""
		if resume && local {
			if err := outfile.RemovePartials(it.Out); err != nil {
				return fail(fmt.Errorf("failed to remove what a killed run left: %w", pathErr(err)))
			}
			replace = it.Killed // the killed run's output, and no other file
		} else if resume {
			force = true // an object: the uploads keep their own records
		}
		// Started in the journal before anything is made, unless the
		// output exists already: it is not this run's then (and is
		// refused without --force).
		if _, err := os.Lstat(it.Out); !local || force || err != nil || killedRunsOutput(it.Out, replace) {
			if err := begin(); err != nil {
				return fail(err)
			}
		}
		one := *o
		one.Input, one.Output, one.Force, one.mark, one.replaceMarked = it.In, it.Out, force, it.Mark, replace
		if below {
			one.below, one.folders = o.Output, folders
		}
		if err := run(e, &one); err != nil {
			return fail(err)
		}
		out := batch.Outcome{BytesRead: src.Size, SourceSize: src.Size, ETag: src.ETag, SourceMtime: src.ModTime}
		id, err := e.identify(it.Out)
		if err == nil && sums {
			// The sum of what was written, read back: a cut is small
			// next to its input, and an object's is composed by the store.
			out.OutSHA256, err = e.sum(it.Out)
			out.CryptSHA256 = out.OutSHA256
		}
		if err != nil {
			return fail(fmt.Errorf("failed to read the output written: %w", err))
		}
		out.BytesOut = id.Size
		return out
	}
	items := func(yield func(batch.Item) bool) {
		for it := range list.seq() {
			if !yield(batch.Item{In: it.in, Out: it.out, Err: it.err, Listed: it.listed}) {
				return
			}
		}
	}
	s, err := r.Run(items)
	if err != nil {
		return err
	}
	return summarize(e, s, o.scale.used())
}

// cut is what a batch of o keeps of each input, which binds its journal:
// the ranges or the regions in order, the regions file by its sha256 (a
// file of the same name may hold others), and --drop-self.
func (o *spliceOptions) cut() ([]string, error) {
	var cut []string
	if o.Range != "" {
		cut = append(cut, "range "+o.Range)
	}
	for _, r := range o.Ranges.Value() {
		cut = append(cut, "range "+r)
	}
	for _, r := range o.region.Regions.Value() {
		cut = append(cut, "region "+r)
	}
	if o.region.RegionsFile != "" {
		b, err := o.region.bedFile()
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(b)
		cut = append(cut, "regions-file sha256:"+hex.EncodeToString(sum[:]))
	}
	if o.DropSelf {
		cut = append(cut, "drop-self")
	}
	return cut, nil
}

// intoFolder maps each source to the same name in the output folder dir,
// for the batches whose outputs are crypt4gh files as their inputs are.
func intoFolder(dir string) func(source, bool) (batchItem, bool) {
	return func(src source, _ bool) (batchItem, bool) {
		it := batchItem{in: src.In, err: src.Err, listed: src.Listed}
		if it.err == nil {
			it.out, it.err = inFolder(dir, src.Rel)
		}
		return it, true
	}
}
