// Package cli is the crypt4gh command: one file per command, and one file
// each for the shared parts (flags, key files, outputs, batch mode,
// progress, signals, exit codes). main.go only calls [Run].
package cli

import (
	"errors"
	"io"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"
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
	cleanup.arm()
	app := newApp(stdin, stdout, stderr)
	args, err := prepare(app, args, stderr)
	if err == nil {
		err = app.Run(args)
	}
	var quiet quietExit
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &quiet):
		return quiet.exitCode()
	case errors.Is(err, syscall.EPIPE):
		// The reader of stdout went away (crypt4gh … | head): end
		// quietly, as the shell expects of a program killed by SIGPIPE.
		return 128 + int(syscall.SIGPIPE)
	}
	report(stderr, err)
	return exitCode(err)
}

func newApp(stdin io.Reader, stdout, stderr io.Writer) *cli.App {
	app := &cli.App{
		Name:                      "crypt4gh",
		Usage:                     "encrypt and decrypt files in the GA4GH Crypt4GH format",
		Version:                   version(),
		Reader:                    stdin,
		Writer:                    stdout,
		ErrWriter:                 stderr,
		DisableSliceFlagSeparator: true,
		EnableBashCompletion:      true,
		ExitErrHandler:            func(*cli.Context, error) {},
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return usage(flagError(err))
		},
		Commands: []*cli.Command{
			keygenCommand(),
			pubkeyCommand(),
			encryptCommand(),
			decryptCommand(),
			reencryptCommand(),
			rearrangeCommand(),
			spliceCommand(),
			inspectCommand(),
			verifyCommand(),
			mountCommand(),
			completionCommand(),
			manCommand(),
		},
	}
	for _, cmd := range app.Commands {
		cmd.Flags = append(cmd.Flags, logFlag())
		if cmd.Before == nil {
			cmd.Before = checkFlags
		}
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
			cmd.OnUsageError = func(_ *cli.Context, err error, _ bool) error {
				return withHint(usage(flagError(err)), "run 'crypt4gh %s --help' for its flags", name)
			}
		}
	}
	return app
}

// version is the module version from the build info, or "(devel)".
func version() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}

// flagError rewrites the errors of Go's flag package, which name every
// flag with one dash ("flag provided but not defined: -bogus"), with the
// dashes the user types: two for a long flag.
func flagError(err error) error {
	msg := longFlag.ReplaceAllString(err.Error(), "$1--$2")
	msg = strings.Replace(msg, "flag provided but not defined: ", "unknown flag ", 1)
	return errors.New(msg)
}

// longFlag matches a flag of more than one letter after the words with
// which the flag package names it.
var longFlag = regexp.MustCompile(`(: |for |flag )-([A-Za-z0-9][A-Za-z0-9_-]+)`)
