package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"

	"github.com/c4gh-go/crypt4gh/internal/outfile"
	"github.com/c4gh-go/crypt4gh/internal/progress"
	"github.com/urfave/cli/v2"
)

// env is what one run of a command works with besides its options: the
// standard streams, the command's name and FILE arguments, the object
// stores it opened, and the process's cleanup on signals. [Run] makes
// one for each run; every command's action receives it with the options
// that its flags were parsed into, so that no helper reads a flag by name
// or keeps state between runs.
type env struct {
	ctx    context.Context
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer

	command string // the command's name, for messages
	// stdoutIdle: the command writes nothing to stdout (see stdoutIdle).
	stdoutIdle bool
	args       []string // its FILE arguments
	// filesOnly is set when "--" ended the flags: an argument that
	// starts with - is then a file.
	filesOnly bool
	// typed maps the name of each flag given to its dashes as typed
	// ("-" or "--"), for [flagError].
	typed map[string]string
	// quiet is the command's -q: no progress bar, and none of the
	// warnings that it silences.
	quiet bool

	stores  *stores             // the object storage of the run
	cleanup *outfile.Interrupts // what a signal undoes (one handler a process)
	stale   map[string]bool
	made    madeFolders // the output folders the run made
}

// newEnv is the environment of a run with the given standard streams.
func newEnv(stdin io.Reader, stdout, stderr io.Writer) *env {
	return &env{
		ctx:   context.Background(),
		stdin: stdin, stdout: stdout, stderr: stderr,
		typed:   map[string]string{},
		stores:  &stores{files: 1},
		cleanup: outfile.Signals,
		stale:   map[string]bool{},
	}
}

// madeFolders are the folders that a run made for its outputs, each
// record from the deepest folder up, so that those left empty by a failed
// output are removed at the end.
type madeFolders struct {
	mu      sync.Mutex
	records [][]string
}

// add notes folders, made in that order from the deepest up.
func (m *madeFolders) add(folders []string) {
	m.mu.Lock()
	m.records = append(m.records, folders)
	m.mu.Unlock()
}

// removeEmpty removes each folder noted that is empty: a failed command
// leaves no output, and no folder made for one.
func (m *madeFolders) removeEmpty() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := len(m.records) - 1; i >= 0; i-- {
		for _, f := range m.records[i] {
			os.Remove(f) // fails, as it should, on a folder that holds something
		}
	}
	m.records = nil
}

// start readies e for the action of the command of c, whose flags are
// parsed by now: its name, arguments and context, its -q, and the flags
// of its object stores (nil for a command that reads no objects).
func (e *env) start(c *cli.Context, quiet bool, store *storeOptions) *env {
	e.ctx, e.command, e.args, e.quiet = c.Context, c.Command.Name, c.Args().Slice(), quiet
	e.stdoutIdle = stdoutIdle(c)
	if store != nil {
		e.stores.config = *store
	}
	return e
}

// stdoutIdle reports whether the command of c writes nothing to stdout:
// its output goes to -o FILE, or its outputs beside their inputs or into
// -o DIR/ (FILE arguments, --files-from), without --checksum lines or
// --json records. A stdout redirected onto an input is then no harm
// (exec >> job.log; crypt4gh encrypt -i job.log -o …).
func stdoutIdle(c *cli.Context) bool {
	hasOutput := false
	for _, f := range c.Command.Flags {
		hasOutput = hasOutput || slices.Contains(f.Names(), "output")
	}
	if !hasOutput || c.Bool("checksum") || c.Bool("json") {
		return false
	}
	out := c.String("output")
	return out != "" && !outfile.IsStdout(out) || c.Args().Len() > 0 || c.String("files-from") != ""
}

// warnf prints a warning on stderr.
func (e *env) warnf(format string, args ...any) {
	fmt.Fprintf(e.stderr, "crypt4gh: warning: %s\n", oneLine(fmt.Sprintf(format, args...)))
}

// flagsFirst refuses a flag among the FILE arguments: the command-line
// parser stops reading flags at the first argument, so "inspect FILE --sk
// KEY" would otherwise take "--sk" for a file name.
func (e *env) flagsFirst() error {
	if e.filesOnly {
		return nil // after "--", a name that starts with - is a file
	}
	for _, a := range e.args {
		if len(a) > 1 && a[0] == '-' {
			return withHint(usagef("flag %s after the file arguments", a),
				"put the flags first: crypt4gh %s [flags] FILE… (files whose names start with - go after --)",
				e.command)
		}
	}
	return nil
}

// readsStdin reports whether the command reads its data from stdin: its
// input is empty or "-" (when it has no FILE arguments), or one of its
// FILE arguments is "-". Commands that read no data pass noData.
func readsStdin(command string, args []string, input string) bool {
	switch command {
	case "keygen", "pubkey", "mount", "serve", "completion", "man":
		return false
	}
	if len(args) > 0 {
		for _, a := range args {
			if a == "-" {
				return true
			}
		}
		return false
	}
	return input == "" || input == "-"
}

// newProgress returns the progress bar of total input bytes on stderr,
// nil when there is nothing to show: -q, an unknown or zero size, or a
// stderr that is not a terminal.
func (e *env) newProgress(total int64, description string) *progress.Bar {
	if e.quiet {
		return nil
	}
	return progress.New(e.stderr, total, description)
}
