package client

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/c4gh-go/crypt4gh/htsget"
)

// BenchmarkParts reads 64 MiB over loopback as a ticket of 16 ranged
// parts through a Reader, and, for the ratio, as one plain GET.
func BenchmarkParts(b *testing.B) {
	data := make([]byte, 64<<20)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "x", time.Time{}, bytes.NewReader(data))
	}))
	defer ts.Close()
	tk := &htsget.Ticket{}
	part := int64(len(data)) / 16
	for i := int64(0); i < 16; i++ {
		tk.URLs = append(tk.URLs, htsget.URL{URL: ts.URL + "/x", Headers: map[string]string{
			"Range": "bytes=" + strconv.FormatInt(i*part, 10) + "-" + strconv.FormatInt((i+1)*part-1, 10)}})
	}
	b.Run("ticket", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			r, err := (&Client{}).Open(context.Background(), tk, ts.URL)
			if err != nil {
				b.Fatal(err)
			}
			if n, err := io.Copy(io.Discard, r); err != nil || n != int64(len(data)) {
				b.Fatal(n, err)
			}
			r.Close()
		}
	})
	b.Run("one-GET", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			resp, err := http.Get(ts.URL + "/x")
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
}
