package body

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	mrand "math/rand/v2"
	"runtime"
	"testing"
	"time"

	"golang.org/x/crypto/chacha20poly1305"
)

var (
	keyA = &[32]byte{1, 2, 3}
	keyB = &[32]byte{4, 5, 6}
)

// plaintext returns n deterministic pseudo-random bytes.
func plaintext(n int) []byte {
	p := make([]byte, n)
	r := mrand.NewChaCha8([32]byte{byte(n), byte(n >> 8), byte(n >> 16)})
	r.Read(p)
	return p
}

// sealSegment encrypts one segment the way the format says, without the
// package's code.
func sealSegment(t testing.TB, key *[32]byte, pt []byte) []byte {
	t.Helper()
	aead, err := chacha20poly1305.New(key[:])
	if err != nil {
		t.Fatal(err)
	}
	seg := make([]byte, NonceSize, NonceSize+len(pt)+TagSize)
	rand.Read(seg)
	return aead.Seal(seg, seg, pt, nil)
}

// sealBody encrypts pt segment by segment without the package's code.
func sealBody(t testing.TB, key *[32]byte, pt []byte) []byte {
	var out []byte
	for len(pt) > 0 {
		n := min(len(pt), SegmentSize)
		out = append(out, sealSegment(t, key, pt[:n])...)
		pt = pt[n:]
	}
	return out
}

// refDecrypt decrypts a body segment by segment without the package's
// code: the plaintext of the segments before the first bad one, and a
// *SegmentError for that one.
func refDecrypt(data []byte, keys ...*[32]byte) ([]byte, error) {
	out := []byte{}
	for i := int64(0); len(data) > 0; i++ {
		n := min(len(data), EncryptedSegmentSize)
		seg := data[:n]
		data = data[n:]
		if n < Overhead {
			return out, &SegmentError{Index: i, Err: ErrTruncated}
		}
		opened := false
		for _, k := range keys {
			aead, _ := chacha20poly1305.New(k[:])
			pt, err := aead.Open(nil, seg[:NonceSize], seg[NonceSize:], nil)
			if err == nil {
				out = append(out, pt...)
				opened = true
				break
			}
		}
		if !opened {
			return out, &SegmentError{Index: i, Err: ErrAuth}
		}
	}
	return out, nil
}

// writeChunks encrypts pt with a Writer, step bytes per Write.
func writeChunks(t testing.TB, key *[32]byte, pt []byte, step int) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, key)
	if err != nil {
		t.Fatal(err)
	}
	for p := pt; len(p) > 0; {
		n := min(step, len(p))
		m, err := w.Write(p[:n])
		if err != nil || m != n {
			t.Fatalf("Write = %d, %v; want %d, nil", m, err, n)
		}
		p = p[n:]
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// readChunks decrypts enc with a Reader, reading into a buffer of step
// bytes.
func readChunks(r io.Reader, step int) ([]byte, error) {
	out := []byte{}
	buf := make([]byte, step)
	for {
		n, err := r.Read(buf)
		out = append(out, buf[:n]...)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

func keys(k ...*[32]byte) [][32]byte {
	var out [][32]byte
	for _, key := range k {
		out = append(out, *key)
	}
	return out
}

// wantSegmentError fails unless err is a *SegmentError for index that
// wraps want.
func wantSegmentError(t testing.TB, err error, index int64, want error) {
	t.Helper()
	var se *SegmentError
	if !errors.As(err, &se) || se.Index != index || !errors.Is(err, want) {
		t.Fatalf("err = %v; want segment %d: %v", err, index, want)
	}
}

// checkNoLeak fails if goroutines started after before are still running.
func checkNoLeak(t testing.TB, before int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("goroutines: %d, before: %d\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(time.Millisecond)
	}
}

// failWriter accepts n bytes, then fails.
type failWriter struct {
	n   int
	err error
}

func (w *failWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		m := w.n
		w.n = 0
		return m, w.err
	}
	w.n -= len(p)
	return len(p), nil
}

// counter counts the bytes written to it.
type counter struct{ n int }

func (c *counter) Write(p []byte) (int, error) {
	c.n += len(p)
	return len(p), nil
}
