package outfile

import (
	"errors"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
)

// ErrLocked is the error of Lock when another process holds the lock.
var ErrLocked = errors.New("locked by another process")

// ErrExists is in the chain of the error of an output that exists
// already, when Open is not to replace it.
var ErrExists = errors.New("already exists")

// MaxKeyFile is the largest file that is read as a key file
// (keyfile.MaxSize): far more than any key. A larger file is no key file
// to this tool.
const MaxKeyFile = 1 << 20

// usagef returns a usage error (exit 2).
func usagef(format string, args ...any) error {
	return errkind.Errorf(errkind.Usage, format, args...)
}

// withHint returns err with the advice of format for the user.
func withHint(err error, format string, args ...any) error {
	return errkind.WithHint(err, format, args...)
}
