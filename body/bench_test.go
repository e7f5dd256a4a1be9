package body

import (
	"bytes"
	"crypto/cipher"
	"fmt"
	"io"
	"testing"

	"golang.org/x/crypto/chacha20poly1305"
)

var benchSizes = []int{1 << 10, 64 << 10, 1 << 20, 64 << 20}

func sizeName(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%dMiB", n>>20)
	default:
		return fmt.Sprintf("%dKiB", n>>10)
	}
}

func BenchmarkEncrypt(b *testing.B) {
	for _, n := range benchSizes {
		pt := plaintext(n)
		b.Run("Writer/"+sizeName(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				w, _ := NewWriter(io.Discard, keyA)
				w.Write(pt)
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("Engine/"+sizeName(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			b.ReportAllocs()
			var src bytes.Reader
			for b.Loop() {
				src.Reset(pt)
				if _, err := Encrypt(io.Discard, &src, keyA, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDecrypt(b *testing.B) {
	for _, n := range benchSizes {
		enc := sealBody(b, keyA, plaintext(n))
		b.Run("Reader/"+sizeName(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			b.ReportAllocs()
			var src bytes.Reader
			for b.Loop() {
				src.Reset(enc)
				r, _ := NewReader(&src, keys(keyA))
				if _, err := io.Copy(io.Discard, r); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("Engine/"+sizeName(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			b.ReportAllocs()
			var src bytes.Reader
			for b.Loop() {
				src.Reset(enc)
				if _, err := Decrypt(io.Discard, &src, keys(keyA), 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSealLoop is the ceiling: sealing 64 KiB segments in place with
// nothing else, on one core and on all of them.
func BenchmarkSealLoop(b *testing.B) {
	aead, _ := chacha20poly1305.New(keyA[:])
	seal := func(aead cipher.AEAD, buf []byte) {
		aead.Seal(buf[NonceSize:NonceSize], buf[:NonceSize], buf[NonceSize:NonceSize+SegmentSize], nil)
	}
	b.Run("Single", func(b *testing.B) {
		b.SetBytes(SegmentSize)
		b.ReportAllocs()
		buf := make([]byte, EncryptedSegmentSize)
		for b.Loop() {
			seal(aead, buf)
		}
	})
	b.Run("Parallel", func(b *testing.B) {
		b.SetBytes(SegmentSize)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			buf := make([]byte, EncryptedSegmentSize)
			for pb.Next() {
				seal(aead, buf)
			}
		})
	})
}
