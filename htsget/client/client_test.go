package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/c4gh-go/crypt4gh/htsget"
	"github.com/c4gh-go/crypt4gh/internal/errkind"
	"github.com/c4gh-go/crypt4gh/internal/tlserr"
	"github.com/c4gh-go/crypt4gh/region"
)

func TestTicketRequest(t *testing.T) {
	one := func(s string) []htsget.Region {
		g, err := region.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return []htsget.Region{htsget.FromRegion(g)}
	}
	two := append(one("chr1:1-10"), one("chr2")...)
	for _, c := range []struct {
		url    string
		req    htsget.Request
		method string
		query  url.Values
		body   string
		err    string
	}{
		{url: "https://h/reads/A", req: htsget.Request{EncryptionScheme: "C4GH"}, method: "GET",
			query: url.Values{"encryptionScheme": {"C4GH"}}},
		{url: "https://h/reads/A?referenceName=chr1&start=5#frag", req: htsget.Request{EncryptionScheme: "C4GH", Format: "BAM"}, method: "GET",
			query: url.Values{"encryptionScheme": {"C4GH"}, "referenceName": {"chr1"}, "start": {"5"}, "format": {"BAM"}}},
		{url: "https://h/reads/A?encryptionScheme=crypt4gh", req: htsget.Request{EncryptionScheme: "C4GH", Regions: one("chr1:2-3")}, method: "GET",
			query: url.Values{"encryptionScheme": {"crypt4gh"}, "referenceName": {"chr1"}, "start": {"1"}, "end": {"3"}}},
		{url: "https://h/reads/A?format=CRAM", req: htsget.Request{Regions: two}, method: "POST",
			query: url.Values{}, body: `{"format":"CRAM","regions":[{"referenceName":"chr1","end":10},{"referenceName":"chr2"}]}`},
		{url: "http://h/variants/A", req: htsget.Request{Regions: two, EncryptionScheme: "C4GH"}, method: "POST",
			query: url.Values{"encryptionScheme": {"C4GH"}}, body: `{"encryptionScheme":"C4GH","regions":[{"referenceName":"chr1","end":10},{"referenceName":"chr2"}]}`},
		{url: "https://h/reads/A?referenceName=chr1", req: htsget.Request{Regions: one("chr2")}, err: "names a region"},
		{url: "https://h/reads/A?referenceName=chr1", req: htsget.Request{Regions: two}, err: "names a region"},
		{url: "https://h/reads/A?format=BAM", req: htsget.Request{Format: "CRAM"}, err: "format=BAM"},
		{url: "https://h/reads/A?encryptionScheme=C4GH", req: htsget.Request{}, err: "plaintext"},
		{url: "https://h/reads/A?encryptionScheme=rot13", req: htsget.Request{EncryptionScheme: "C4GH"}, err: "not C4GH"},
		{url: "file:///reads/A", err: "not an http"},
		{url: "https:///reads/A", err: "not an http"},
		{url: "://x", err: "invalid"},
	} {
		method, u, body, err := ticketRequest(c.url, &c.req)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || errkind.Of(err) != errkind.Usage {
				t.Errorf("%s: %v, want %q", c.url, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.url, err)
			continue
		}
		if method != c.method || u.Query().Encode() != c.query.Encode() || string(body) != c.body || u.Fragment != "" {
			t.Errorf("%s: %s %s %s", c.url, method, u, body)
		}
	}
}

// server serves n parts of size bytes each at /p/I, counting the
// requests that began.
type server struct {
	*httptest.Server
	data    []byte
	started atomic.Int32
	release chan struct{} // when not nil, each part waits for it after its first bytes
}

func newServer(t *testing.T, n, size int) *server {
	s := &server{data: make([]byte, n*size)}
	rand.NewChaCha8([32]byte{1}).Read(s.data)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.started.Add(1)
		i, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/p/"))
		b := s.data[i*size : (i+1)*size]
		if s.release != nil {
			w.Write(b[:1])
			w.(http.Flusher).Flush()
			<-s.release
			b = b[1:]
		}
		w.Write(b)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) ticket(n int) *htsget.Ticket {
	t := &htsget.Ticket{}
	for i := range n {
		t.URLs = append(t.URLs, htsget.URL{URL: s.URL + "/p/" + strconv.Itoa(i)})
	}
	return t
}

// TestWindow: parts come in order; only Parallel of them are fetched
// ahead of the reader.
func TestWindow(t *testing.T) {
	s := newServer(t, 20, 100000)
	s.release = make(chan struct{})
	c := &Client{Parallel: 3}
	r, err := c.Open(context.Background(), s.ticket(20), s.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var one [1]byte
	if _, err := io.ReadFull(r, one[:]); err != nil {
		t.Fatal(err)
	}
	// Wait for the three parts of the window to start (a loaded machine
	// may take its time), then a moment more for a fourth that would
	// start too early.
	for deadline := time.Now().Add(10 * time.Second); s.started.Load() < 3 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	if n := s.started.Load(); n != 3 {
		t.Errorf("%d parts started, want 3", n)
	}
	close(s.release)
	rest, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if got := append(one[:], rest...); !bytes.Equal(got, s.data) {
		t.Errorf("%d bytes, not the parts in order", len(got))
	}
}

// TestCloseEarly: Close while parts are in flight ends their fetches.
func TestCloseEarly(t *testing.T) {
	s := newServer(t, 8, 1<<20)
	r, err := (&Client{}).Open(context.Background(), s.ticket(8), s.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(io.Discard, r, 100); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { r.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end the fetches")
	}
	if _, err := r.Read(make([]byte, 1)); err == nil {
		t.Error("read after Close")
	}
}

// TestRetryKinds: 4xx is final at once; 5xx and network errors are
// tried Attempts times and end as errkind.Other.
func TestRetryKinds(t *testing.T) {
	var hits, status atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		htsget.WriteError(w, &htsget.Error{Status: int(status.Load()), Code: "X", Message: "m"})
	}))
	defer ts.Close()
	c := &Client{Attempts: 3, Backoff: time.Millisecond}
	for _, c2 := range []struct {
		status int
		hits   int32
		kind   errkind.Kind
	}{{500, 3, errkind.Other}, {429, 3, errkind.Other}, {404, 1, errkind.Usage}, {401, 1, errkind.Key}, {403, 1, errkind.Key}} {
		status.Store(int32(c2.status))
		hits.Store(0)
		_, err := c.Ticket(context.Background(), ts.URL+"/reads/x", &htsget.Request{})
		var he *htsget.Error
		if !errors.As(err, &he) || he.Status != c2.status || hits.Load() != c2.hits || errkind.Of(err) != c2.kind {
			t.Errorf("status %d: %v after %d requests, kind %v", c2.status, err, hits.Load(), errkind.Of(err))
		}
	}
}

// TestContentRangeChecked: a 206 for other bytes than asked is refused,
// and the message does not show the URL's query.
func TestContentRangeChecked(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 1000)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Range", "bytes 0-9/10000")
		w.WriteHeader(http.StatusPartialContent)
		w.Write(data[:10])
	}))
	defer ts.Close()
	tk := &htsget.Ticket{URLs: []htsget.URL{{URL: ts.URL + "/x?sig=SECRET", Headers: map[string]string{"Range": "bytes=100-199"}}}}
	r, err := (&Client{Attempts: 2, Backoff: time.Millisecond}).Open(context.Background(), tk, ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = io.ReadAll(r)
	if err == nil || !strings.Contains(err.Error(), "asked for bytes=100-199") || strings.Contains(err.Error(), "SECRET") {
		t.Errorf("got %v", err)
	}
}

func TestOpenRefuses(t *testing.T) {
	for _, u := range []htsget.URL{
		{URL: "data:;base64,%%%"},
		{URL: "http://h/x", Headers: map[string]string{"range": "bytes=5-1"}},
		{URL: "http://h/x", Headers: map[string]string{"Range": "bytes=0-1,5-6"}},
		{URL: "http://h/x", Headers: map[string]string{"Range": "bytes=-5"}},
		{URL: "ftp://h/x"},
	} {
		_, err := (&Client{}).Open(context.Background(), &htsget.Ticket{URLs: []htsget.URL{u}}, "http://h/")
		if errkind.Of(err) != errkind.Data {
			t.Errorf("%+v: %v", u, err)
		}
	}
}

func TestParseRange(t *testing.T) {
	for v, want := range map[string]byteRange{"bytes=0-9": {0, 9}, "Bytes=5-": {5, -1}, " bytes=7-7 ": {7, 7}} {
		if got, ok := parseRange(v); !ok || got != want {
			t.Errorf("%q: %v %v", v, got, ok)
		}
	}
	for _, v := range []string{"", "bytes=", "bytes=-5", "bytes=9-1", "bytes=1-2,4-5", "items=1-2", "bytes=+1-2", "bytes=99999999999999999999-"} {
		if _, ok := parseRange(v); ok {
			t.Errorf("%q accepted", v)
		}
	}
	for v, want := range map[string]contentRange{"bytes 0-9/10": {0, 9, 10}, "bytes 5-6/*": {5, 6, -1}} {
		if got, ok := parseContentRange(v); !ok || got != want {
			t.Errorf("%q: %v %v", v, got, ok)
		}
	}
	for _, v := range []string{"", "bytes */10", "bytes 0-10/10", "bytes 5-4/10", "bytes 1-2"} {
		if _, ok := parseContentRange(v); ok {
			t.Errorf("%q accepted", v)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"": 0, "3": 3 * time.Second, "x": 0, "100000": maxBackoff,
		now.Add(2 * time.Second).Format(http.TimeFormat): 2 * time.Second,
		now.Add(-time.Hour).Format(http.TimeFormat):      0,
	} {
		if got := retryAfter(v, now); got != want {
			t.Errorf("%q: %v, want %v", v, got, want)
		}
	}
}

func TestOriginAndShown(t *testing.T) {
	for a, b := range map[string]string{
		"https://H:443/x": "https://h/y", "http://h/": "http://h:80/z",
	} {
		ua, _ := url.Parse(a)
		ub, _ := url.Parse(b)
		if Origin(ua) != Origin(ub) {
			t.Errorf("%s and %s: %s, %s", a, b, Origin(ua), Origin(ub))
		}
	}
	for _, p := range [][2]string{{"https://h/x", "http://h/x"}, {"https://h/x", "https://h:8443/x"}, {"https://a.h/x", "https://h/x"}} {
		a, b := p[0], p[1]
		ua, _ := url.Parse(a)
		ub, _ := url.Parse(b)
		if Origin(ua) == Origin(ub) {
			t.Errorf("%s and %s share an origin", a, b)
		}
	}
	u, _ := url.Parse("https://user:pw@h/x?X-Amz-Signature=s#f")
	if s := Shown(u); s != "https://h/x" {
		t.Errorf("shown as %s", s)
	}
	if !PlainHTTP("http://example.org/reads/x") || PlainHTTP("http://127.0.0.1:8/x") || PlainHTTP("http://localhost/x") || PlainHTTP("https://example.org/") || PlainHTTP("http://[::1]/") {
		t.Error("PlainHTTP")
	}
}

func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"bytes=0-9", "bytes=5-", "bytes 0-9/10", "bytes 1-2/*", "bytes=1-2,3-4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if r, ok := parseRange(s); ok {
			if r.start < 0 || r.end < -1 || r.end >= 0 && r.end < r.start {
				t.Fatalf("%q: %+v", s, r)
			}
			if r2, ok := parseRange(r.String()); !ok || r2 != r {
				t.Fatalf("%q: %+v does not round-trip", s, r)
			}
		}
		if c, ok := parseContentRange(s); ok && (c.start < 0 || c.end < c.start || c.total >= 0 && c.end >= c.total) {
			t.Fatalf("%q: %+v", s, c)
		}
		retryAfter(s, time.Now())
	})
}

// TestIdleTimeout: an attempt that stalls in the middle of a body is
// ended and the part resumed from where it stopped.
func TestIdleTimeout(t *testing.T) {
	t.Parallel()
	data := bytes.Repeat([]byte("abcdefgh"), 10000)
	var first atomic.Bool
	stop := make(chan struct{})
	defer close(stop)
	var ranges []string
	var mu sync.Mutex
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !first.Swap(true) {
			w.Header().Set("Content-Length", strconv.Itoa(len(data)))
			w.Write(data[:1000])
			w.(http.Flusher).Flush()
			select {
			case <-stop:
			case <-r.Context().Done():
			}
			return
		}
		mu.Lock()
		ranges = append(ranges, r.Header.Get("Range"))
		mu.Unlock()
		http.ServeContent(w, r, "x", time.Time{}, bytes.NewReader(data))
	}))
	defer ts.Close()
	// 1 s, not less: an attempt that a loaded machine leaves waiting a
	// few hundred milliseconds is not a stall (under load, 200 ms
	// resumed the resumed attempt too).
	c := &Client{IdleTimeout: time.Second, Backoff: time.Millisecond}
	r, err := c.Open(context.Background(), &htsget.Ticket{URLs: []htsget.URL{{URL: ts.URL + "/x"}}}, ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("%d bytes, %v", len(got), err)
	}
	// The stall is resumed from the 1,000 bytes received. On a loaded
	// machine a resumed request can itself wait 1 s for its first
	// byte and be resumed again, from where it got to.
	mu.Lock()
	at := 1000
	for i, rg := range ranges {
		var n int
		if _, err := fmt.Sscanf(rg, "bytes=%d-", &n); err != nil || n < at || i == 0 && n != 1000 {
			t.Errorf("resumed with %q", ranges)
			break
		}
		at = n
	}
	if len(ranges) == 0 {
		t.Error("the stalled read was not resumed")
	}
	mu.Unlock()

	// Without attempts left, the stall is the error.
	first.Store(false)
	c.Attempts = 1
	r2, _ := c.Open(context.Background(), &htsget.Ticket{URLs: []htsget.URL{{URL: ts.URL + "/x"}}}, ts.URL)
	defer r2.Close()
	if _, err := io.ReadAll(r2); err == nil || !strings.Contains(err.Error(), "nothing received for 1s") || errkind.Of(err) != errkind.Other {
		t.Errorf("got %v", err)
	}
}

// TestRangeIgnored: a 200 answer to a Range request is read from the
// range's start; one too short for the range is refused, not retried.
func TestRangeIgnored(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 100)
	var hits atomic.Int32
	var short atomic.Bool
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if short.Load() {
			w.Write(data[:50])
			return
		}
		w.Write(data)
	}))
	defer ts.Close()
	tk := &htsget.Ticket{URLs: []htsget.URL{{URL: ts.URL, Headers: map[string]string{"Range": "bytes=100-199"}}}}
	c := &Client{Backoff: time.Millisecond}
	r, _ := c.Open(context.Background(), tk, ts.URL)
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil || !bytes.Equal(got, data[100:200]) {
		t.Fatalf("%q, %v", got, err)
	}
	short.Store(true)
	hits.Store(0)
	r, _ = c.Open(context.Background(), tk, ts.URL)
	defer r.Close()
	if _, err := io.ReadAll(r); err == nil || !strings.Contains(err.Error(), "ignored the Range and sent 50 bytes") || hits.Load() != 1 {
		t.Errorf("%v after %d requests", err, hits.Load())
	}
}

// TestTicketIdleTimeout: a ticket whose body stops coming is given up
// after the idle timeout, as a part is, and tried again.
func TestTicketIdleTimeout(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	stop := make(chan struct{})
	defer close(stop)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Content-Length", "1000")
			w.Write([]byte(`{"htsget":`))
			w.(http.Flusher).Flush()
			select {
			case <-stop:
			case <-r.Context().Done():
			}
			return
		}
		w.Write([]byte(`{"htsget":{"format":"BAM","urls":[{"url":"data:,x"}]}}`))
	}))
	defer ts.Close()
	c := &Client{IdleTimeout: time.Second, Backoff: time.Millisecond} // as in TestIdleTimeout
	tk, err := c.Ticket(context.Background(), ts.URL+"/reads/x", &htsget.Request{})
	// A second request that waits 1 s for its answer on a loaded
	// machine is given up too: at least two requests.
	if err != nil || len(tk.URLs) != 1 || calls.Load() < 2 {
		t.Fatalf("%v after %d requests", err, calls.Load())
	}
	// Without attempts left, the stall is the error.
	calls.Store(0)
	c.Attempts = 1
	done := make(chan error, 1)
	go func() {
		_, err := c.Ticket(context.Background(), ts.URL+"/reads/x", &htsget.Request{})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "nothing received for 1s") || errkind.Of(err) != errkind.Other {
			t.Errorf("got %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a stalled ticket was waited on for 10 s")
	}
}

// TestUntrustedNotRetried: a server whose certificate does not verify
// here is asked once, not Attempts times (another attempt meets the same
// certificate), and the error says so.
func TestUntrustedNotRetried(t *testing.T) {
	var conns atomic.Int32
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	ts.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes it refuses
	ts.StartTLS()
	defer ts.Close()
	c := &Client{Attempts: 3, Backoff: time.Millisecond}
	_, err := c.Ticket(context.Background(), ts.URL+"/reads/x", &htsget.Request{})
	if !tlserr.Untrusted(err) || strings.Contains(err.Error(), "attempts") {
		t.Errorf("a certificate of an authority not trusted: %v", err)
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}
