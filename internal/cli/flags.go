package cli

import (
	"os"

	"github.com/urfave/cli/v2"

	"github.com/c4gh-go/crypt4gh/internal/clidoc"
)

// The flags that several commands share, and the option groups they are
// parsed into. A command's options struct embeds the groups it offers and
// binds each flag to its field (urfave/cli writes the parsed value, the
// environment variable's included, there): so a helper that takes a group
// gets the values of flags the command has, never a zero value for a
// flag it forgot. Each call builds new flags, so that no run sees the
// values of another.

// keyOptions name the secret key that opens files, and what its
// passphrase and packets must be.
type keyOptions struct {
	SK             string // --sk, or C4GH_SECRET_KEY
	Sender         string // --sender_pk: accept only its packets
	PassphraseFile string // --passphrase-file
}

// streamOptions name a command's one input and one output.
type streamOptions struct {
	Input  string // -i; stdin when empty
	Output string // -o; stdout when empty or "-"
	Force  bool   // replace an existing output
}

// storeOptions configure the object stores of a run.
type storeOptions struct {
	S3Config          string // an s3cmd configuration file
	AllowInsecureHTTP bool   // a plain http:// endpoint off loopback
}

func (s *storeOptions) flags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{
			Name:        "s3-config",
			Usage:       "take the S3 credentials and endpoint from the s3cmd configuration file at `PATH` (default: the AWS environment variables and files)",
			Destination: &s.S3Config,
		},
		&cli.BoolFlag{
			Name:        "allow-insecure-http",
			Usage:       "accept a plain http:// S3 endpoint that is not on this machine (credentials and data cross the network in the clear)",
			Destination: &s.AllowInsecureHTTP,
		},
	}
}

func skFlag(p *string) cli.Flag {
	return &cli.StringFlag{
		Name:        "sk",
		Usage:       "your secret key `PATH` (crypt4gh, OpenSSH ed25519 or PKCS#8 X25519)",
		EnvVars:     []string{secretKeyEnv},
		Destination: p,
	}
}

func passphraseFileFlag(p *string) cli.Flag {
	return &cli.StringFlag{
		Name:        "passphrase-file",
		Usage:       "read the secret key's passphrase from the first line of `PATH` (- for stdin)",
		Destination: p,
	}
}

func recipientFlag(p *cli.StringSlice, usage string) cli.Flag {
	return &cli.StringSliceFlag{
		Name:        "recipient_pk",
		Aliases:     []string{"recipient-pk"},
		Usage:       usage,
		Destination: p,
	}
}

func senderFlag(p *string) cli.Flag {
	return &cli.StringFlag{
		Name:        "sender_pk",
		Aliases:     []string{"sender-pk"},
		Usage:       "accept only header packets written by the public key at `PATH`",
		Destination: p,
	}
}

func inputFlag(p *string) cli.Flag {
	return &cli.StringFlag{
		Name:        "input",
		Aliases:     []string{"i"},
		Usage:       "read from `PATH` instead of stdin",
		Destination: p,
	}
}

func outputFlag(p *string) cli.Flag {
	return &cli.StringFlag{
		Name:        "output",
		Aliases:     []string{"o"},
		Usage:       "write to `PATH` instead of stdout (- forces stdout)",
		Destination: p,
	}
}

func forceFlag(p *bool) cli.Flag {
	return &cli.BoolFlag{
		Name:        "force",
		Aliases:     []string{"f"},
		Usage:       "replace an existing output file",
		Destination: p,
	}
}

// streamFlags are -i, -o and --force.
func (s *streamOptions) flags() []cli.Flag {
	return []cli.Flag{inputFlag(&s.Input), outputFlag(&s.Output), forceFlag(&s.Force)}
}

func jobsFlag(p *int) cli.Flag {
	return &cli.IntFlag{
		Name:        "jobs",
		Usage:       "`N` segments sealed or opened in parallel (default: one per CPU)",
		Destination: p,
	}
}

// quietFlag is -q; bar says whether the command draws a progress bar.
func quietFlag(p *bool, bar bool) cli.Flag {
	usage := "no warning about C4GH_PASSPHRASE"
	if bar {
		usage = "no progress bar and no warning about C4GH_PASSPHRASE"
	}
	return &cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: usage, Destination: p}
}

func checksumFlag(p *bool) cli.Flag {
	return &cli.BoolFlag{
		Name:        "checksum",
		Usage:       "print the sha256 of the plaintext and of the encrypted file on stdout, as sha256sum does",
		Destination: p,
	}
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
	for _, name := range []string{"input", "output", "range", "header", "sk", "passphrase-file", "token-file"} {
		if c.IsSet(name) && c.String(name) == "" && !envSet(c, name) {
			return usagef("--%s is empty", name)
		}
	}
	for _, name := range []string{"passphrase-file", "new-passphrase-file"} {
		switch c.String(name) {
		case "-", "/dev/stdin", "/dev/fd/0":
			if readsStdin(c.Command.Name, c.Args().Slice(), c.String("input")) {
				return withHint(usagef("--%s %s and the data both come from stdin", name, c.String(name)),
					"give the data with -i PATH, or the passphrase in a file")
			}
		}
	}
	return nil
}

// keepNames makes the flags of cmd answer Names from a list made once
// (clidoc.Names), from its Before, which it runs first, to its Action.
// urfave/cli works a flag's names out with a regular expression each
// time it asks, and between the two it asks every flag, before each flag
// it looks up, for each one it checks to run its action: about a thousand
// times for a command of 40 flags, 0.2 ms of a new process
// (docs/performance.md, Regions). The Action gets the flags as they were:
// the pages of help, the manual and completion want them so.
func keepNames(cmd *cli.Command) {
	before, action := cmd.Before, cmd.Action
	if action == nil {
		return // urfave/cli shows the help, which wants the flags as they are
	}
	var flags []cli.Flag // as urfave/cli left them (it adds --help)
	cmd.Before = func(c *cli.Context) error {
		flags = cmd.Flags
		named := make([]cli.Flag, len(flags))
		for i, f := range flags {
			named[i] = &parsedFlag{f, clidoc.Names(f)}
		}
		cmd.Flags = named
		if before == nil {
			return nil
		}
		err := before(c)
		if err != nil {
			cmd.Flags = flags // no action follows
		}
		return err
	}
	cmd.Action = func(c *cli.Context) error {
		cmd.Flags = flags
		return action(c)
	}
}

// parsedFlag is a flag of a parsed command line that answers Names from
// names, and the rest as Flag would. No flag of a command has an action
// of its own; were one given, it would still run.
type parsedFlag struct {
	cli.Flag
	names []string
}

func (f *parsedFlag) Names() []string { return f.names }

func (f *parsedFlag) RunAction(c *cli.Context) error {
	if a, ok := f.Flag.(cli.ActionableFlag); ok {
		return a.RunAction(c)
	}
	return nil
}

// unwrap returns the flag that f wraps, if it is a parsedFlag.
func unwrap(f cli.Flag) cli.Flag {
	if p, ok := f.(*parsedFlag); ok {
		return p.Flag
	}
	return f
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
		if d, ok := unwrap(f).(cli.DocGenerationFlag); ok {
			for _, e := range d.GetEnvVars() {
				if v, set := os.LookupEnv(e); set && v == c.String(name) {
					return true
				}
			}
		}
	}
	return false
}
