package outfile

import (
	"github.com/c4gh-go/crypt4gh/internal/errkind"
)

// maxKeyFile is the most that is read of a file to tell whether it holds
// a secret key: far more than any key.
const maxKeyFile = 1 << 20

// usagef returns a usage error (exit 2).
func usagef(format string, args ...any) error {
	return errkind.Errorf(errkind.Usage, format, args...)
}

// withHint returns err with the advice of format for the user.
func withHint(err error, format string, args ...any) error {
	return errkind.WithHint(err, format, args...)
}
