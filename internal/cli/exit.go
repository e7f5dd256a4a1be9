package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/internal/errkind"
	"github.com/c4gh-go/crypt4gh/internal/outfile"
	"github.com/c4gh-go/crypt4gh/keys"
)

// Exit codes. They are documented in docs/exit-codes.md; keep them stable.
const (
	exitOK    = 0
	exitError = 1 // I/O and other errors
	exitUsage = 2 // bad flags, arguments or ranges
	exitKey   = 3 // key problems: wrong passphrase, bad key file, no packet for this key
	exitData  = 4 // not a crypt4gh file, corrupt, truncated or tampered data
)

// kindCodes maps the kind of an error to its exit code.
var kindCodes = map[errkind.Kind]int{
	errkind.Other: exitError,
	errkind.Usage: exitUsage,
	errkind.Key:   exitKey,
	errkind.Data:  exitData,
}

// usagef returns a usage error (exit 2).
func usagef(format string, args ...any) error {
	return errkind.Errorf(errkind.Usage, format, args...)
}

// usage gives err the usage kind (exit 2).
func usage(err error) error { return errkind.Wrap(errkind.Usage, err) }

// keyError gives err the key kind (exit 3).
func keyError(err error) error { return errkind.Wrap(errkind.Key, err) }

// withHint returns err with a hint for the user, printed after it.
func withHint(err error, format string, args ...any) error {
	return errkind.WithHint(err, format, args...)
}

// exitCoder is an error that carries its own exit code, such as the end
// of a batch in which each failed file was already reported, or an
// interruption by a signal.
type exitCoder interface{ exitCode() int }

// exitCode is the exit status for err: its own, or that of its kind.
func exitCode(err error) int {
	var ec exitCoder
	if errors.As(err, &ec) {
		return ec.exitCode()
	}
	return kindCodes[errkind.Of(err)]
}

// report prints err, and a hint when one helps, on stderr: one line each.
func report(w io.Writer, err error) {
	fmt.Fprintf(w, "crypt4gh: error: %s\n", oneLine(err.Error()))
	if h := hintFor(err); h != "" {
		fmt.Fprintf(w, "crypt4gh: hint: %s\n", oneLine(h))
	}
}

// hintFor returns the hint to print after err, if any.
func hintFor(err error) string {
	var advice interface{ Hint() string } // withHint, and errors of objstore
	var magic *header.MagicError
	switch {
	case errors.As(err, &advice) && advice.Hint() != "":
		return advice.Hint()
	case errors.Is(err, keys.ErrWrongPassphrase):
		return "check the passphrase given on the terminal, in C4GH_PASSPHRASE or with --passphrase-file"
	case errors.As(err, &magic) && magic.KeyFile():
		return "the input looks like a key file: keys go with --sk or --recipient_pk"
	case notCrypt4GH(err):
		return "the input does not start with a crypt4gh header; was it encrypted with crypt4gh?"
	case errors.Is(err, body.ErrTruncated):
		return "the file is truncated inside a segment; was the transfer complete?"
	case errors.Is(err, c4gh.ErrMissingData):
		return "whole segments are missing at the end of the body, or the edit list is wrong; was the transfer complete?"
	case errors.Is(err, body.ErrAuth):
		return "the encrypted data was modified or damaged"
	}
	return ""
}

// notCrypt4GH reports whether err says that the input is not a crypt4gh
// file at all: empty, or other first bytes.
func notCrypt4GH(err error) bool {
	return errors.Is(err, header.ErrNotCrypt4GH) || errors.Is(err, header.ErrEmptyInput)
}

// noPacketHint adds which public key was tried to an error saying that the
// key opens no packet.
func noPacketHint(err error, key keys.Opener, sender *keys.PublicKey) error {
	if errors.Is(err, header.ErrWrongSender) {
		return withHint(err, "the file is for your key, but --sender_pk names another writer")
	}
	if !errors.Is(err, header.ErrNoDecryptablePacket) || errors.Is(err, header.ErrNoPackets) {
		return err
	}
	var pk keys.PublicKey
	ok := true
	switch k := key.(type) {
	case *keys.SecretKey:
		pk = k.Public()
	case *keys.Reader:
		pk = k.Public()
	default:
		ok = false // the agent's
	}
	switch {
	case !ok && sender != nil:
		return withHint(err, "no packet for the keys of the agent was written by %s (crypt4gh agent --list shows its keys)", *sender)
	case !ok:
		return withHint(err, "the file has no packet for the keys of the agent (crypt4gh agent --list shows them)")
	case sender != nil:
		return withHint(err, "no packet for the public key %s was written by %s", pk, *sender)
	}
	return withHint(err, "the file has no packet for the public key %s", pk)
}

// oneLine makes s one line that cannot move the cursor or hide text: a
// newline becomes a space, other control characters (from a crafted file
// name, say) are escaped.
func oneLine(s string) string { return quoteName(strings.ReplaceAll(s, "\n", " ")) }

// quoteName escapes the control characters of a name for a message (see
// outfile.QuoteName).
func quoteName(name string) string { return outfile.QuoteName(name) }

// pathErr is the error of a file operation without the path, which the
// message names already (see outfile.PathErr).
func pathErr(err error) error { return outfile.PathErr(err) }
