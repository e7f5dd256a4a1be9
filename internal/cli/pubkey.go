package cli

import (
	"github.com/c4gh-go/crypt4gh/keys"
	"github.com/urfave/cli/v2"
)

func pubkeyCommand() *cli.Command {
	return &cli.Command{
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
			skFlag(),
			passphraseFileFlag(),
			outputFlag(),
			forceFlag(),
			quietFlag(false),
		},
		Action: pubkey,
	}
}

func pubkey(c *cli.Context) error {
	if c.NArg() > 0 {
		return usagef("unexpected argument %q", c.Args().First())
	}
	if err := distinctOutputs([]string{"-o", c.String("output")}, keyInputs(c)); err != nil {
		return err
	}
	out, err := openOutput(c.String("output"), c.App.Writer, outputOptions{force: c.Bool("force"), mode: modePublic})
	if err != nil {
		return err
	}
	sk, err := readSecretKey(c)
	if err != nil {
		out.abort()
		return err
	}
	defer sk.Zero()
	_, err = out.Write(keys.MarshalPublicKey(sk.Public()))
	return out.finish(err)
}
