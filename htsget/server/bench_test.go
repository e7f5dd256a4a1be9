package server

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/c4gh-go/crypt4gh/htsget"
	"github.com/c4gh-go/crypt4gh/keys"
)

// BenchmarkTicket times a Crypt4GH ticket for a region of the BAM in
// the folder $BENCH_SERVE_DIR (src/reads.bam.c4gh and its index, for
// me.sec there), as scripts/bench-serve.sh makes it.
func BenchmarkTicket(b *testing.B) {
	dir := os.Getenv("BENCH_SERVE_DIR")
	if dir == "" {
		b.Skip("BENCH_SERVE_DIR names no folder")
	}
	data, err := os.ReadFile(filepath.Join(dir, "me.sec"))
	if err != nil {
		b.Fatal(err)
	}
	sk, err := keys.ParseSecretKey(data, nil)
	if err != nil {
		b.Fatal(err)
	}
	src, err := Dir(filepath.Join(dir, "src"))
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(Config{Source: src, Key: &sk})
	if err != nil {
		b.Fatal(err)
	}
	pk := sk.Public()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodGet, "/reads/reads?referenceName=chr1&start=50000000&end=50797107&encryptionScheme=C4GH", nil)
		req.Header.Set(htsget.PublicKeyHeader, htsget.EncodePublicKey(pk))
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatal(w.Code, w.Body)
		}
	}
}
