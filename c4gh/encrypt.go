package c4gh

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"io"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/internal/errkind"
	"github.com/c4gh-go/crypt4gh/keys"
)

// EncryptOptions configures [NewWriter] and [Encrypt].
type EncryptOptions struct {
	// Writer is the writer's secret key. When nil, a new key pair is
	// generated for this file and discarded afterwards.
	Writer *keys.SecretKey
	// Recipients are the public keys that can decrypt the file. A key
	// given twice is written once. At least one is required.
	Recipients []keys.PublicKey
	// Header, when not nil, receives the header instead of dst, so that
	// dst holds only the segments.
	Header io.Writer
	// Jobs is the number of goroutines that seal segments in [Encrypt];
	// 0 means one per CPU. [NewWriter] seals in the calling goroutine.
	Jobs int
}

var errNoRecipient = errkind.New(errkind.Usage, "no recipient public key")

// writeHeader makes a data key and writes the header that gives it to the
// recipients. The caller must clear the key.
func writeHeader(dst io.Writer, opts *EncryptOptions) (*[32]byte, error) {
	if len(opts.Recipients) == 0 {
		return nil, errNoRecipient
	}
	key := new([32]byte)
	if _, err := io.ReadFull(rand.Reader, key[:]); err != nil {
		return nil, fmt.Errorf("failed to generate data key: %w", err)
	}
	h, err := header.New(opts.Writer, opts.Recipients, key, nil, nil)
	if err != nil {
		clear(key[:])
		return nil, err
	}
	hw := dst
	if opts.Header != nil {
		hw = opts.Header
	}
	if _, err := h.WriteTo(hw); err != nil {
		clear(key[:])
		return nil, fmt.Errorf("failed to write header: %w", err)
	}
	return key, nil
}

// Writer encrypts what is written to it. Create it with [NewWriter].
type Writer struct {
	w *body.Writer
}

var _ io.WriteCloser = (*Writer)(nil)

// NewWriter writes the header of a new Crypt4GH file to dst (or to
// opts.Header) and returns a Writer that encrypts what is written to it
// into segments written to dst. The caller must call Close and check its
// error: it seals the last segment. Close does not close dst.
func NewWriter(dst io.Writer, opts EncryptOptions) (*Writer, error) {
	key, err := writeHeader(dst, &opts)
	if err != nil {
		return nil, err
	}
	defer clear(key[:])
	w, err := body.NewWriter(dst, key)
	if err != nil {
		return nil, err
	}
	return &Writer{w: w}, nil
}

// Write encrypts p. Full segments are written to the destination as they
// fill; after an error every call fails.
func (w *Writer) Write(p []byte) (int, error) { return w.w.Write(p) }

// ReadFrom encrypts what it reads from src until io.EOF.
func (w *Writer) ReadFrom(src io.Reader) (int64, error) { return w.w.ReadFrom(src) }

// Close writes the last, partial segment and makes every later call fail.
func (w *Writer) Close() error { return w.w.Close() }

// Encrypt writes to dst a Crypt4GH file holding the bytes read from src
// until EOF, sealing segments with opts.Jobs goroutines, and returns the
// number of plaintext bytes encrypted. The first byte of src is read
// before anything is written, so that an input that cannot be read (a
// folder, say) leaves dst untouched. The data key is random and erased
// when Encrypt returns. Encrypt does not close dst; when it fails, dst
// holds a partial file that the caller must discard.
func Encrypt(dst io.Writer, src io.Reader, opts EncryptOptions) (int64, error) {
	if len(opts.Recipients) == 0 {
		return 0, errNoRecipient
	}
	var first [1]byte
	n, err := io.ReadFull(src, first[:])
	if err != nil && err != io.EOF {
		return 0, fmt.Errorf("failed to read input: %w", err)
	}
	key, err := writeHeader(dst, &opts)
	if err != nil {
		return 0, err
	}
	defer clear(key[:])
	if n == 0 {
		return 0, nil
	}
	return body.Encrypt(dst, io.MultiReader(bytes.NewReader(first[:n]), src), key, opts.Jobs)
}
