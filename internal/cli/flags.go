package cli

import (
	"os"

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

// quietFlag is -q; bar says whether the command draws a progress bar.
func quietFlag(bar bool) cli.Flag {
	usage := "no warning about C4GH_PASSPHRASE"
	if bar {
		usage = "no progress bar and no warning about C4GH_PASSPHRASE"
	}
	return &cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: usage}
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
	if c.App.Metadata[filesOnly] == true {
		return nil // after "--", a name that starts with - is a file
	}
	for _, a := range c.Args().Slice() {
		if len(a) > 1 && a[0] == '-' {
			return withHint(usagef("flag %s after the file arguments", a),
				"put the flags first: crypt4gh %s [flags] FILE… (files whose names start with - go after --)",
				c.Command.Name)
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

// checkFlags refuses, before a command runs, flag values that cannot
// mean what the user wants: a --jobs below 1 (leave it out for one per
// CPU); an empty -i, -o or --range (an unset variable: "-o $OUT" would
// write to stdout); a passphrase from stdin when the data comes from
// stdin too.
func checkFlags(c *cli.Context) error {
	if c.IsSet("jobs") && c.Int("jobs") < 1 {
		return usagef("--jobs %d: give 1 or more (leave it out for one per CPU)", c.Int("jobs"))
	}
	for _, name := range []string{"input", "output", "range", "header", "sk", "passphrase-file"} {
		if c.IsSet(name) && c.String(name) == "" && !envSet(c, name) {
			return usagef("--%s is empty", name)
		}
	}
	for _, name := range []string{"passphrase-file", "new-passphrase-file"} {
		switch c.String(name) {
		case "-", "/dev/stdin", "/dev/fd/0":
			if readsStdin(c) {
				return withHint(usagef("--%s %s and the data both come from stdin", name, c.String(name)),
					"give the data with -i PATH, or the passphrase in a file")
			}
		}
	}
	return nil
}

// envSet reports whether the flag name got its value from its variable
// (an empty C4GH_SECRET_KEY means no key, not an error): the variable is
// set, to that value. An empty value given on the command line while the
// variable is set to something else is the command line's.
func envSet(c *cli.Context, name string) bool {
	for _, f := range c.Command.Flags {
		if f.Names()[0] != name {
			continue
		}
		if d, ok := f.(cli.DocGenerationFlag); ok {
			for _, e := range d.GetEnvVars() {
				if v, set := os.LookupEnv(e); set && v == c.String(name) {
					return true
				}
			}
		}
	}
	return false
}
