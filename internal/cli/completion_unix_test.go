//go:build !windows

package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/c4gh-go/crypt4gh/internal/clitest"
)

// shellEnv returns an environment in which "crypt4gh" runs this test
// binary as the command, and the completion script for shell.
func shellEnv(t *testing.T, shell string) ([]string, string) {
	t.Helper()
	dir := t.TempDir()
	wrapper := "#!/bin/sh\nexec " + os.Args[0] + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "crypt4gh"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	// The keygen link: the same binary under the name crypt4gh-keygen.
	keygen := "#!/usr/bin/env bash\nexec -a crypt4gh-keygen " + os.Args[0] + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "crypt4gh-keygen"), []byte(keygen), 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "completion."+shell)
	gen := exec.Command(os.Args[0], "completion", shell)
	gen.Env = append(os.Environ(), childEnv+"=1")
	out, err := gen.Output()
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(script, out, 0o644)
	env := append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), childEnv+"=1")
	return env, script
}

// TestBashCompletion runs the bash completion function on typed command
// lines: long flags after "--", KDF names after --kdf, commands at the
// start, nothing (file names) for a key path.
func TestBashCompletion(t *testing.T) {
	bash := clitest.Tool(t, "bash")
	env, script := shellEnv(t, "bash")
	for _, tc := range []struct {
		words      string // typed so far, the last one under the cursor
		want, deny []string
	}{
		{`crypt4gh encrypt --`, []string{"--recipient_pk", "--sk", "--range", "--output"}, []string{"help"}},
		{`crypt4gh encrypt --rec`, []string{"--recipient_pk"}, []string{"--sk"}},
		{`crypt4gh keygen --kdf ""`, []string{"scrypt", "bcrypt", "pbkdf2_hmac_sha256"}, nil},
		{`crypt4gh keygen --kdf b`, []string{"bcrypt"}, []string{"scrypt"}},
		{`crypt4gh keygen --kdf =`, []string{"scrypt", "bcrypt", "pbkdf2_hmac_sha256"}, []string{"="}},
		{`crypt4gh keygen --kdf = b`, []string{"bcrypt"}, []string{"scrypt"}},
		{`crypt4gh-keygen --kdf ""`, []string{"scrypt", "bcrypt"}, nil},
		{`crypt4gh-keygen --c`, []string{"--comment", "--convert"}, []string{"--recipient_pk"}},
		{`crypt4gh de`, []string{"decrypt"}, []string{"encrypt"}},
		{`crypt4gh decrypt --sk ""`, nil, []string{"--sk", "decrypt"}},
		{`crypt4gh completion ""`, []string{"bash", "zsh", "fish"}, nil},
	} {
		cmd := exec.Command(bash, "-c", `source "$1"; eval "COMP_WORDS=($2)"; COMP_CWORD=$((${#COMP_WORDS[@]}-1)); _crypt4gh_complete; printf '%s\n' "${COMPREPLY[@]}"`, "bash", script, tc.words)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", tc.words, err, out)
		}
		checkWords(t, "bash", tc.words, string(out), tc.want, tc.deny)
	}
}

// TestZshCompletion calls the zsh completion function with zsh's own
// _describe and _files replaced by ones that print what they are given.
func TestZshCompletion(t *testing.T) {
	zsh := clitest.Tool(t, "zsh")
	env, script := shellEnv(t, "zsh")
	for _, tc := range []struct {
		words      string
		want, deny []string
	}{
		{`crypt4gh encrypt --`, []string{"--recipient_pk:", "--sk:"}, nil},
		{`crypt4gh keygen --kdf ''`, []string{"scrypt:", "bcrypt:"}, nil},
		{`crypt4gh keygen --kdf=b`, []string{"--kdf=bcrypt:"}, []string{"--kdf=scrypt:"}},
		{`crypt4gh-keygen --kdf ''`, []string{"scrypt:", "bcrypt:"}, nil},
		{`crypt4gh decrypt --sk ''`, []string{"FILES"}, []string{"--sk"}},
	} {
		cmd := exec.Command(zsh, "-fc", `compdef() { :; }; _describe() { print -l -- "${(@P)2}" }; _files() { print FILES }
source "$1"; words=(${(z)2}); words[-1]=${(Q)words[-1]}; CURRENT=${#words}; _crypt4gh`, "zsh", script, tc.words)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", tc.words, err, out)
		}
		checkWords(t, "zsh", tc.words, string(out), tc.want, tc.deny)
	}
}

// TestFishCompletion asks fish to complete command lines with the script
// loaded.
func TestFishCompletion(t *testing.T) {
	fish := clitest.Tool(t, "fish")
	env, script := shellEnv(t, "fish")
	for _, tc := range []struct {
		line       string
		want, deny []string
	}{
		{"crypt4gh encrypt --rec", []string{"--recipient_pk", "--recipient-pk"}, []string{"--sk"}},
		{"crypt4gh keygen --kdf ", []string{"scrypt", "bcrypt", "pbkdf2_hmac_sha256"}, nil},
		{"crypt4gh-keygen --kdf ", []string{"scrypt", "bcrypt", "pbkdf2_hmac_sha256"}, nil},
		{"crypt4gh dec", []string{"decrypt"}, nil},
	} {
		cmd := exec.Command(fish, "--no-config", "-c", `source $argv[1]; complete -C $argv[2]`, script, tc.line)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", tc.line, err, out)
		}
		var words []string
		for _, l := range strings.Split(string(out), "\n") {
			words = append(words, strings.SplitN(l, "\t", 2)[0])
		}
		checkWords(t, "fish", tc.line, strings.Join(words, "\n"), tc.want, tc.deny)
	}
}

func checkWords(t *testing.T, shell, typed, out string, want, deny []string) {
	t.Helper()
	got := map[string]bool{}
	for _, w := range strings.Split(out, "\n") {
		got[strings.TrimSpace(w)] = true
		if i := strings.Index(w, ":"); i > 0 && !strings.HasPrefix(w, "-") || i > 2 {
			got[w[:i+1]] = true
		}
	}
	for _, w := range want {
		if !got[w] {
			t.Errorf("%s: %q offers %q, want %q among them", shell, typed, strings.Fields(out), w)
		}
	}
	for _, w := range deny {
		if got[w] {
			t.Errorf("%s: %q offers %q", shell, typed, w)
		}
	}
}
