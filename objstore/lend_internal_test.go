package objstore

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"testing/cryptotest"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/keys"
)

var _ body.Lender = (*Writer)(nil)

// encryptSeeded encrypts plain to dst with crypto/rand seeded, so that
// two encryptions of the same plaintext give the same bytes.
func encryptSeeded(t *testing.T, dst io.Writer, plain []byte, recipient keys.PublicKey) error {
	t.Helper()
	cryptotest.SetGlobalRandom(t, 22)
	_, err := c4gh.Encrypt(dst, bytes.NewReader(plain), c4gh.EncryptOptions{Recipients: []keys.PublicKey{recipient}, Jobs: 3})
	return err
}

// TestWriterLend encrypts into a Writer, which lends its part buffers to
// the engine to seal the segments in, and compares the object with the
// same encryption into memory: byte for byte the same, at body sizes
// that end around a part and a batch of segments, with buffers that grow
// (size unknown), that are made at their size (size known), one part at
// a time (Concurrency 1), and spooled parts (which lend nothing).
func TestWriterLend(t *testing.T) {
	recipient, err := keys.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	var hdr bytes.Buffer
	if err := encryptSeeded(t, &hdr, nil, recipient.Public()); err != nil {
		t.Fatal(err)
	}
	// plainFor is the plaintext size whose file ends at end, or just
	// before it if no file ends there.
	plainFor := func(end int64) int {
		for e := end - int64(hdr.Len()); ; e-- {
			if n, err := body.PlaintextSize(e); err == nil {
				return int(n)
			}
		}
	}
	batch := 8 * body.SegmentSize
	sizes := []int{0, 1, body.SegmentSize, batch - 1, batch, batch + 1, 3*batch + 17}
	for _, end := range []int64{MinPartSize, 2 * MinPartSize} {
		n := plainFor(end)
		sizes = append(sizes, n-1, n, n+1)
	}
	all := memData(sizes[len(sizes)-1])
	for _, tc := range []struct {
		name string
		opt  WriterOptions
	}{
		{"unknown size", WriterOptions{PartSize: MinPartSize, Concurrency: 2}},
		{"known size", WriterOptions{PartSize: MinPartSize, Concurrency: 3, Size: 2*MinPartSize + 1<<20}},
		{"one at a time", WriterOptions{PartSize: MinPartSize, Concurrency: 1}},
		{"spooled", WriterOptions{PartSize: MinPartSize, Concurrency: 2, Memory: MinPartSize, SpoolDir: t.TempDir()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, n := range sizes {
				plain := all[:n]
				var want bytes.Buffer
				if err := encryptSeeded(t, &want, plain, recipient.Public()); err != nil {
					t.Fatal(err)
				}
				m := &memUpload{}
				opt, err := writerOptions(&tc.opt)
				if err != nil {
					t.Fatal(err)
				}
				w := newWriter(context.Background(), m, opt, false)
				if err := encryptSeeded(t, w, plain, recipient.Public()); err != nil {
					t.Fatalf("%d bytes: %v", n, err)
				}
				if err := w.Close(); err != nil {
					t.Fatalf("%d bytes: %v", n, err)
				}
				if !bytes.Equal(m.object, want.Bytes()) {
					t.Fatalf("%d bytes: the object (%d bytes) differs from the file (%d bytes)", n, len(m.object), want.Len())
				}
			}
		})
	}
}

// TestWriterLendFails stops an encryption into lent part buffers on a
// failed part, and on a failed read in the middle of a part: the upload
// is aborted and nothing committed.
func TestWriterLendFails(t *testing.T) {
	recipient, err := keys.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	plain := memData(4*MinPartSize + 12345)
	opts := c4gh.EncryptOptions{Recipients: []keys.PublicKey{recipient.Public()}}

	m := &memUpload{fail: 2}
	w := memWriter(t, m, 2)
	if _, err := c4gh.Encrypt(w, bytes.NewReader(plain), opts); !errors.Is(err, errPart) {
		t.Fatalf("got %v, want the part's error", err)
	}
	if err := w.Close(); !errors.Is(err, errPart) {
		t.Errorf("Close after the failure: %v", err)
	}
	if m.object != nil || len(m.aborts) != 1 {
		t.Errorf("%d bytes committed, aborts %v", len(m.object), m.aborts)
	}

	errRead := errors.New("read failed")
	m = &memUpload{}
	w = memWriter(t, m, 2)
	src := io.MultiReader(bytes.NewReader(plain[:MinPartSize+MinPartSize/2]), iotestErr{errRead})
	if _, err := c4gh.Encrypt(w, src, opts); !errors.Is(err, errRead) {
		t.Fatalf("got %v, want the read error", err)
	}
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	if m.object != nil || len(m.aborts) != 1 {
		t.Errorf("%d bytes committed, aborts %v", len(m.object), m.aborts)
	}
	if _, err := w.Lend(10); !errors.Is(err, ErrAborted) {
		t.Errorf("Lend after Abort: %v", err)
	}
}

// iotestErr is a reader that fails.
type iotestErr struct{ err error }

func (r iotestErr) Read([]byte) (int, error) { return 0, r.err }

// TestWriterLendProtocol follows the rules of Lend one by one: lent
// regions follow each other and are taken by Write in place; none
// crosses the end of a part; after the Write of the bytes that did not
// fit, the next part lends; a Write of other bytes gives up what was lent.
func TestWriterLendProtocol(t *testing.T) {
	m := &memUpload{}
	opt, err := writerOptions(&WriterOptions{PartSize: MinPartSize, Concurrency: 2, Size: 2 * MinPartSize})
	if err != nil {
		t.Fatal(err)
	}
	w := newWriter(context.Background(), m, opt, false)
	if _, err := w.Write([]byte("head")); err != nil {
		t.Fatal(err)
	}
	a, err := w.Lend(1000)
	if err != nil || len(a) != 1000 {
		t.Fatalf("Lend: %d bytes, %v", len(a), err)
	}
	b, err := w.Lend(MinPartSize - 4 - 1000)
	if err != nil || b == nil {
		t.Fatalf("Lend of the rest of the part: %v", err)
	}
	if c, err := w.Lend(1); c != nil || err != nil {
		t.Fatalf("Lend past the end of the part: %d bytes, %v", len(c), err)
	}
	copy(a, bytes.Repeat([]byte("a"), len(a)))
	copy(b, bytes.Repeat([]byte("b"), len(b)))
	if n, err := w.Write(a); n != len(a) || err != nil {
		t.Fatal(n, err)
	}
	a[0] = 'A' // taken in place: the part holds a itself
	if n, err := w.Write(b); n != len(b) || err != nil {
		t.Fatal(n, err)
	}
	if got := w.pool.cur.buf; len(got) != MinPartSize || string(got[:6]) != "headAa" || got[len(got)-1] != 'b' {
		t.Fatalf("part of %d bytes, starting %q", len(got), got[:6])
	}
	// The part is full: the next Lend sends it and lends from the next.
	c, err := w.Lend(10)
	if err != nil || len(c) != 10 {
		t.Fatalf("Lend in the next part: %d bytes, %v", len(c), err)
	}
	copy(c, "0123456789")
	if _, err := w.Lend(10); err != nil {
		t.Fatal(err)
	}
	// Other bytes: what was lent is given up, they follow what was written.
	if _, err := w.Write([]byte("xyz")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if len(m.object) != MinPartSize+3 || string(m.object[MinPartSize:]) != "xyz" {
		t.Errorf("object of %d bytes ending %q", len(m.object), m.object[len(m.object)-3:])
	}
}
