// Command crypt4gh encrypts and decrypts files in the GA4GH Crypt4GH format.
//
// It reads and writes the same files, keys, flags and environment variables
// as the reference Python tool, so that a pipeline can switch by changing the
// name of the binary. Run "crypt4gh help" for the commands.
package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"

	"github.com/urfave/cli/v2"
)

func main() {
	os.Exit(run(os.Args, os.Stdin, os.Stdout, os.Stderr))
}

// run runs the app and returns the process exit code. Called as
// crypt4gh-keygen (a link to the binary), it runs the keygen command, so
// that scripts written for the reference tool's two programs keep working.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && filepath.Base(args[0]) == "crypt4gh-keygen" {
		args = append([]string{"crypt4gh", "keygen"}, args[1:]...)
	}
	app := newApp(stdin, stdout, stderr)
	// A bad flag of a command is a usage error too (exit 2), reported on
	// stderr only: without this, urfave/cli prints the help to stdout.
	for _, cmd := range app.Commands {
		// No command has subcommands: without this, urfave/cli adds a
		// "help" subcommand to each, so that a FILE argument named "help"
		// or "h" prints the help instead of being processed, and shell
		// completion offers "help" where file names belong.
		cmd.HideHelpCommand = true
		if cmd.OnUsageError == nil {
			name := cmd.Name
			cmd.OnUsageError = func(_ *cli.Context, err error, _ bool) error {
				return withHint(usageError{err}, "run 'crypt4gh %s --help' for its flags", name)
			}
		}
	}
	err := app.Run(args)
	if err == nil {
		return exitOK
	}
	report(stderr, err)
	return exitCode(err)
}

func newApp(stdin io.Reader, stdout, stderr io.Writer) *cli.App {
	return &cli.App{
		Name:                      "crypt4gh",
		Usage:                     "encrypt and decrypt files in the GA4GH Crypt4GH format",
		Version:                   version(),
		Reader:                    stdin,
		Writer:                    stdout,
		ErrWriter:                 stderr,
		DisableSliceFlagSeparator: true,
		HideHelpCommand:           false,
		EnableBashCompletion:      true,
		ExitErrHandler:            func(*cli.Context, error) {},
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return usageError{err}
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
			completionCommand(),
			manCommand(),
		},
	}
}

// version is the module version from the build info, or "(devel)".
func version() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}

// warnf prints a warning on stderr.
func warnf(c *cli.Context, format string, args ...any) {
	fmt.Fprintf(c.App.ErrWriter, "crypt4gh: warning: "+format+"\n", args...)
}
