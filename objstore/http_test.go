package objstore_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
	"github.com/c4gh-go/crypt4gh/objstore"
)

// webFile is a file served by Go's own file server code (ServeContent:
// ranges, ETag, If-Match, If-Unmodified-Since), that a test may replace.
type webFile struct {
	mu      sync.Mutex
	data    []byte
	etag    string // "" for none
	modtime time.Time
	fail    atomic.Int32 // answer this many requests with 503
	noRange bool
}

func (f *webFile) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.fail.Add(-1) >= 0 {
		http.Error(w, "busy", http.StatusServiceUnavailable)
		return
	}
	f.mu.Lock()
	data, etag, mod, noRange := f.data, f.etag, f.modtime, f.noRange
	f.mu.Unlock()
	if r.URL.Query().Get("token") != "good" {
		http.Error(w, "expired", http.StatusForbidden)
		return
	}
	if noRange {
		w.Write(data)
		return
	}
	if etag != "" {
		w.Header().Set("ETag", etag)
	}
	http.ServeContent(w, r, "f.c4gh", mod, bytes.NewReader(data))
}

func (f *webFile) replace(data []byte, etag string) {
	f.mu.Lock()
	f.data, f.etag, f.modtime = data, etag, f.modtime.Add(time.Hour)
	f.mu.Unlock()
}

func TestOpenURL(t *testing.T) {
	ctx := context.Background()
	data := random(3*MiB+5, 20)
	f := &webFile{data: data, etag: `"v1"`, modtime: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
	srv := httptest.NewServer(f)
	defer srv.Close()
	url := srv.URL + "/f.c4gh?token=good"
	cfg := objstore.Config{Attempts: 4}

	o, err := objstore.OpenURL(ctx, url, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if o.Size() != int64(len(data)) || o.ETag() != `"v1"` {
		t.Fatalf("Size %d, ETag %q", o.Size(), o.ETag())
	}
	f.fail.Store(2) // retried
	got := streamed(t, o, 0, -1, &objstore.ReaderOptions{ChunkSize: MiB, Concurrency: 2})
	same(t, "Reader", got, data)
	p := make([]byte, 100)
	if _, err := o.ReadAt(p, 2*MiB); err != nil {
		t.Fatal(err)
	}
	same(t, "ReadAt", p, data[2*MiB:2*MiB+100])

	// Replaced, with a new ETag: If-Match fails.
	f.replace(random(len(data), 21), `"v2"`)
	_, err = o.ReadAt(p, 1000)
	isKind(t, err, objstore.ErrChanged, errkind.Other)
	if strings.Contains(err.Error(), "token=good") {
		t.Errorf("error shows the query: %v", err)
	}

	// Without an ETag the version is its Last-Modified time.
	f.replace(data, "")
	o, err = objstore.OpenURL(ctx, url, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.ReadAt(p, 10); err != nil {
		t.Fatal(err)
	}
	f.replace(data, "")
	_, err = o.ReadAt(p, 2*MiB)
	isKind(t, err, objstore.ErrChanged, errkind.Other)

	// Refused: Key kind, with a hint.
	_, err = objstore.OpenURL(ctx, srv.URL+"/f.c4gh?token=old", cfg)
	isKind(t, err, objstore.ErrAccessDenied, errkind.Key)
	if hint(err) == "" {
		t.Errorf("no hint for %v", err)
	}

	// Empty.
	f.replace(nil, `"empty"`)
	o, err = objstore.OpenURL(ctx, url, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if o.Size() != 0 {
		t.Fatalf("empty: size %d", o.Size())
	}
	if n, err := o.ReadAt(p, 0); n != 0 || err != io.EOF {
		t.Fatalf("empty: ReadAt = %d, %v", n, err)
	}

	// No ranges.
	f.replace(data, "")
	f.mu.Lock()
	f.noRange = true
	f.mu.Unlock()
	_, err = objstore.OpenURL(ctx, url, cfg)
	isKind(t, err, objstore.ErrNoRange, errkind.Usage)

	// Not a web URL.
	_, err = objstore.OpenURL(ctx, "s3://bucket/key", cfg)
	isKind(t, err, objstore.ErrInvalidURL, errkind.Usage)
}

func TestPresignedURL(t *testing.T) {
	t.Parallel()
	e := newEnv(t, time.Minute)
	ctx := context.Background()
	data := random(2*MiB+1, 22)
	e.put(t, "shared.c4gh", data)
	req, err := s3.NewPresignClient(e.sdk).PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("shared.c4gh")},
		s3.WithPresignExpires(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	o, err := objstore.OpenURL(ctx, req.URL, objstore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	same(t, "presigned", streamed(t, o, 1, -1, &objstore.ReaderOptions{ChunkSize: 300000}), data[1:])
	if strings.Contains(o.Location().String(), "Signature") {
		t.Errorf("location shows the signature: %s", o.Location())
	}
	// A presigned source cannot be copied server-side: Compose fetches it.
	if err := e.c.Compose(ctx, bucket, "copy", []objstore.Part{objstore.Range(o, 0, o.Size())}, nil); err != nil {
		t.Fatal(err)
	}
	same(t, "composed from a URL", e.get(t, "copy"), data)
}

// TestRedirectRefused: a redirect to file://, ftp:// or plain http off
// loopback is refused at once, with its own words, not retried; one to
// https would be followed, and one to http on loopback is.
func TestRedirectRefused(t *testing.T) {
	var hits atomic.Int64
	data := random(1000, 21)
	target := httptest.NewServer(&webFile{data: data, etag: `"v"`})
	defer target.Close()
	redirect := ""
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Redirect(w, r, redirect, http.StatusFound)
	}))
	defer srv.Close()
	for _, to := range []string{"file:///etc/passwd", "ftp://127.0.0.1/f", "http://192.0.2.1/f"} {
		redirect = to
		hits.Store(0)
		start := time.Now()
		_, err := objstore.OpenURL(context.Background(), srv.URL+"/f", objstore.Config{Attempts: 4})
		scheme, _, _ := strings.Cut(to, ":")
		if err == nil || !strings.Contains(err.Error(), "redirected to a "+scheme+":// URL, which is not followed") {
			t.Errorf("to %s: %v", to, err)
		}
		if hits.Load() != 1 || time.Since(start) > 5*time.Second {
			t.Errorf("to %s: %d requests in %v, want 1 at once", to, hits.Load(), time.Since(start))
		}
	}
	redirect = target.URL + "/f?token=good"
	o, err := objstore.OpenURL(context.Background(), srv.URL+"/f", objstore.Config{Attempts: 4})
	if err != nil || o.Size() != int64(len(data)) {
		t.Fatalf("to http on loopback: %v", err)
	}
}
