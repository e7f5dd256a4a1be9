package cli

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v2"
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
	b.WriteString(".TH CRYPT4GH 1 " + manDate() + " \"crypt4gh " + roff(version()) + "\" \"User Commands\"\n")
	b.WriteString(".SH NAME\ncrypt4gh \\- " + roff(app.Usage) + "\n")
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
			b.WriteString(".B " + roff(line) + "\n")
		}
	}
	b.WriteString(".SH DESCRIPTION\n")
	b.WriteString(strings.TrimPrefix(roffParagraphs(manDescription), ".PP\n"))
	b.WriteString(".SH COMMANDS\n")
	for _, c := range app.VisibleCommands() {
		if c.Name == "help" {
			continue
		}
		b.WriteString(".SS " + roff(c.Name) + "\n")
		b.WriteString(roff(capitalize(c.Usage)) + ".\n")
		if c.Description != "" {
			b.WriteString(roffParagraphs(c.Description))
		}
		for _, f := range visibleFlags(c) {
			if f.names[0] == "help" {
				continue
			}
			b.WriteString(".TP\n.B " + roff(strings.TrimSpace(f.left)) + "\n" + roff(f.usage) + "\n")
		}
		for _, e := range pages()[c.Name].examples {
			b.WriteString(".PP\nExample:\n.PP\n.RS\n.nf\n" + roff(strings.Join(shellLines(e, manExampleWidth), "\n")) + "\n.fi\n.RE\n")
		}
	}
	b.WriteString(".SH ENVIRONMENT\n")
	for _, e := range envDoc {
		b.WriteString(".TP\n.B " + e.name + "\n" + roff(e.doc) + "\n")
	}
	b.WriteString(".SH EXIT STATUS\n")
	for _, e := range exitCodes {
		b.WriteString(fmt.Sprintf(".TP\n.B %d\n%s\n", e.code, roff(e.doc)))
	}
	b.WriteString(".SH FILES\n" +
		".TP\n.I ~/.c4gh/key\n" + roff("the secret key that keygen writes when neither --sk nor C4GH_SECRET_KEY is given (mode 0600)") + "\n" +
		".TP\n.I ~/.c4gh/key.pub\n" + roff("its public key") + "\n" +
		".TP\n.I .NAME.partial-XXXXXXXXXXXXXXXX\n" + roff("the temporary file of an output NAME, in its folder, until it is complete; removed on failure and on every signal that can be caught") + "\n" +
		".TP\n.I .NAME.c4gh-resume\n" + roff("decrypt --continue: the plaintext written so far of the download to NAME (mode 0600), kept when the run fails or is interrupted; it becomes NAME when the download is complete") + "\n" +
		".TP\n.I .NAME.c4gh-resume.json\n" + roff("decrypt --continue: the record of that download (the object, its ETag and size, how much was written)") + "\n" +
		".TP\n.I ~/.aws/credentials, ~/.aws/config\n" + roff("s3:// paths: the AWS credentials and profiles, unless --s3-config names an s3cmd file; see AWS_SHARED_CREDENTIALS_FILE and AWS_PROFILE") + "\n")
	b.WriteString(".SH SEE ALSO\n" + roff("The GA4GH Crypt4GH specification: https://samtools.github.io/hts-specs/crypt4gh.pdf") + "\n")
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

// roff escapes text for the body of a man page: backslashes, hyphens
// (which man prints as minus signs in options), characters outside ASCII,
// and a dot or quote that would start a request.
func roff(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	var ascii strings.Builder
	for _, r := range s {
		if r < 0x80 {
			ascii.WriteRune(r)
		} else {
			fmt.Fprintf(&ascii, `\[u%04X]`, r)
		}
	}
	s = ascii.String()
	var b strings.Builder
	for i, line := range strings.Split(s, "\n") {
		if i > 0 {
			b.WriteString("\n")
		}
		if strings.HasPrefix(line, ".") || strings.HasPrefix(line, "'") {
			b.WriteString(`\&`)
		}
		b.WriteString(line)
	}
	return b.String()
}

// roffParagraphs renders a description: paragraphs as .PP, and indented
// lines (a list, commands) as a block laid out again for the page.
func roffParagraphs(text string) string {
	var b strings.Builder
	for _, para := range strings.Split(strings.TrimSpace(text), "\n\n") {
		b.WriteString(".PP\n")
		var run, block []string
		flush := func() {
			if len(run) > 0 {
				b.WriteString(roff(strings.Join(run, " ")) + "\n")
				run = nil
			}
			if len(block) > 0 {
				b.WriteString(".nf\n" + roff(strings.Join(refit(block, manBlockWidth), "\n")) + "\n.fi\n")
				block = nil
			}
		}
		for _, line := range strings.Split(para, "\n") {
			if strings.HasPrefix(line, " ") {
				if len(run) > 0 {
					flush()
				}
				block = append(block, line)
				continue
			}
			if len(block) > 0 {
				flush()
			}
			run = append(run, line)
		}
		flush()
	}
	return b.String()
}

// manBlockWidth is the width that a line of a no-fill block may take in
// the page at 80 columns: the text is indented by 8, and 2 are kept free.
// An example, indented once more, gets manExampleWidth.
const (
	manBlockWidth   = 70
	manExampleWidth = 63
)

// refit lays out again for width columns the indented lines of a
// description, written for the help page, which starts them at column 0.
// A list item whose text starts after a gap of two spaces ("  --relock
// changes …", its next lines indented to that text) is filled again under
// that indent; any other line too long is cut as a command, by
// shellLines.
func refit(lines []string, width int) []string {
	var out []string
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		indent := leadingSpaces(line)
		hang := hangColumn(line, indent)
		if hang < 0 {
			if len([]rune(line)) <= width {
				out = append(out, line)
				continue
			}
			for _, l := range shellLines(line[indent:], width-indent) {
				out = append(out, line[:indent]+l)
			}
			continue
		}
		text := line[hang:]
		for i+1 < len(lines) && leadingSpaces(lines[i+1]) == hang {
			i++
			text += " " + strings.TrimSpace(lines[i])
		}
		filled := wrap(text, width, line[:hang], strings.Repeat(" ", hang))
		out = append(out, strings.Split(strings.TrimSuffix(filled, "\n"), "\n")...)
	}
	return out
}

func leadingSpaces(s string) int { return len(s) - len(strings.TrimLeft(s, " ")) }

// hangColumn returns where the text of a list item starts: after its
// first word and a gap of at least two spaces; -1 when there is no gap.
func hangColumn(line string, indent int) int {
	gap := strings.Index(line[indent:], "  ")
	if gap <= 0 {
		return -1
	}
	start := indent + gap
	return start + leadingSpaces(line[start:])
}
