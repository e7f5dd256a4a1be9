package keyfile

import (
	"os"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
	"github.com/c4gh-go/crypt4gh/internal/outfile"
)

// usagef returns a usage error (exit 2).
func usagef(format string, args ...any) error {
	return errkind.Errorf(errkind.Usage, format, args...)
}

// usage gives err the usage kind (exit 2).
func usage(err error) error { return errkind.Wrap(errkind.Usage, err) }

// keyError gives err the key kind (exit 3).
func keyError(err error) error { return errkind.Wrap(errkind.Key, err) }

// withHint returns err with the advice of format for the user.
func withHint(err error, format string, args ...any) error {
	return errkind.WithHint(err, format, args...)
}

func quoteName(name string) string { return outfile.QuoteName(name) }

func pathErr(err error) error { return outfile.PathErr(err) }

func isTerminal(f *os.File) bool { return outfile.IsTerminal(f) }
