//go:build linux

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
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
	t.Parallel()
	e, dir, src, mp := mountSetup(t)
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

	m, got := startMount(t, e.bin, cleanEnv("C4GH_PASSPHRASE=c0rrect-h0rse"), mp, "reads.bam", "--sk", sk, src, mp)
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

	// One ready line; a second mount on the same folder is refused.
	// The mount serves before the command prints its ready line: wait
	// for the line, not for a guessed delay.
	ready := "crypt4gh: mounted " + src + " at " + mp + ": 2 files; Ctrl-C or fusermount3 -u " + mp + " to unmount"
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(m.stderr.String(), ready) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(m.stderr.String(), ready) {
		t.Errorf("no ready line:\n%s", m.stderr.String())
	}
	again := exec.Command(e.bin, "mount", "--sk", sk, src, mp)
	again.Env = cleanEnv("C4GH_PASSPHRASE=c0rrect-h0rse")
	if out, err := again.CombinedOutput(); again.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "is a mount point already") {
		t.Errorf("a second mount on %s: %v\n%s", mp, err, out)
	}

	m.stop(t)
	info, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(info), " "+mp+" ") {
		t.Errorf("%s is still mounted", mp)
	}
	if !strings.Contains(m.stderr.String(), "other.c4gh") || strings.Contains(m.stderr.String(), "c0rrect-h0rse") {
		t.Errorf("stderr should name other.c4gh once and never the passphrase:\n%s", m.stderr.String())
	}
}

// mountSetup makes the environment of a mount test that needs FUSE: a
// folder with an empty SOURCE and MOUNTPOINT in it.
func mountSetup(t *testing.T) (e *safetyEnv, dir, src, mp string) {
	t.Helper()
	e = newSafetyEnv(t)
	requireFUSE(t)
	dir = t.TempDir()
	src, mp = filepath.Join(dir, "src"), filepath.Join(dir, "mnt")
	os.Mkdir(src, 0o700)
	os.Mkdir(mp, 0o700)
	return e, dir, src, mp
}

// requireFUSE reports FUSE Missing when this process cannot mount.
func requireFUSE(t *testing.T) {
	t.Helper()
	if f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0); err != nil {
		clitest.Missing(t, "FUSE is not available: %v", err)
	} else {
		f.Close()
	}
	if os.Geteuid() != 0 {
		clitest.Tool(t, "fusermount3")
	}
}

// mountCmd is a running "crypt4gh mount".
type mountCmd struct {
	cmd    *exec.Cmd
	stderr lockedBuffer // read while the command runs
}

// startMount runs bin mount with args and env, and returns it and the
// bytes of name under the mount point mp once it reads. The test's end
// kills and unmounts it if it still runs.
func startMount(t *testing.T, bin string, env []string, mp, name string, args ...string) (*mountCmd, []byte) {
	t.Helper()
	m := &mountCmd{cmd: exec.Command(bin, append([]string{"mount"}, args...)...)}
	m.cmd.Env = env
	m.cmd.Stderr = &m.stderr
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if m.cmd.ProcessState == nil {
			m.cmd.Process.Kill()
			m.cmd.Wait()
			exec.Command("umount", "-l", mp).Run()
		}
	})
	// The file reads as soon as the kernel has the mount, while the
	// command may still be in go-fuse's start-up (its poll probe opens
	// and closes a file of the mount): a SIGKILL then leaves a thread
	// waiting on its own dead server for ever. So the ready line too.
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, err := os.ReadFile(filepath.Join(mp, name))
		if err == nil && strings.Contains(m.stderr.String(), "crypt4gh: mounted ") {
			return m, got
		}
		if err == nil {
			err = errors.New("no ready line yet")
		}
		if time.Now().After(deadline) {
			t.Fatalf("the mount never showed %s: %v; stderr:\n%s", name, err, m.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop sends SIGTERM and checks that the command ends with 128+15.
func (m *mountCmd) stop(t *testing.T) {
	t.Helper()
	m.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- m.cmd.Wait() }()
	select {
	case <-done:
		if code := m.cmd.ProcessState.ExitCode(); code != 128+int(syscall.SIGTERM) {
			t.Errorf("mount after SIGTERM: exit %d, want %d; stderr:\n%s", code, 128+int(syscall.SIGTERM), m.stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("mount did not end after SIGTERM")
	}
}

// TestMountStale: a mount point left by a mount that was killed (stale, or
// still mounted while it goes) is refused with the advice to unmount it.
func TestMountStale(t *testing.T) {
	t.Parallel()
	e, _, src, mp := mountSetup(t)
	os.WriteFile(filepath.Join(src, "note"), []byte("x"), 0o600)
	m, _ := startMount(t, e.bin, cleanEnv(), mp, "note", "--sk", e.sk, src, mp)
	m.cmd.Process.Kill()
	m.cmd.Wait()
	t.Cleanup(func() { exec.Command("umount", "-l", mp).Run() })
	again := exec.Command(e.bin, "mount", "--sk", e.sk, src, mp)
	again.Env = cleanEnv()
	out, _ := again.CombinedOutput()
	// The kernel says ENOTCONN for the stale mount, or the folder is
	// still the root of the mount while it goes: refused either way.
	refused := strings.Contains(string(out), "is a stale mount") || strings.Contains(string(out), "is a mount point already")
	if again.ProcessState.ExitCode() != 2 || !refused || !strings.Contains(string(out), "fusermount3 -u "+mp) {
		t.Errorf("a stale mount point: exit %d\n%s", again.ProcessState.ExitCode(), out)
	}
}

// lockedBuffer is a bytes.Buffer that a running command writes while the
// test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestMountRefresh: with --dir-cache-time, a file replaced in the source
// reads as it is now at its next open (a larger plaintext, whole), a new
// file appears and a removed one goes once the listing is older than the
// time given, and a file for another key is named on stderr once, not at
// every listing.
func TestMountRefresh(t *testing.T) {
	t.Parallel()
	e, dir, src, mp := mountSetup(t)
	sk := filepath.Join(dir, "me.sec")
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(e.bin, args...)
		cmd.Env = cleanEnv()
		if msg, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, msg)
		}
	}
	encrypt := func(plain []byte, pk, name string, force bool) {
		t.Helper()
		p := filepath.Join(dir, "plain")
		os.WriteFile(p, plain, 0o600)
		args := []string{"encrypt", "--recipient_pk", pk, "-i", p, "-o", filepath.Join(src, name)}
		if force {
			args = append(args, "--force")
		}
		run(args...)
	}
	run("keygen", "--nocrypt", "--sk", sk, "--pk", sk+".pub")
	first := randomBytes(100000, 31)
	encrypt(first, sk+".pub", "a.txt.c4gh", false)
	encrypt(first, e.pk, "other.c4gh", false)

	// With listings kept for an hour, a file replaced by a larger one
	// is read whole, as it is now, at its next open.
	m, got := startMount(t, e.bin, cleanEnv(), mp, "a.txt", "--sk", sk, "--dir-cache-time", "1h", src, mp)
	if !bytes.Equal(got, first) {
		t.Fatalf("a.txt: %d bytes, not the plaintext", len(got))
	}
	second := randomBytes(250000, 32)
	encrypt(second, sk+".pub", "a.txt.c4gh", true)
	if got, err := os.ReadFile(filepath.Join(mp, "a.txt")); err != nil || !bytes.Equal(got, second) {
		t.Errorf("a.txt after it was replaced: %d bytes (want %d), %v", len(got), len(second), err)
	}
	if fi, err := os.Stat(filepath.Join(mp, "a.txt")); err != nil || fi.Size() != int64(len(second)) {
		t.Errorf("a.txt after it was replaced: stat %v, %v", fi, err)
	}
	m.stop(t)
	if !strings.Contains(m.stderr.String(), "a.txt.c4gh: changed since it was listed") {
		t.Errorf("the reopened file is not logged:\n%s", m.stderr.String())
	}

	// Listings kept for 300 ms: the folder follows the source.
	const every = 300 * time.Millisecond
	m, _ = startMount(t, e.bin, cleanEnv(), mp, "a.txt", "--sk", sk, "--dir-cache-time", every.String(), src, mp)
	// A new file appears, a removed one goes.
	encrypt(first, sk+".pub", "b.txt.c4gh", false)
	os.Remove(filepath.Join(src, "a.txt.c4gh"))
	names := func() string {
		entries, _ := os.ReadDir(mp)
		var names []string
		for _, en := range entries {
			names = append(names, en.Name())
		}
		return strings.Join(names, " ")
	}
	deadline := time.Now().Add(10 * time.Second)
	for names() != "b.txt" && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if got := names(); got != "b.txt" {
		t.Fatalf("listing after the refresh: %q, want b.txt", got)
	}
	gone := func() bool {
		_, err := os.Stat(filepath.Join(mp, "a.txt"))
		return os.IsNotExist(err)
	}
	for !gone() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if !gone() {
		t.Error("a.txt is still there after it was removed")
	}
	if got, err := os.ReadFile(filepath.Join(mp, "b.txt")); err != nil || !bytes.Equal(got, first) {
		t.Errorf("b.txt: %d bytes, %v", len(got), err)
	}
	// Listed again a few times: other.c4gh is still named once.
	time.Sleep(3 * every)
	names()
	m.stop(t)
	if n := strings.Count(m.stderr.String(), "other.c4gh: left out"); n != 1 {
		t.Errorf("other.c4gh named %d times, want once:\n%s", n, m.stderr.String())
	}
}

// TestMountApart: a mount point that is the source, holds it or lies in
// it is refused (exit 2) before anything is mounted: the mount would
// read itself, and a read waiting on the mount that serves it waits for
// good.
func TestMountApart(t *testing.T) {
	t.Parallel()
	e, _, src, _ := mountSetup(t)
	inner := filepath.Join(src, "mnt")
	if err := os.Mkdir(inner, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ source, mp, msg string }{
		{src, src, "holds the source"},
		{src, filepath.Dir(src), "holds the source"},
		{src, inner, "is inside the source"},
	} {
		cmd := exec.Command(e.bin, "mount", "--sk", e.sk, tc.source, tc.mp)
		cmd.Env = cleanEnv()
		out, _ := cmd.CombinedOutput()
		if cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), tc.msg) {
			t.Errorf("mount %s %s: exit %d\n%s", tc.source, tc.mp, cmd.ProcessState.ExitCode(), out)
		}
		if outfileMounted(tc.mp) {
			exec.Command("umount", "-l", tc.mp).Run()
			t.Errorf("mount %s %s: mounted", tc.source, tc.mp)
		}
	}
}

// outfileMounted reports whether p is a mount point now.
func outfileMounted(p string) bool {
	b, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == p {
			return true
		}
	}
	return false
}
