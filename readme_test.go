package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestREADMEFirstCommand runs the first command of README.md, as a
// newcomer pastes it: it must print "round trip ok" and nothing else, on
// stdout or stderr.
func TestREADMEFirstCommand(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs go run three times")
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "```sh\n")
	if !ok {
		t.Fatal("README.md has no sh block")
	}
	block, _, _ = strings.Cut(block, "```")
	var first string
	for _, line := range strings.Split(block, "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			first = line
			break
		}
	}
	if !strings.HasPrefix(first, "go run . ") {
		t.Fatalf("the first command is %q", first)
	}
	cmd := exec.Command("sh", "-c", first)
	cmd.Env = cleanEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || stdout.String() != "round trip ok\n" || stderr.Len() != 0 {
		t.Fatalf("%s: %v\nstdout: %q\nstderr: %q", first, err, stdout.String(), stderr.String())
	}
}
