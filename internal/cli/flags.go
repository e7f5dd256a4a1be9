package cli

import (
	"github.com/urfave/cli/v2"
)

// The flags that several commands share. Each call builds a new flag, so
// that no run sees the values of another (urfave/cli writes the parsed
// values, environment variables included, into the flag).

func skFlag() cli.Flag {
	return &cli.StringFlag{
		Name:    "sk",
		Usage:   "your secret key `PATH` (crypt4gh, OpenSSH ed25519 or PKCS#8 X25519)",
		EnvVars: []string{secretKeyEnv},
	}
}

func passphraseFileFlag() cli.Flag {
	return &cli.StringFlag{
		Name:  "passphrase-file",
		Usage: "read the secret key's passphrase from the first line of `PATH` (- for stdin)",
	}
}

func recipientFlag(usage string) cli.Flag {
	return &cli.StringSliceFlag{
		Name:    "recipient_pk",
		Aliases: []string{"recipient-pk"},
		Usage:   usage,
	}
}

func senderFlag() cli.Flag {
	return &cli.StringFlag{
		Name:    "sender_pk",
		Aliases: []string{"sender-pk"},
		Usage:   "accept only header packets written by the public key at `PATH`",
	}
}

func inputFlag() cli.Flag {
	return &cli.StringFlag{
		Name:    "input",
		Aliases: []string{"i"},
		Usage:   "read from `PATH` instead of stdin",
	}
}

func outputFlag() cli.Flag {
	return &cli.StringFlag{
		Name:    "output",
		Aliases: []string{"o"},
		Usage:   "write to `PATH` instead of stdout (- forces stdout)",
	}
}

func forceFlag() cli.Flag {
	return &cli.BoolFlag{
		Name:    "force",
		Aliases: []string{"f"},
		Usage:   "replace an existing output file",
	}
}

func jobsFlag() cli.Flag {
	return &cli.IntFlag{
		Name:  "jobs",
		Usage: "`N` segments sealed or opened in parallel (default: one per CPU)",
	}
}

func quietFlag() cli.Flag {
	return &cli.BoolFlag{
		Name:    "quiet",
		Aliases: []string{"q"},
		Usage:   "no progress bar and no warning about C4GH_PASSPHRASE",
	}
}

func checksumFlag() cli.Flag {
	return &cli.BoolFlag{
		Name:  "checksum",
		Usage: "print the sha256 of the plaintext and of the encrypted file on stdout, as sha256sum does",
	}
}

// flagsFirst refuses a flag among the FILE arguments: the command-line
// parser stops reading flags at the first argument, so "inspect FILE --sk
// KEY" would otherwise take "--sk" for a file name.
func flagsFirst(c *cli.Context) error {
	for _, a := range c.Args().Slice() {
		if len(a) > 1 && a[0] == '-' {
			return withHint(usagef("flag %s after the file arguments", a),
				"put the flags first: crypt4gh %s [flags] FILE… (a file whose name starts with - can be given as ./%s)",
				c.Command.Name, a)
		}
	}
	return nil
}

// logFlag accepts the reference tool's --log PATH (a Python logging
// configuration file) and C4GH_LOG, so that its command lines keep
// working. The file is not read: messages go to stderr.
func logFlag() cli.Flag {
	return &cli.StringFlag{
		Name:    "log",
		Usage:   "accepted for compatibility with the reference tool; not read",
		EnvVars: []string{"C4GH_LOG"},
		Hidden:  true,
	}
}

// checkJobs refuses a --jobs below 1 that was given: 0 or less would
// mean nothing sensible (leave it out for one per CPU).
func checkJobs(c *cli.Context) error {
	if c.IsSet("jobs") && c.Int("jobs") < 1 {
		return usagef("--jobs %d: give 1 or more (leave it out for one per CPU)", c.Int("jobs"))
	}
	return nil
}
