package cli

import (
	"bufio"
	"fmt"
	"io"

	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/keys"
	"github.com/urfave/cli/v2"
)

// catOptions are the flags of cat.
type catOptions struct {
	keyOptions
	store  storeOptions
	Jobs   int
	Quiet  bool
	Strict bool
}

func catCommand(e *env) command {
	o := &catOptions{}
	return command{Command: &cli.Command{
		Name:      "cat",
		Usage:     "decrypt files to stdout, one after the other",
		ArgsUsage: "[FILE.c4gh…]",
		Description: "Decrypts each FILE.c4gh (stdin when there is none, or for \"-\") with --sk\n" +
			"and writes the plaintexts that they stand for to stdout, in order, as zcat\n" +
			"does for gzip files: crypt4gh cat part1.c4gh part2.c4gh | samtools view -.\n" +
			"The secret key is read once. The first file that fails stops the command\n" +
			"(what came before it has been written), with an error that names it." +
			objectHelp("FILE"),
		Flags: append([]cli.Flag{
			skFlag(&o.SK), senderFlag(&o.Sender), passphraseFileFlag(&o.PassphraseFile), jobsFlag(&o.Jobs),
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no warning about C4GH_PASSPHRASE or edit lists", Destination: &o.Quiet},
			strictFlag(&o.Strict),
		}, o.store.flags()...),
		Action: func(c *cli.Context) error { return catFiles(e.start(c, o.Quiet, &o.store), o) },
	}, page: page{
		env:      withAWS(secretKeyEnv, passphraseEnv),
		examples: []string{"crypt4gh cat --sk bob.sec part1.bam.c4gh part2.bam.c4gh | samtools view -"},
	}}
}

func catFiles(e *env, o *catOptions) error {
	if err := e.flagsFirst(); err != nil {
		return err
	}
	paths := e.args
	if len(paths) == 0 {
		paths = []string{"-"}
	}
	stdin := 0
	for _, p := range paths {
		if p == "-" {
			stdin++
		}
	}
	if stdin > 1 {
		return usagef("stdin (-) given %d times", stdin)
	}
	var (
		sk   readerKey
		opts *c4gh.DecryptOptions
	)
	for _, path := range paths {
		name := inputName(path)
		in, err := e.openSource(path)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		src := bufio.NewReaderSize(in, 64<<10)
		if err := c4gh.CheckMagic(src); err != nil {
			in.Close()
			return fmt.Errorf("%s: %w", name, err)
		}
		if sk == nil {
			// The key, and its passphrase, once the first input is
			// known to start like a crypt4gh file.
			var sender *keys.PublicKey
			if sk, sender, err = readReaderKeys(e, o.keyOptions); err != nil {
				in.Close()
				return err
			}
			defer sk.Zero()
			opts = &c4gh.DecryptOptions{Sender: sender, Jobs: o.Jobs, Strict: o.Strict}
		}
		err = catOne(e, path, src, in.size(), sk, opts)
		in.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// catOne writes the plaintext of the file read from src to stdout.
// size is the file's, -1 when unknown.
func catOne(e *env, path string, src io.Reader, size int64, sk keys.Opener, opts *c4gh.DecryptOptions) error {
	r, err := c4gh.NewReader(src, sk, opts)
	if err != nil {
		return noPacketHint(err, sk, opts.Sender)
	}
	defer r.Close()
	if _, err := r.WriteTo(e.stdout); err != nil {
		return decryptError(err, r.HeaderSize(), size)
	}
	warnMissing(e, path, r.Missing())
	return nil
}
