package outfile

import (
	"fmt"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
)

// maxKeyFile is the most that is read of a file to tell whether it holds
// a secret key: far more than any key.
const maxKeyFile = 1 << 20

// usagef returns a usage error (exit 2).
func usagef(format string, args ...any) error {
	return errkind.Errorf(errkind.Usage, format, args...)
}

// hinted attaches advice for the user to an error; the command prints it
// after the error (it asks for Hint).
type hinted struct {
	err  error
	hint string
}

func (e hinted) Error() string { return e.err.Error() }
func (e hinted) Unwrap() error { return e.err }
func (e hinted) Hint() string  { return e.hint }

// withHint returns err with the advice of format.
func withHint(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return hinted{err, fmt.Sprintf(format, args...)}
}
