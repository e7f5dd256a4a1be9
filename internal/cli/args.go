package cli

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/c4gh-go/crypt4gh/internal/clidoc"
	"github.com/c4gh-go/crypt4gh/internal/textfmt"
)

// Before urfave/cli parses a command line, three things are settled here
// as the reference tool (docopt) does them: a bare "crypt4gh" prints a
// short usage (exit 2), an unknown command is named with the nearest
// one, and an unambiguous prefix of a long flag stands for the flag
// (--recipient for --recipient_pk).

// quietExit ends the run with its code and no message: what there was to
// say was printed already.
type quietExit int

func (q quietExit) Error() string { return "" }
func (q quietExit) exitCode() int { return int(q) }

// completeFlag is the last argument with which the shell completion
// scripts ask for the words that may follow.
const completeFlag = "--generate-bash-completion"

// prepare checks and rewrites args for app. It returns the arguments to
// run, or an error to report.
func prepare(e *env, app *cli.App, args []string) ([]string, error) {
	if len(args) < 2 {
		fmt.Fprint(e.stderr, shortUsage(app))
		return nil, quietExit(exitUsage)
	}
	name := args[1]
	if name == "__complete" && len(args) >= 4 {
		// The completion scripts: __complete SHELL WORDS… CURRENT.
		words := args[3 : len(args)-1]
		for _, w := range doc().Complete(app, args[2], words, args[len(args)-1]) {
			fmt.Fprintln(app.Writer, w)
		}
		return nil, quietExit(exitOK)
	}
	if last := args[len(args)-1]; last == completeFlag {
		// The protocol of urfave/cli: the word being completed is
		// passed only when it starts with "-".
		words, cur := args[1:len(args)-1], ""
		if n := len(words); n > 0 && strings.HasPrefix(words[n-1], "-") {
			words, cur = words[:n-1], words[n-1]
		}
		for _, w := range doc().Complete(app, "bash", words, cur) {
			fmt.Fprintln(app.Writer, w)
		}
		return nil, quietExit(exitOK)
	}
	if strings.HasPrefix(name, "-") {
		return args, nil // --help, --version, completion of the command name
	}
	cmd := app.Command(name)
	if name == "help" && len(args) > 2 && app.Command(args[2]) == nil && !strings.HasPrefix(args[2], "-") {
		cmd, name = nil, args[2]
	} else if cmd == nil && name == "help" {
		return args, nil
	}
	if cmd == nil {
		err := usagef("unknown command %q", name)
		if near := nearest(name, commandNames(app)); near != "" {
			err = usagef("unknown command %q; did you mean %q?", name, near)
		}
		return nil, withHint(err, "run 'crypt4gh --help' for the commands")
	}
	out := append([]string{}, args[:2]...)
	rest := args[2:]
	typed := e.typed
	once := onceFlags{}
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" || a == "-" || !strings.HasPrefix(a, "-") || a == completeFlag {
			// The end of the flags: the parser stops at the first
			// argument too.
			out = append(out, endFlags(e, rest[i:])...)
			break
		}
		if !strings.HasPrefix(a, "--") {
			// A short flag, and its value.
			name, value, hasValue := strings.Cut(a[1:], "=")
			typed[name] = "-"
			out = append(out, a)
			f, _ := clidoc.FindFlag(cmd, name, false)
			if f != nil && clidoc.TakesValue(f) && !hasValue && i+1 < len(rest) {
				i++
				out = append(out, rest[i])
				value, hasValue = rest[i], true
			}
			if err := once.given(f, "-"+name, value, hasValue); err != nil {
				return nil, err
			}
			continue
		}
		flagName, value, hasValue := strings.Cut(a[2:], "=")
		f, err := clidoc.FindFlag(cmd, flagName, true)
		if err != nil {
			return nil, withHint(err, "run 'crypt4gh %s --help' for its flags", cmd.Name)
		}
		if f == nil {
			typed[flagName] = "--"
			out = append(out, a) // urfave/cli reports it
			continue
		}
		full := "--" + f.Names()[0]
		typed[f.Names()[0]] = "--"
		if f.Names()[0] != flagName && strings.HasSuffix(full, "passphrase-file") {
			// Not a prefix: "--passphrase SECRET" would name a file
			// SECRET, and its error would show it.
			env := passphraseEnv
			if strings.HasPrefix(full, "--new-") {
				env = newPassphraseEnv
			}
			return nil, withHint(usagef("unknown flag --%s", flagName),
				"a passphrase is read from the terminal, from %s, or from the first line of the file that %s names", env, full)
		}
		if hasValue {
			out = append(out, full+"="+value)
		} else {
			out = append(out, full)
			if clidoc.TakesValue(f) && i+1 < len(rest) {
				i++
				out = append(out, rest[i])
				value, hasValue = rest[i], true
			}
		}
		if err := once.given(f, full, value, hasValue); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// onceFlags are the flags of one value given so far on a command line,
// with the values given. The reference tool (docopt) refuses such a flag
// given twice, where urfave/cli would take the last value without a word:
// "--range 1-2 --range 3-5" does not decrypt both ranges.
type onceFlags map[string]string

// given notes flag f, typed as typed, with its value; it returns a usage
// error when f takes one value and was given before.
func (o onceFlags) given(f cli.Flag, typed, value string, hasValue bool) error {
	if f == nil || !clidoc.TakesValue(f) || !hasValue {
		return nil
	}
	switch f.(type) {
	case *cli.StringSliceFlag, *cli.IntSliceFlag, *cli.Int64SliceFlag, *cli.UintSliceFlag,
		*cli.Uint64SliceFlag, *cli.Float64SliceFlag, *cli.GenericFlag:
		return nil // given as often as wanted
	}
	name := f.Names()[0]
	if before, ok := o[name]; ok {
		return usagef("flag %s given twice (%q, then %q): give it once", typed, before, value)
	}
	o[name] = value
	return nil
}

// endFlags returns the arguments after the flags. A "--" among them,
// before any other argument that starts with "-", ends the flags as
// getopt has it ("decrypt a.c4gh -- -b.c4gh"): it is moved to the front,
// where the parser drops it, and the run notes that every argument left
// is a file, for [flagsFirst].
func endFlags(e *env, rest []string) []string {
	for j, a := range rest {
		if a == "--" {
			e.filesOnly = true
			return append(append([]string{"--"}, rest[:j]...), rest[j+1:]...)
		}
		if len(a) > 1 && a[0] == '-' {
			break // a flag after the files: flagsFirst names it
		}
	}
	return rest
}

func commandNames(app *cli.App) []string {
	var names []string
	for _, c := range app.VisibleCommands() {
		names = append(names, c.Name)
	}
	return names
}

// nearest returns the name closest to s by edit distance, when it is
// close enough to be a typing error.
func nearest(s string, names []string) string {
	best, bestDist := "", max(3, len(s)/3+1)
	for _, n := range names {
		if d := editDistance(s, n); d < bestDist || strings.HasPrefix(n, s) && d == bestDist {
			best, bestDist = n, d
		}
	}
	return best
}

// editDistance is the Damerau-Levenshtein distance of a and b (adjacent
// transpositions count as one edit).
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// shortUsage is what a bare "crypt4gh" prints on stderr.
func shortUsage(app *cli.App) string {
	return textfmt.Wrap("Usage: crypt4gh COMMAND [flags] [ARGUMENTS], where COMMAND is one of "+
		strings.Join(commandNames(app), ", ")+".", helpWidth, "", "       ") +
		"Run 'crypt4gh --help' for more, 'crypt4gh COMMAND --help' for a command.\n"
}

// dropLog drops the reference's global --log PATH before the command:
// accepted (and not read) as on every command.
func dropLog(args []string) []string {
	for len(args) > 1 && (args[1] == "--log" || strings.HasPrefix(args[1], "--log=")) {
		n := 1
		if args[1] == "--log" {
			n = 2
		}
		args = append(args[:1:1], args[min(1+n, len(args)):]...)
	}
	return args
}
