package cli

import (
	"fmt"
	"runtime/debug"

	"github.com/urfave/cli/v2"

	"github.com/c4gh-go/crypt4gh/internal/clidoc"
)

func manCommand(e *env) command {
	return command{Command: &cli.Command{
		Name:      "man",
		Usage:     "print the manual page (roff)",
		UsageText: "crypt4gh man > crypt4gh.1; man -l crypt4gh.1",
		Description: "Prints the manual page in roff: every command with its flags, the\n" +
			"environment, the exit status and the files, from the same text as the help.",
		Action: func(c *cli.Context) error {
			e := e.start(c, false, nil)
			if len(e.args) > 0 {
				return usagef("unexpected argument %q", e.args[0])
			}
			_, err := fmt.Fprint(e.stdout, doc().ManPage(c.App))
			return err
		},
	}, page: page{
		examples: []string{"crypt4gh man > crypt4gh.1 && man -l crypt4gh.1"},
	}}
}

// manFiles are the FILES of the manual page.
var manFiles = []clidoc.Entry{
	{Name: "~/.c4gh/key", Doc: "the secret key that keygen writes when neither --sk nor C4GH_SECRET_KEY is given (mode 0600)"},
	{Name: "~/.c4gh/key.pub", Doc: "its public key"},
	{Name: ".NAME.partial-XXXXXXXXXXXXXXXX", Doc: "the temporary file of an output NAME, in its folder, until it is complete; removed on failure and on every signal that can be caught"},
	{Name: ".NAME.c4gh-resume", Doc: "decrypt --continue: the plaintext written so far of the download to NAME (mode 0600), kept when the run fails or is interrupted; it becomes NAME when the download is complete"},
	{Name: ".NAME.c4gh-resume.json", Doc: "decrypt --continue: the record of that download (the object, its ETag and size, how much was written)"},
	{Name: "~/.aws/credentials, ~/.aws/config", Doc: "s3:// paths: the AWS credentials and profiles, unless --s3-config names an s3cmd file; see AWS_SHARED_CREDENTIALS_FILE and AWS_PROFILE"},
}

// manDescription is the DESCRIPTION section of the manual page.
const manDescription = `crypt4gh encrypts files for named recipients in the GA4GH Crypt4GH format, decrypts them, gives them to new recipients and cuts ranges out of them without touching the encrypted data, checks them, and shows a folder of them decrypted as a read-only file system. It reads and writes the same files, keys, flags and variables as the reference Python tool.

Every command reads stdin and writes stdout unless -i and -o name files. A file is written under a temporary name in its folder and committed only when complete: an existing file is never replaced without --force, a failed command leaves nothing behind. Binary output is not written to a terminal unless asked with -o -.

Every command also accepts the reference tool's --log PATH (or C4GH_LOG), a logging configuration, and does not read it: messages go to stderr.

Errors are printed on stderr as one line, "crypt4gh: error: ...", sometimes followed by "crypt4gh: hint: ...".`

// manDate is the date of the page: the time of the commit the binary was
// built from, when the build recorded it.
func manDate() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.time" && len(s.Value) >= 10 {
				return s.Value[:10]
			}
		}
	}
	return "2026-12-01"
}

// manBlockWidth is the width that a line of a no-fill block may take in
// the page at 80 columns: the text is indented by 8, and 2 are kept free.
// An example, indented once more, gets manExampleWidth.
const (
	manBlockWidth   = 70
	manExampleWidth = 63
)
