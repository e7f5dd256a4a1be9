// Package cli is the crypt4gh command: one file per command, and one file
// each for the shared parts (flags, key files, outputs, batch mode,
// progress, signals, exit codes). main.go only calls [Run].
package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/c4gh-go/crypt4gh/internal/outfile"
)

// Run runs the command line args (args[0] is the program name) with the
// given standard streams and returns the process exit code. Called as
// crypt4gh-keygen (a link to the binary), it runs the keygen command, so
// that scripts written for the reference tool's two programs keep working.
// Each call builds its own app and flags: runs share no state.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && filepath.Base(args[0]) == "crypt4gh-keygen" {
		if len(args) > 2 && args[1] == "__complete" {
			// The completion scripts: __complete SHELL WORDS…
			args = append([]string{"crypt4gh", "__complete", args[2], "keygen"}, args[3:]...)
		} else {
			args = append([]string{"crypt4gh", "keygen"}, args[1:]...)
		}
	}
	// Every catchable signal ends a run the same way (cleanup, then
	// 128+N), also one that has created nothing yet (SIGQUIT would
	// otherwise dump the goroutines).
	outfile.Signals.Arm()
	e := newEnv(stdin, stdout, stderr)
	args = dropLog(args)
	app := newApp(e, args)
	args, err := prepare(e, app, args)
	if err == nil {
		err = app.Run(args)
		e.made.removeEmpty()
	}
	var quiet quietExit
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &quiet):
		return quiet.exitCode()
	case readerGone(err):
		// The reader of stdout went away (crypt4gh … | head): end
		// quietly, as the shell expects of a program killed by SIGPIPE.
		return 128 + int(syscall.SIGPIPE)
	}
	report(stderr, err)
	return exitCode(err)
}

// newApp is the app that runs args: see [commandsFor].
func newApp(e *env, args []string) *cli.App {
	app := &cli.App{
		Name:                      "crypt4gh",
		Usage:                     "encrypt and decrypt files in the GA4GH Crypt4GH format",
		Version:                   version(),
		Reader:                    e.stdin,
		Writer:                    e.stdout,
		ErrWriter:                 e.stderr,
		DisableSliceFlagSeparator: true,
		EnableBashCompletion:      true,
		ExitErrHandler:            func(*cli.Context, error) {},
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return withHint(usage(flagError(e, c, err)), "run 'crypt4gh --help' for the commands and their flags")
		},
	}
	for _, c := range commandsFor(e, args) {
		app.Commands = append(app.Commands, c.Command)
	}
	for _, cmd := range app.Commands {
		cmd.Flags = append(cmd.Flags, logFlag())
		if cmd.Before == nil {
			cmd.Before = checkFlags
		}
		keepNames(cmd)
		// No command has subcommands: without this, urfave/cli adds a
		// "help" subcommand to each, so that a FILE argument named "help"
		// or "h" prints the help instead of being processed, and shell
		// completion offers "help" where file names belong.
		cmd.HideHelpCommand = true
		// A bad flag of a command is a usage error too (exit 2), reported
		// on stderr only: without this, urfave/cli prints the help to
		// stdout.
		if cmd.OnUsageError == nil {
			name := cmd.Name
			cmd.OnUsageError = func(c *cli.Context, err error, _ bool) error {
				return withHint(usage(flagError(e, c, err)), "run 'crypt4gh %s --help' for its flags", name)
			}
		}
	}
	return app
}

// flagError rewrites the errors of Go's flag package, which name every
// flag with one dash ("flag provided but not defined: -bogus"), with the
// dashes as the user typed them (two for a long flag when prepare did
// not see it). Other errors are returned as they are.
func flagError(e *env, c *cli.Context, err error) error {
	typed := e.typed
	dashes := func(name string) string {
		if d, ok := typed[name]; ok {
			return d + name
		}
		if len(name) > 1 {
			return "--" + name
		}
		return "-" + name
	}
	msg := err.Error()
	if m := unknownFlag().FindStringSubmatch(msg); m != nil {
		if near := nearFlag(c, m[1]); near != "" {
			return fmt.Errorf("unknown flag %s; did you mean %s?", dashes(m[1]), dashes(near))
		}
		return fmt.Errorf("unknown flag %s", dashes(m[1]))
	}
	if m := flagNoValue().FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("flag %s needs a value", dashes(m[1]))
	}
	if m := flagBadValue().FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("invalid value %s for flag %s: %s", m[1], dashes(m[2]), m[3])
	}
	return err
}

// flagMeant names, for flags that users of other tools type, the flag of
// this tool that they mean, when the command has it: a near spelling
// would suggest another one (--pk is one edit from --sk).
var flagMeant = map[string]string{
	"pk":        "recipient_pk",
	"recipient": "recipient_pk",
	"sender":    "sender_pk",
	"seckey":    "sk",
	"pubkey":    "recipient_pk",
	"out":       "output",
	"in":        "input",
}

// nearFlag returns the flag of the command of c that the unknown flag
// name most likely meant, or "".
func nearFlag(c *cli.Context, name string) string {
	if c == nil || c.Command == nil || len(name) < 2 {
		return "" // a one-letter typo has too many neighbours
	}
	var names []string
	for _, f := range c.Command.Flags {
		if vf, ok := unwrap(f).(cli.VisibleFlag); ok && !vf.IsVisible() {
			continue
		}
		for _, n := range f.Names() {
			if len(n) > 1 {
				names = append(names, n)
			}
		}
	}
	if meant, ok := flagMeant[name]; ok && slices.Contains(names, meant) {
		return meant
	}
	return nearest(name, names)
}

// The messages of the flag package, compiled on first use: every process
// start would pay for them otherwise.
var (
	unknownFlag  = lazyRegexp(`^flag provided but not defined: -(.+)$`)
	flagNoValue  = lazyRegexp(`^flag needs an argument: -(.+)$`)
	flagBadValue = lazyRegexp(`^invalid (?:boolean )?value (".*") for (?:flag )?-([^ :]+): (.*)$`)
)

// lazyRegexp returns a function that compiles expr on its first call.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// readerGone tells whether err is a write to a pipe (stdout, or a FIFO
// named with -o) whose reader went away. A connection that an object
// store closed fails with EPIPE too, but is a network error, reported as
// one.
func readerGone(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && errors.Is(pe.Err, syscall.EPIPE)
}
