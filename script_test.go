package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/c4gh-go/crypt4gh/internal/cli"
	"github.com/c4gh-go/crypt4gh/internal/clitest"
	"github.com/c4gh-go/crypt4gh/internal/kdfcost"
)

// interopDir holds the vectors made by other implementations.
const interopDir = "testdata/interop"

// The exit codes of docs/exit-codes.md, which the end-to-end tests check.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
	exitKey   = 3
	exitData  = 4
)

func TestMain(m *testing.M) {
	// The scripts' own keys are read by the scripts only: the crypt4gh of
	// the scripts (this binary) writes them with the lowest KDF cost. The
	// vectors keep theirs, and the tests of the built binary write keys
	// at the real cost.
	kdfcost.LowerForTests()
	testscript.Main(cleanupAfter{m}, map[string]func(){
		"crypt4gh":        func() { os.Exit(cli.Run(os.Args, os.Stdin, os.Stdout, os.Stderr)) },
		"crypt4gh-keygen": func() { os.Exit(cli.Run(os.Args, os.Stdin, os.Stdout, os.Stderr)) },
	})
}

// cleanupAfter removes the binary that the end-to-end tests built.
type cleanupAfter struct{ m *testing.M }

func (c cleanupAfter) Run() int {
	defer clitest.Cleanup()
	return c.m.Run()
}

// TestScript runs the command-line scenarios in testdata/script: each
// .txtar file is a shell-like script run against the crypt4gh command.
// $INTEROP is the folder of the interop vectors.
//
// The command of the scripts is this test binary (TestMain). Under -race
// it is this package's test binary built without -race instead: each of
// the scripts' hundreds of commands is a process of its own, which the
// detector made some twenty times slower (the vectors' bcrypt and PBKDF2
// keys most), while the same code runs under it in internal/cli's tests
// in one process, where it has something to find. The scripts check the
// same things either way.
func TestScript(t *testing.T) {
	t.Parallel()
	interop, err := filepath.Abs(interopDir)
	if err != nil {
		t.Fatal(err)
	}
	var bin string
	if raceEnabled {
		bin = scriptCommands(t)
	}
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("INTEROP", interop)
			if bin != "" {
				env.Setenv("PATH", bin+string(filepath.ListSeparator)+env.Getenv("PATH"))
			}
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"mkdata":   mkdata,
			"perm":     perm,
			"slice":    slice,
			"flipbyte": flipbyte,
		},
	})
}

// scriptCommands builds this package's test binary without -race into a
// folder of the test as crypt4gh, with crypt4gh-keygen beside it, and
// returns the folder: TestMain makes it the command of its name.
func scriptCommands(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "crypt4gh")
	cmd := exec.Command("go", "test", "-c", "-race=false", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go test -c: %v\n%s", err, out)
	}
	if err := os.Symlink(bin, filepath.Join(dir, "crypt4gh-keygen")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// mkdata SIZE FILE writes SIZE pseudo-random bytes (seeded by SIZE) to FILE.
func mkdata(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: mkdata SIZE FILE")
	}
	n, err := strconv.Atoi(args[0])
	ts.Check(err)
	r := rand.NewChaCha8([32]byte{byte(n), byte(n >> 8), byte(n >> 16)})
	b := make([]byte, n)
	r.Read(b)
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), b, 0o644))
}

// perm FILE MODE checks the permission bits of FILE (octal).
func perm(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: perm FILE MODE")
	}
	fi, err := os.Stat(ts.MkAbs(args[0]))
	ts.Check(err)
	got := fmt.Sprintf("%04o", fi.Mode().Perm())
	if (got == args[1]) == neg {
		ts.Fatalf("%s has mode %s", args[0], got)
	}
}

// slice IN START END OUT writes bytes [START, END) of IN to OUT.
func slice(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 4 {
		ts.Fatalf("usage: slice IN START END OUT")
	}
	data, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	s, err := strconv.Atoi(args[1])
	ts.Check(err)
	e, err := strconv.Atoi(args[2])
	ts.Check(err)
	e = min(e, len(data))
	ts.Check(os.WriteFile(ts.MkAbs(args[3]), data[s:e], 0o644))
}

// flipbyte FILE OFFSET flips the lowest bit of the byte at OFFSET in FILE;
// a negative OFFSET counts from the end (-1 is the last byte).
func flipbyte(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: flipbyte FILE OFFSET")
	}
	name := ts.MkAbs(args[0])
	data, err := os.ReadFile(name)
	ts.Check(err)
	off, err := strconv.Atoi(args[1])
	ts.Check(err)
	if off < 0 {
		off += len(data)
	}
	if off < 0 || off >= len(data) {
		ts.Fatalf("offset %s outside %s (%d bytes)", args[1], args[0], len(data))
	}
	data[off] ^= 1
	ts.Check(os.WriteFile(name, data, 0o644))
}

// cleanEnv is the environment of the tests without any C4GH_ variable,
// plus extra.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "C4GH_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}
