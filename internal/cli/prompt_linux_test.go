package cli

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/c4gh-go/crypt4gh/internal/ptytest"
	"github.com/c4gh-go/crypt4gh/keys"
)

// terminalRun runs the command as a child process (this test binary) with
// a pseudo-terminal as its controlling terminal and its stdin, stdout and
// stderr, as a user at a terminal runs it. The returned screen collects
// what the terminal shows.
type terminalRun struct {
	cmd    *exec.Cmd
	master *os.File
	mu     sync.Mutex
	screen strings.Builder
	done   chan struct{}
}

func startOnTerminal(t *testing.T, env []string, args ...string) *terminalRun {
	t.Helper()
	master, tty := ptytest.Open(t)
	r := &terminalRun{master: master, done: make(chan struct{})}
	r.cmd = exec.Command(os.Args[0], args...)
	r.cmd.Env = append(append(os.Environ(), childEnv+"=1", passphraseEnv+"=", secretKeyEnv+"=", publicKeyEnv+"="), env...)
	r.cmd.Stdin, r.cmd.Stdout, r.cmd.Stderr = tty, tty, tty
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	go func() {
		defer close(r.done)
		br := bufio.NewReader(master)
		buf := make([]byte, 4096)
		for {
			n, err := br.Read(buf)
			r.mu.Lock()
			r.screen.Write(buf[:n])
			r.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		if r.cmd.ProcessState == nil {
			r.cmd.Process.Kill()
			r.cmd.Wait()
		}
	})
	return r
}

// waitFor waits until the terminal shows s, n times in all.
func (r *terminalRun) waitFor(t *testing.T, s string, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r.mu.Lock()
		got := r.screen.String()
		r.mu.Unlock()
		if strings.Count(got, s) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the terminal never showed %q %d times; it shows:\n%q", s, n, got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// typeLine types s and a newline at the passphrase prompt, once the
// prompt has turned echo off: typed earlier, the terminal would show it.
func (r *terminalRun) typeLine(t *testing.T, s string) {
	t.Helper()
	r.waitEchoOff(t)
	if _, err := io.WriteString(r.master, s+"\n"); err != nil {
		t.Fatal(err)
	}
}

// waitEchoOff waits until the terminal's echo is off. The settings are
// read through a new descriptor of the terminal each time: the test keeps
// none open, so that the child's exit ends the screen.
func (r *terminalRun) waitEchoOff(t *testing.T) {
	t.Helper()
	n, err := unix.IoctlGetInt(int(r.master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("/dev/pts/%d", n)
	deadline := time.Now().Add(20 * time.Second)
	for {
		fd, err := unix.Open(name, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		st, err := unix.IoctlGetTermios(fd, unix.TCGETS)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		if st.Lflag&unix.ECHO == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the prompt never turned echo off")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (r *terminalRun) wait(t *testing.T) (int, string) {
	t.Helper()
	r.cmd.Wait()
	select {
	case <-r.done:
	case <-time.After(5 * time.Second):
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cmd.ProcessState.ExitCode(), r.screen.String()
}

// TestKeygenPromptAgain: two passphrases that differ are asked again, up
// to three times; a passphrase left empty makes a key without one, as the
// reference tool does.
func TestKeygenPromptAgain(t *testing.T) {
	dir := t.TempDir()
	sk := filepath.Join(dir, "k.sec")
	r := startOnTerminal(t, nil, "keygen", "--sk", sk, "--pk", sk+".pub")
	const prompt = "Passphrase for the new secret key: "
	r.waitFor(t, prompt, 1)
	r.typeLine(t, "one")
	r.waitFor(t, "Confirm passphrase: ", 1)
	r.typeLine(t, "two")
	r.waitFor(t, "do not match; try again", 1)
	r.waitFor(t, prompt, 2)
	r.typeLine(t, "right one")
	r.waitFor(t, "Confirm passphrase: ", 2)
	r.typeLine(t, "right one")
	if code, screen := r.wait(t); code != 0 || strings.Contains(screen, "right one") {
		t.Fatalf("exit %d; the terminal shows:\n%q", code, screen)
	}
	data, _ := os.ReadFile(sk)
	if _, err := keys.ParseSecretKey(data, func() ([]byte, error) { return []byte("right one"), nil }); err != nil {
		t.Fatalf("the key does not open with the passphrase typed twice: %v", err)
	}

	sk2 := filepath.Join(dir, "empty.sec")
	r = startOnTerminal(t, nil, "keygen", "--sk", sk2, "--pk", sk2+".pub")
	r.waitFor(t, prompt, 1)
	r.typeLine(t, "")
	r.waitFor(t, "Confirm passphrase: ", 1)
	r.typeLine(t, "")
	if code, screen := r.wait(t); code != 0 || !strings.Contains(screen, "without protection") {
		t.Fatalf("empty passphrase: exit %d; the terminal shows:\n%q", code, screen)
	}
	data, _ = os.ReadFile(sk2)
	if info, err := keys.InspectSecretKey(data); err != nil || info.Protected {
		t.Fatalf("an empty passphrase gave %+v, %v; want an unprotected key", info, err)
	}
}

// TestInspectNoInputOnTerminal: inspect with nothing to read but a
// terminal is a usage error, not a silent wait.
func TestInspectNoInputOnTerminal(t *testing.T) {
	r := startOnTerminal(t, nil, "inspect")
	if code, screen := r.wait(t); code != exitUsage || !strings.Contains(screen, "stdin is a terminal") {
		t.Fatalf("exit %d; the terminal shows:\n%q", code, screen)
	}
}

// TestInterruptDuringProgress: Ctrl-C while the bar is drawn puts the
// message on a line of its own.
func TestInterruptDuringProgress(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(1 << 40) // sparse: reads as zeros, for longer than the test
	f.Close()
	r := startOnTerminal(t, nil, "encrypt", "--recipient_pk", filepath.Join(interopDir, "keys", "dave.pub.pem"), "-i", big, "-o", "/dev/null")
	r.waitFor(t, "encrypting", 1)
	r.cmd.Process.Signal(os.Interrupt)
	code, screen := r.wait(t)
	if code != 128+int(syscall.SIGINT) {
		t.Errorf("exit %d, want %d", code, 128+int(syscall.SIGINT))
	}
	i := strings.Index(screen, "crypt4gh: error: interrupted")
	if i < 0 || i > 0 && screen[i-1] != '\n' {
		t.Errorf("the message does not start a line:\n%q", screen)
	}
}

// TestPassphraseThreeTries: a wrong passphrase typed at the terminal is
// asked again, up to three times in all; the third wrong one fails with
// the key class (exit 3).
func TestPassphraseThreeTries(t *testing.T) {
	dir := t.TempDir()
	sk, pub := filepath.Join(dir, "k.sec"), filepath.Join(dir, "k.pub")
	pass := filepath.Join(dir, "pass")
	if err := os.WriteFile(pass, []byte("right\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(passphraseEnv, "")
	runOK(t, "keygen", "--sk", sk, "--pk", pub, "--passphrase-file", pass)
	plain, enc := filepath.Join(dir, "plain"), filepath.Join(dir, "plain.c4gh")
	if err := os.WriteFile(plain, []byte("three tries\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	runOK(t, "encrypt", "--recipient_pk", pub, "-i", plain, "-o", enc)
	const prompt = "Passphrase for "

	r := startOnTerminal(t, nil, "decrypt", "--sk", sk, "-i", enc, "-o", filepath.Join(dir, "out"))
	r.waitFor(t, prompt, 1)
	r.typeLine(t, "wrong")
	r.waitFor(t, "Wrong passphrase; try again.", 1)
	r.waitFor(t, prompt, 2)
	r.typeLine(t, "also wrong")
	r.waitFor(t, prompt, 3)
	r.typeLine(t, "right")
	if code, screen := r.wait(t); code != 0 {
		t.Fatalf("exit %d; the terminal shows:\n%q", code, screen)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "out")); string(got) != "three tries\n" {
		t.Fatalf("decrypted %q", got)
	}

	r = startOnTerminal(t, nil, "decrypt", "--sk", sk, "-i", enc, "-o", filepath.Join(dir, "out2"))
	for i := 1; i <= 3; i++ {
		r.waitFor(t, prompt, i)
		r.typeLine(t, "wrong")
	}
	if code, screen := r.wait(t); code != exitKey || strings.Count(screen, prompt) != 3 || !strings.Contains(screen, "wrong passphrase") {
		t.Fatalf("three wrong passphrases: exit %d; the terminal shows:\n%q", code, screen)
	}
}
