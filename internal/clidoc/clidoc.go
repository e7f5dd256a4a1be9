// Package clidoc writes the pages of a urfave/cli app: the --help page of
// the app and of each command, the manual page in roff, and the words
// that shell completion offers, all from the same text: each command's
// Usage, Description and flags, and what a Doc adds (the environment, the
// exit status, examples, files). Pages are laid out for Doc.Width
// columns.
package clidoc

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/urfave/cli/v2"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
	"github.com/c4gh-go/crypt4gh/internal/textfmt"
)

// Doc is what the pages of an app say besides what its commands hold.
type Doc struct {
	Program string // the program's name, as typed
	Width   int    // the width every help page fits in
	// Env says what each variable the app reads is for, in the order of
	// the pages.
	Env []Entry
	// Exit are the exit codes and what each means.
	Exit []ExitCode
	// Page returns the variables a command reads (names of Env) and its
	// examples.
	Page func(command string) (env, examples []string)
	// Intro follows the synopsis on the app's page; Examples end it.
	Intro    string
	Examples []string
	// HelpUsage describes the help command that urfave/cli adds.
	HelpUsage string
	// The manual page: its date and version, the text of DESCRIPTION,
	// the FILES, and SEE ALSO.
	Date, Version  string
	ManDescription string
	Files          []Entry
	SeeAlso        string
	// BlockWidth and ExampleWidth are the widths a no-fill block and an
	// example may take in the manual page.
	BlockWidth, ExampleWidth int
	// FlagValues are the values that complete a flag's argument, by the
	// flag's name.
	FlagValues map[string][]string
}

// Entry is a name and what it is.
type Entry struct{ Name, Doc string }

// ExitCode is an exit status and what it means.
type ExitCode struct {
	Code int
	Doc  string
}

// CommandPage is the --help page of a command.
func (d *Doc) CommandPage(cmd *cli.Command) string {
	var b strings.Builder
	for i, line := range strings.Split(d.usageLine(cmd), "\n") {
		first := "Usage: "
		if i > 0 {
			first = "       "
		}
		b.WriteString(textfmt.Wrap(line, d.Width, first, "           "))
	}
	b.WriteString("\n")
	b.WriteString(textfmt.Wrap(textfmt.Capitalize(cmd.Usage)+".", d.Width, "", ""))
	if cmd.Description != "" {
		b.WriteString("\n")
		b.WriteString(textfmt.Paragraphs(cmd.Description, d.Width))
	}
	b.WriteString("\nFlags:\n")
	b.WriteString(flagTable(visibleFlags(cmd), d.Width))
	env, examples := d.Page(cmd.Name)
	if len(env) > 0 {
		b.WriteString("\nEnvironment:\n")
		b.WriteString(d.envTable(env, d.Width))
	}
	if len(examples) > 0 {
		b.WriteString("\nExamples:\n")
		for _, e := range examples {
			for _, l := range textfmt.ShellLines(e, d.Width-2) {
				b.WriteString("  " + l + "\n")
			}
		}
	}
	b.WriteString("\n" + d.exitLine())
	return b.String()
}

// AppPage is the page of "PROGRAM --help".
func (d *Doc) AppPage(app *cli.App) string {
	var b strings.Builder
	b.WriteString("Usage: " + d.Program + " COMMAND [flags] [ARGUMENTS]\n\n")
	b.WriteString(textfmt.Wrap(d.Intro, d.Width, "", ""))
	b.WriteString("\nCommands:\n")
	var rows [][2]string
	for _, c := range app.VisibleCommands() {
		usage := c.Usage
		if c.Name == "help" {
			usage = d.HelpUsage // urfave/cli's own command, in its words
		}
		rows = append(rows, [2]string{c.Name, usage})
	}
	b.WriteString(textfmt.Table(rows, d.Width, 12))
	b.WriteString("\n")
	b.WriteString(textfmt.Wrap(fmt.Sprintf("Run '%[1]s COMMAND --help' for the flags of a command, '%[1]s man' for the manual page, "+
		"'%[1]s --version' for the version.", d.Program), d.Width, "", ""))
	b.WriteString("\nEnvironment:\n")
	var names []string
	for _, e := range d.Env {
		names = append(names, e.Name)
	}
	b.WriteString(d.envTable(names, d.Width))
	b.WriteString("\nExamples:\n")
	for _, e := range d.Examples {
		b.WriteString("  " + e + "\n")
	}
	b.WriteString("\n" + d.exitLine())
	return b.String()
}

func (d *Doc) exitLine() string {
	var parts []string
	for _, e := range d.Exit {
		parts = append(parts, fmt.Sprintf("%d %s", e.Code, e.Doc))
	}
	return "Exit status:\n" + textfmt.Wrap(strings.Join(parts, "; ")+".", d.Width, "  ", "  ")
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

func (d *Doc) envTable(names []string, width int) string {
	var rows [][2]string
	for _, n := range names {
		for _, e := range d.Env {
			if e.Name == n {
				rows = append(rows, [2]string{e.Name, e.Doc})
			}
		}
	}
	return textfmt.Table(rows, width, 20)
}

// ManPage renders the whole manual page.
func (d *Doc) ManPage(app *cli.App) string {
	var b strings.Builder
	b.WriteString(".TH " + strings.ToUpper(d.Program) + " 1 " + d.Date + " \"" + d.Program + " " + textfmt.Roff(d.Version) + "\" \"User Commands\"\n")
	b.WriteString(".SH NAME\n" + d.Program + " \\- " + textfmt.Roff(app.Usage) + "\n")
	b.WriteString(".SH SYNOPSIS\n")
	first := true
	for _, c := range app.VisibleCommands() {
		if c.Name == "help" {
			continue
		}
		for _, line := range strings.Split(d.usageLine(c), "\n") {
			if !first {
				b.WriteString(".PP\n")
			}
			first = false
			b.WriteString(".B " + textfmt.Roff(line) + "\n")
		}
	}
	b.WriteString(".SH DESCRIPTION\n")
	b.WriteString(strings.TrimPrefix(textfmt.RoffParagraphs(d.ManDescription, d.BlockWidth), ".PP\n"))
	b.WriteString(".SH COMMANDS\n")
	for _, c := range app.VisibleCommands() {
		if c.Name == "help" {
			continue
		}
		b.WriteString(".SS " + textfmt.Roff(c.Name) + "\n")
		b.WriteString(textfmt.Roff(textfmt.Capitalize(c.Usage)) + ".\n")
		if c.Description != "" {
			b.WriteString(textfmt.RoffParagraphs(c.Description, d.BlockWidth))
		}
		for _, f := range visibleFlags(c) {
			if f.names[0] == "help" {
				continue
			}
			b.WriteString(".TP\n.B " + textfmt.Roff(strings.TrimSpace(f.left)) + "\n" + textfmt.Roff(f.usage) + "\n")
		}
		_, examples := d.Page(c.Name)
		for _, e := range examples {
			b.WriteString(".PP\nExample:\n.PP\n.RS\n.nf\n" + textfmt.Roff(strings.Join(textfmt.ShellLines(e, d.ExampleWidth), "\n")) + "\n.fi\n.RE\n")
		}
	}
	b.WriteString(".SH ENVIRONMENT\n")
	for _, e := range d.Env {
		b.WriteString(".TP\n.B " + e.Name + "\n" + textfmt.Roff(e.Doc) + "\n")
	}
	b.WriteString(".SH EXIT STATUS\n")
	for _, e := range d.Exit {
		b.WriteString(fmt.Sprintf(".TP\n.B %d\n%s\n", e.Code, textfmt.Roff(e.Doc)))
	}
	b.WriteString(".SH FILES\n")
	for _, f := range d.Files {
		b.WriteString(".TP\n.I " + f.Name + "\n" + textfmt.Roff(f.Doc) + "\n")
	}
	b.WriteString(".SH SEE ALSO\n" + textfmt.Roff(d.SeeAlso) + "\n")
	return b.String()
}

// Complete returns the words that may stand at the place of cur after
// words (without the program name), for shell ("bash", "zsh" or "fish";
// zsh gets "word:description").
func (d *Doc) Complete(app *cli.App, shell string, words []string, cur string) []string {
	// bash passes --kdf=b as "--kdf", "=", "b": the "=" goes.
	if n := len(words); n >= 2 && words[n-1] == "=" && strings.HasPrefix(words[n-2], "--") {
		words = words[:n-1]
	}
	var cmd *cli.Command
	for _, w := range words {
		if c := app.Command(w); c != nil && !c.Hidden {
			cmd = c
			break
		}
	}
	var out []string
	add := func(word, desc string) {
		if !strings.HasPrefix(word, cur) {
			return
		}
		if shell == "zsh" {
			word = strings.ReplaceAll(word, ":", `\:`) + ":" + desc
		}
		out = append(out, word)
	}
	if cmd == nil {
		if strings.HasPrefix(cur, "-") {
			add("--help", "show help")
			add("--version", "print the version")
			return out
		}
		for _, c := range app.VisibleCommands() {
			if c.Name != "help" {
				add(c.Name, c.Usage)
			}
		}
		return out
	}
	if len(words) > 1 && !strings.HasPrefix(cur, "-") {
		prev := words[len(words)-1]
		if strings.HasPrefix(prev, "--") && !strings.Contains(prev, "=") {
			if f, err := FindFlag(cmd, prev[2:], true); err == nil && f != nil && TakesValue(f) {
				for _, v := range d.FlagValues[f.Names()[0]] {
					add(v, "")
				}
				return out // file names, or nothing to offer
			}
		}
	}
	if name, _, ok := strings.Cut(strings.TrimPrefix(cur, "--"), "="); ok && strings.HasPrefix(cur, "--") {
		// zsh passes --kdf=b as one word: the values, with the flag.
		if f, err := FindFlag(cmd, name, true); err == nil && f != nil {
			for _, v := range d.FlagValues[f.Names()[0]] {
				add("--"+name+"="+v, "")
			}
		}
		return out
	}
	if strings.HasPrefix(cur, "-") {
		for _, f := range cmd.VisibleFlags() {
			hf := describeFlag(f)
			for _, n := range hf.names {
				if len(n) > 1 {
					add("--"+n, hf.usage)
				}
			}
		}
		return out
	}
	if cmd.Name == "completion" {
		for _, s := range []string{"bash", "zsh", "fish"} {
			add(s, s+" script")
		}
	}
	return out
}

// FishCompletion returns the fish script that urfave/cli generates, with
// three of its faults mended: flags that take a path get file completion
// (urfave/cli adds -f, "no files", unless a flag sets TakesFile), a long
// alias such as --recipient-pk is written with -l, not as the short
// option -s that fish refuses, and the backticks that mark a placeholder
// in a flag's usage are dropped.
func (d *Doc) FishCompletion(app *cli.App) (string, error) {
	for _, cmd := range app.Commands {
		for _, f := range cmd.Flags {
			switch f := f.(type) {
			case *cli.StringFlag:
				f.TakesFile = f.TakesFile || strings.Contains(f.Usage, "`PATH`")
			case *cli.StringSliceFlag:
				f.TakesFile = f.TakesFile || strings.Contains(f.Usage, "`PATH`")
			}
		}
	}
	script, err := app.ToFishCompletion()
	if err != nil {
		return "", err
	}
	script = fishLongAlias().ReplaceAllString(script, " -l $1")
	script = strings.ReplaceAll(script, "Shows a list of commands or help for one command", d.HelpUsage)
	// Flags with a fixed set of values offer them.
	var lines []string
	for _, line := range strings.Split(script, "\n") {
		for name, values := range d.FlagValues {
			if strings.Contains(line, " -l "+name+" ") {
				line = strings.Replace(line, " -l "+name+" ", " -l "+name+" -xa '"+strings.Join(values, " ")+"' ", 1)
			}
		}
		lines = append(lines, line)
	}
	return strings.ReplaceAll(strings.Join(lines, "\n"), "`", ""), nil
}

// Names returns the names of f, its name and aliases, as f.Names does.
// urfave/cli's flags work them out with a regular expression each time
// (they drop what follows a comma or space, as version 1 wrote several
// names in one); the flag types of this program's commands are answered
// from their fields, which hold neither.
func Names(f cli.Flag) []string {
	switch f := f.(type) {
	case *cli.BoolFlag:
		return joinNames(f.Name, f.Aliases)
	case *cli.StringFlag:
		return joinNames(f.Name, f.Aliases)
	case *cli.StringSliceFlag:
		return joinNames(f.Name, f.Aliases)
	case *cli.IntFlag:
		return joinNames(f.Name, f.Aliases)
	case *cli.DurationFlag:
		return joinNames(f.Name, f.Aliases)
	}
	return f.Names()
}

func joinNames(name string, aliases []string) []string {
	if strings.ContainsAny(name, ", ") || slices.ContainsFunc(aliases, func(a string) bool { return strings.ContainsAny(a, ", ") }) {
		return cli.FlagNames(name, aliases)
	}
	return append([]string{name}, aliases...)
}

// FindFlag returns the flag of cmd that name names or, with prefix, that
// name is an unambiguous prefix of a long name of; nil when none does, and
// an error when several do.
func FindFlag(cmd *cli.Command, name string, prefix bool) (cli.Flag, error) {
	var matches []cli.Flag
	for _, f := range cmd.Flags {
		if slices.Contains(Names(f), name) {
			return f, nil
		}
	}
	if !prefix || name == "" {
		return nil, nil
	}
	var names []string
	for _, f := range cmd.Flags {
		fn := Names(f)
		for _, n := range fn {
			if len(n) > 1 && strings.HasPrefix(n, name) {
				matches = append(matches, f)
				names = append(names, "--"+fn[0])
				break
			}
		}
	}
	switch len(matches) {
	case 0:
		return nil, nil
	case 1:
		return matches[0], nil
	}
	sort.Strings(names)
	return nil, errkind.Errorf(errkind.Usage, "--%s is ambiguous: %s", name, strings.Join(names, ", "))
}

// TakesValue reports whether the flag f takes a value.
func TakesValue(f cli.Flag) bool {
	d, ok := f.(cli.DocGenerationFlag)
	return ok && d.TakesValue()
}

// fishLongAlias matches a -s option of more than one character.
var fishLongAlias = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(` -s ([A-Za-z0-9][A-Za-z0-9_-]+)`) })

// usageLine is the synopsis of a command: its UsageText, or PROGRAM
// COMMAND [flags] ARGS.
func (d *Doc) usageLine(cmd *cli.Command) string {
	if cmd.UsageText != "" {
		return cmd.UsageText
	}
	line := d.Program + " " + cmd.Name + " [flags]"
	if cmd.ArgsUsage != "" {
		line += " " + cmd.ArgsUsage
	}
	return line
}
