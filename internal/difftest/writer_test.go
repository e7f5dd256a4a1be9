package difftest

import (
	"bytes"
	"io"
	"testing"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/header"
)

// Bits of the shape argument of FuzzOurWriterTheirReader.
const (
	shapeWriterKey = 1 << 2 // a writer key from the pool, else an ephemeral one
	shapeEncrypt   = 1 << 3 // c4gh.Encrypt, else c4gh.NewWriter
	shapeHeaderOut = 1 << 4 // the header to EncryptOptions.Header
	shapeReadFrom  = 1 << 5 // NewWriter fed by ReadFrom, else by Write in chunks
)

// FuzzOurWriterTheirReader encrypts a plaintext with c4gh.Encrypt or
// c4gh.NewWriter for one to three recipients of the key pool, with a
// writer key or an ephemeral one, and decrypts it with the oracle's
// streaming reader (over a seekable source and a plain reader) as each
// recipient: it must give back the plaintext. A key that is not a
// recipient must not open it.
func FuzzOurWriterTheirReader(f *testing.F) {
	for i, n := range seedSizes {
		f.Add(uint64(i), n, uint8(i))
		f.Add(uint64(i+100), n, uint8(i)|shapeWriterKey|shapeEncrypt)
	}
	f.Add(uint64(7), uint32(3*65536+1), uint8(2|shapeWriterKey|shapeHeaderOut|shapeReadFrom))
	f.Fuzz(func(t *testing.T, seed uint64, size uint32, shape uint8) {
		ids := mustPool(t)
		rng := newRand(seed)
		plain := plaintext(seed, plainSize(size))
		recipients, outsider := pick(rng, ids, 1+int(shape&3)%3)
		pks, _ := publics(recipients)
		opts := c4gh.EncryptOptions{Recipients: pks, Jobs: 1 + rng.IntN(3)}
		var writer *identity
		if shape&shapeWriterKey != 0 {
			writer = &ids[rng.IntN(len(ids))]
			opts.Writer = &writer.secret
		}
		var file, hdr bytes.Buffer
		if shape&shapeHeaderOut != 0 {
			opts.Header = &hdr
		}
		if shape&shapeEncrypt != 0 {
			n, err := c4gh.Encrypt(&file, bytes.NewReader(plain), opts)
			if err != nil || n != int64(len(plain)) {
				t.Fatalf("Encrypt: %d bytes, %v", n, err)
			}
		} else {
			w, err := c4gh.NewWriter(&file, opts)
			if err != nil {
				t.Fatal(err)
			}
			if shape&shapeReadFrom != 0 {
				if _, err := io.Copy(w, bytes.NewReader(plain)); err != nil {
					t.Fatal(err)
				}
			} else {
				chunk := pickChunk(rng, len(plain))
				for p := plain; len(p) > 0; p = p[min(chunk, len(p)):] {
					if _, err := w.Write(p[:min(chunk, len(p))]); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
		}
		data := append(hdr.Bytes(), file.Bytes()...)

		h, err := header.Parse(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := int64(len(data))-h.Size(), body.EncryptedSize(int64(len(plain))); got != want {
			t.Fatalf("body of %d bytes for %d bytes of plaintext, want %d", got, len(plain), want)
		}
		if writer != nil {
			for i, p := range h.Packets {
				if p.WriterPublicKey != writer.public {
					t.Fatalf("packet %d names writer %v, want %v", i, p.WriterPublicKey, writer.public)
				}
			}
		}
		for i, r := range recipients {
			got, err := theirDecrypt(data, r.theirSecret, i%2 == 0, pickChunk(rng, len(plain)))
			checkTheirs(t, "recipient "+r.name, got, err, plain)
		}
		if !isAmong(outsider, recipients) {
			if _, err := theirDecrypt(data, outsider.theirSecret, true, 4096); err == nil {
				t.Fatalf("%s is not a recipient but the oracle decrypted the file", outsider.name)
			}
		}
	})
}

func isAmong(id identity, ids []identity) bool {
	for _, o := range ids {
		if o.public == id.public {
			return true
		}
	}
	return false
}
