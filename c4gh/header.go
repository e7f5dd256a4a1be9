package c4gh

import (
	"bufio"
	"bytes"
	"fmt"
	"io"

	"github.com/c4gh-go/crypt4gh/header"
)

// CheckMagic fails unless src starts like a Crypt4GH file, without
// consuming anything: a cheap check before a passphrase is asked. An empty
// src is [header.ErrEmptyInput], other first bytes a [*header.MagicError]
// (wrapping [header.ErrNotCrypt4GH]); a src that ends inside the magic
// bytes passes (parsing the header says more).
func CheckMagic(src *bufio.Reader) error {
	b, err := src.Peek(len(header.Magic))
	switch {
	case len(b) == 0 && err == io.EOF:
		return fmt.Errorf("%w: expected a crypt4gh header", header.ErrEmptyInput)
	case len(b) > 0 && string(b) != header.Magic[:len(b)]:
		return &header.MagicError{Start: bytes.Clone(b)}
	case err != nil && err != io.EOF:
		return fmt.Errorf("failed to read input: %w", err)
	}
	return nil
}

// HeaderSize reads the header at the start of r, checks that it is a
// well-formed Crypt4GH header (nothing is decrypted: no key is needed),
// and returns its size; r is left at the start of the body. It fails as
// [header.Parse] does.
func HeaderSize(r io.Reader) (int64, error) {
	h, err := header.Parse(r)
	if err != nil {
		return 0, err
	}
	return h.Size(), nil
}
