package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/keys"
)

// Exit codes. They are documented in README.md; keep them stable.
const (
	exitOK    = 0
	exitError = 1 // I/O and other errors
	exitUsage = 2 // bad flags, arguments or ranges
	exitKey   = 3 // key problems: wrong passphrase, bad key file, no packet for this key
	exitData  = 4 // not a crypt4gh file, corrupt, truncated or tampered data
)

// usageError marks errors in how the command was called.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// hinted attaches a hint for the user to an error.
type hinted struct {
	err  error
	hint string
}

func (e hinted) Error() string { return e.err.Error() }
func (e hinted) Unwrap() error { return e.err }

func withHint(err error, format string, args ...any) error {
	return hinted{err, fmt.Sprintf(format, args...)}
}

// exitCoder is an error that carries its own exit code, such as the end
// of a batch in which each failed file was already reported.
type exitCoder interface{ exitCode() int }

func exitCode(err error) int {
	var u usageError
	var ec exitCoder
	switch {
	case errors.As(err, &ec):
		return ec.exitCode()
	case errors.As(err, &u), errors.Is(err, edit.ErrInvalidRange), errors.Is(err, edit.ErrBeyondEnd),
		errors.Is(err, edit.ErrEmpty):
		return exitUsage
	case errors.Is(err, keys.ErrWrongPassphrase), errors.Is(err, keys.ErrMalformedKey),
		errors.Is(err, keys.ErrUnsupportedKey), errors.Is(err, keys.ErrPassphraseRequired),
		errors.Is(err, header.ErrNoDecryptablePacket), errors.Is(err, header.ErrNoDataKey):
		return exitKey
	case errors.Is(err, header.ErrNotCrypt4GH), errors.Is(err, header.ErrEmptyInput),
		errors.Is(err, header.ErrUnsupportedVersion), errors.Is(err, header.ErrTruncated),
		errors.Is(err, header.ErrInvalidPacket), errors.Is(err, header.ErrTooManyPackets),
		errors.Is(err, header.ErrMultipleEditLists), errors.Is(err, header.ErrMixedDataMethods),
		errors.Is(err, body.ErrAuth), errors.Is(err, body.ErrTruncated),
		errors.Is(err, io.ErrUnexpectedEOF):
		return exitData
	}
	return exitError
}

// report prints err, and a hint when one helps, on stderr.
func report(w io.Writer, err error) {
	msg := strings.ReplaceAll(err.Error(), "\n", " ")
	fmt.Fprintf(w, "crypt4gh: error: %s\n", msg)
	var h hinted
	switch {
	case errors.As(err, &h):
		fmt.Fprintf(w, "crypt4gh: hint: %s\n", h.hint)
	case errors.Is(err, keys.ErrWrongPassphrase):
		fmt.Fprintf(w, "crypt4gh: hint: check the passphrase given on the terminal, in C4GH_PASSPHRASE or with --passphrase-file\n")
	case errors.Is(err, header.ErrNotCrypt4GH), errors.Is(err, header.ErrEmptyInput):
		fmt.Fprintf(w, "crypt4gh: hint: the input does not start with a crypt4gh header; was it encrypted with crypt4gh?\n")
	case errors.Is(err, body.ErrTruncated):
		fmt.Fprintf(w, "crypt4gh: hint: the file is truncated inside a segment; was the transfer complete?\n")
	case errors.Is(err, body.ErrAuth):
		fmt.Fprintf(w, "crypt4gh: hint: the encrypted data was modified or damaged\n")
	}
}
