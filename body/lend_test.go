package body

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"testing/cryptotest"
)

// chunkLender is a Lender that holds its bytes in chunks of a fixed size,
// as an upload holds parts: it lends within the chunk being filled only,
// and checks that the engine keeps the rules of Lend.
type chunkLender struct {
	t       *testing.T
	size    int // of a chunk
	cur     []byte
	lent    int
	out     bytes.Buffer // the chunks filled
	inPlace int          // bytes written in place
	copied  int          // bytes written from the caller's memory
	never   bool         // lend nothing
	fail    int          // fail the Lend after this many bytes, 0 for never
}

var errLend = errors.New("lend refused")

func (c *chunkLender) Lend(n int) ([]byte, error) {
	if c.fail > 0 && c.out.Len()+len(c.cur) >= c.fail {
		return nil, errLend
	}
	if c.never {
		return nil, nil
	}
	if c.cur == nil {
		c.cur = make([]byte, 0, c.size)
	}
	start, end := len(c.cur)+c.lent, len(c.cur)+c.lent+n
	if end > c.size {
		return nil, nil
	}
	c.lent += n
	return c.cur[start:end:end], nil
}

func (c *chunkLender) Write(p []byte) (int, error) {
	if c.lent > 0 {
		if len(p) > c.lent || &c.cur[:len(c.cur)+1][len(c.cur)] != &p[0] {
			c.t.Errorf("a Write of %d bytes not lent, with %d lent", len(p), c.lent)
			return 0, errors.New("not the lent bytes")
		}
		c.cur = c.cur[:len(c.cur)+len(p)]
		c.lent -= len(p)
		c.inPlace += len(p)
		return len(p), nil
	}
	c.copied += len(p)
	for b := p; len(b) > 0; {
		if c.cur == nil {
			c.cur = make([]byte, 0, c.size)
		}
		m := min(len(b), c.size-len(c.cur))
		c.cur = append(c.cur, b[:m]...)
		b = b[m:]
		if len(c.cur) == c.size {
			c.out.Write(c.cur)
			c.cur = nil
		}
	}
	return len(p), nil
}

// bytes is everything written.
func (c *chunkLender) bytes() []byte {
	return append(c.out.Bytes()[:c.out.Len():c.out.Len()], c.cur...)
}

// TestEncryptLender seals segments in the memory a Lender lends: the same
// bytes as an encryption to a plain writer (crypto/rand seeded alike),
// the batches that cross the end of a chunk written from the engine's
// memory and the others in place, at lengths around a batch and a chunk
// and with 1 to 4 workers; a Lender that lends nothing gets the copies.
func TestEncryptLender(t *testing.T) {
	key := new([32]byte)
	batch := batchSegments * SegmentSize
	chunk := 5<<20 + 3 // no multiple of a segment
	for _, jobs := range []int{1, 2, 4} {
		for _, n := range []int{0, 1, batch - 1, batch, batch + 1, 3*batch + 7, chunk, 2*chunk + 100000} {
			t.Run(fmt.Sprintf("jobs %d, %d bytes", jobs, n), func(t *testing.T) {
				pt := plaintext(n)
				var want bytes.Buffer
				cryptotest.SetGlobalRandom(t, 1)
				if _, err := Encrypt(&want, bytes.NewReader(pt), key, jobs); err != nil {
					t.Fatal(err)
				}
				for _, never := range []bool{false, true} {
					l := &chunkLender{t: t, size: chunk, never: never}
					cryptotest.SetGlobalRandom(t, 1)
					got, err := Encrypt(l, bytes.NewReader(pt), key, jobs)
					if err != nil || got != int64(n) {
						t.Fatalf("never %v: %d bytes, %v", never, got, err)
					}
					if !bytes.Equal(l.bytes(), want.Bytes()) {
						t.Fatalf("never %v: %d bytes written differ from the %d of a plain encryption", never, len(l.bytes()), want.Len())
					}
					// Batches that cross a chunk's end are copied, and
					// the one after each waits for it.
					crossings := len(l.bytes()) / chunk
					if never && l.inPlace != 0 || !never && l.copied > (crossings+1)*batchSegments*EncryptedSegmentSize {
						t.Errorf("never %v: %d bytes in place, %d copied", never, l.inPlace, l.copied)
					}
				}
			})
		}
	}
}

// TestEncryptLenderFails stops at a Lend that fails: its error, the
// bytes before it written, no goroutine left.
func TestEncryptLenderFails(t *testing.T) {
	before := runtime.NumGoroutine()
	key := new([32]byte)
	l := &chunkLender{t: t, size: 1 << 20, fail: 3 << 20}
	n, err := Encrypt(l, bytes.NewReader(plaintext(8<<20)), key, 2)
	if !errors.Is(err, errLend) {
		t.Fatalf("got %v, want the Lend's error", err)
	}
	if n > 4<<20 {
		t.Errorf("%d bytes encrypted", n)
	}
	checkNoLeak(t, before)
}
