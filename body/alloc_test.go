package body

import (
	"bytes"
	"io"
	"testing"
)

// TestAllocsPerSegment checks that the streams and the engine allocate per
// call, not per segment: twice the segments, no more allocations.
func TestAllocsPerSegment(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates and drops sync.Pool items")
	}
	const small = nonceBatch + 1 // the Writer refills its nonces in between
	type run func(pt, enc []byte)
	cases := []struct {
		name string
		f    run
	}{
		{"Writer", func(pt, _ []byte) {
			w, _ := NewWriter(io.Discard, keyA)
			w.Write(pt)
			w.Close()
		}},
		{"Writer.ReadFrom", func(pt, _ []byte) {
			w, _ := NewWriter(io.Discard, keyA)
			w.ReadFrom(bytes.NewReader(pt))
			w.Close()
		}},
		{"Reader", func(_, enc []byte) {
			r, _ := NewReader(bytes.NewReader(enc), keys(keyA))
			var buf [4096]byte
			for {
				if _, err := r.Read(buf[:]); err != nil {
					break
				}
			}
		}},
		{"Reader two keys", func(_, enc []byte) {
			r, _ := NewReader(bytes.NewReader(enc), keys(keyB, keyA))
			r.WriteTo(io.Discard)
		}},
		{"ReaderAt", func(_, enc []byte) {
			ra, _ := NewReaderAt(bytes.NewReader(enc), int64(len(enc)), keys(keyA))
			var buf [SegmentSize + 100]byte
			for off := int64(0); off < ra.Size(); off += int64(len(buf)) {
				ra.ReadAt(buf[:], off)
			}
		}},
		{"Encrypt", func(pt, _ []byte) { Encrypt(io.Discard, bytes.NewReader(pt), keyA, 2) }},
		{"Decrypt", func(_, enc []byte) { Decrypt(io.Discard, bytes.NewReader(enc), keys(keyA), 2) }},
	}
	ptN, ptM := plaintext(small*SegmentSize), plaintext(2*small*SegmentSize)
	encN, encM := sealBody(t, keyA, ptN), sealBody(t, keyA, ptM)
	for _, c := range cases {
		n := testing.AllocsPerRun(3, func() { c.f(ptN, encN) })
		m := testing.AllocsPerRun(3, func() { c.f(ptM, encM) })
		t.Logf("%s: %v allocations for %d segments, %v for %d", c.name, n, small, m, 2*small)
		if m > n {
			t.Errorf("%s: %v allocations for %d segments, %v for %d", c.name, n, small, m, 2*small)
		}
	}
}
