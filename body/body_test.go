package body

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"testing/iotest"

	"golang.org/x/crypto/chacha20poly1305"
)

var (
	lengths = []int{0, 1, 65535, 65536, 65537, 2*65536 + 500}
	steps   = []int{1, 512, 65535, 65537}
)

func TestSizes(t *testing.T) {
	for _, tc := range []struct{ plain, enc int64 }{
		{0, 0}, {1, 29}, {65535, 65563}, {65536, 65564}, {65537, 65593},
		{2*65536 + 500, 2*65564 + 528}, {maxPlaintext, maxInt64},
	} {
		if got := EncryptedSize(tc.plain); got != tc.enc {
			t.Errorf("EncryptedSize(%d) = %d; want %d", tc.plain, got, tc.enc)
		}
		if got, err := PlaintextSize(tc.enc); err != nil || got != tc.plain {
			t.Errorf("PlaintextSize(%d) = %d, %v; want %d", tc.enc, got, err, tc.plain)
		}
	}
	for _, p := range []int64{-1, maxPlaintext + 1, maxInt64} {
		if got := EncryptedSize(p); got != -1 {
			t.Errorf("EncryptedSize(%d) = %d; want -1", p, got)
		}
	}
	// An empty segment at the end holds nothing.
	for _, tc := range []struct{ enc, plain int64 }{{28, 0}, {65564 + 28, 65536}} {
		if got, err := PlaintextSize(tc.enc); err != nil || got != tc.plain {
			t.Errorf("PlaintextSize(%d) = %d, %v; want %d", tc.enc, got, err, tc.plain)
		}
	}
	for _, tc := range []struct{ enc, index int64 }{{1, 0}, {27, 0}, {65564 + 5, 1}, {3*65564 + 27, 3}} {
		_, err := PlaintextSize(tc.enc)
		wantSegmentError(t, err, tc.index, ErrTruncated)
	}
	if _, err := PlaintextSize(-1); err == nil {
		t.Error("PlaintextSize(-1) succeeded")
	}
	for range 1000 {
		p := mrand.Int64N(1 << 40)
		if got, err := PlaintextSize(EncryptedSize(p)); err != nil || got != p {
			t.Fatalf("PlaintextSize(EncryptedSize(%d)) = %d, %v", p, got, err)
		}
	}
}

// TestGeometry checks the segment helpers against bodies that the Writer
// made: the stored segments are where EncryptedOffset and StoredLength
// say, and each opens to the plaintext that PlaintextOffset and SegmentOf
// give.
func TestGeometry(t *testing.T) {
	aead, err := chacha20poly1305.New(keyA[:])
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range lengths {
		plain := plaintext(n)
		var enc bytes.Buffer
		w, err := NewWriter(&enc, keyA)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(plain); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		size := int64(enc.Len())
		count := StoredSegments(size)
		if want := SegmentCount(int64(n)); count != want {
			t.Errorf("%d bytes: StoredSegments = %d, SegmentCount = %d", n, count, want)
		}
		var total int64
		for i := int64(0); i < count; i++ {
			off, l := EncryptedOffset(i), StoredLength(size, i)
			total += l
			seg := enc.Bytes()[off : off+l]
			got, err := aead.Open(nil, seg[:NonceSize], seg[NonceSize:], nil)
			if err != nil {
				t.Fatalf("%d bytes: segment %d at %d (%d bytes): %v", n, i, off, l, err)
			}
			start := PlaintextOffset(i)
			if !bytes.Equal(got, plain[start:start+int64(len(got))]) {
				t.Fatalf("%d bytes: segment %d is not plaintext [%d, …)", n, i, start)
			}
			if len(got) > 0 && (SegmentOf(start) != i || SegmentOf(start+int64(len(got))-1) != i) {
				t.Errorf("%d bytes: SegmentOf is wrong at the edges of segment %d", n, i)
			}
			if short := l < EncryptedSegmentSize; ShortLast(size, i) != short {
				t.Errorf("%d bytes: ShortLast(%d) = %v, want %v", n, i, !short, short)
			}
		}
		if total != size || StoredLength(size, count) != 0 || ShortLast(size, count) {
			t.Errorf("%d bytes: the segments hold %d of %d bytes, or one is past the end", n, total, size)
		}
	}
	for _, tc := range []struct{ off, end, want int64 }{
		{0, 10, 10}, {0, 1 << 20, 65536}, {65535, 1 << 20, 65536}, {65536, 1 << 20, 131072}, {70000, 70001, 70001},
	} {
		if got := SegmentEnd(tc.off, tc.end); got != tc.want {
			t.Errorf("SegmentEnd(%d, %d) = %d, want %d", tc.off, tc.end, got, tc.want)
		}
	}
	for _, tc := range []struct{ off, want int64 }{{0, 0}, {65535, 0}, {65536, 65536}, {200000, 196608}} {
		if got := Floor(tc.off); got != tc.want {
			t.Errorf("Floor(%d) = %d, want %d", tc.off, got, tc.want)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	for _, n := range lengths {
		pt := plaintext(n)
		for _, ws := range steps {
			enc := writeChunks(t, keyA, pt, ws)
			if int64(len(enc)) != EncryptedSize(int64(n)) {
				t.Fatalf("len %d, write step %d: %d encrypted bytes; want %d", n, ws, len(enc), EncryptedSize(int64(n)))
			}
			if ref, err := refDecrypt(enc, keyA); err != nil || !bytes.Equal(ref, pt) {
				t.Fatalf("len %d, write step %d: reference decryption failed: %v", n, ws, err)
			}
			for _, rs := range steps {
				r, err := NewReader(bytes.NewReader(enc), keys(keyA))
				if err != nil {
					t.Fatal(err)
				}
				got, err := readChunks(r, rs)
				if err != nil || !bytes.Equal(got, pt) {
					t.Fatalf("len %d, write step %d, read step %d: %d bytes, %v", n, ws, rs, len(got), err)
				}
			}
		}
	}
}

func TestReaderFromWriterTo(t *testing.T) {
	for _, n := range lengths {
		pt := plaintext(n)
		var enc bytes.Buffer
		w, _ := NewWriter(&enc, keyA)
		m, err := w.ReadFrom(iotest.HalfReader(bytes.NewReader(pt)))
		if err != nil || m != int64(n) {
			t.Fatalf("ReadFrom = %d, %v", m, err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		// Half a segment through Read first, the rest through WriteTo.
		r, _ := NewReader(bytes.NewReader(enc.Bytes()), keys(keyA))
		head := make([]byte, min(n, 1000))
		if _, err := io.ReadFull(r, head); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if _, err := r.WriteTo(&out); err != nil {
			t.Fatal(err)
		}
		if got := append(head, out.Bytes()...); !bytes.Equal(got, pt) {
			t.Fatalf("len %d: WriteTo output differs", n)
		}
		if m, err := r.WriteTo(&out); m != 0 || err != nil {
			t.Fatalf("WriteTo at EOF = %d, %v", m, err)
		}
	}
}

func TestIOTestReader(t *testing.T) {
	for _, n := range lengths {
		pt := plaintext(n)
		enc := sealBody(t, keyA, pt)
		r, _ := NewReader(bytes.NewReader(enc), keys(keyA))
		if err := iotest.TestReader(r, pt); err != nil {
			t.Errorf("Reader, len %d: %v", n, err)
		}
		r, _ = NewReader(iotest.HalfReader(bytes.NewReader(enc)), keys(keyB, keyA))
		if err := iotest.TestReader(r, pt); err != nil {
			t.Errorf("Reader with two keys, len %d: %v", n, err)
		}
		if raceEnabled && n > 1 {
			// iotest reads byte by byte, and under the race detector
			// sync.Pool drops buffers at random, so each byte costs a
			// segment decryption. TestReaderAtRandom covers races.
			continue
		}
		ra, err := NewReaderAt(bytes.NewReader(enc), int64(len(enc)), keys(keyA))
		if err != nil {
			t.Fatal(err)
		}
		if err := iotest.TestReader(io.NewSectionReader(ra, 0, ra.Size()), pt); err != nil {
			t.Errorf("ReaderAt, len %d: %v", n, err)
		}
	}
}

func TestWriterSticky(t *testing.T) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, keyA)
	if _, err := w.Write(make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != 10+Overhead {
		t.Fatalf("wrote %d bytes; want %d", buf.Len(), 10+Overhead)
	}
	if _, err := w.Write([]byte{1}); err == nil {
		t.Error("Write after Close succeeded")
	}
	if _, err := w.ReadFrom(bytes.NewReader([]byte{1})); err == nil {
		t.Error("ReadFrom after Close succeeded")
	}
	if err := w.Close(); err == nil {
		t.Error("second Close succeeded")
	}
	if buf.Len() != 10+Overhead {
		t.Error("calls after Close wrote something")
	}

	errBroken := errors.New("broken")
	fw := &failWriter{n: 100, err: errBroken}
	w, _ = NewWriter(fw, keyA)
	if _, err := w.Write(make([]byte, SegmentSize)); !errors.Is(err, errBroken) {
		t.Fatalf("Write = %v; want %v", err, errBroken)
	}
	if _, err := w.Write([]byte{1}); !errors.Is(err, errBroken) {
		t.Errorf("Write after a failure = %v", err)
	}
	if err := w.Close(); !errors.Is(err, errBroken) {
		t.Errorf("Close after a failure = %v", err)
	}

	if _, err := NewWriter(&buf, nil); err == nil {
		t.Error("NewWriter with a nil key succeeded")
	}
	if _, err := NewReader(&buf, nil); err == nil {
		t.Error("NewReader with no key succeeded")
	}
	if _, err := NewReaderAt(bytes.NewReader(nil), 0, nil); err == nil {
		t.Error("NewReaderAt with no key succeeded")
	}
}

func TestEmpty(t *testing.T) {
	if enc := writeChunks(t, keyA, nil, 1); len(enc) != 0 {
		t.Errorf("Writer wrote %d bytes for an empty input", len(enc))
	}
	var buf bytes.Buffer
	if n, err := Encrypt(&buf, bytes.NewReader(nil), keyA, 2); n != 0 || err != nil || buf.Len() != 0 {
		t.Errorf("Encrypt of nothing = %d, %v, %d bytes written", n, err, buf.Len())
	}
	if n, err := Decrypt(&buf, bytes.NewReader(nil), keys(keyA), 2); n != 0 || err != nil || buf.Len() != 0 {
		t.Errorf("Decrypt of nothing = %d, %v, %d bytes written", n, err, buf.Len())
	}
}

// decryptAll decrypts enc with every reader of the package and checks
// that they agree with want and wantErr (nil, or a *SegmentError).
func decryptAll(t *testing.T, enc, want []byte, wantErr error, ks ...*[32]byte) {
	t.Helper()
	check := func(what string, got []byte, err error) {
		t.Helper()
		if wantErr == nil {
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		} else {
			var we *SegmentError
			errors.As(wantErr, &we)
			wantSegmentError(t, err, we.Index, we.Err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: got %d bytes; want %d", what, len(got), len(want))
		}
	}
	for _, step := range []int{512, 65537} {
		r, _ := NewReader(bytes.NewReader(enc), keys(ks...))
		got, err := readChunks(r, step)
		check(fmt.Sprintf("Reader, step %d", step), got, err)
	}
	r, _ := NewReader(bytes.NewReader(enc), keys(ks...))
	var buf bytes.Buffer
	_, err := r.WriteTo(&buf)
	check("Reader.WriteTo", buf.Bytes(), err)
	for _, jobs := range []int{1, 2, 4} {
		var buf bytes.Buffer
		n, err := Decrypt(&buf, bytes.NewReader(enc), keys(ks...), jobs)
		check(fmt.Sprintf("Decrypt, jobs %d", jobs), buf.Bytes(), err)
		if n != int64(buf.Len()) {
			t.Fatalf("Decrypt returned %d; wrote %d", n, buf.Len())
		}
	}
	ra, err := NewReaderAt(bytes.NewReader(enc), int64(len(enc)), keys(ks...))
	if err != nil {
		var se *SegmentError
		if errors.As(err, &se) && (errors.Is(wantErr, ErrTruncated) ||
			errors.Is(wantErr, ErrAuth) && len(enc)%EncryptedSegmentSize == Overhead) {
			// The size alone shows the truncation, or the trailing empty
			// segment is checked at once.
			check("NewReaderAt", want, err)
			return
		}
		t.Fatalf("NewReaderAt: %v", err)
	}
	if ra.Size() == 0 {
		check("ReaderAt", nil, nil)
		return
	}
	got := make([]byte, ra.Size())
	n, err := ra.ReadAt(got, 0)
	check("ReaderAt", got[:n], err)
}

func TestTrailingEmptySegment(t *testing.T) {
	// Segment boundaries are fixed, so an empty segment can only follow
	// full ones.
	for _, n := range []int{0, 65536, 2 * 65536} {
		pt := plaintext(n)
		enc := append(sealBody(t, keyA, pt), sealSegment(t, keyA, nil)...)
		decryptAll(t, enc, pt, nil, keyA)
	}
	// A 28-byte segment that does not authenticate is not empty, it is bad.
	enc := append(sealBody(t, keyA, plaintext(65536)), sealSegment(t, keyB, nil)...)
	decryptAll(t, enc, plaintext(65536), &SegmentError{Index: 1, Err: ErrAuth}, keyA)
}

func TestTamper(t *testing.T) {
	pt := plaintext(2*65536 + 500)
	enc := sealBody(t, keyA, pt)
	for k := range 3 {
		start := k * EncryptedSegmentSize
		end := min(start+EncryptedSegmentSize, len(enc))
		for _, field := range []struct {
			name string
			off  int
		}{{"nonce", start + 5}, {"ciphertext", start + NonceSize + 300}, {"tag", end - 3}} {
			t.Run(fmt.Sprintf("segment %d %s", k, field.name), func(t *testing.T) {
				bad := bytes.Clone(enc)
				bad[field.off] ^= 0x10
				decryptAll(t, bad, pt[:k*SegmentSize], &SegmentError{Index: int64(k), Err: ErrAuth}, keyA)
			})
		}
	}
}

func TestTruncated(t *testing.T) {
	pt := plaintext(3 * 65536)
	enc := sealBody(t, keyA, pt)
	for k := range 3 {
		for _, rest := range []int{1, 5, 11, 27} {
			cut := enc[:k*EncryptedSegmentSize+rest]
			decryptAll(t, cut, pt[:k*SegmentSize], &SegmentError{Index: int64(k), Err: ErrTruncated}, keyA)
		}
		// Cut after the overhead: indistinguishable from a forged short
		// segment.
		for _, rest := range []int{28, 29, 1000, EncryptedSegmentSize - 1} {
			cut := enc[:k*EncryptedSegmentSize+rest]
			decryptAll(t, cut, pt[:k*SegmentSize], &SegmentError{Index: int64(k), Err: ErrAuth}, keyA)
		}
	}
	// A ReaderAt over a source shorter than the size it was given.
	ra, _ := NewReaderAt(bytes.NewReader(enc[:2*65564+100]), int64(len(enc)), keys(keyA))
	buf := make([]byte, 10)
	if _, err := ra.ReadAt(buf, 65536+5); err != nil {
		t.Fatalf("ReadAt in a present segment: %v", err)
	}
	_, err := ra.ReadAt(buf, 2*65536+5)
	wantSegmentError(t, err, 2, ErrTruncated)
	n, err := ra.ReadAt(buf, 2*65536-4)
	wantSegmentError(t, err, 2, ErrTruncated)
	if n != 4 || !bytes.Equal(buf[:4], pt[2*65536-4:2*65536]) {
		t.Errorf("ReadAt across the cut = %d", n)
	}
}

func TestMultipleKeys(t *testing.T) {
	pt := plaintext(3*65536 + 700)
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, keyA)
	w.Write(pt[:2*SegmentSize]) // full segments are written at once
	w, _ = NewWriter(&buf, keyB)
	w.Write(pt[2*SegmentSize:])
	w.Close()
	enc := buf.Bytes()
	decryptAll(t, enc, pt, nil, keyA, keyB)
	decryptAll(t, enc, pt, nil, keyB, keyA)
	decryptAll(t, enc, pt, nil, keyA, keyA, keyB)
	decryptAll(t, enc, pt[:2*SegmentSize], &SegmentError{Index: 2, Err: ErrAuth}, keyA)
	decryptAll(t, enc, pt[:0], &SegmentError{Index: 0, Err: ErrAuth}, keyB)
}

func TestReaderAtRandom(t *testing.T) {
	pt := plaintext(5*65536 + 1234)
	enc := sealBody(t, keyA, pt)
	ra, err := NewReaderAt(bytes.NewReader(enc), int64(len(enc)), keys(keyB, keyA))
	if err != nil {
		t.Fatal(err)
	}
	if ra.Size() != int64(len(pt)) {
		t.Fatalf("Size = %d; want %d", ra.Size(), len(pt))
	}
	check := func(rng *mrand.Rand) error {
		off := rng.Int64N(int64(len(pt)) + 100)
		var n int
		switch rng.IntN(3) {
		case 0:
			n = rng.IntN(100)
		case 1:
			n = rng.IntN(3 * SegmentSize)
		default:
			off = off / SegmentSize * SegmentSize
			n = SegmentSize * (1 + rng.IntN(3))
		}
		buf := make([]byte, n)
		got, err := ra.ReadAt(buf, off)
		want := 0
		if off < int64(len(pt)) {
			want = min(n, len(pt)-int(off))
		}
		if got != want {
			return fmt.Errorf("ReadAt(%d bytes, %d) = %d, %v; want %d", n, off, got, err, want)
		}
		if got < n && err != io.EOF {
			return fmt.Errorf("ReadAt(%d bytes, %d) = %d, %v; want io.EOF", n, off, got, err)
		}
		if got == n && err != nil {
			return fmt.Errorf("ReadAt(%d bytes, %d) = %d, %v", n, off, got, err)
		}
		if !bytes.Equal(buf[:got], pt[min(off, int64(len(pt))):][:got]) {
			return fmt.Errorf("ReadAt(%d bytes, %d): wrong bytes", n, off)
		}
		return nil
	}
	rng := mrand.New(mrand.NewPCG(1, 2))
	for range 300 {
		if err := check(rng); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ra.ReadAt(make([]byte, 1), -1); err == nil {
		t.Error("ReadAt at a negative offset succeeded")
	}

	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			rng := mrand.New(mrand.NewPCG(uint64(g), 7))
			for range 50 {
				if err := check(rng); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestEngine(t *testing.T) {
	sizes := []int{0, 1, 65535, 65536, 65537, 1<<20 - 1, 1 << 20, 1<<20 + 1, 5<<20 + 123}
	for _, n := range sizes {
		pt := plaintext(n)
		seq := writeChunks(t, keyA, pt, 65537)
		for _, jobs := range []int{0, 1, 2, 4} {
			var enc bytes.Buffer
			m, err := Encrypt(&enc, bytes.NewReader(pt), keyA, jobs)
			if err != nil || m != int64(n) {
				t.Fatalf("Encrypt(%d bytes, jobs %d) = %d, %v", n, jobs, m, err)
			}
			if int64(enc.Len()) != EncryptedSize(int64(n)) {
				t.Fatalf("Encrypt(%d bytes) wrote %d bytes", n, enc.Len())
			}
			// The engine's output decrypts sequentially and by the
			// reference.
			r, _ := NewReader(&enc, keys(keyA))
			if got, err := io.ReadAll(r); err != nil || !bytes.Equal(got, pt) {
				t.Fatalf("Reader on Encrypt output (%d bytes, jobs %d): %v", n, jobs, err)
			}
			// The Writer's output decrypts in parallel, identically.
			var out bytes.Buffer
			m, err = Decrypt(&out, bytes.NewReader(seq), keys(keyA), jobs)
			if err != nil || m != int64(n) || !bytes.Equal(out.Bytes(), pt) {
				t.Fatalf("Decrypt(%d bytes, jobs %d) = %d, %v", n, jobs, m, err)
			}
		}
	}
}

func TestEngineBadSegment(t *testing.T) {
	const segments = 40
	pt := plaintext(segments*SegmentSize - 10)
	enc := sealBody(t, keyA, pt)
	for _, k := range []int{0, 1, 3, 4, 17, 20, 39} {
		bad := bytes.Clone(enc)
		bad[k*EncryptedSegmentSize+100] ^= 1
		for _, jobs := range []int{1, 2, 4} {
			var out bytes.Buffer
			n, err := Decrypt(&out, bytes.NewReader(bad), keys(keyA), jobs)
			wantSegmentError(t, err, int64(k), ErrAuth)
			if n != int64(k)*SegmentSize || !bytes.Equal(out.Bytes(), pt[:k*SegmentSize]) {
				t.Fatalf("segment %d bad, jobs %d: wrote %d bytes, returned %d; want %d",
					k, jobs, out.Len(), n, k*SegmentSize)
			}
		}
	}
}

func TestEngineIOErrors(t *testing.T) {
	pt := plaintext(10<<20 + 5)
	enc := sealBody(t, keyA, pt)
	errBroken := errors.New("broken")
	before := runtime.NumGoroutine()
	for _, jobs := range []int{1, 2, 4} {
		for _, limit := range []int{0, 100, 1 << 20, 3<<20 + 7} {
			_, err := Encrypt(&failWriter{n: limit, err: errBroken}, bytes.NewReader(pt), keyA, jobs)
			if !errors.Is(err, errBroken) {
				t.Errorf("Encrypt to a failing writer = %v", err)
			}
			_, err = Decrypt(&failWriter{n: limit, err: errBroken}, bytes.NewReader(enc), keys(keyA), jobs)
			if !errors.Is(err, errBroken) {
				t.Errorf("Decrypt to a failing writer = %v", err)
			}
			var c counter
			n, err := Encrypt(&c, iotest.TimeoutReader(bytes.NewReader(pt[:limit+3<<20])), keyA, jobs)
			if !errors.Is(err, iotest.ErrTimeout) {
				t.Errorf("Encrypt from a failing reader = %v", err)
			}
			if int64(c.n) != EncryptedSize(n) {
				t.Errorf("Encrypt returned %d; wrote %d bytes", n, c.n)
			}
			c = counter{}
			n, err = Decrypt(&c, iotest.TimeoutReader(bytes.NewReader(enc[:limit+3<<20])), keys(keyA), jobs)
			if !errors.Is(err, iotest.ErrTimeout) {
				t.Errorf("Decrypt from a failing reader = %v", err)
			}
			if int64(c.n) != n {
				t.Errorf("Decrypt returned %d; wrote %d bytes", n, c.n)
			}
		}
	}
	checkNoLeak(t, before)

	// A bad segment, a truncated body: no goroutine left behind either.
	bad := bytes.Clone(enc)
	bad[100*EncryptedSegmentSize+7] ^= 1
	if _, err := Decrypt(io.Discard, bytes.NewReader(bad), keys(keyA), 4); !errors.Is(err, ErrAuth) {
		t.Errorf("Decrypt = %v", err)
	}
	if _, err := Decrypt(io.Discard, bytes.NewReader(enc[:100*EncryptedSegmentSize+20]), keys(keyA), 4); !errors.Is(err, ErrTruncated) {
		t.Errorf("Decrypt = %v", err)
	}
	checkNoLeak(t, before)
}

func TestSegmentErrorMessage(t *testing.T) {
	for _, tc := range []struct {
		err  *SegmentError
		want string
	}{
		{&SegmentError{Index: 3, Err: ErrAuth}, "segment 3 failed authentication"},
		{&SegmentError{Index: 0, Err: ErrTruncated}, "segment 0 is truncated"},
		{&SegmentError{Index: 7, Err: io.ErrUnexpectedEOF}, "segment 7: unexpected EOF"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("%#v: %q, want %q", tc.err, got, tc.want)
		}
	}
}

// TestDecryptSerial: DecryptSerial writes what Decrypt writes, fails as
// it fails, and does it all in the calling goroutine.
func TestDecryptSerial(t *testing.T) {
	for _, n := range []int{0, 1, 65536, 1<<20 - 1, 1 << 20, 1<<20 + 1, 5<<20 + 123} {
		pt := plaintext(n)
		seq := writeChunks(t, keyA, pt, 65537)
		before := runtime.NumGoroutine()
		w := &goroutineWriter{}
		m, err := DecryptSerial(w, bytes.NewReader(seq), keys(keyA))
		if err != nil || m != int64(n) || !bytes.Equal(w.buf.Bytes(), pt) {
			t.Fatalf("DecryptSerial(%d bytes) = %d, %v", n, m, err)
		}
		if w.most > before {
			t.Errorf("DecryptSerial(%d bytes): %d goroutines while writing, %d before", n, w.most, before)
		}
	}

	const segments = 40
	pt := plaintext(segments*SegmentSize - 10)
	enc := sealBody(t, keyA, pt)
	for _, k := range []int{0, 7, 8, 9, 39} {
		bad := bytes.Clone(enc)
		bad[k*EncryptedSegmentSize+100] ^= 1
		var out bytes.Buffer
		n, err := DecryptSerial(&out, bytes.NewReader(bad), keys(keyA))
		wantSegmentError(t, err, int64(k), ErrAuth)
		if n != int64(k)*SegmentSize || !bytes.Equal(out.Bytes(), pt[:k*SegmentSize]) {
			t.Fatalf("segment %d bad: wrote %d bytes, returned %d; want %d", k, out.Len(), n, k*SegmentSize)
		}
	}
	if _, err := DecryptSerial(io.Discard, bytes.NewReader(enc[:20*EncryptedSegmentSize+20]), keys(keyA)); !errors.Is(err, ErrTruncated) {
		t.Errorf("DecryptSerial of a truncated body = %v", err)
	}
	errBroken := errors.New("broken")
	if _, err := DecryptSerial(&failWriter{n: 1 << 20, err: errBroken}, bytes.NewReader(enc), keys(keyA)); !errors.Is(err, errBroken) {
		t.Errorf("DecryptSerial to a failing writer = %v", err)
	}
	var c counter
	n, err := DecryptSerial(&c, iotest.TimeoutReader(bytes.NewReader(enc)), keys(keyA))
	if !errors.Is(err, iotest.ErrTimeout) || int64(c.n) != n {
		t.Errorf("DecryptSerial from a failing reader = %d, %v; wrote %d", n, err, c.n)
	}
}

// goroutineWriter records the most goroutines seen while it is written.
type goroutineWriter struct {
	buf  bytes.Buffer
	most int
}

func (w *goroutineWriter) Write(p []byte) (int, error) {
	w.most = max(w.most, runtime.NumGoroutine())
	return w.buf.Write(p)
}

// TestCountsAtTheEdges: the segment counts do not overflow near the
// largest int64, and a length of 0 or less has no segment.
func TestCountsAtTheEdges(t *testing.T) {
	const maxInt64 = 1<<63 - 1
	for _, c := range []struct{ n, plain, stored int64 }{
		{-1 << 40, 0, 0}, {0, 0, 0}, {1, 1, 1},
		{SegmentSize, 1, 1}, {SegmentSize + 1, 2, 1}, {EncryptedSegmentSize + 1, 2, 2},
		{maxInt64, maxInt64/SegmentSize + 1, maxInt64/EncryptedSegmentSize + 1},
	} {
		if got := SegmentCount(c.n); got != c.plain {
			t.Errorf("SegmentCount(%d) = %d, want %d", c.n, got, c.plain)
		}
		if got := StoredSegments(c.n); got != c.stored {
			t.Errorf("StoredSegments(%d) = %d, want %d", c.n, got, c.stored)
		}
	}
}
