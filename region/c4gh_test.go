package region

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/keys"
)

// TestEncrypted plans a region of an encrypted BAM through a c4gh.ReaderAt,
// as the command does, and checks the output and the cost.
func TestEncrypted(t *testing.T) {
	dir := fixtures(t)
	plain, err := os.ReadFile(filepath.Join(dir, "reads.bam"))
	if err != nil {
		t.Fatal(err)
	}
	ra, size, _ := encrypt(t, plain)
	bai, _ := os.ReadFile(filepath.Join(dir, "reads.bam.bai"))
	idx, err := ReadIndex(bytes.NewReader(bai), int64(len(bai)), "reads.bam.bai")
	if err != nil {
		t.Fatal(err)
	}
	f, err := Open(ra, ra.Size(), "reads.bam.c4gh", idx)
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.Plan([]Region{{Name: "chr1", Start: 50000, End: 60000}})
	if err != nil {
		t.Fatal(err)
	}
	var fromEnc, fromPlain bytes.Buffer
	if _, err := Write(&fromEnc, ra, p.Pieces); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(&fromPlain, bytes.NewReader(plain), p.Pieces); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fromEnc.Bytes(), fromPlain.Bytes()) || int64(fromEnc.Len()) != p.Size() {
		t.Fatalf("the output through c4gh.ReaderAt differs")
	}
	bodySize := size - ra.HeaderSize()
	cost, err := p.Cost(nil, bodySize)
	if err != nil {
		t.Fatal(err)
	}
	last := body.SegmentCount(int64(len(plain))) - 1
	if len(cost.Segments) == 0 || cost.Segments[0] != 0 || cost.Segments[len(cost.Segments)-1] != last {
		t.Errorf("segments %v: want the first (header) and the last (EOF) of %d", cost.Segments, last+1)
	}
	want := map[int64]bool{}
	for _, iv := range p.Read {
		for off := iv.Start; off < iv.End; off++ {
			want[body.SegmentOf(off)] = true
		}
	}
	if len(want) != len(cost.Segments) {
		t.Errorf("segments %v, want those of %v", cost.Segments, p.Read)
	}
	var stored int64
	for _, s := range cost.Segments {
		stored += body.StoredLength(bodySize, s)
	}
	if stored != cost.Stored {
		t.Errorf("stored %d, want %d", cost.Stored, stored)
	}
}

// encrypt encrypts data for a new key and returns a c4gh.ReaderAt of it,
// closed at the end of the test, the encrypted size, and the counter of
// the encrypted bytes read.
func encrypt(t testing.TB, data []byte) (*c4gh.ReaderAt, int64, *countingReaderAt) {
	t.Helper()
	sk, err := keys.Generate(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var enc bytes.Buffer
	w, err := c4gh.NewWriter(&enc, c4gh.EncryptOptions{Recipients: []keys.PublicKey{sk.Public()}})
	if err != nil {
		t.Fatal(err)
	}
	w.Write(data)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	c := &countingReaderAt{r: bytes.NewReader(enc.Bytes())}
	ra, err := c4gh.NewReaderAt(c, int64(enc.Len()), &sk, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ra.Close() })
	return ra, int64(enc.Len()), c
}

// TestCostEditList checks that Cost maps the plan through an edit list:
// a file whose list skips its first segment stands for the rest.
func TestCostEditList(t *testing.T) {
	p := &Plan{Read: []edit.Interval{{Start: 0, End: 10}, {Start: 65536 + 5, End: 65536 + 6}}}
	encrypted := body.EncryptedSize(4 * body.SegmentSize)
	c, err := p.Cost(nil, encrypted)
	if err != nil || len(c.Segments) != 2 || c.Segments[0] != 0 || c.Segments[1] != 1 {
		t.Fatalf("no edit list: %+v, %v", c, err)
	}
	c, err = p.Cost(edit.List{body.SegmentSize}, encrypted)
	if err != nil || len(c.Segments) != 2 || c.Segments[0] != 1 || c.Segments[1] != 2 {
		t.Fatalf("edit list: %+v, %v", c, err)
	}
	if c.Stored != 2*body.EncryptedSegmentSize {
		t.Errorf("stored %d", c.Stored)
	}
	if c, _ := (&Plan{}).Cost(nil, encrypted); len(c.Segments) != 0 {
		t.Errorf("an empty plan costs %+v", c)
	}
}

// TestDecryptsOnce plans and writes regions of an encrypted BAM as the
// command does, and checks that no segment is read (and so decrypted)
// twice: the header's, the edge blocks' and the end-of-file marker's
// segments are each read by several steps.
func TestDecryptsOnce(t *testing.T) {
	dir := fixtures(t)
	plain, err := os.ReadFile(filepath.Join(dir, "reads.bam"))
	if err != nil {
		t.Fatal(err)
	}
	bai, _ := os.ReadFile(filepath.Join(dir, "reads.bam.bai"))
	idx, err := ReadIndex(bytes.NewReader(bai), int64(len(bai)), "reads.bam.bai")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"chr1:50000-120000", "chr1:50000-50100", "chr2", "chr1:1-100"} {
		ra, size, c := encrypt(t, plain)
		c.n.Store(0)
		f, err := OpenData(ra, ra.Size(), "reads.bam.c4gh")
		if err != nil {
			t.Fatal(err)
		}
		if err := f.UseIndex(idx); err != nil {
			t.Fatal(err)
		}
		reg, _ := Parse(r)
		p, err := f.Plan([]Region{reg})
		if err != nil {
			t.Fatal(err)
		}
		var got, want bytes.Buffer
		if _, err := f.Write(&got, p); err != nil {
			t.Fatal(err)
		}
		if _, err := Write(&want, bytes.NewReader(plain), p.Pieces); err != nil || !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("%s: the output differs from the plaintext's (%v)", r, err)
		}
		cost, err := p.Cost(nil, size-ra.HeaderSize())
		if err != nil {
			t.Fatal(err)
		}
		if n := c.n.Load(); n != cost.Stored {
			t.Errorf("%s: %d bytes of segments read, for %d segments of %d bytes", r, n, len(cost.Segments), cost.Stored)
		}
	}
}
