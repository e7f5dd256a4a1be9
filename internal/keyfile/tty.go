package keyfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/term"

	"github.com/c4gh-go/crypt4gh/internal/outfile"
)

// errMismatch means that the two passphrases typed differ.
var errMismatch = errors.New("passphrases do not match")

// errNoInput is readLineHidden's end of input before any byte of a line.
var errNoInput = errors.New("end of input")

// openTTY opens the process's terminal, where passphrases are asked (not
// stdin or stdout, so that it works inside a pipe).
func openTTY() (*os.File, error) {
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("no terminal to read the passphrase from: %w", pathErr(err))
	}
	return tty, nil
}

// readPassphrase asks for a passphrase on tty, a terminal, without echo.
// With confirm, it asks a second time and fails with errMismatch when the
// two differ. The caller should clear the returned slice after use.
func readPassphrase(tty *os.File, prompt string, confirm bool) ([]byte, error) {
	pass, err := readHidden(tty, prompt)
	if err != nil {
		return nil, err
	}
	if !confirm {
		return pass, nil
	}
	again, err := readHidden(tty, "Confirm passphrase: ")
	if err != nil {
		clear(pass)
		return nil, err
	}
	defer clear(again)
	if !bytes.Equal(pass, again) {
		clear(pass)
		return nil, errMismatch
	}
	return pass, nil
}

// readHidden prints prompt and reads a line with echo off. If the process
// is interrupted meanwhile, the terminal is restored before it exits.
func readHidden(tty *os.File, prompt string) ([]byte, error) {
	if _, err := io.WriteString(tty, prompt); err != nil {
		return nil, fmt.Errorf("failed to write the passphrase prompt: %w", pathErr(err))
	}
	fd := int(tty.Fd())
	if st, err := term.GetState(fd); err == nil {
		done := outfile.Signals.OnInterrupt(func() {
			term.Restore(fd, st)
			io.WriteString(tty, "\n")
		})
		defer done()
	}
	pass, err := readLineHidden(tty, prompt)
	// The newline typed by the user was not echoed.
	io.WriteString(tty, "\n")
	if err == errNoInput {
		return nil, keyError(errors.New("no passphrase typed (end of input)"))
	}
	if err != nil {
		return nil, fmt.Errorf("failed to read passphrase: %w", err)
	}
	return pass, nil
}
