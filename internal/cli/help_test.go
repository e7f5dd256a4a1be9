package cli

import (
	"bytes"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/c4gh-go/crypt4gh/internal/clidoc"
	"github.com/c4gh-go/crypt4gh/internal/clitest"
	"github.com/c4gh-go/crypt4gh/internal/textfmt"
)

// TestHelpPages renders the help page of every command and of the app, as
// --help prints it, and checks that it fits 80 columns, shows no
// "(default: false)", names the variables the command reads and ends with
// examples and the exit codes.
func TestHelpPages(t *testing.T) {
	app := newApp(newEnv(nil, nil, nil), nil)
	helpArgs := map[string][]string{"": {"--help"}}
	for _, c := range app.Commands {
		helpArgs[c.Name] = []string{c.Name, "--help"}
	}
	for name, args := range helpArgs {
		var stdout, stderr bytes.Buffer
		if code := Run(append([]string{"crypt4gh"}, args...), nil, &stdout, &stderr); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
		}
		page := stdout.String()
		for i, line := range strings.Split(page, "\n") {
			if n := len([]rune(line)); n > helpWidth {
				t.Errorf("%s --help, line %d has %d columns: %q", name, i+1, n, line)
			}
		}
		for _, bad := range []string{"(default: false)", "(default: 0)", "`", "[ --"} {
			if strings.Contains(page, bad) {
				t.Errorf("%s --help shows %q", name, bad)
			}
		}
		if !strings.Contains(page, "Exit status:") {
			t.Errorf("%s --help has no exit codes", name)
		}
		if !strings.Contains(page, "Examples:\n  crypt4gh ") {
			t.Errorf("%s --help has no example", name)
		}
		if name == "" {
			continue
		}
		for _, env := range pages()[name].env {
			if !strings.Contains(page, "\n  "+env+" ") && !strings.Contains(page, "\n  "+env+"\n") {
				t.Errorf("%s --help does not explain %s", name, env)
			}
		}
		if strings.Contains(page, "--sk PATH") && !strings.Contains(page, passphraseEnv) {
			t.Errorf("%s takes a secret key but its page does not name %s", name, passphraseEnv)
		}
	}
}

// TestManPage renders the manual page: every command and every flag is in
// it, and mandoc finds nothing to warn about.
func TestManPage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := Run([]string{"crypt4gh", "man"}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	page := stdout.String()
	app := newApp(newEnv(nil, nil, nil), nil)
	for _, c := range app.Commands {
		if !strings.Contains(page, ".SS "+c.Name+"\n") {
			t.Errorf("the page has no section for %s", c.Name)
		}
		for _, f := range c.VisibleFlags() {
			if !strings.Contains(page, `\-\-`+strings.ReplaceAll(f.Names()[0], "-", `\-`)) && len(f.Names()[0]) > 1 {
				t.Errorf("the page does not show %s --%s", c.Name, f.Names()[0])
			}
		}
	}
	for _, section := range []string{".SH SYNOPSIS", ".SH ENVIRONMENT", ".SH EXIT STATUS", ".SH FILES"} {
		if !strings.Contains(page, section) {
			t.Errorf("the page has no %s", section)
		}
	}
	mandoc := clitest.Tool(t, "mandoc")
	cmd := exec.Command(mandoc, "-Tlint", "-W", "warning")
	cmd.Stdin = strings.NewReader(page)
	if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("mandoc -Tlint: %v\n%s", err, out)
	}
	// At 80 columns, no line runs past the edge: the no-fill blocks
	// (lists, examples) are laid out for the page, not the help text.
	cmd = exec.Command(mandoc, "-Tutf8", "-Owidth=80")
	cmd.Stdin = strings.NewReader(page)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("mandoc -Tutf8: %v", err)
	}
	text := regexp.MustCompile("(.\b)").ReplaceAllString(string(out), "") // overstrikes
	for _, line := range strings.Split(text, "\n") {
		if n := len([]rune(strings.ReplaceAll(line, "\t", "        "))); n > 80 {
			t.Errorf("a line of %d columns in the page at 80:\n%s", n, line)
		}
	}
	// A cut example still pastes as one command.
	if !strings.Contains(text, "--range 0-5000 \\\n") {
		t.Error("the splice example is not cut with a backslash")
	}
}

// TestShellLines: a long example is cut before flags, with " \" at the
// end of every line but the last, within the width, never inside quotes,
// and pastes back as the same command.
func TestShellLines(t *testing.T) {
	cmd := `crypt4gh keygen --sk a.sec -C 'a  -b c' --pk a.pub --kdf bcrypt --passphrase-file pw > out`
	lines := textfmt.ShellLines(cmd, 40)
	if len(lines) < 3 {
		t.Fatalf("not cut: %q", lines)
	}
	joined := ""
	for i, l := range lines {
		if n := len([]rune(l)); n > 40 {
			t.Errorf("line %d has %d columns: %q", i, n, l)
		}
		if i < len(lines)-1 {
			if !strings.HasSuffix(l, " \\") {
				t.Errorf("line %d does not end with a backslash: %q", i, l)
			}
			l = strings.TrimSuffix(l, " \\")
		}
		if i > 0 {
			if !strings.HasPrefix(l, "    -") && !strings.HasPrefix(l, "    >") {
				t.Errorf("line %d is not cut before a flag: %q", i, l)
			}
			l = " " + strings.TrimPrefix(l, "    ")
		}
		joined += l
	}
	if joined != cmd {
		t.Errorf("pasted back:\n%s\nwant\n%s", joined, cmd)
	}
}

// TestRegistry checks that each name of the registry is that of the
// command it builds, and that a run builds only the command it names.
func TestRegistry(t *testing.T) {
	e := newEnv(nil, nil, nil)
	for _, r := range registry() {
		if c := r.build(e); c.Name != r.name {
			t.Errorf("registry: %q builds the command %q", r.name, c.Name)
		}
		cmds := commandsFor(e, []string{"crypt4gh", r.name, "x.c4gh"})
		if want := 1; r.whole {
			want = len(registry())
			if len(cmds) != want {
				t.Errorf("%s: %d commands built, want %d", r.name, len(cmds), want)
			}
		} else if len(cmds) != want || cmds[0].Name != r.name {
			t.Errorf("%s: %d commands built, want only it", r.name, len(cmds))
		}
	}
	if n := len(commandsFor(e, []string{"crypt4gh", "--help"})); n != len(registry()) {
		t.Errorf("--help: %d commands built, want all %d", n, len(registry()))
	}
}

// TestFlagNames checks that clidoc.Names, which a command's flags answer
// from its Before to its Action (keepNames), names every flag of every
// command as urfave/cli does.
func TestFlagNames(t *testing.T) {
	e := newEnv(nil, nil, nil)
	for _, r := range registry() {
		app := newApp(e, []string{"crypt4gh", r.name})
		for _, f := range app.Command(r.name).Flags {
			if got, want := clidoc.Names(f), f.Names(); !slices.Equal(got, want) {
				t.Errorf("%s: clidoc.Names %q, urfave/cli's %q", r.name, got, want)
			}
		}
	}
}

// TestKeepNamesRestores checks that a command's action gets its flags as
// urfave/cli left them (its --help added), not the wrappers that answer
// their names from its Before on: the pages made in an action (here the
// completion script of the completion command itself) switch on
// urfave/cli's own types.
func TestKeepNamesRestores(t *testing.T) {
	e := newEnv(nil, io.Discard, io.Discard)
	args := []string{"crypt4gh", "completion", "bash"}
	app := newApp(e, args)
	var seen []cli.Flag
	cmd := app.Command("completion")
	action := cmd.Action
	cmd.Action = func(c *cli.Context) error {
		err := action(c)
		seen = slices.Clone(c.Command.Flags)
		return err
	}
	if err := app.Run(args); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(seen, func(f cli.Flag) bool { return f == cli.HelpFlag }) {
		t.Errorf("the action's flags lack --help: %v", seen)
	}
	for _, f := range seen {
		if _, ok := f.(*parsedFlag); ok {
			t.Errorf("the action got --%s in its wrapper", f.Names()[0])
		}
	}
}

// BenchmarkRunFlags is what a command costs before it works: the command
// line parsed and the flags checked, up to the input, which is not there.
func BenchmarkRunFlags(b *testing.B) {
	args := []string{"crypt4gh", "decrypt", "--sk", "me.sec", "--region", "chr1:1-1000", "-i", "/nonexistent/in.c4gh"}
	for b.Loop() {
		if code := Run(args, nil, io.Discard, io.Discard); code == 0 {
			b.Fatal("a missing input succeeded")
		}
	}
}

// TestKeepNamesBeforeFails checks that a command whose Before refuses
// its flags leaves them as they were: the same app run again (as a test
// may) then works, where flags left wrapped had urfave/cli add --help a
// second time.
func TestKeepNamesBeforeFails(t *testing.T) {
	e := newEnv(nil, io.Discard, io.Discard)
	app := newApp(e, []string{"crypt4gh", "pubkey"})
	if err := app.Run([]string{"crypt4gh", "pubkey", "--sk", ""}); err == nil {
		t.Fatal("pubkey --sk '' succeeded")
	}
	for _, f := range app.Command("pubkey").Flags {
		if _, ok := f.(*parsedFlag); ok {
			t.Fatalf("--%s left in its wrapper after the Before failed", f.Names()[0])
		}
	}
	err := app.Run([]string{"crypt4gh", "pubkey", "--sk", filepath.Join(t.TempDir(), "none.sec")})
	if err == nil || !strings.Contains(err.Error(), "none.sec") {
		t.Errorf("the second run: %v, want the missing key named", err)
	}
}
