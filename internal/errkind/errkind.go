// Package errkind gives every error that leaves a package of this module a
// kind: whether the caller, the keys or the data are at fault. The command
// turns the kind into its exit code; library users test the sentinels with
// errors.Is and need not know about kinds.
//
// A sentinel is made with [New] and carries its kind; an error from
// elsewhere (an *os.PathError, say) gets one with [Wrap] where its meaning
// is known. [Of] finds the kind of any error by walking its chain, as
// errors.As does: the first classified error wins.
package errkind

import (
	"errors"
	"fmt"
)

// Kind is the class of an error.
type Kind uint8

const (
	// Other is everything not classified: I/O errors, interruptions.
	Other Kind = iota
	// Usage means the call was wrong: a bad range, a missing argument,
	// an output that exists.
	Usage
	// Key means a key is at fault: wrong passphrase, a missing, unreadable,
	// malformed or unsupported key file, no header packet for this key.
	Key
	// Data means the input is at fault: not a crypt4gh file, an unsupported
	// version, corrupt, truncated or tampered data.
	Data
)

// String names the kind.
func (k Kind) String() string {
	switch k {
	case Usage:
		return "usage"
	case Key:
		return "key"
	case Data:
		return "data"
	}
	return "other"
}

// kinded is implemented by every classified error.
type kinded interface {
	error
	Kind() Kind
}

// sentinel is an error value of a fixed kind, made by New.
type sentinel struct {
	kind Kind
	msg  string
}

func (e *sentinel) Error() string { return e.msg }
func (e *sentinel) Kind() Kind    { return e.kind }

// New returns a sentinel error of kind k with the message msg.
func New(k Kind, msg string) error { return &sentinel{kind: k, msg: msg} }

// wrapped gives err the kind k without changing its message.
type wrapped struct {
	kind Kind
	err  error
}

func (e *wrapped) Error() string { return e.err.Error() }
func (e *wrapped) Kind() Kind    { return e.kind }
func (e *wrapped) Unwrap() error { return e.err }

// Wrap returns err with kind k, its message unchanged; nil stays nil.
func Wrap(k Kind, err error) error {
	if err == nil {
		return nil
	}
	return &wrapped{kind: k, err: err}
}

// Errorf is fmt.Errorf with kind k.
func Errorf(k Kind, format string, a ...any) error {
	return Wrap(k, fmt.Errorf(format, a...))
}

// Of returns the kind of the first classified error in the chain of err,
// and Other when there is none (or err is nil).
func Of(err error) Kind {
	var k kinded
	if errors.As(err, &k) {
		return k.Kind()
	}
	return Other
}

// hinted attaches advice for the user to an error; the command prints it
// on a line of its own after the error.
type hinted struct {
	err  error
	hint string
}

func (e *hinted) Error() string { return e.err.Error() }
func (e *hinted) Unwrap() error { return e.err }
func (e *hinted) Hint() string  { return e.hint }

// WithHint returns err with the advice of format, which errors.As finds
// as an error with a Hint method; nil stays nil. The message and the kind
// of err are unchanged.
func WithHint(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return &hinted{err, fmt.Sprintf(format, args...)}
}
