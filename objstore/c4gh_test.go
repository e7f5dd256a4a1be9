package objstore_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/keys"
	"github.com/c4gh-go/crypt4gh/objstore"
	"github.com/c4gh-go/crypt4gh/reencrypt"
)

// TestCrypt4GH is the use the package is for: encrypt to an object as a
// stream, decrypt it with a parallel Reader of segment-aligned chunks and
// at random through c4gh.NewReaderAt, give it a new header in place.
func TestCrypt4GH(t *testing.T) {
	t.Parallel()
	e := newEnv(t, time.Minute)
	ctx := context.Background()
	alice, err := keys.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	bob, err := keys.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	plain := random(11*MiB+12345, 40)

	w, err := e.c.NewWriter(ctx, bucket, "data.c4gh", &objstore.WriterOptions{PartSize: objstore.MinPartSize})
	if err != nil {
		t.Fatal(err)
	}
	cw, err := c4gh.NewWriter(w, c4gh.EncryptOptions{Recipients: []keys.PublicKey{alice.Public()}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(cw, bytes.NewReader(plain)); err != nil {
		t.Fatal(err)
	}
	if err := cw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	o, err := e.c.Open(ctx, bucket, "data.c4gh")
	if err != nil {
		t.Fatal(err)
	}
	segment := body.EncryptedSize(body.SegmentSize)
	r, err := o.NewReader(0, -1, &objstore.ReaderOptions{ChunkSize: 16 * segment, Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	dec, err := c4gh.NewReader(r, &alice, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(dec)
	dec.Close()
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	same(t, "streamed", got, plain)

	ra, err := c4gh.NewReaderAt(o, o.Size(), &alice, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 100000)
	if _, err := ra.ReadAt(p, 7*MiB+3); err != nil {
		t.Fatal(err)
	}
	same(t, "random access", p, plain[7*MiB+3:7*MiB+3+len(p)])
	headerSize := ra.HeaderSize()
	ra.Close()

	// Rekey in place: a header for bob, the body copied by the server.
	old, err := header.Parse(io.NewSectionReader(o, 0, o.Size()))
	if err != nil {
		t.Fatal(err)
	}
	nh, err := reencrypt.Header(old, &alice, []keys.PublicKey{bob.Public()}, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.px.Zero()
	parts := []objstore.Part{objstore.Bytes(nh.Marshal()), objstore.Range(o, headerSize, o.Size()-headerSize)}
	if err := e.c.Compose(ctx, bucket, "data.c4gh", parts, nil); err != nil {
		t.Fatal(err)
	}
	t.Logf("rekeyed %d bytes in place: %d bytes up, %d down", o.Size(), e.px.Up(), e.px.Down())
	o2, err := e.c.Open(ctx, bucket, "data.c4gh")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c4gh.NewReaderAt(o2, o2.Size(), &alice, nil); !errors.Is(err, header.ErrNoDecryptablePacket) {
		t.Fatalf("alice after the rekey: %v", err)
	}
	rb, err := c4gh.NewReaderAt(o2, o2.Size(), &bob, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	got = make([]byte, len(plain))
	if _, err := rb.ReadAt(got, 0); err != nil {
		t.Fatal(err)
	}
	same(t, "bob's", got, plain)
}

// TestEncryptUpload encrypts with the parallel engine into a Writer, which
// lends it the part buffers to seal in (TestWriterLend compares the bytes
// with a local encryption), at sizes that end around a part: the object
// decrypts to the plaintext, and no upload is left.
func TestEncryptUpload(t *testing.T) {
	t.Parallel()
	e := newEnv(t, time.Minute)
	ctx := context.Background()
	alice, err := keys.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := c4gh.EncryptOptions{Recipients: []keys.PublicKey{alice.Public()}}
	part := int64(objstore.MinPartSize)
	n, err := body.PlaintextSize(2*part - 2000) // a body that ends just short of two parts
	if err != nil {
		t.Fatal(err)
	}
	all := random(int(n)+body.SegmentSize, 41)
	for _, size := range []int{int(n) - 1, int(n), int(n) + body.SegmentSize} {
		plain := all[:size]
		w, err := e.c.NewWriter(ctx, bucket, "enc.c4gh", &objstore.WriterOptions{PartSize: part, Force: true, Size: body.EncryptedSize(int64(size)) + 2000})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c4gh.Encrypt(w, bytes.NewReader(plain), opts); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		dec, err := c4gh.NewReader(bytes.NewReader(e.get(t, "enc.c4gh")), &alice, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(dec)
		if err != nil {
			t.Fatal(err)
		}
		same(t, "decrypted", got, plain)
	}
	e.noUploads(t)
}
