//go:build linux

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/c4gh-go/crypt4gh/internal/clitest"
)

// TestMountCommand runs "crypt4gh mount" with a passphrase-protected key:
// the passphrase is asked once, the decrypted file reads as its plaintext,
// a file for another key is left out and named on stderr, and SIGTERM
// unmounts and ends the command.
func TestMountCommand(t *testing.T) {
	e := newSafetyEnv(t)
	if f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0); err != nil {
		clitest.Missing(t, "FUSE is not available: %v", err)
	} else {
		f.Close()
	}
	if os.Geteuid() != 0 {
		clitest.Tool(t, "fusermount3")
	}
	dir := t.TempDir()
	src, mp := filepath.Join(dir, "src"), filepath.Join(dir, "mnt")
	os.Mkdir(src, 0o700)
	os.Mkdir(mp, 0o700)
	sk := filepath.Join(dir, "me.sec")
	run := func(env []string, args ...string) {
		t.Helper()
		cmd := exec.Command(e.bin, args...)
		cmd.Env = cleanEnv(env...)
		if msg, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, msg)
		}
	}
	run([]string{"C4GH_PASSPHRASE=c0rrect-h0rse"}, "keygen", "--sk", sk, "--pk", sk+".pub")
	plain := randomBytes(300000, 21)
	os.WriteFile(filepath.Join(dir, "plain"), plain, 0o600)
	run(nil, "encrypt", "--recipient_pk", sk+".pub", "-i", filepath.Join(dir, "plain"), "-o", filepath.Join(src, "reads.bam.c4gh"))
	run(nil, "encrypt", "--recipient_pk", e.pk, "-i", filepath.Join(dir, "plain"), "-o", filepath.Join(src, "other.c4gh"))
	os.WriteFile(filepath.Join(src, "reads.bam.bai"), []byte("index"), 0o600)

	cmd := exec.Command(e.bin, "mount", "--sk", sk, src, mp)
	cmd.Env = cleanEnv("C4GH_PASSPHRASE=c0rrect-h0rse")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
			exec.Command("umount", "-l", mp).Run()
		}
	}()
	var got []byte
	deadline := time.Now().Add(20 * time.Second)
	for {
		var err error
		if got, err = os.ReadFile(filepath.Join(mp, "reads.bam")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the mount never showed reads.bam: %v; stderr:\n%s", err, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !bytes.Equal(got, plain) {
		t.Fatalf("reads.bam: %d bytes, not the plaintext", len(got))
	}
	if b, err := os.ReadFile(filepath.Join(mp, "reads.bam.bai")); err != nil || string(b) != "index" {
		t.Errorf("reads.bam.bai: %q, %v", b, err)
	}
	entries, _ := os.ReadDir(mp)
	var names []string
	for _, en := range entries {
		names = append(names, en.Name())
	}
	if strings.Join(names, " ") != "reads.bam reads.bam.bai" {
		t.Errorf("listing: %v", names)
	}
	if fi, err := os.Stat(filepath.Join(mp, "reads.bam")); err != nil || fi.Mode().Perm() != 0o400 {
		t.Errorf("reads.bam mode: %v, %v", fi.Mode(), err)
	}

	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		if code := cmd.ProcessState.ExitCode(); code != 128+int(syscall.SIGTERM) {
			t.Errorf("mount after SIGTERM: exit %d, want %d; stderr:\n%s", code, 128+int(syscall.SIGTERM), stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("mount did not end after SIGTERM")
	}
	info, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(info), " "+mp+" ") {
		t.Errorf("%s is still mounted", mp)
	}
	if !strings.Contains(stderr.String(), "other.c4gh") || strings.Contains(stderr.String(), "c0rrect-h0rse") {
		t.Errorf("stderr should name other.c4gh once and never the passphrase:\n%s", stderr.String())
	}
}
