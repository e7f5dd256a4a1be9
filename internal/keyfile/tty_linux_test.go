package keyfile

import (
	"bufio"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/c4gh-go/crypt4gh/internal/ptytest"

	"golang.org/x/sys/unix"
)

// TestReadPassphrasePTY types on a pseudo-terminal and checks the prompts,
// the confirmation and that the passphrase is not echoed.
func TestReadPassphrasePTY(t *testing.T) {
	tests := []struct {
		typed   string
		confirm bool
		want    string
		wantErr string
	}{
		{"s3cret pass\n", false, "s3cret pass", ""},
		{"s3cret\ns3cret\n", true, "s3cret", ""},
		{"s3cret\nother\n", true, "", "do not match"},
	}
	for _, tc := range tests {
		master, tty, shown, ask := ptyPrompt(t)
		done := ask(tc.confirm)
		// Type line by line once echo is off, as a user would.
		lines := strings.SplitAfter(tc.typed, "\n")
		for _, l := range lines {
			if l == "" {
				continue
			}
			waitNoEcho(t, tty)
			if _, err := master.WriteString(l); err != nil {
				t.Fatal(err)
			}
		}
		r := <-done
		tty.Close()
		out := <-shown
		if tc.wantErr != "" {
			if r.err == nil || !strings.Contains(r.err.Error(), tc.wantErr) {
				t.Errorf("%q: got %q, %v; want error %q", tc.typed, r.pass, r.err, tc.wantErr)
			}
			continue
		}
		if r.err != nil || string(r.pass) != tc.want {
			t.Errorf("%q: got %q, %v; want %q", tc.typed, r.pass, r.err, tc.want)
		}
		if !strings.Contains(out, "Passphrase: ") || (tc.confirm && !strings.Contains(out, "Confirm passphrase: ")) {
			t.Errorf("terminal showed %q, want the prompts", out)
		}
		if strings.Contains(out, tc.want) {
			t.Errorf("terminal echoed the passphrase: %q", out)
		}
	}
}

// promptResult is what readPassphrase returned.
type promptResult struct {
	pass []byte
	err  error
}

// ptyPrompt opens a pseudo-terminal and returns its two ends; shown, which
// gives what the terminal showed once tty is closed (collected as it goes,
// so that the pty never fills up); and ask, which starts readPassphrase
// on tty and returns where its result comes.
func ptyPrompt(t *testing.T) (master, tty *os.File, shown <-chan string, ask func(confirm bool) <-chan promptResult) {
	master, tty = ptytest.Open(t)
	out := make(chan string)
	go func() {
		b, _ := io.ReadAll(bufio.NewReader(master))
		out <- string(b)
	}()
	ask = func(confirm bool) <-chan promptResult {
		done := make(chan promptResult)
		go func() {
			p, err := readPassphrase(tty, "Passphrase: ", confirm)
			done <- promptResult{p, err}
		}()
		return done
	}
	return master, tty, out, ask
}

// waitNoEcho waits until the reader has turned echo off on tty.
func waitNoEcho(t *testing.T, tty *os.File) {
	for range 5000 {
		st, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
		if err != nil {
			t.Fatal(err)
		}
		if st.Lflag&unix.ECHO == 0 {
			return
		}
		syscallSleep()
	}
	t.Fatal("echo never turned off")
}

func syscallSleep() { _ = unix.Nanosleep(&unix.Timespec{Nsec: 1e6}, nil) }

func TestReadPassphraseNoTerminal(t *testing.T) {
	if f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0); err == nil {
		f.Close()
		t.Skip("this process has a terminal")
	}
	if _, err := openTTY(); err == nil || !strings.Contains(err.Error(), "terminal") {
		t.Errorf("got %v, want an error about the terminal", err)
	}
}

// TestReadPassphraseStopped: a process stopped at the prompt (Ctrl-Z) and
// continued (fg) finds echo turned on by the shell; it turns it off again
// and shows the prompt again, so that what is typed after fg is not shown.
// End of input on an empty line ends the prompt with an error, where it
// used to wait for more.
func TestReadPassphraseStopped(t *testing.T) {
	master, tty, shown, ask := ptyPrompt(t)
	done := ask(false)
	waitNoEcho(t, tty)
	// The shell, taking the terminal back, turns echo on; fg continues
	// the process.
	st, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	st.Lflag |= unix.ECHO
	if err := unix.IoctlSetTermios(int(tty.Fd()), unix.TCSETS, st); err != nil {
		t.Fatal(err)
	}
	if err := unix.Kill(os.Getpid(), unix.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitNoEcho(t, tty)
	if _, err := master.WriteString("typed after fg\n"); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || string(r.pass) != "typed after fg" {
		t.Errorf("got %q, %v", r.pass, r.err)
	}

	done = ask(false)
	waitNoEcho(t, tty)
	if _, err := master.Write([]byte{4}); err != nil { // Ctrl-D
		t.Fatal(err)
	}
	select {
	case r = <-done:
		if r.err == nil || !strings.Contains(r.err.Error(), "end of input") {
			t.Errorf("Ctrl-D: got %q, %v", r.pass, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Ctrl-D on an empty line did not end the prompt")
	}
	tty.Close()
	out := <-shown
	if strings.Contains(out, "typed after fg") || strings.Count(out, "Passphrase: ") != 3 {
		t.Errorf("the terminal showed %q; want three prompts and nothing typed", out)
	}
}
