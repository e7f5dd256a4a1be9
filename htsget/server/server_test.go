package server

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/htsget"
	"github.com/c4gh-go/crypt4gh/internal/clitest"
	"github.com/c4gh-go/crypt4gh/keys"
	"github.com/c4gh-go/crypt4gh/region"
)

// testServer serves a folder with a crypt4gh file that is not BAM, and
// one that is for another key.
func testServer(t testing.TB, plaintext bool) (*Server, keys.PublicKey) {
	t.Helper()
	sk, err := keys.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	other, err := keys.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, pk := range map[string]keys.PublicKey{"x.bam.c4gh": sk.Public(), "sub/y.vcf.gz.c4gh": sk.Public(), "other.bam.c4gh": other.Public()} {
		var b bytes.Buffer
		if _, err := c4gh.Encrypt(&b, strings.NewReader("not a BAM file at all"), c4gh.EncryptOptions{Recipients: []keys.PublicKey{pk}}); err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	src, err := Dir(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Source: src, Key: &sk, Plaintext: plaintext, Tokens: []string{"tok"}})
	if err != nil {
		t.Fatal(err)
	}
	return s, other.Public()
}

// TestTicketErrors: the errors of files that are not what their names
// say, or not for the server's key.
func TestTicketErrors(t *testing.T) {
	s, pk := testServer(t, true)
	for _, c := range []struct {
		path   string
		status int
		code   string
	}{
		{"/reads/x", 400, htsget.UnsupportedFormat},
		{"/variants/sub/y", 400, htsget.UnsupportedFormat},
		{"/reads/other", 403, htsget.PermissionDenied},
		{"/variants/x", 404, htsget.NotFound},
		{"/reads/x?format=BCF", 400, htsget.UnsupportedFormat},
		// none, as service-info says, is a plaintext ticket
		{"/reads/x?encryptionScheme=none", 400, htsget.UnsupportedFormat},
		{"/reads/x?encryptionScheme=rot13", 400, htsget.InvalidInput},
		{"/reads/x?stream=1", 400, htsget.InvalidInput},
		{"/reads/x?stream=TRUE", 400, htsget.InvalidInput},
	} {
		req := httptest.NewRequest(http.MethodGet, c.path, nil)
		req.Header.Set("Authorization", "Bearer tok")
		req.Header.Set(htsget.PublicKeyHeader, htsget.EncodePublicKey(pk))
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		e := htsget.ReadError(w.Code, w.Body)
		if w.Code != c.status || e.Code != c.code {
			t.Errorf("%s: %d %v, want %d %s", c.path, w.Code, e, c.status, c.code)
		}
	}
}

// FuzzHandler sends requests of any path, query, method and headers:
// the answer is an htsget status, never a server error or a panic.
func FuzzHandler(f *testing.F) {
	s, pk := testServer(f, true)
	key := htsget.EncodePublicKey(pk)
	for _, p := range []string{"/reads/x", "/reads/x?encryptionScheme=C4GH", "/variants/sub/y?referenceName=chr1&start=1&end=2", "/data/c4gh/x.bam.c4gh?s=0&e=10&x=1&t=AA", "/reads/../x", "/reads/sub%2fy", "/reads/service-info", "/reads/x?class=header"} {
		f.Add("GET", p, "Bearer tok", key, "")
		f.Add("POST", p, "Bearer tok", "", `{"regions":[{"referenceName":"chr1"}]}`)
	}
	f.Fuzz(func(t *testing.T, method, target, auth, pub, body string) {
		if !strings.HasPrefix(target, "/") || strings.ContainsAny(target, " \r\n\x00") || strings.ContainsAny(method, " \r\n/\x00") || method == "" {
			return
		}
		req, err := http.NewRequest(method, "http://h"+target, strings.NewReader(body))
		if err != nil {
			return
		}
		req.RequestURI = target
		req.Header.Set("Authorization", auth)
		req.Header.Set(htsget.PublicKeyHeader, pub)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if w.Code >= 500 {
			t.Fatalf("%s %s: %d %s", method, target, w.Code, w.Body)
		}
		if w.Code != 200 && w.Code != 206 && !strings.Contains(w.Body.String(), `"htsget":{"error"`) {
			t.Fatalf("%s %s: %d without the protocol's error: %s", method, target, w.Code, w.Body)
		}
	})
}

// TestGrantExpiry: a data URL is good until its expiry and refused after
// it; a URL signed with another server's key is refused.
func TestGrantExpiry(t *testing.T) {
	key, other := []byte("0123456789abcdef0123456789abcdef"), []byte("another key, of another server!!")
	g := grant{kind: kindPlain, name: "x.bam.c4gh", id: "100-1", start: 0, end: 10, expires: 1000}
	for _, c := range []struct {
		key  []byte
		now  int64
		want string
	}{
		{key, 999, ""}, {key, 1000, ""}, {key, 1001, "expired"}, {other, 999, "not a data URL"},
	} {
		u, err := url.Parse(g.url("http://h", c.key))
		if err != nil {
			t.Fatal(err)
		}
		got, e := parseGrant(strings.TrimPrefix(u.Path, "/data/"), u.Query(), key, time.Unix(c.now, 0))
		switch {
		case c.want == "" && (e != nil || got != g):
			t.Errorf("at %d: %+v, %v", c.now, got, e)
		case c.want != "" && (e == nil || e.Status != 403 || !strings.Contains(e.Message, c.want)):
			t.Errorf("at %d: %v, want 403 %q", c.now, e, c.want)
		}
	}
}

// slowSource serves one file of n bytes whose Stream writes slowly and
// stops when the context of Open is done, as an object store's does.
type slowSource struct{ n int64 }

func (s slowSource) String() string { return "slow" }

func (s slowSource) Open(ctx context.Context, name string) (Object, error) {
	if name != "f.bam.c4gh" {
		return nil, fs.ErrNotExist
	}
	return slowObject{ctx: ctx, n: s.n}, nil
}

type slowObject struct {
	ctx context.Context
	n   int64
}

func (o slowObject) ReadAt(p []byte, off int64) (int, error) { clear(p); return len(p), nil }
func (o slowObject) Size() int64                             { return o.n }
func (o slowObject) Close() error                            { return nil }
func (o slowObject) ID() string                              { return "" }
func (o slowObject) Stream(w io.Writer, off, n int64) (int64, error) {
	var done int64
	for done < n {
		if err := o.ctx.Err(); err != nil {
			return done, err
		}
		time.Sleep(50 * time.Millisecond)
		k, err := w.Write(make([]byte, min(n-done, 100)))
		done += int64(k)
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

// TestLongDownload: a data response may last longer than the server's
// ReadTimeout: the deadline for reading the request does not end the
// request's context, which an object store's reads depend on.
func TestLongDownload(t *testing.T) {
	t.Parallel()
	sk, err := keys.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Source: slowSource{n: 1000}, Key: &sk})
	if err != nil {
		t.Fatal(err)
	}
	hs := s.HTTPServer()
	hs.ReadTimeout = 100 * time.Millisecond
	ts := httptest.NewUnstartedServer(s)
	ts.Config = hs
	ts.Start()
	defer ts.Close()
	g := grant{kind: kindC4GH, name: "f.bam.c4gh", start: 0, end: 1000, expires: time.Now().Add(time.Hour).Unix()}
	resp, err := http.Get(g.url(ts.URL, s.urlKey))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || len(b) != 1000 {
		t.Fatalf("status %d, %d bytes of 1000 (%v)", resp.StatusCode, len(b), err)
	}
}

// TestStalledReader: a client that stops reading a data response loses
// its connection after WriteIdle, so that it gives back its place among
// MaxStreams and does not hold up a shutdown; a slow reader keeps going.
func TestStalledReader(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: waits for the write deadlines, about 4 s")
	}
	t.Parallel()
	const size = 32 << 20 // more than the socket buffers of loopback
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The slow reader pauses a quarter of WriteIdle between its reads,
	// and takes more than WriteIdle in all: a deadline for the whole
	// response would cut it off, one per write does not. (With 300 ms
	// and pauses of 100 ms, a loaded machine's late wake-ups came close.)
	const writeIdle, pause = time.Second, 250 * time.Millisecond
	s, addr, served := listening(t, ctx, "big.bam.c4gh", size, Config{MaxStreams: 1, WriteIdle: writeIdle})
	g := grant{kind: kindC4GH, name: "big.bam.c4gh", id: objectID(t, s, "big.bam.c4gh"), start: 0, end: size, expires: time.Now().Add(time.Hour).Unix()}
	u, err := url.Parse(g.url("http://"+addr, s.urlKey))
	if err != nil {
		t.Fatal(err)
	}
	// The stalled client asks and reads nothing.
	stalled, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	stalled.(*net.TCPConn).SetReadBuffer(4 << 10)
	fmt.Fprintf(stalled, "GET %s HTTP/1.1\r\nHost: h\r\n\r\n", u.RequestURI())
	time.Sleep(100 * time.Millisecond)
	// The next one gets the only stream once the stalled one is cut
	// off, and may read slowly: each write has its own deadline.
	hc := &http.Client{Timeout: 20 * time.Second}
	resp, err := hc.Get(u.String())
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	slow := time.Now()
	for {
		k, err := io.CopyN(io.Discard, resp.Body, 4<<20)
		n += k
		if err != nil {
			break
		}
		time.Sleep(pause)
	}
	took := time.Since(slow)
	resp.Body.Close()
	if resp.StatusCode != 200 || n != size {
		t.Fatalf("after a stalled reader: status %d, %d bytes of %d", resp.StatusCode, n, size)
	}
	if took <= writeIdle {
		t.Fatalf("the slow reader took %v, not more than WriteIdle: the test shows nothing", took)
	}
	// A stalled reader does not hold up a shutdown either.
	stalled2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer stalled2.Close()
	stalled2.(*net.TCPConn).SetReadBuffer(4 << 10)
	fmt.Fprintf(stalled2, "GET %s HTTP/1.1\r\nHost: h\r\n\r\n", u.RequestURI())
	time.Sleep(100 * time.Millisecond)
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return with a stalled reader connected")
	}
}

// TestIdleKeepAlive: a connection kept alive past WriteIdle still
// answers: the deadline of one response is not left to the next, which
// may send no body at all.
func TestIdleKeepAlive(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, addr, _ := listening(t, ctx, "x.bam.c4gh", 1000, Config{WriteIdle: 200 * time.Millisecond})
	g := grant{kind: kindC4GH, name: "x.bam.c4gh", id: objectID(t, s, "x.bam.c4gh"), start: 0, end: 1000, expires: time.Now().Add(time.Hour).Unix()}
	u := g.url("http://"+addr, s.urlKey)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConns: 1}}
	var reused int
	for i, method := range []string{http.MethodGet, http.MethodHead, http.MethodGet} {
		if i > 0 {
			time.Sleep(400 * time.Millisecond)
		}
		req, _ := http.NewRequest(method, u, nil)
		trace := &httptrace.ClientTrace{GotConn: func(ci httptrace.GotConnInfo) {
			if ci.Reused {
				reused++
			}
		}}
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %d: %v", method, i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s %d: status %d", method, i, resp.StatusCode)
		}
	}
	if reused != 2 {
		t.Errorf("the connection was reused %d times, not 2", reused)
	}
}

// listening serves cfg, with a folder holding a file of size bytes at
// name as its source and a new key, on a loopback port until ctx is done.
// It returns the server, its address and what Serve returned.
func listening(t *testing.T, ctx context.Context, name string, size int, cfg Config) (*Server, string, chan error) {
	t.Helper()
	sk, err := keys.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, name), bytes.Repeat([]byte{7}, size), 0o600); err != nil {
		t.Fatal(err)
	}
	if cfg.Source, err = Dir(dir); err != nil {
		t.Fatal(err)
	}
	cfg.Key = &sk
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, context.Background(), ln, "", "") }()
	return s, ln.Addr().String(), served
}

// TestRequesterKey: the requester's key in the publicKey parameter, as
// pasted from a key file into a URL (its "+" unescaped, read as spaces),
// or escaped; a header before it; a parameter that is not a key is 400.
func TestRequesterKey(t *testing.T) {
	s, _ := testServer(t, false)
	var pk keys.PublicKey
	for {
		sk, err := keys.Generate(nil)
		if err != nil {
			t.Fatal(err)
		}
		if pk = sk.Public(); strings.Contains(base64.StdEncoding.EncodeToString(pk[:]), "+") {
			break
		}
	}
	raw := base64.StdEncoding.EncodeToString(pk[:])
	for _, q := range []string{"publicKey=" + raw, "publicKey=" + url.QueryEscape(raw), "publicKey=" + url.QueryEscape(htsget.EncodePublicKey(pk))} {
		req := httptest.NewRequest(http.MethodGet, "/reads/x?encryptionScheme=C4GH&"+q, nil)
		req.Header.Set("Authorization", "Bearer tok")
		v, from := requesterKey(req)
		got, err := htsget.ParsePublicKey(v)
		if err != nil || got != pk || !strings.Contains(from, "publicKey") {
			t.Errorf("%s: %v %v from %s", q, got, err, from)
		}
		// The request gets as far as the file, which is not a BAM.
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if e := htsget.ReadError(w.Code, w.Body); w.Code != 400 || e.Code != htsget.UnsupportedFormat {
			t.Errorf("%s: %d %v", q, w.Code, e)
		}
	}
	req := httptest.NewRequest(http.MethodGet, "/reads/x?encryptionScheme=C4GH&publicKey=nokey", nil)
	req.Header.Set("Authorization", "Bearer tok")
	w := httptest.NewRecorder()
	s.ServeHTTP(w, req)
	if e := htsget.ReadError(w.Code, w.Body); w.Code != 400 || e.Code != htsget.InvalidInput || !strings.Contains(e.Message, "publicKey parameter") {
		t.Errorf("a parameter that is not a key: %d %v", w.Code, e)
	}
	req = httptest.NewRequest(http.MethodGet, "/reads/x?encryptionScheme=C4GH&publicKey=nokey", nil)
	req.Header.Set(htsget.PublicKeyHeader, raw)
	if v, from := requesterKey(req); v != raw || !strings.Contains(from, "header") {
		t.Errorf("with a header and a parameter: %q from %s", v, from)
	}
}

// objectID returns the identity of the file at name of s's source, as a
// ticket binds it into its data URLs.
func objectID(t *testing.T, s *Server, name string) string {
	t.Helper()
	obj, err := s.cfg.Source.Open(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	return obj.ID()
}

// smallBufListener gives the first connection it accepts a send buffer
// of a few KiB, so that a client that reads nothing holds a response up
// after its first kilobytes, not after megabytes of kernel buffers.
type smallBufListener struct {
	net.Listener
	once *sync.Once
}

func (l smallBufListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		l.once.Do(func() { tc.SetWriteBuffer(4 << 10) })
	}
	return c, err
}

// TestSlowTicketReader: a client that does not read the answer of a
// ticket of several regions gives back the one place of such tickets
// after TicketWrite, however long WriteIdle is: the next such ticket is
// answered meanwhile.
func TestSlowTicketReader(t *testing.T) {
	if testing.Short() {
		t.Skip("sorts a BAM of 100,000 reads")
	}
	src, sk := readsBAM(t)
	s, err := New(Config{Source: src, Key: &sk, WriteIdle: time.Minute, TicketWrite: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ctx, smallBufListener{ln, new(sync.Once)}, "", "") }()
	defer func() { cancel(); <-served }()

	var regions []string
	for at := 10000; at < 2000000; at += 50000 {
		regions = append(regions, fmt.Sprintf(`{"referenceName":"chr1","start":%d,"end":%d}`, at, at+2000))
	}
	body := `{"regions":[` + strings.Join(regions, ",") + `]}`
	key := htsget.EncodePublicKey(sk.Public())
	stalled, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	stalled.(*net.TCPConn).SetReadBuffer(4 << 10)
	fmt.Fprintf(stalled, "POST /reads/reads?encryptionScheme=C4GH HTTP/1.1\r\nHost: h\r\n%s: %s\r\nContent-Length: %d\r\n\r\n%s", htsget.PublicKeyHeader, key, len(body), body)
	time.Sleep(200 * time.Millisecond)

	req, _ := http.NewRequest(http.MethodPost, "http://"+ln.Addr().String()+"/reads/reads?encryptionScheme=C4GH", strings.NewReader(body))
	req.Header.Set(htsget.PublicKeyHeader, key)
	// Held up until WriteIdle (a minute), it would time out; 30 s leave
	// a loaded machine time to plan both tickets under the race detector.
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("a ticket of several regions while another's reader stalls: %v", err)
	}
	defer resp.Body.Close()
	tk, err := htsget.ReadTicket(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("status %d, %v", resp.StatusCode, err)
	}
	var size int
	for _, u := range tk.URLs {
		size += len(u.URL)
	}
	if size < 64<<10 {
		t.Fatalf("a ticket of %d bytes: too small to fill the buffers of a stalled reader", size)
	}
}

// readsBAM makes a folder with reads.bam.c4gh (100,000 reads of 100
// bases on chr1, 2 Mb long, none across a 16 kb bin) and its index, and returns it as a Source
// with the key of the file.
func readsBAM(t *testing.T) (Source, keys.SecretKey) {
	t.Helper()
	samtools := clitest.Tool(t, "samtools")
	dir := t.TempDir()
	var sam strings.Builder
	sam.WriteString("@HD\tVN:1.6\tSO:unsorted\n@SQ\tSN:chr1\tLN:2000000\n")
	r := rand.New(rand.NewPCG(1, 2))
	seq := make([]byte, 100)
	for i := 0; i < 100000; {
		// Reads that cross no 16 kb bin: a region's chunks are its own.
		at := r.IntN(2000000 - 100)
		if at/16384 != (at+99)/16384 {
			continue
		}
		for j := range seq {
			seq[j] = "ACGT"[r.IntN(4)]
		}
		fmt.Fprintf(&sam, "r%d\t0\tchr1\t%d\t60\t100M\t*\t0\t0\t%s\t%s\n", i, at+1, seq, strings.Repeat("I", 100))
		i++
	}
	os.WriteFile(filepath.Join(dir, "reads.sam"), []byte(sam.String()), 0o600)
	for _, args := range [][]string{{"sort", "-o", "plain.bam", "reads.sam"}, {"index", "plain.bam", "reads.bam.bai"}} {
		cmd := exec.Command(samtools, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("samtools %v: %v\n%s", args, err, out)
		}
	}
	sk, err := keys.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(filepath.Join(dir, "plain.bam"))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var enc bytes.Buffer
	if _, err := c4gh.Encrypt(&enc, in, c4gh.EncryptOptions{Recipients: []keys.PublicKey{sk.Public()}}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "reads.bam.c4gh"), enc.Bytes(), 0o600)
	src, err := Dir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return src, sk
}

// TestSealedNewBytes: the bound on a ticket's new blocks counts them as
// the ticket holds them: in a Crypt4GH ticket, each run sealed in whole
// segments. A request whose blocks fit as bytes but not as segments is
// refused its Crypt4GH ticket and given its plaintext one.
func TestSealedNewBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("sorts a BAM of 100,000 reads")
	}
	src, sk := readsBAM(t)
	var regions []string
	for at := 10000; at < 2000000; at += 150000 {
		regions = append(regions, fmt.Sprintf(`{"referenceName":"chr1","start":%d,"end":%d}`, at, at+40000))
	}
	body := `{"regions":[` + strings.Join(regions, ",") + `]}`
	key := htsget.EncodePublicKey(sk.Public())
	ask := func(cfg Config, query string) (*htsget.Ticket, *htsget.Error) {
		cfg.Source, cfg.Key, cfg.Plaintext = src, &sk, true
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest(http.MethodPost, "/reads/reads"+query, strings.NewReader(body))
		req.Header.Set(htsget.PublicKeyHeader, key)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if w.Code != 200 {
			return nil, htsget.ReadError(w.Code, w.Body)
		}
		tk, err := htsget.ReadTicket(w.Body)
		if err != nil {
			t.Fatal(err)
		}
		return tk, nil
	}
	// The new bytes of each kind of ticket, in its data: URLs.
	newBytes := func(tk *htsget.Ticket, skip int) int64 {
		var n int64
		for _, u := range tk.URLs[skip:] {
			if b, err := htsget.DecodeDataURL(u.URL); err == nil {
				n += int64(len(b))
			}
		}
		return n
	}
	plain, e := ask(Config{}, "")
	if e != nil {
		t.Fatal(e)
	}
	sealed, e := ask(Config{}, "?encryptionScheme=C4GH")
	if e != nil {
		t.Fatal(e)
	}
	raw, segs := newBytes(plain, 0), newBytes(sealed, 3) // past the magic, packets, new packets
	if segs < raw*3/2 {
		t.Fatalf("%d bytes of new blocks, %d sealed: too few runs to tell them apart", raw, segs)
	}
	limit := Config{MaxNewBytes: (raw + segs) / 2}
	if _, e := ask(limit, "?encryptionScheme=C4GH"); e == nil || e.Status != 413 {
		t.Errorf("%d bytes of new blocks, %d sealed, %d allowed: %v, want 413", raw, segs, limit.MaxNewBytes, e)
	}
	if _, e := ask(limit, ""); e != nil {
		t.Errorf("the plaintext ticket of %d bytes of new blocks, %d allowed: %v", raw, limit.MaxNewBytes, e)
	}
}

// TestCopyPlain: the pipelined copy of a plaintext range gives the bytes
// of the range, however it falls on segments, and stops at the first
// error of the writer without reading on.
func TestCopyPlain(t *testing.T) {
	sk, err := keys.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	pt := make([]byte, 3*plainBatch+300)
	rand.NewChaCha8([32]byte{1}).Read(pt)
	var enc bytes.Buffer
	if _, err := c4gh.Encrypt(&enc, bytes.NewReader(pt), c4gh.EncryptOptions{Recipients: []keys.PublicKey{sk.Public()}}); err != nil {
		t.Fatal(err)
	}
	plain, err := c4gh.NewReaderAt(bytes.NewReader(enc.Bytes()), int64(enc.Len()), &sk, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	n := int64(len(pt))
	for _, r := range [][2]int64{{0, n}, {1, n - 1}, {65535, 65537}, {70000, 4*65536 + 5}, {n - 1, n}, {0, plainBatch}, {3, 3 + 2*plainBatch}} {
		var got bytes.Buffer
		if err := copyPlain(&got, plain, r[0], r[1]); err != nil || !bytes.Equal(got.Bytes(), pt[r[0]:r[1]]) {
			t.Errorf("[%d, %d): %d bytes, %v", r[0], r[1], got.Len(), err)
		}
	}
	w := &failingWriter{after: 2}
	if err := copyPlain(w, plain, 0, n); err == nil || w.writes != 3 {
		t.Errorf("a writer that fails at its third write: %v after %d writes", err, w.writes)
	}
}

type failingWriter struct{ after, writes int }

func (w *failingWriter) Write(p []byte) (int, error) {
	w.writes++
	if w.writes > w.after {
		return 0, io.ErrClosedPipe
	}
	return len(p), nil
}

// TestIndexCache: indexes are kept by name and identity within the
// bound, the least recently used leaving first; one larger than the
// bound is not kept.
func TestIndexCache(t *testing.T) {
	c := newIndexCache(100)
	x, y, z := &region.Index{}, &region.Index{}, &region.Index{}
	c.put(indexKey("a.bai", "1"), 40, x)
	c.put(indexKey("b.bai", "1"), 40, y)
	if c.get(indexKey("a.bai", "2")) != nil {
		t.Error("an index of another identity was found")
	}
	if c.get(indexKey("a.bai", "1")) != x { // a is now the most recent
		t.Error("a kept index was not found")
	}
	c.put(indexKey("c.bai", "1"), 40, z)
	if c.get(indexKey("b.bai", "1")) != nil || c.get(indexKey("a.bai", "1")) != x || c.get(indexKey("c.bai", "1")) != z {
		t.Error("not the least recently used one left")
	}
	c.put(indexKey("d.bai", "1"), 101, x)
	if c.get(indexKey("d.bai", "1")) != nil || c.bytes != 80 {
		t.Errorf("an index larger than the cache: kept, %d bytes", c.bytes)
	}
}

// oneTicketServer serves testServer's folder on a loopback port, with one
// place among the tickets, read as the time a request has (when not 0) and
// body as the time a body has from its turn, until the test ends. head(n) is the head of a POST of a ticket of
// "other" (a file for another key: 403 once its body is read) with a
// body of n bytes.
func oneTicketServer(t *testing.T, read, body time.Duration) (s *Server, addr string, head func(n int) string) {
	s, other := testServer(t, false)
	s.cfg.MaxTickets = 1
	s.tickets = make(chan struct{}, 1)
	s.readTimeout = cmp.Or(read, s.readTimeout)
	s.bodyTimeout = body
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ctx, ln, "", "") }()
	t.Cleanup(func() { cancel(); <-served })
	return s, ln.Addr().String(), func(n int) string {
		return fmt.Sprintf("POST /reads/other?encryptionScheme=C4GH HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer tok\r\n%s: %s\r\nContent-Length: %d\r\n\r\n", htsget.PublicKeyHeader, htsget.EncodePublicKey(other), n)
	}
}

// TestTicketWaitNotBodyTime: a ticket request that waited its turn
// behind others still has its time to send its body. Under load, the
// wait took it all and a request sent at once was answered 400.
func TestTicketWaitNotBodyTime(t *testing.T) {
	s, addr, head := oneTicketServer(t, time.Second, time.Second)
	// The one place is taken for a second and a half.
	s.tickets <- struct{}{}
	time.AfterFunc(1500*time.Millisecond, func() { <-s.tickets })

	// A request sends all of a body larger than the buffers that come in
	// with its headers, and waits longer than the time to read it.
	body := `{"format":"BAM"` + strings.Repeat(" ", 512<<10) + `}`
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	go fmt.Fprint(c, head(len(body))+body)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// The file is for another key: 403 once the body is read.
	if e := htsget.ReadError(resp.StatusCode, resp.Body); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a request that waited its turn: %d %v, want 403", resp.StatusCode, e)
	}
}

// TestSlowTicketBody: a request that sends its body slowly holds its
// place among the tickets for the body's time at most (bodyTimeout, not
// the whole ReadTimeout): the next ticket is answered meanwhile. Sixteen
// such clients held every ticket for as long as they liked.
func TestSlowTicketBody(t *testing.T) {
	s, addr, head := oneTicketServer(t, 0, time.Second)
	pk := s.cfg.Key.Public() // any requester: the file is for another key
	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	fmt.Fprint(slow, head(1000)+"{")
	stop := make(chan struct{})
	defer close(stop)
	go func() { // a byte every 100 ms, for 100 s
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
				if _, err := slow.Write([]byte(" ")); err != nil {
					return
				}
			}
		}
	}()
	time.Sleep(200 * time.Millisecond)
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/reads/other?encryptionScheme=C4GH", nil)
	req.Header.Set("Authorization", "Bearer tok")
	req.Header.Set(htsget.PublicKeyHeader, htsget.EncodePublicKey(pk))
	start := time.Now()
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("a ticket while a slow body holds the one place: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("status %d, want 403", resp.StatusCode)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the ticket waited %v for a slow body", d)
	}
}

// countingSource counts the files opened of its Source.
type countingSource struct {
	Source
	opened atomic.Int64
}

func (c *countingSource) Open(ctx context.Context, name string) (Object, error) {
	c.opened.Add(1)
	return c.Source.Open(ctx, name)
}

// TestStreamsWaitUnopened: stream=true requests that wait for a place
// among the streams have opened nothing yet: each held its file, its
// decrypting reader and its new blocks, and nothing bounded how many
// waited.
func TestStreamsWaitUnopened(t *testing.T) {
	s, _ := testServer(t, false)
	src := &countingSource{Source: s.cfg.Source}
	s.cfg.Source = src
	s.streams = make(chan struct{}, 1)
	s.streams <- struct{}{} // the one place is taken
	pk := htsget.EncodePublicKey(s.cfg.Key.Public())
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			req := httptest.NewRequestWithContext(ctx, http.MethodGet, "/reads/x?encryptionScheme=C4GH&"+StreamParam+"=true", nil)
			req.Header.Set("Authorization", "Bearer tok")
			req.Header.Set(htsget.PublicKeyHeader, pk)
			s.ServeHTTP(httptest.NewRecorder(), req)
		})
	}
	wg.Wait()
	if n := src.opened.Load(); n != 0 {
		t.Errorf("5 streams waiting for their place opened %d files", n)
	}
	<-s.streams
}
