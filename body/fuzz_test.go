package body

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// FuzzReader decrypts arbitrary bodies under a fixed key with every reader
// of the package: none may panic, and each must return exactly what a
// segment-by-segment decryption gives, with the same error.
func FuzzReader(f *testing.F) {
	for _, n := range []int{0, 1, 100, 65536, 65537} {
		f.Add(sealBody(f, keyA, plaintext(n)))
	}
	f.Add(append(sealBody(f, keyA, plaintext(65536)), sealSegment(f, keyA, nil)...))
	f.Add(sealSegment(f, keyA, nil))
	f.Add(make([]byte, 27))
	f.Fuzz(func(t *testing.T, data []byte) {
		want, wantErr := refDecrypt(data, keyA)
		same := func(what string, got []byte, err error) {
			t.Helper()
			if !bytes.Equal(got, want) {
				t.Fatalf("%s: %d bytes; want %d", what, len(got), len(want))
			}
			if (err == nil) != (wantErr == nil) {
				t.Fatalf("%s: %v; want %v", what, err, wantErr)
			}
			if err != nil {
				var se, we *SegmentError
				if !errors.As(err, &se) || !errors.As(wantErr, &we) || se.Index != we.Index || se.Err != we.Err {
					t.Fatalf("%s: %v; want %v", what, err, wantErr)
				}
			}
		}

		r, _ := NewReader(bytes.NewReader(data), keys(keyA))
		got, err := io.ReadAll(r)
		same("Reader", got, err)

		var buf bytes.Buffer
		_, err = Decrypt(&buf, bytes.NewReader(data), keys(keyA), 2)
		same("Decrypt", buf.Bytes(), err)

		ra, err := NewReaderAt(bytes.NewReader(data), int64(len(data)), keys(keyA))
		if err != nil {
			if wantErr == nil {
				t.Fatalf("NewReaderAt: %v", err)
			}
			return
		}
		got = make([]byte, ra.Size())
		n, err := ra.ReadAt(got, 0)
		if err == nil && (wantErr != nil || !bytes.Equal(got, want)) {
			t.Fatalf("ReaderAt returned %d bytes without error; reference: %v", n, wantErr)
		}
		if !bytes.Equal(got[:n], want[:min(n, len(want))]) {
			t.Fatal("ReaderAt returned bytes that differ from the reference")
		}
	})
}
