package keys

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/term"
)

// ReadPassphrase asks for a passphrase on the terminal (/dev/tty, not
// stdin or stdout, so that it works inside a pipe) without echoing it.
// With confirm, it asks a second time and fails when the two differ.
// It fails when the process has no terminal. The caller should clear the
// returned slice after use.
func ReadPassphrase(prompt string, confirm bool) ([]byte, error) {
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("no terminal to read the passphrase from: %w", err)
	}
	defer tty.Close()
	return readPassphrase(tty, prompt, confirm)
}

// readPassphrase does the work of ReadPassphrase on tty, a terminal.
func readPassphrase(tty *os.File, prompt string, confirm bool) ([]byte, error) {
	pass, err := readLine(tty, prompt)
	if err != nil {
		return nil, err
	}
	if !confirm {
		return pass, nil
	}
	again, err := readLine(tty, "Confirm passphrase: ")
	if err != nil {
		clear(pass)
		return nil, err
	}
	defer clear(again)
	if !bytes.Equal(pass, again) {
		clear(pass)
		return nil, errors.New("passphrases do not match")
	}
	return pass, nil
}

func readLine(tty *os.File, prompt string) ([]byte, error) {
	if _, err := io.WriteString(tty, prompt); err != nil {
		return nil, fmt.Errorf("failed to write the passphrase prompt: %w", err)
	}
	pass, err := term.ReadPassword(int(tty.Fd()))
	// The newline typed by the user was not echoed.
	io.WriteString(tty, "\n")
	if err != nil {
		return nil, fmt.Errorf("failed to read passphrase: %w", err)
	}
	return pass, nil
}
