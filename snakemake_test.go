//go:build linux

package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/c4gh-go/crypt4gh/internal/clitest"
)

// TestSnakemakeWorkflow runs the example workflow of contrib/snakemake with
// Debian's snakemake over 50 files (8 unless clitest.AtScale), one of
// which the archive's key does not open (encrypted for another key
// already). The run is killed with
// SIGKILL in the middle (Snakemake and every job under way) and started
// again: the job of that file fails with this tool's message and exit 3
// in its log, Snakemake exits non-zero, the others reach the recipient
// whole, and no partial file is left anywhere. (One killed run and its
// rerun, not also an uninterrupted run: each costs minutes, most of them
// Snakemake starting a Python process per job.)
func TestSnakemakeWorkflow(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs Snakemake, a Python process per job")
	}
	t.Parallel()
	snakemake := clitest.Tool(t, "snakemake")
	bin := clitest.Binary(t)
	root, _ := os.Getwd()
	env := append(cleanEnv(), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"), "HOME="+t.TempDir())

	dir := t.TempDir()
	run := func(name string, args ...string) []byte {
		t.Helper()
		c := exec.Command(name, args...)
		c.Dir, c.Env = dir, env
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return out
	}
	for _, k := range []string{"archive", "recipient", "other"} {
		run(bin, "keygen", "--sk", k+".sec", "--pk", k+".pub", "--nocrypt")
	}
	os.Mkdir(filepath.Join(dir, "data"), 0o755)
	n := clitest.Size(50, 8)
	plain := map[string][]byte{}
	for i := range n {
		s := fmt.Sprintf("s%02d", i)
		plain[s] = bytes.Repeat([]byte(s), 20000+i*1000)
		os.WriteFile(filepath.Join(dir, "data", s), plain[s], 0o644)
	}
	// s07 reached the archive encrypted for another key: its
	// encrypted file is newer than the data, so it is not
	// encrypted again, and re-keying it fails.
	os.Mkdir(filepath.Join(dir, "enc"), 0o755)
	run(bin, "encrypt", "--recipient_pk", "other.pub", "-i", "data/s07", "-o", "enc/s07.c4gh")
	later := time.Now().Add(time.Minute)
	os.Chtimes(filepath.Join(dir, "enc/s07.c4gh"), later, later)

	args := []string{"--snakefile", filepath.Join(root, "contrib/snakemake/example/Snakefile"), "--cores", "4", "--keep-going", "--scheduler", "greedy"}
	{
		c := exec.Command(snakemake, args...)
		c.Dir, c.Env = dir, env
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(3 * time.Minute)
		for {
			n, _ := filepath.Glob(filepath.Join(dir, "recipient", "*.c4gh"))
			if len(n) >= 2+len(plain)/6 || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		c.Wait()
		if ok, _ := filepath.Glob(filepath.Join(dir, "verified", "*.ok")); len(ok) >= n-1 {
			t.Fatalf("the workflow had finished before it was killed: the test would test nothing")
		}
		run(snakemake, "--snakefile", args[1], "--unlock")
		args = append(args, "--rerun-incomplete")
	}
	c := exec.Command(snakemake, args...)
	c.Dir, c.Env = dir, env
	out, err := c.CombinedOutput()
	if err == nil {
		t.Fatalf("snakemake succeeded with a file the archive's key does not open\n%s", out)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "logs/reencrypt/s07.log"))
	if !strings.Contains(string(log), "crypt4gh: error: ") || !strings.Contains(string(log), "crypt4gh: exit status 3") {
		t.Errorf("the log of the failed job:\n%s", log)
	}
	if _, err := os.Stat(filepath.Join(dir, "recipient/s07.c4gh")); err == nil {
		t.Errorf("the failed job left its output")
	}
	for s, p := range plain {
		if s == "s07" {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, "verified", s+".ok")); err != nil {
			t.Errorf("%s not verified: %v", s, err)
		}
		run(bin, "decrypt", "--sk", "recipient.sec", "-f", "-i", "recipient/"+s+".c4gh", "-o", "check")
		got, _ := os.ReadFile(filepath.Join(dir, "check"))
		if !bytes.Equal(got, p) {
			t.Errorf("%s: the recipient's file does not decrypt to the data", s)
		}
		if up, _ := os.ReadFile(filepath.Join(dir, "archive", s+".c4gh")); !bytes.Equal(up, mustReadFile(t, filepath.Join(dir, "enc", s+".c4gh"))) {
			t.Errorf("%s: the upload is not the encrypted file", s)
		}
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".partial-") {
			t.Errorf("partial file left: %s", p)
		}
		return nil
	})
}

func mustReadFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
