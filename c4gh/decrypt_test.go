package c4gh

import (
	"bytes"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"testing/iotest"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/keys"
	"github.com/c4gh-go/crypt4gh/reencrypt"
)

func testKey(t testing.TB) *keys.SecretKey {
	t.Helper()
	sk, err := keys.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &sk
}

func plaintext(n int) []byte {
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{byte(n), byte(n >> 8), byte(n >> 16)}).Read(b)
	return b
}

func encryptFor(t testing.TB, sk *keys.SecretKey, pt []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := Encrypt(&buf, bytes.NewReader(pt), EncryptOptions{Recipients: []keys.PublicKey{sk.Public()}}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// countingReaderAt counts the bytes that ReadAt returns.
type countingReaderAt struct {
	r     io.ReaderAt
	bytes atomic.Int64
	calls atomic.Int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.bytes.Add(int64(n))
	c.calls.Add(1)
	return n, err
}

// TestReaderAtReadsOnlyTouchedSegments reads 1 MiB from the middle of an
// 8 MiB file through NewReaderAt over a counting io.ReaderAt: it may read
// the header, the segments the range touches and at most one segment of
// read-ahead, nothing else.
func TestReaderAtReadsOnlyTouchedSegments(t *testing.T) {
	sk := testKey(t)
	pt := plaintext(8 << 20)
	file := encryptFor(t, sk, pt)
	src := &countingReaderAt{r: bytes.NewReader(file)}
	r, err := NewReaderAt(src, int64(len(file)), sk, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Size() != int64(len(pt)) {
		t.Fatalf("Size %d, want %d", r.Size(), len(pt))
	}
	const start, n = 3<<20 + 12345, 1 << 20
	got := make([]byte, n)
	if _, err := io.ReadFull(io.NewSectionReader(r, start, n), got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, pt[start:start+n]) {
		t.Fatal("wrong bytes")
	}
	touched := int64((start+n-1)/body.SegmentSize - start/body.SegmentSize + 1)
	limit := r.HeaderSize() + (touched+1)*body.EncryptedSegmentSize
	if read := src.bytes.Load(); read > limit {
		t.Fatalf("read %d bytes of the file for %d touched segments; limit %d", read, touched, limit)
	}
	t.Logf("read %d bytes in %d calls for a 1 MiB range (%d segments, header %d bytes)",
		src.bytes.Load(), src.calls.Load(), touched, r.HeaderSize())
}

func TestReaderAt(t *testing.T) {
	sk := testKey(t)
	for _, n := range []int{0, 1, 65535, 65536, 65537, 2*65536 + 500} {
		pt := plaintext(n)
		file := encryptFor(t, sk, pt)
		r, err := NewReaderAt(bytes.NewReader(file), int64(len(file)), sk, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n <= 65537 && !raceEnabled { // see raceEnabled
			if err := iotest.TestReader(io.NewSectionReader(r, 0, r.Size()), pt); err != nil {
				t.Fatalf("%d bytes: %v", n, err)
			}
		}
		for _, off := range []int64{0, 1, 65535, 65536, 65537, int64(n) - 1, int64(n), int64(n) + 1} {
			if off < 0 {
				continue
			}
			buf := make([]byte, 70000)
			m, err := r.ReadAt(buf, off)
			want := pt[min(int(off), n):]
			want = want[:min(len(want), len(buf))]
			if m != len(want) || !bytes.Equal(buf[:m], want) {
				t.Fatalf("%d bytes, ReadAt at %d: %d bytes, want %d", n, off, m, len(want))
			}
			if m < len(buf) && err != io.EOF {
				t.Fatalf("%d bytes, ReadAt at %d: short read with %v", n, off, err)
			}
		}
		r.Close()
		if _, err := r.ReadAt(make([]byte, 1), 0); err == nil {
			t.Fatal("ReadAt after Close succeeded")
		}
	}
}

// TestCopyRange copies ranges of files with and without an edit list and
// checks the bytes, the clipping of an end past the data, the errors for a
// start past it, and that without an edit list no segment is read twice.
func TestCopyRange(t *testing.T) {
	sk := testKey(t)
	pt := plaintext(5*65536 + 300)
	plain := encryptFor(t, sk, pt)
	edited := spliced(t, sk, pt, edit.Range{Start: 1000, End: 4*65536 + 7})
	for _, tc := range []struct {
		name string
		file []byte
		want []byte
	}{
		{"no edit list", plain, pt},
		{"edit list", edited, pt[1000 : 4*65536+7]},
	} {
		src := &countingReaderAt{r: bytes.NewReader(tc.file)}
		r, err := NewReaderAt(src, int64(len(tc.file)), sk, nil)
		if err != nil {
			t.Fatal(err)
		}
		size := int64(len(tc.want))
		for _, rg := range [][2]int64{{0, 1}, {0, size}, {65535, 65537}, {70000, 3*65536 + 1}, {size - 1, edit.Unbounded}, {100, size + 5}} {
			var out bytes.Buffer
			before := src.bytes.Load()
			n, err := r.CopyRange(&out, rg[0], rg[1])
			end := min(rg[1], size)
			if err != nil || n != end-rg[0] || !bytes.Equal(out.Bytes(), tc.want[rg[0]:end]) {
				t.Fatalf("%s: CopyRange(%d, %d) = %d, %v; want %d bytes", tc.name, rg[0], rg[1], n, err, end-rg[0])
			}
			if tc.name == "no edit list" {
				touched := body.SegmentOf(end-1) - body.SegmentOf(rg[0]) + 1
				if read := src.bytes.Load() - before; read > touched*body.EncryptedSegmentSize {
					t.Errorf("CopyRange(%d, %d) read %d bytes for %d segments", rg[0], rg[1], read, touched)
				}
			}
		}
		if _, err := r.CopyRange(io.Discard, size, size+1); !errors.Is(err, edit.ErrBeyondEnd) {
			t.Errorf("%s: a start at the end: %v, want ErrBeyondEnd", tc.name, err)
		}
		if n, err := r.CopyRange(io.Discard, 0, 0); n != 0 || err != nil {
			t.Errorf("%s: an empty range: %d, %v", tc.name, n, err)
		}
		r.Close()
	}
	// Where whole segments are missing, a start past what is there is
	// past the data, and in strict mode says that data is missing.
	h, err := header.Parse(bytes.NewReader(edited))
	if err != nil {
		t.Fatal(err)
	}
	cut := edited[:h.Size()+2*body.EncryptedSegmentSize]
	for _, strict := range []bool{false, true} {
		r, err := NewReaderAt(bytes.NewReader(cut), int64(len(cut)), sk, &DecryptOptions{Strict: strict})
		if err != nil {
			t.Fatal(err)
		}
		want := edit.ErrBeyondEnd
		if strict {
			want = ErrMissingData
		}
		if _, err := r.CopyRange(io.Discard, r.Size(), r.Size()+10); !errors.Is(err, want) || !r.Missing() {
			t.Errorf("strict %v: a start past the data that is there: %v, Missing %v; want %v", strict, err, r.Missing(), want)
		}
		if n, err := r.CopyRange(io.Discard, 0, r.Size()+10); (err != nil) != strict || !strict && n != r.Size() {
			t.Errorf("strict %v: a range that reaches past the data that is there: %d bytes, %v", strict, n, err)
		}
		r.Close()
	}
}

// spliced returns a file that keeps bytes [start, end) of pt, as
// reencrypt.Splice writes it, and the file it was cut from.
func spliced(t testing.TB, sk *keys.SecretKey, pt []byte, ranges ...edit.Range) []byte {
	t.Helper()
	file := encryptFor(t, sk, pt)
	var out bytes.Buffer
	if err := reencrypt.Splice(&out, bytes.NewReader(file), reencrypt.SpliceOptions{Reader: sk, Ranges: ranges}); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func TestEditListApplied(t *testing.T) {
	sk := testKey(t)
	pt := plaintext(5 * 65536)
	ranges := []edit.Range{{Start: 10, End: 20}, {Start: 70000, End: 200000}, {Start: 300000, End: edit.Unbounded}}
	var want []byte
	for _, r := range ranges {
		want = append(want, pt[r.Start:min(r.End, int64(len(pt)))]...)
	}
	file := spliced(t, sk, pt, ranges...)

	r, err := NewReader(bytes.NewReader(file), sk, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := iotest.TestReader(r, want); err != nil {
		t.Fatal(err)
	}
	r, _ = NewReader(bytes.NewReader(file), sk, &DecryptOptions{Jobs: 2})
	var buf bytes.Buffer
	if n, err := io.Copy(&buf, r); err != nil || n != int64(len(want)) || !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("WriteTo: %d, %v", n, err)
	}

	ra, err := NewReaderAt(bytes.NewReader(file), int64(len(file)), sk, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ra.Size() != int64(len(want)) {
		t.Fatalf("Size %d, want %d", ra.Size(), len(want))
	}
	if !raceEnabled { // see raceEnabled
		if err := iotest.TestReader(io.NewSectionReader(ra, 0, ra.Size()), want); err != nil {
			t.Fatal(err)
		}
	}

	// A range over what the file stands for.
	r, _ = NewReader(bytes.NewReader(file), sk, nil)
	if err := r.Select(edit.Range{Start: 5, End: 15}); err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(r); err != nil || !bytes.Equal(got, want[5:15]) {
		t.Fatalf("Select: %d bytes, %v", len(got), err)
	}
	r, _ = NewReader(bytes.NewReader(file), sk, nil)
	r.Select(edit.Range{Start: int64(len(want)), End: edit.Unbounded})
	if _, err := io.Copy(io.Discard, r); !errors.Is(err, edit.ErrBeyondEnd) {
		t.Fatalf("Select past the end: %v", err)
	}
}

// TestMissingData cuts the last segments off a file whose edit list keeps
// them: whatever reads them fails with ErrMissingData, the rest reads.
func TestMissingData(t *testing.T) {
	sk := testKey(t)
	pt := plaintext(4 * 65536)
	file := spliced(t, sk, pt, edit.Range{Start: 100, End: 4*65536 - 100})
	h, err := header.Parse(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	cut := file[:h.Size()+2*body.EncryptedSegmentSize]

	present := pt[100 : 2*65536]
	for _, jobs := range []int{1, 2} {
		r, err := NewReader(bytes.NewReader(cut), sk, &DecryptOptions{Jobs: jobs, Strict: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, r); !errors.Is(err, ErrMissingData) {
			t.Fatalf("strict WriteTo, jobs %d: %v", jobs, err)
		}
		// Without Strict: what is there, and Missing.
		r, _ = NewReader(bytes.NewReader(cut), sk, &DecryptOptions{Jobs: jobs})
		var out bytes.Buffer
		if _, err := io.Copy(&out, r); err != nil || !bytes.Equal(out.Bytes(), present) || !r.Missing() {
			t.Fatalf("WriteTo, jobs %d: %d bytes, %v, Missing %v; want %d bytes", jobs, out.Len(), err, r.Missing(), len(present))
		}
	}
	r, _ := NewReader(bytes.NewReader(cut), sk, &DecryptOptions{Strict: true})
	if _, err := io.ReadAll(r); !errors.Is(err, ErrMissingData) {
		t.Fatalf("strict Read: %v", err)
	}
	r, _ = NewReader(bytes.NewReader(cut), sk, nil)
	if got, err := io.ReadAll(r); err != nil || !bytes.Equal(got, present) || !r.Missing() {
		t.Fatalf("Read: %d bytes, %v, Missing %v", len(got), err, r.Missing())
	}
	// A range inside the data that is there reads.
	r, _ = NewReader(bytes.NewReader(cut), sk, nil)
	r.Select(edit.Range{Start: 0, End: 1000})
	if got, err := io.ReadAll(r); err != nil || !bytes.Equal(got, pt[100:1100]) {
		t.Fatalf("range inside the data: %d bytes, %v", len(got), err)
	}

	ra, err := NewReaderAt(bytes.NewReader(cut), int64(len(cut)), sk, &DecryptOptions{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(2*65536 - 100); ra.Size() != want {
		t.Fatalf("Size %d, want %d", ra.Size(), want)
	}
	buf := make([]byte, 1000)
	if _, err := ra.ReadAt(buf, 0); err != nil || !bytes.Equal(buf, pt[100:1100]) {
		t.Fatalf("ReadAt inside the data: %v", err)
	}
	if _, err := ra.ReadAt(buf, ra.Size()-10); !errors.Is(err, ErrMissingData) {
		t.Fatalf("ReadAt past the data: %v", err)
	}
}

// withEditList returns pt encrypted for sk with the given edit list.
func withEditList(t testing.TB, sk *keys.SecretKey, pt []byte, list []uint64) []byte {
	t.Helper()
	key := &[32]byte{1, 2, 3}
	h, err := header.New(nil, []keys.PublicKey{sk.Public()}, key, list, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := h.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	w, err := body.NewWriter(&buf, key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(pt); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestMissingDataAfterLastKept checks that Reader and ReaderAt agree on
// ErrMissingData when the lengths of an edit list add up to more than the
// body but the bytes it keeps are all there: only a kept byte past the
// end (or a final keep-the-rest that starts past it) is missing data.
// A list that keeps nothing, such as [6, 0] over 4 bytes, used to give no
// error through Reader and ErrMissingData through ReaderAt (found by
// internal/difftest).
func TestMissingDataAfterLastKept(t *testing.T) {
	sk := testKey(t)
	for _, c := range []struct {
		size    int
		list    []uint64
		want    []int // bytes of the plaintext kept: start, end pairs
		missing bool
	}{
		{4, []uint64{6, 0}, nil, false},
		{4, []uint64{0, 2, 10, 0}, []int{0, 2}, false},
		{70000, []uint64{5, 10, 200000, 0}, []int{5, 15}, false},
		{4, []uint64{0, 2, 10}, []int{0, 2}, true},
		{50, []uint64{0, 10, 100}, []int{0, 10}, true},
		{50, []uint64{40, 20}, []int{40, 50}, true},
		{50, []uint64{40, 10, 5}, []int{40, 50}, true},
		{50, []uint64{40, 10}, []int{40, 50}, false},
		// Lengths that add up past the largest int64 (a hostile pass
		// found Reader reporting no missing data for them, even strict).
		{50, []uint64{1 << 63, 10}, nil, true},
		{50, []uint64{10, 5, math.MaxUint64, 3}, []int{10, 15}, true},
		{70000, []uint64{1 << 63}, nil, true},
	} {
		pt := plaintext(c.size)
		want := []byte{}
		for i := 0; i < len(c.want); i += 2 {
			want = append(want, pt[c.want[i]:c.want[i+1]]...)
		}
		file := withEditList(t, sk, pt, c.list)
		for _, strict := range []bool{false, true} {
			// Strict: ErrMissingData where the data ends. Else the
			// bytes that are there, no error, and Missing says so.
			check := func(what string, got []byte, err error, missing bool) {
				t.Helper()
				wantErr := strict && c.missing
				if wantErr != errors.Is(err, ErrMissingData) || !wantErr && err != nil || !bytes.Equal(got, want) || !strict && missing != c.missing {
					t.Errorf("%v over %d bytes, strict %v, %s: %d bytes, %v, Missing %v; want %d bytes, missing data %v",
						c.list, c.size, strict, what, len(got), err, missing, len(want), c.missing)
				}
			}
			for _, jobs := range []int{1, 2} {
				r, err := NewReader(bytes.NewReader(file), sk, &DecryptOptions{Jobs: jobs, Strict: strict})
				if err != nil {
					t.Fatal(err)
				}
				var out bytes.Buffer
				_, err = io.Copy(&out, r)
				check("WriteTo", out.Bytes(), err, r.Missing())
			}
			r, err := NewReader(bytes.NewReader(file), sk, &DecryptOptions{Strict: strict})
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(iotest.OneByteReader(r))
			check("Read", got, err, r.Missing())
			ra, err := NewReaderAt(bytes.NewReader(file), int64(len(file)), sk, &DecryptOptions{Strict: strict})
			if err != nil {
				t.Fatal(err)
			}
			got = make([]byte, ra.Size()+1)
			n, err := ra.ReadAt(got, 0)
			if err == io.EOF {
				err = nil
			}
			check("ReadAt", got[:n], err, ra.Missing())
		}
	}
}

func TestWriter(t *testing.T) {
	sk := testKey(t)
	for _, n := range []int{0, 1, 65535, 65536, 65537, 2*65536 + 500} {
		pt := plaintext(n)
		for _, step := range []int{1, 512, 65535, 65537} {
			if step == 1 && n > 70000 {
				continue
			}
			var file, hdr bytes.Buffer
			w, err := NewWriter(&file, EncryptOptions{Recipients: []keys.PublicKey{sk.Public()}, Header: &hdr})
			if err != nil {
				t.Fatal(err)
			}
			for p := pt; len(p) > 0; {
				k := min(step, len(p))
				if _, err := w.Write(p[:k]); err != nil {
					t.Fatal(err)
				}
				p = p[k:]
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write([]byte{1}); err == nil {
				t.Fatal("Write after Close succeeded")
			}
			r, err := NewReader(io.MultiReader(&hdr, &file), sk, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := iotest.TestReader(r, pt); err != nil {
				t.Fatalf("%d bytes, step %d: %v", n, step, err)
			}
		}
	}
	if _, err := NewWriter(io.Discard, EncryptOptions{}); err == nil {
		t.Fatal("NewWriter without recipients succeeded")
	}
}

// TestEncryptReadsFirst: an input that fails at once leaves the output
// untouched.
func TestEncryptReadsFirst(t *testing.T) {
	sk := testKey(t)
	var out bytes.Buffer
	_, err := Encrypt(&out, iotest.ErrReader(errors.New("is a directory")), EncryptOptions{Recipients: []keys.PublicKey{sk.Public()}})
	if err == nil || out.Len() != 0 {
		t.Fatalf("Encrypt of a failing input: %v, %d bytes written", err, out.Len())
	}
}

// TestResumable goes on with a decryption from where an earlier run
// stopped: the kept plaintext and the rest read from Offset make up the
// file, a damaged segment after the resume point is named by its index in
// the whole body, and a file with an edit list is refused.
func TestResumable(t *testing.T) {
	sk := testKey(t)
	pt := plaintext(6*65536 + 77)
	file := encryptFor(t, sk, pt)
	for _, done := range []int64{0, 1, 65535, 65536, 65537, 3*65536 + 5, int64(len(pt)), int64(len(pt)) + 1, -1} {
		res, err := NewResumable(bytes.NewReader(file), int64(len(file)), sk, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Size() != int64(len(pt)) {
			t.Fatalf("Size %d, want %d", res.Size(), len(pt))
		}
		kept := res.Kept(done)
		if kept%body.SegmentSize != 0 && kept != 0 || kept > max(done, 0) {
			t.Fatalf("Kept(%d) = %d: not whole segments of what was done", done, kept)
		}
		off := res.Offset(kept)
		r := res.From(kept, bytes.NewReader(file[off:]), 2)
		var out bytes.Buffer
		if _, err := io.Copy(&out, r); err != nil {
			t.Fatalf("done %d: %v", done, err)
		}
		r.Close()
		if got := append(slices.Clip(pt[:kept]), out.Bytes()...); !bytes.Equal(got, pt) {
			t.Fatalf("done %d, kept %d: the kept plaintext and the rest are not the file", done, kept)
		}
		res.Close() // after From: erases nothing that the Reader used
	}

	// Segment 4 damaged, resumed at segment 2: the error names segment 4.
	bad := slices.Clone(file)
	res, err := NewResumable(bytes.NewReader(bad), int64(len(bad)), sk, nil)
	if err != nil {
		t.Fatal(err)
	}
	bad[res.HeaderSize()+body.EncryptedOffset(4)+100] ^= 1
	kept := res.Kept(2*65536 + 10)
	for _, read := range []func(io.Reader) error{
		func(r io.Reader) error { _, err := io.Copy(io.Discard, r); return err },
		func(r io.Reader) error { _, err := io.ReadAll(struct{ io.Reader }{r}); return err },
	} {
		res, _ := NewResumable(bytes.NewReader(bad), int64(len(bad)), sk, nil)
		r := res.From(kept, bytes.NewReader(bad[res.Offset(kept):]), 1)
		var se *body.SegmentError
		if err := read(r); !errors.As(err, &se) || se.Index != 4 || !errors.Is(err, body.ErrAuth) {
			t.Fatalf("damaged segment 4 after resuming at 2: %v", err)
		}
		r.Close()
	}
	res.Close()

	edited := spliced(t, sk, pt, edit.Range{Start: 10, End: 100000})
	if _, err := NewResumable(bytes.NewReader(edited), int64(len(edited)), sk, nil); !errors.Is(err, ErrResumeEditList) {
		t.Fatalf("a file with an edit list: %v, want ErrResumeEditList", err)
	}
}

// TestAssembledStream reads a stream laid out as an htsget-rs Crypt4GH
// ticket makes it: a packet for another reader first, an edit list
// before the data keys, and segments of two files (two data keys) that
// were not contiguous in either, the edit list applied across them.
func TestAssembledStream(t *testing.T) {
	archive, reader := testKey(t), testKey(t)
	ptA, ptB := plaintext(4*65536+10), plaintext(3*65536)
	fileA, fileB := encryptFor(t, archive, ptA), encryptFor(t, archive, ptB)
	parse := func(f []byte) (*header.Header, [32]byte) {
		h, err := header.Parse(bytes.NewReader(f))
		if err != nil {
			t.Fatal(err)
		}
		c, err := h.Decrypt(archive, nil)
		if err != nil {
			t.Fatal(err)
		}
		return h, c.DataKeys[0]
	}
	hA, keyA := parse(fileA)
	hB, keyB := parse(fileB)
	segment := func(f []byte, h *header.Header, i int64) []byte {
		start := h.Size() + i*body.EncryptedSegmentSize
		return f[start:min(start+body.EncryptedSegmentSize, int64(len(f)))]
	}
	list := []uint64{5, 65536, 100, 65536*2 - 200}
	el, err := header.EditListPayload(list)
	if err != nil {
		t.Fatal(err)
	}
	server := testKey(t)
	h := &header.Header{Packets: slices.Clone(hA.Packets)}
	for _, p := range [][]byte{el, header.DataKeyPayload(&keyA), header.DataKeyPayload(&keyB)} {
		pk, err := header.SealPacket(server, reader.Public(), p, nil)
		if err != nil {
			t.Fatal(err)
		}
		h.Packets = append(h.Packets, pk)
	}
	stream := h.Marshal()
	stream = append(stream, segment(fileA, hA, 1)...)
	stream = append(stream, segment(fileB, hB, 2)...)
	stream = append(stream, segment(fileA, hA, 3)...)
	stream = append(stream, segment(fileA, hA, 4)...) // the short one, last
	present := slices.Concat(ptA[65536:2*65536], ptB[2*65536:], ptA[3*65536:])
	want := slices.Concat(present[5:5+65536], present[5+65536+100:5+65536+100+65536*2-200])

	r, err := NewReader(bytes.NewReader(stream), reader, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := iotest.TestReader(r, want); err != nil {
		t.Fatal(err)
	}
	r, _ = NewReader(bytes.NewReader(stream), reader, &DecryptOptions{Jobs: 3})
	var buf bytes.Buffer
	if _, err := r.WriteTo(&buf); err != nil || !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("WriteTo: %d bytes, %v", buf.Len(), err)
	}
	// The archive's key opens only its own packet: no edit list, and
	// the segments under the other key fail.
	r, _ = NewReader(bytes.NewReader(stream), archive, nil)
	if _, err := io.ReadAll(r); !errors.Is(err, body.ErrAuth) {
		t.Fatalf("the archive's view: %v", err)
	}
}

// TestKeyMisuse: a writer key erased by Zero (all zeros: its packets
// would open with the recipient's public key alone) is refused, and a nil
// *keys.Reader is no key rather than a panic.
func TestKeyMisuse(t *testing.T) {
	alice := testKey(t)
	w := testKey(t)
	w.Zero()
	var buf bytes.Buffer
	_, err := Encrypt(&buf, bytes.NewReader([]byte("secret")), EncryptOptions{Writer: w, Recipients: []keys.PublicKey{alice.Public()}})
	if !errors.Is(err, keys.ErrZeroKey) || buf.Len() != 0 {
		t.Errorf("an erased writer key: %v, %d bytes written", err, buf.Len())
	}
	enc := encryptFor(t, alice, []byte("secret"))
	for _, k := range []keys.Opener{(*keys.Reader)(nil), (*keys.SecretKey)(nil)} {
		if _, err := NewReader(bytes.NewReader(enc), k, nil); err == nil {
			t.Errorf("%T nil: no error", k)
		}
		if _, err := NewReaderAt(bytes.NewReader(enc), int64(len(enc)), k, nil); err == nil {
			t.Errorf("%T nil: no error from NewReaderAt", k)
		}
	}
}

// TestSelectAndResumeMisuse: an invalid or second Select is refused as
// edit.Normalize refuses ranges, and a Resumable's From with a kept that
// Kept could not give, or called twice, gives reads that fail: no panic.
func TestSelectAndResumeMisuse(t *testing.T) {
	sk := testKey(t)
	pt := plaintext(3*body.SegmentSize + 100)
	enc := encryptFor(t, sk, pt)
	for _, rng := range []edit.Range{{Start: 100, End: 50}, {Start: -1, End: 10}, {Start: 5, End: 5}} {
		r, err := NewReader(bytes.NewReader(enc), sk, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Select(rng); !errors.Is(err, edit.ErrInvalidRange) {
			t.Errorf("Select(%v): %v, want ErrInvalidRange", rng, err)
		}
		r.Close()
	}
	r, err := NewReader(bytes.NewReader(enc), sk, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Select(edit.Range{Start: 10, End: 100}); err != nil {
		t.Fatal(err)
	}
	if err := r.Select(edit.Range{Start: 10, End: 20}); err == nil {
		t.Error("a second Select: no error")
	}
	if got, err := io.ReadAll(r); err != nil || !bytes.Equal(got, pt[10:100]) {
		t.Errorf("after a refused second Select: %d bytes, %v", len(got), err)
	}
	r.Close()

	res, err := NewResumable(bytes.NewReader(enc), int64(len(enc)), sk, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, kept := range []int64{-1, 100, int64(len(pt)) + body.SegmentSize} {
		if _, err := io.ReadAll(res.From(kept, bytes.NewReader(nil), 1)); err == nil {
			t.Errorf("From(%d): reads did not fail", kept)
		}
	}
	kept := res.Kept(body.SegmentSize + 5)
	rd := res.From(kept, bytes.NewReader(enc[res.Offset(kept):]), 1)
	if got, err := io.ReadAll(rd); err != nil || !bytes.Equal(got, pt[kept:]) {
		t.Errorf("From(%d): %d bytes, %v", kept, len(got), err)
	}
	rd.Close()
	if l, ok := res.EditList(); l != nil || ok || res.KeyID() != "" {
		t.Error("a Resumable after From still tells of its keys")
	}
	second := res.From(kept, bytes.NewReader(enc[res.Offset(kept):]), 1)
	if _, err := io.ReadAll(second); err == nil {
		t.Error("a second From: reads did not fail")
	}
	second.Close()
	res.Close()
}
