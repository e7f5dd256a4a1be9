package cli

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

func manCommand() *cli.Command {
	return &cli.Command{
		Name:            "man",
		Usage:           "print the manual page (roff)",
		UsageText:       "crypt4gh man > crypt4gh.1; man ./crypt4gh.1",
		Description:     "Prints the manual page in roff, made from the same text as the help.",
		HideHelpCommand: true,
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("unexpected argument %q", c.Args().First())
			}
			// The app is made for this run only: give it the text that
			// the page has and the help does not.
			if c.App.Description == "" {
				c.App.Description = manDescription
			}
			page, err := c.App.ToManWithSection(1)
			if err != nil {
				return fmt.Errorf("failed to write the manual page: %w", err)
			}
			_, err = fmt.Fprint(c.App.Writer, page)
			return err
		},
	}
}

// manDescription is the DESCRIPTION section of the manual page
// (markdown, rendered by go-md2man).
const manDescription = `crypt4gh encrypts files for named recipients in the GA4GH Crypt4GH format,
decrypts them, and gives them to new recipients without touching the encrypted data.
Every command reads stdin and writes stdout unless -i and -o name files.

Environment: **C4GH_SECRET_KEY** is the default --sk, **C4GH_PUBLIC_KEY** the
default --pk of keygen, **C4GH_PASSPHRASE** the passphrase of the secret key,
**C4GH_NEW_PASSPHRASE** the new passphrase of keygen --convert and --relock.

Exit status: 0 success; 1 I/O and other errors; 2 usage (bad flags, arguments or
ranges, existing output without --force); 3 keys (wrong passphrase, unreadable key,
no header packet for this key); 4 data (not a crypt4gh file, corrupt, truncated or
tampered).

Errors are printed on stderr as one line, "crypt4gh: error: ...", sometimes followed
by "crypt4gh: hint: ...".`
