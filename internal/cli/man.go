package cli

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/c4gh-go/crypt4gh/internal/textfmt"
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
			_, err := fmt.Fprint(e.stdout, manPage(c.App))
			return err
		},
	}, page: page{
		examples: []string{"crypt4gh man > crypt4gh.1 && man -l crypt4gh.1"},
	}}
}

// manPage renders the whole manual page.
func manPage(app *cli.App) string {
	var b strings.Builder
	b.WriteString(".TH CRYPT4GH 1 " + manDate() + " \"crypt4gh " + textfmt.Roff(version()) + "\" \"User Commands\"\n")
	b.WriteString(".SH NAME\ncrypt4gh \\- " + textfmt.Roff(app.Usage) + "\n")
	b.WriteString(".SH SYNOPSIS\n")
	first := true
	for _, c := range app.VisibleCommands() {
		if c.Name == "help" {
			continue
		}
		for _, line := range strings.Split(usageLine(c), "\n") {
			if !first {
				b.WriteString(".PP\n")
			}
			first = false
			b.WriteString(".B " + textfmt.Roff(line) + "\n")
		}
	}
	b.WriteString(".SH DESCRIPTION\n")
	b.WriteString(strings.TrimPrefix(textfmt.RoffParagraphs(manDescription, manBlockWidth), ".PP\n"))
	b.WriteString(".SH COMMANDS\n")
	for _, c := range app.VisibleCommands() {
		if c.Name == "help" {
			continue
		}
		b.WriteString(".SS " + textfmt.Roff(c.Name) + "\n")
		b.WriteString(textfmt.Roff(textfmt.Capitalize(c.Usage)) + ".\n")
		if c.Description != "" {
			b.WriteString(textfmt.RoffParagraphs(c.Description, manBlockWidth))
		}
		for _, f := range visibleFlags(c) {
			if f.names[0] == "help" {
				continue
			}
			b.WriteString(".TP\n.B " + textfmt.Roff(strings.TrimSpace(f.left)) + "\n" + textfmt.Roff(f.usage) + "\n")
		}
		for _, e := range pages()[c.Name].examples {
			b.WriteString(".PP\nExample:\n.PP\n.RS\n.nf\n" + textfmt.Roff(strings.Join(textfmt.ShellLines(e, manExampleWidth), "\n")) + "\n.fi\n.RE\n")
		}
	}
	b.WriteString(".SH ENVIRONMENT\n")
	for _, e := range envDoc {
		b.WriteString(".TP\n.B " + e.name + "\n" + textfmt.Roff(e.doc) + "\n")
	}
	b.WriteString(".SH EXIT STATUS\n")
	for _, e := range exitCodes {
		b.WriteString(fmt.Sprintf(".TP\n.B %d\n%s\n", e.code, textfmt.Roff(e.doc)))
	}
	b.WriteString(".SH FILES\n" +
		".TP\n.I ~/.c4gh/key\n" + textfmt.Roff("the secret key that keygen writes when neither --sk nor C4GH_SECRET_KEY is given (mode 0600)") + "\n" +
		".TP\n.I ~/.c4gh/key.pub\n" + textfmt.Roff("its public key") + "\n" +
		".TP\n.I .NAME.partial-XXXXXXXXXXXXXXXX\n" + textfmt.Roff("the temporary file of an output NAME, in its folder, until it is complete; removed on failure and on every signal that can be caught") + "\n" +
		".TP\n.I .NAME.c4gh-resume\n" + textfmt.Roff("decrypt --continue: the plaintext written so far of the download to NAME (mode 0600), kept when the run fails or is interrupted; it becomes NAME when the download is complete") + "\n" +
		".TP\n.I .NAME.c4gh-resume.json\n" + textfmt.Roff("decrypt --continue: the record of that download (the object, its ETag and size, how much was written)") + "\n" +
		".TP\n.I ~/.aws/credentials, ~/.aws/config\n" + textfmt.Roff("s3:// paths: the AWS credentials and profiles, unless --s3-config names an s3cmd file; see AWS_SHARED_CREDENTIALS_FILE and AWS_PROFILE") + "\n")
	b.WriteString(".SH SEE ALSO\n" + textfmt.Roff("The GA4GH Crypt4GH specification: https://samtools.github.io/hts-specs/crypt4gh.pdf") + "\n")
	return b.String()
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
