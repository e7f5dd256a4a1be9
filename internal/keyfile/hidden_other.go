//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package keyfile

import (
	"os"

	"golang.org/x/term"
)

// readLineHidden reads a line from the terminal tty with echo off.
func readLineHidden(tty *os.File, prompt string) ([]byte, error) {
	return term.ReadPassword(int(tty.Fd()))
}
