package cli

import (
	"fmt"
	"github.com/c4gh-go/crypt4gh/internal/textfmt"
	"io"
	"strings"
	"sync"

	"github.com/urfave/cli/v2"
)

// The help pages, the manual page and the completion are made from the
// same text: each command's Usage, Description and flags, and the
// environment and examples below. Pages are laid out for an 80-column
// terminal.

// helpWidth is the width every help page fits in.
const helpWidth = 80

func init() {
	// urfave/cli calls this for --help, -h and "crypt4gh help [COMMAND]".
	// It is set once: it holds no state of a run.
	cli.HelpPrinter = func(w io.Writer, _ string, data any) {
		switch d := data.(type) {
		case *cli.Command:
			io.WriteString(w, commandPage(d))
		case *cli.App:
			io.WriteString(w, appPage(d))
		}
	}
}

// envDoc says what each variable is for.
var envDoc = []struct{ name, doc string }{
	{secretKeyEnv, "your secret key, when --sk is not given (keygen: where to write it)"},
	{publicKeyEnv, "keygen: where to write the public key, when --pk is not given"},
	{passphraseEnv, "the passphrase of the secret key (keygen: of the new key); a warning says that other processes can read it"},
	{newPassphraseEnv, "keygen --convert and --relock: the passphrase of the new key"},
	{"C4GH_LOG", "accepted for the reference tool's logging configuration; not read (messages go to stderr)"},
	{"AWS_ENDPOINT_URL_S3", "s3:// paths: the S3 endpoint of a store that is not AWS (http://127.0.0.1:7070, https://s3.example.org), path-style; or --s3-config"},
	{"AWS_ACCESS_KEY_ID", "s3:// paths: the access key, with AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN); else ~/.aws/credentials and the rest of the AWS chain"},
	{"AWS_PROFILE", "s3:// paths: the profile of ~/.aws/config and ~/.aws/credentials to use"},
	{"AWS_REGION", "s3:// paths: the region (default us-east-1 for an endpoint of AWS_ENDPOINT_URL_S3)"},
	{"AWS_SHARED_CREDENTIALS_FILE", "s3:// paths: another file for ~/.aws/credentials (AWS_CONFIG_FILE for ~/.aws/config)"},
}

// awsEnv are the variables of the commands that read or write objects.
var awsEnv = []string{"AWS_ENDPOINT_URL_S3", "AWS_ACCESS_KEY_ID", "AWS_PROFILE", "AWS_REGION", "AWS_SHARED_CREDENTIALS_FILE"}

// withAWS is the variables env of a command that takes s3:// paths.
func withAWS(env ...string) []string { return append(env, awsEnv...) }

// command is a command of the app with the parts of its pages that
// urfave/cli has no field for, declared beside its flags.
type command struct {
	*cli.Command
	page
}

// page is what a command's help and manual pages show besides its
// flags.
type page struct {
	env      []string // variables the command reads
	examples []string
}

// commands are the commands of the app of a run with the environment e,
// in the order of the help.
func commands(e *env) []command {
	return []command{
		keygenCommand(e), pubkeyCommand(e), encryptCommand(e), decryptCommand(e), catCommand(e),
		reencryptCommand(e), rearrangeCommand(e), spliceCommand(e), inspectCommand(e), verifyCommand(e),
		lsCommand(e), cleanupCommand(e), cpCommand(e),
		mountCommand(e), completionCommand(e), manCommand(e),
	}
}

// pages are the pages of the commands, by name, for the help printer,
// which urfave/cli gives only the *cli.Command.
func pages() map[string]page {
	pagesOnce.Do(func() {
		pagesByName = map[string]page{}
		for _, c := range commands(newEnv(nil, nil, nil)) {
			pagesByName[c.Name] = c.page
		}
	})
	return pagesByName
}

// pagesOnce makes pagesByName, a cache of what the commands declare.
var (
	pagesOnce   sync.Once
	pagesByName map[string]page
)

// exitCodes are the table of docs/exit-codes.md, in short.
var exitCodes = []struct {
	code int
	doc  string
}{
	{exitOK, "success"},
	{exitError, "I/O and other errors"},
	{exitUsage, "usage: bad flags, arguments or ranges, an existing output"},
	{exitKey, "keys: wrong passphrase, unreadable key, no packet for the key"},
	{exitData, "data: not crypt4gh, corrupt, truncated or tampered"},
}

// commandPage is the --help page of a command.
func commandPage(cmd *cli.Command) string {
	var b strings.Builder
	for i, line := range strings.Split(usageLine(cmd), "\n") {
		first := "Usage: "
		if i > 0 {
			first = "       "
		}
		b.WriteString(textfmt.Wrap(line, helpWidth, first, "           "))
	}
	b.WriteString("\n")
	b.WriteString(textfmt.Wrap(textfmt.Capitalize(cmd.Usage)+".", helpWidth, "", ""))
	if cmd.Description != "" {
		b.WriteString("\n")
		b.WriteString(textfmt.Paragraphs(cmd.Description, helpWidth))
	}
	b.WriteString("\nFlags:\n")
	b.WriteString(flagTable(visibleFlags(cmd), helpWidth))
	ex := pages()[cmd.Name]
	if len(ex.env) > 0 {
		b.WriteString("\nEnvironment:\n")
		b.WriteString(envTable(ex.env, helpWidth))
	}
	if len(ex.examples) > 0 {
		b.WriteString("\nExamples:\n")
		for _, e := range ex.examples {
			for _, l := range textfmt.ShellLines(e, helpWidth-2) {
				b.WriteString("  " + l + "\n")
			}
		}
	}
	b.WriteString("\n" + exitLine())
	return b.String()
}

// usageLine is the synopsis of a command.
func usageLine(cmd *cli.Command) string {
	if cmd.UsageText != "" {
		return cmd.UsageText
	}
	line := "crypt4gh " + cmd.Name + " [flags]"
	if cmd.ArgsUsage != "" {
		line += " " + cmd.ArgsUsage
	}
	return line
}

// helpUsage describes the help command that urfave/cli adds.
const helpUsage = "show the commands, or the help page of one"

// appPage is the page of "crypt4gh --help".
func appPage(app *cli.App) string {
	var b strings.Builder
	b.WriteString("Usage: crypt4gh COMMAND [flags] [ARGUMENTS]\n\n")
	b.WriteString(textfmt.Wrap(textfmt.Capitalize(app.Usage)+", for named recipients: keys, encryption, decryption, "+
		"new recipients and ranges without touching the encrypted data.", helpWidth, "", ""))
	b.WriteString("\nCommands:\n")
	var rows [][2]string
	for _, c := range app.VisibleCommands() {
		usage := c.Usage
		if c.Name == "help" {
			usage = helpUsage // urfave/cli's own command, in its words
		}
		rows = append(rows, [2]string{c.Name, usage})
	}
	b.WriteString(textfmt.Table(rows, helpWidth, 12))
	b.WriteString("\n")
	b.WriteString(textfmt.Wrap("Run 'crypt4gh COMMAND --help' for the flags of a command, 'crypt4gh man' for the manual page, "+
		"'crypt4gh --version' for the version.", helpWidth, "", ""))
	b.WriteString("\nEnvironment:\n")
	var names []string
	for _, e := range envDoc {
		names = append(names, e.name)
	}
	b.WriteString(envTable(names, helpWidth))
	b.WriteString("\nExamples:\n")
	for _, e := range []string{
		"crypt4gh keygen --sk alice.sec --pk alice.pub",
		"crypt4gh encrypt --recipient_pk bob.pub -i reads.bam -o reads.bam.c4gh",
		"crypt4gh decrypt --sk bob.sec -i reads.bam.c4gh -o reads.bam",
	} {
		b.WriteString("  " + e + "\n")
	}
	b.WriteString("\n" + exitLine())
	return b.String()
}

func exitLine() string {
	var parts []string
	for _, e := range exitCodes {
		parts = append(parts, fmt.Sprintf("%d %s", e.code, e.doc))
	}
	return "Exit status:\n" + textfmt.Wrap(strings.Join(parts, "; ")+".", helpWidth, "  ", "  ")
}

// helpFlag describes one flag for a page.
type helpFlag struct {
	left  string // "-i, --input PATH"
	usage string
	names []string // every name, long first
	value string   // the placeholder, "" for a switch
	env   []string
}

func visibleFlags(cmd *cli.Command) []helpFlag {
	var out []helpFlag
	for _, f := range cmd.VisibleFlags() {
		out = append(out, describeFlag(f))
	}
	return out
}

func describeFlag(f cli.Flag) helpFlag {
	hf := helpFlag{names: f.Names()}
	var usage string
	takesValue := false
	if d, ok := f.(cli.DocGenerationFlag); ok {
		usage = d.GetUsage()
		takesValue = d.TakesValue()
		hf.env = d.GetEnvVars()
	}
	placeholder, text := textfmt.UnquoteUsage(usage)
	if takesValue && placeholder == "" {
		placeholder = "VALUE"
	}
	if takesValue {
		hf.value = placeholder
	}
	hf.usage = text
	var short, long, aliases []string
	for _, n := range hf.names {
		if len(n) == 1 {
			short = append(short, "-"+n)
		} else {
			long = append(long, "--"+n)
		}
	}
	if len(long) > 1 {
		aliases = long[1:]
		long = long[:1]
	}
	hf.left = strings.Join(append(short, long...), ", ")
	if len(short) == 0 {
		hf.left = "    " + hf.left
	}
	if hf.value != "" {
		hf.left += " " + hf.value
	}
	if len(aliases) > 0 {
		hf.usage += " (also " + strings.Join(aliases, ", ") + ")"
	}
	if len(hf.env) > 0 {
		hf.usage += " [$" + strings.Join(hf.env, ", $") + "]"
	}
	return hf
}

func flagTable(flags []helpFlag, width int) string {
	rows := make([][2]string, len(flags))
	for i, f := range flags {
		rows[i] = [2]string{f.left, f.usage}
	}
	return textfmt.Table(rows, width, 26)
}

func envTable(names []string, width int) string {
	var rows [][2]string
	for _, n := range names {
		for _, e := range envDoc {
			if e.name == n {
				rows = append(rows, [2]string{e.name, e.doc})
			}
		}
	}
	return textfmt.Table(rows, width, 20)
}
