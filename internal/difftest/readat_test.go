package difftest

import (
	"bytes"
	cryptorand "crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"testing"

	"github.com/neicnordic/crypt4gh/streaming"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/keys"
)

// ourEncryptEdit writes a file the way c4gh.NewWriter does, with an edit
// list when has is set: header.New for the recipients, then body.NewWriter
// under the same data key.
func ourEncryptEdit(plain []byte, writer *keys.SecretKey, recipients []keys.PublicKey, el []uint64, has bool) ([]byte, error) {
	var key [32]byte
	if _, err := cryptorand.Read(key[:]); err != nil {
		return nil, err
	}
	if !has {
		el = nil
	} else if el == nil {
		el = []uint64{}
	}
	h, err := header.New(writer, recipients, &key, el, nil)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if _, err := h.WriteTo(&b); err != nil {
		return nil, err
	}
	w, err := body.NewWriter(&b, &key)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(plain); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// readsFrom decodes fuzzed reads: 3 bytes of offset and 3 of length each,
// scaled to the plaintext so that reads start inside, at and past its end.
func readsFrom(b []byte, size int) [][2]int {
	var out [][2]int
	for len(b) >= 6 && len(out) < 24 {
		var o, n [4]byte
		copy(o[:3], b)
		copy(n[:3], b[3:])
		b = b[6:]
		out = append(out, [2]int{
			int(binary.LittleEndian.Uint32(o[:]) % uint32(size+2*body.SegmentSize/3+1)),
			int(binary.LittleEndian.Uint32(n[:]) % (2*body.SegmentSize + 100)),
		})
	}
	return out
}

func encodeReads(rs ...[2]int) []byte {
	var b []byte
	for _, r := range rs {
		b = append(b, byte(r[0]), byte(r[0]>>8), byte(r[0]>>16), byte(r[1]), byte(r[1]>>8), byte(r[1]>>16))
	}
	return b
}

// FuzzRandomAccess writes a file (with the oracle's writer or ours, with
// or without an edit list) and reads it at random offsets both with the
// oracle's Seek-based reader, one reader seeking back and forth, and with
// c4gh.NewReaderAt: both must give the model's bytes at every offset, and
// agree on how many there are.
func FuzzRandomAccess(f *testing.F) {
	for i, n := range seedSizes {
		half := int(n) / 2
		f.Add(uint64(i), n, i%2 == 0, []byte(nil),
			encodeReads([2]int{0, int(n)}, [2]int{half, 70000}, [2]int{int(n), 10}, [2]int{1, 65536}, [2]int{half, 1}))
	}
	f.Add(uint64(50), uint32(3*65536+77), true, encodeEditList(100, 65536, 65436, 5),
		encodeReads([2]int{65530, 12}, [2]int{0, 65542}, [2]int{65535, 2}, [2]int{3, 200}))
	f.Add(uint64(51), uint32(2*65536), false, encodeEditList(65535, 2, 3),
		encodeReads([2]int{0, 5}, [2]int{1, 100000}, [2]int{65535, 65537}))
	f.Add(uint64(52), uint32(500), true, encodeEditList(400, 200), encodeReads([2]int{0, 200}, [2]int{50, 60}))
	f.Fuzz(func(t *testing.T, seed uint64, size uint32, theirs bool, rawEdit, rawReads []byte) {
		ids := mustPool(t)
		rng := newRand(seed)
		plain := plaintext(seed, plainSize(size))
		el, hasEdit := editListFrom(rawEdit, len(plain))
		r := ids[rng.IntN(len(ids))]
		var file []byte
		var err error
		if theirs {
			file, err = theirEncrypt(plain, nil, [][32]byte{r.theirPublic}, theirEditList(el, hasEdit), 1<<20)
		} else {
			file, err = ourEncryptEdit(plain, nil, []keys.PublicKey{r.public}, el, hasEdit)
		}
		if err != nil {
			t.Fatal(err)
		}
		want, missing := model(plain, el, hasEdit)

		ra, err := c4gh.NewReaderAt(bytes.NewReader(file), int64(len(file)), &r.secret, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ra.Close()
		if ra.Size() != int64(len(want)) {
			t.Fatalf("Size() = %d, want %d", ra.Size(), len(want))
		}
		tr, err := streaming.NewCrypt4GHReader(bytes.NewReader(file), r.theirSecret, nil)
		if err != nil {
			t.Fatalf("oracle: %v", err)
		}
		theirBug := theirEditListBug(el, hasEdit, len(plain))
		reads := readsFrom(rawReads, len(want))
		for len(reads) < 4 {
			reads = append(reads, [2]int{rng.IntN(len(want) + 100), rng.IntN(70000)})
		}
		for _, rd := range reads {
			off, n := rd[0], rd[1]
			exp := want[min(off, len(want)):min(off+n, len(want))]
			what := fmt.Sprintf("%d bytes at %d of %d", n, off, len(want))

			ours := make([]byte, n)
			m, err := ra.ReadAt(ours, int64(off))
			switch {
			case m != len(exp) || !bytes.Equal(ours[:m], exp):
				t.Fatalf("ReadAt %s: %d bytes (%v), want %d (first difference at %d)", what, m, err, len(exp), firstDiff(ours[:m], exp))
			case m == n && err != nil && err != io.EOF:
				t.Fatalf("ReadAt %s: full read with error %v", what, err)
			case m < n && err != io.EOF:
				t.Fatalf("ReadAt %s: short read with %v, want io.EOF", what, err)
			case ra.Missing() != missing:
				t.Fatalf("ReadAt %s: Missing() = %v, want %v", what, ra.Missing(), missing)
			}

			if theirBug {
				continue
			}
			got, err := theirReadAt(tr, off, n)
			if err != nil {
				t.Fatalf("oracle %s: %v", what, err)
			}
			if !bytes.Equal(got, exp) {
				t.Fatalf("oracle %s: %d bytes, want %d (first difference at %d)", what, len(got), len(exp), firstDiff(got, exp))
			}
		}
	})
}

// theirReadAt seeks the oracle's reader to off and reads up to n bytes.
func theirReadAt(r *streaming.Crypt4GHReader, off, n int) (out []byte, err error) {
	defer recoverOracle(&err)
	if _, err := r.Seek(int64(off), io.SeekStart); err != nil {
		return nil, err
	}
	out = make([]byte, n)
	m, err := io.ReadFull(r, out)
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		err = nil
	}
	return out[:m], err
}
