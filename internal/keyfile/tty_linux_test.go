package keyfile

import (
	"bufio"
	"io"
	"os"
	"strings"
	"testing"

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
		master, tty := ptytest.Open(t)
		// Collect what the terminal shows, so that the pty never fills up.
		shown := make(chan string)
		go func() {
			b, _ := io.ReadAll(bufio.NewReader(master))
			shown <- string(b)
		}()
		type result struct {
			pass []byte
			err  error
		}
		done := make(chan result)
		go func() {
			p, err := readPassphrase(tty, "Passphrase: ", tc.confirm)
			done <- result{p, err}
		}()
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
