package cli

import (
	"github.com/urfave/cli/v2"

	"github.com/c4gh-go/crypt4gh/internal/outfile"
	"github.com/c4gh-go/crypt4gh/keys"
)

// pubkeyOptions are the flags of pubkey.
type pubkeyOptions struct {
	keyOptions // Sender is not used
	Output     string
	Force      bool
	Quiet      bool
}

func pubkeyCommand(e *env) command {
	o := &pubkeyOptions{}
	return command{Command: &cli.Command{
		Name:      "pubkey",
		Usage:     "print the crypt4gh public key of a secret key",
		UsageText: "crypt4gh pubkey --sk KEY [-o OUT.pub]",
		Description: "Reads a secret key in any supported format (crypt4gh with any KDF, OpenSSH\n" +
			"ed25519 plain or encrypted, PKCS#8 X25519) and writes its X25519 public key in\n" +
			"crypt4gh format, to stdout or to the file of -o (created with mode 0666 minus\n" +
			"the umask). A protected key is unlocked with the passphrase from\n" +
			"--passphrase-file, C4GH_PASSPHRASE or the terminal. \"crypt4gh keygen --derive\"\n" +
			"does the same.",
		Flags: []cli.Flag{
			skFlag(&o.SK),
			passphraseFileFlag(&o.PassphraseFile),
			outputFlag(&o.Output),
			forceFlag(&o.Force),
			quietFlag(&o.Quiet, false),
		},
		Action: func(c *cli.Context) error { return pubkey(e.start(c, o.Quiet, nil), o) },
	}, page: page{
		env:      []string{secretKeyEnv, passphraseEnv},
		examples: []string{"crypt4gh pubkey --sk ~/.ssh/id_ed25519 -o me.pub"},
	}}
}

func pubkey(e *env, o *pubkeyOptions) error {
	if len(e.args) > 0 {
		return usagef("unexpected argument %q", e.args[0])
	}
	if err := outfile.Distinct(e.stdout, []string{"-o", o.Output}, keyInputs(o.keyOptions)); err != nil {
		return err
	}
	out, err := outfile.Open(o.Output, e.stdout, outfile.Options{Force: o.Force, Mode: outfile.ModePublic})
	if err != nil {
		return err
	}
	sk, err := readSecretKey(e, o.keyOptions)
	if err != nil {
		out.Abort()
		return err
	}
	defer sk.Zero()
	_, err = out.Write(keys.MarshalPublicKey(sk.Public()))
	return out.Finish(err)
}
