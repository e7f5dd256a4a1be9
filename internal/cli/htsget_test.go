package cli

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/htsget"
	"github.com/c4gh-go/crypt4gh/internal/clitest"
	"github.com/c4gh-go/crypt4gh/keys"
)

// The tests of crypt4gh htsget run their own htsget server on loopback
// (htsget_server_test.go): it answers tickets that the tests lay out
// from files this tool encrypted, and serves the files' bytes by range.

// htsgetEnv is a folder with the archive's and the requester's keys, a
// file encrypted for the archive, and a server of it.
type htsgetEnv struct {
	dir     string
	out     string // an empty folder for the outputs
	s       *ticketServer
	archive *keys.SecretKey
	alice   *keys.SecretKey
	plain   []byte
	file    c4ghFile
}

// htsgetPlainSize is 5 full segments and a partial one.
const htsgetPlainSize = 5*65536 + 1234

func newHtsgetEnv(t *testing.T) *htsgetEnv {
	t.Helper()
	t.Setenv(secretKeyEnv, "")
	t.Setenv(passphraseEnv, "")
	t.Setenv(tokenEnv, "")
	e := &htsgetEnv{dir: t.TempDir(), s: newTicketServer(t)}
	e.out = filepath.Join(e.dir, "out")
	if err := os.Mkdir(e.out, 0o755); err != nil {
		t.Fatal(err)
	}
	e.archive = keygenIn(t, e.dir, "archive")
	e.alice = keygenIn(t, e.dir, "alice")
	e.plain = randomData(htsgetPlainSize, 20)
	if err := os.WriteFile(filepath.Join(e.dir, "reads.bam"), e.plain, 0o600); err != nil {
		t.Fatal(err)
	}
	mustRun(t, e.dir, "encrypt", "--recipient_pk", "archive.pub", "-i", "reads.bam", "-o", "reads.bam.c4gh")
	e.file = openC4GH(t, e.s, filepath.Join(e.dir, "reads.bam.c4gh"), "reads.bam.c4gh", e.archive)
	return e
}

// plainSegments is the plaintext of segments [first, last] of e.plain.
func (e *htsgetEnv) plainSegments(first, last int) []byte {
	return e.plain[first*65536 : min((last+1)*65536, len(e.plain))]
}

// editListTicket is a ticket of the file in htsget-rs's layout, for the
// requester alice: the archive's packet first (which she cannot open),
// then an edit list BEFORE the data key, both sealed for her, then
// segments 1 and 3 to 5, which were not contiguous. It returns the
// plaintext the ticket stands for.
func (e *htsgetEnv) editListTicket(t *testing.T) (*htsget.Ticket, []byte) {
	t.Helper()
	list := []uint64{100, 65000, 1000, 70000}
	el, err := header.EditListPayload(list)
	if err != nil {
		t.Fatal(err)
	}
	urls := headerParts(t, e.file, e.alice.Public(), el, header.DataKeyPayload(&e.file.dataKey))
	urls = append(urls, e.file.segments(1, 1), e.file.segments(3, 5))
	present := append(append([]byte(nil), e.plainSegments(1, 1)...), e.plainSegments(3, 5)...)
	want := append(append([]byte(nil), present[100:65100]...), present[66100:136100]...)
	return &htsget.Ticket{Format: "BAM", URLs: urls}, want
}

// serveTicket makes the server answer every ticket request with tk.
func (e *htsgetEnv) serveTicket(tk *htsget.Ticket) {
	e.s.setTicket(func(*htsget.Request, *http.Request) (*htsget.Ticket, *htsget.Error) { return tk, nil })
}

func (e *htsgetEnv) readOut(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.out, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestHtsgetEditListTicket: a ticket in htsget-rs's layout gives the
// exact plaintext of its bytes, a 0600 file; --keep-encrypted the
// assembled crypt4gh file, which decrypt reads; the request carried
// encryptionScheme=C4GH and alice's public key.
func TestHtsgetEditListTicket(t *testing.T) {
	e := newHtsgetEnv(t)
	tk, want := e.editListTicket(t)
	e.serveTicket(tk)
	endpoint := e.s.URL + "/reads/reads"
	mustRun(t, e.dir, "htsget", "--sk", "alice.sec", "--region", "chr1:1-100000", "-o", "out/region.bam", endpoint)
	sameBytes(t, "htsget output", e.readOut(t, "region.bam"), want)
	if fi, err := os.Stat(filepath.Join(e.out, "region.bam")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("output mode: %v, %v", fi.Mode(), err)
	}
	first := e.s.requests()[0]
	if first.Method != "GET" || !strings.Contains(first.Query, "encryptionScheme=C4GH") || !strings.Contains(first.Query, "referenceName=chr1") ||
		!strings.Contains(first.Query, "end=100000") || strings.Contains(first.Query, "start=") {
		t.Errorf("ticket request: %+v", first)
	}
	if pk, err := htsget.ParsePublicKey(first.PublicKey); err != nil || pk != e.alice.Public() {
		t.Errorf("public key header %q: %v", first.PublicKey, err)
	}

	mustRun(t, e.dir, "htsget", "--sk", "alice.sec", "--keep-encrypted", "-o", "out/region.bam.c4gh", endpoint)
	enc := e.readOut(t, "region.bam.c4gh")
	sameBytes(t, "decrypted --keep-encrypted output", decryptBytes(t, enc, e.alice), want)
	mustRun(t, e.dir, "decrypt", "--sk", "alice.sec", "-i", "out/region.bam.c4gh", "-o", "out/again.bam")
	sameBytes(t, "decrypt of the kept file", e.readOut(t, "again.bam"), want)

	// To stdout.
	code, stdout, stderr := runIn(t, e.dir, "htsget", "--sk", "alice.sec", endpoint)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	sameBytes(t, "stdout", []byte(stdout), want)

	// The archive's key opens the archive's packet, which has no edit
	// list: the segments are then decrypted as they are.
	mustRun(t, e.dir, "htsget", "--sk", "archive.sec", "-o", "out/archive.bam", endpoint)
	sameBytes(t, "archive's view", e.readOut(t, "archive.bam"), append(append([]byte(nil), e.plainSegments(1, 1)...), e.plainSegments(3, 5)...))
}

// TestHtsgetSeveralDataKeys: segments of two files, under two data keys,
// in one ticket.
func TestHtsgetSeveralDataKeys(t *testing.T) {
	e := newHtsgetEnv(t)
	other := randomData(3*65536, 21)
	if err := os.WriteFile(filepath.Join(e.dir, "other.bam"), other, 0o600); err != nil {
		t.Fatal(err)
	}
	mustRun(t, e.dir, "encrypt", "--recipient_pk", "archive.pub", "-i", "other.bam", "-o", "other.bam.c4gh")
	f2 := openC4GH(t, e.s, filepath.Join(e.dir, "other.bam.c4gh"), "other.bam.c4gh", e.archive)
	if f2.dataKey == e.file.dataKey {
		t.Fatal("two files share a data key")
	}
	urls := headerParts(t, e.file, e.alice.Public(), header.DataKeyPayload(&e.file.dataKey), header.DataKeyPayload(&f2.dataKey))
	urls = append(urls, e.file.segments(0, 0), f2.segments(1, 2), e.file.segments(4, 4))
	e.serveTicket(&htsget.Ticket{Format: "BAM", URLs: urls})
	mustRun(t, e.dir, "htsget", "--sk", "alice.sec", "-o", "out/mixed.bam", e.s.URL+"/reads/mixed")
	want := append(append(append([]byte(nil), e.plainSegments(0, 0)...), other[65536:]...), e.plainSegments(4, 4)...)
	sameBytes(t, "mixed", e.readOut(t, "mixed.bam"), want)
}

// TestHtsgetPlaintext: a plaintext ticket of a data: part and ranges,
// with --no-encryption: no key asked for, none sent; several regions
// make a POST.
func TestHtsgetPlaintext(t *testing.T) {
	e := newHtsgetEnv(t)
	u := e.s.addFile("reads.bam", e.plain)
	e.serveTicket(&htsget.Ticket{Format: "BAM", URLs: []htsget.URL{
		{URL: htsget.DataURL(e.plain[:100]), Class: "header"},
		rangeURL(u, 100, 70000),
		rangeURL(u, 200000, 300000),
		{URL: u}, // the whole resource, without a Range
	}})
	want := append(append(append([]byte(nil), e.plain[:70000]...), e.plain[200000:300000]...), e.plain...)
	mustRun(t, e.dir, "htsget", "--no-encryption", "-r", "chr1:10-20", "-r", "chr2", "--format", "bam", "-o", "out/p.bam", e.s.URL+"/reads/p")
	sameBytes(t, "plaintext", e.readOut(t, "p.bam"), want)
	first := e.s.requests()[0]
	if first.Method != "POST" || first.PublicKey != "" || strings.Contains(first.Query+first.Body, "encryptionScheme") {
		t.Fatalf("ticket request: %+v", first)
	}
	var body struct {
		Format  string
		Regions []htsget.Region
	}
	if err := json.Unmarshal([]byte(first.Body), &body); err != nil || body.Format != "BAM" || len(body.Regions) != 2 ||
		body.Regions[0].ReferenceName != "chr1" || *body.Regions[0].Start != 9 || *body.Regions[0].End != 20 || body.Regions[1].Start != nil {
		t.Errorf("POST body %s: %v", first.Body, err)
	}
}

// TestHtsgetServerErrors: the server's errors with their htsget code and
// the exit code of their class, the token never printed, no output left.
func TestHtsgetServerErrors(t *testing.T) {
	e := newHtsgetEnv(t)
	token := "s3cr3t-t0ken"
	e.s.setToken(token)
	if err := os.WriteFile(filepath.Join(e.dir, "token"), []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var answer atomic.Pointer[htsget.Error]
	e.s.setTicket(func(*htsget.Request, *http.Request) (*htsget.Ticket, *htsget.Error) { return nil, answer.Load() })
	endpoint := e.s.URL + "/reads/x"
	for _, c := range []struct {
		name string
		err  *htsget.Error
		args []string
		code int
		says string
	}{
		{"no token", nil, nil, exitKey, "InvalidAuthentication: a bearer token is needed"},
		{"forbidden", htsget.Errorf(htsget.PermissionDenied, "not for you"), []string{"--token-file", "token"}, exitKey, "PermissionDenied: not for you (HTTP 403)"},
		{"not found", htsget.Errorf(htsget.NotFound, "no file x"), []string{"--token-file", "token"}, exitUsage, "NotFound: no file x (HTTP 404)"},
		{"bad region", nil, []string{"--token-file", "token", "-r", "chr1:5-2"}, exitUsage, "chr1:5-2"},
		{"bad format", nil, []string{"--token-file", "token", "--format", "SAM"}, exitUsage, "--format SAM"},
		{"server error", &htsget.Error{Status: 500, Code: "InternalError", Message: "disk on fire"}, []string{"--token-file", "token", "--retries", "1"},
			exitError, "InternalError: disk on fire (HTTP 500) (after 2 attempts)"},
	} {
		answer.Store(c.err)
		args := append(append([]string{"htsget", "--no-encryption"}, c.args...), "-o", "out/x.bam", endpoint)
		code, _, stderr := runIn(t, e.dir, args...)
		if code != c.code || !strings.Contains(stderr, c.says) {
			t.Errorf("%s: exit %d, want %d with %q:\n%s", c.name, code, c.code, c.says, stderr)
		}
		if strings.Contains(stderr, token) {
			t.Errorf("%s: the token is printed: %s", c.name, stderr)
		}
		clitest.EmptyDir(t, e.out)
	}
	// The token of the variable.
	answer.Store(htsget.Errorf(htsget.NotFound, "no file x"))
	t.Setenv(tokenEnv, token)
	if code, _, stderr := runIn(t, e.dir, "htsget", "--no-encryption", endpoint); code != exitUsage || !strings.Contains(stderr, "NotFound") {
		t.Errorf("token of %s: exit %d: %s", tokenEnv, code, stderr)
	}
	if got := e.s.requests(); got[len(got)-1].Auth != "Bearer "+token {
		t.Errorf("Authorization %q", got[len(got)-1].Auth)
	}
	// A token that would break the header is refused before any request.
	t.Setenv(tokenEnv, "half\x01token")
	if code, _, stderr := runIn(t, e.dir, "htsget", "--no-encryption", endpoint); code != exitUsage ||
		!strings.Contains(stderr, "control character") || strings.Contains(stderr, "half") {
		t.Errorf("a token with a control character: exit %d: %s", code, stderr)
	}
}

// TestHtsgetRefusals: a ticket with a file:// URL, a stream that is not
// crypt4gh, a tampered segment (exit 4), a server that is not there
// (exit 1 after the retries): no output left.
func TestHtsgetRefusals(t *testing.T) {
	e := newHtsgetEnv(t)
	endpoint := e.s.URL + "/reads/x"
	tampered := bytes.Clone(e.s.files["reads.bam.c4gh"])
	tampered[e.file.headerSize+3*65564+500] ^= 1
	tu := e.s.addFile("tampered.c4gh", tampered)
	bad := e.file
	bad.url = tu
	tk, _ := e.editListTicket(t)
	tamperedTicket := &htsget.Ticket{Format: "BAM", URLs: append(append([]htsget.URL(nil), tk.URLs[:3]...), bad.segments(1, 1), bad.segments(3, 5))}
	plain := e.s.addFile("reads.bam", e.plain)
	for _, c := range []struct {
		name   string
		ticket *htsget.Ticket
		url    string
		code   int
		says   string
	}{
		{"file URL", &htsget.Ticket{URLs: []htsget.URL{{URL: "file:///etc/passwd"}}}, endpoint, exitData, `scheme "file" is not http, https or data`},
		{"not crypt4gh", &htsget.Ticket{URLs: []htsget.URL{rangeURL(plain, 0, 1000)}}, endpoint, exitData, "not a crypt4gh"},
		{"a header that cannot be sent", &htsget.Ticket{URLs: []htsget.URL{{URL: e.file.url, Headers: map[string]string{"X-A": "a\r\nInjected: 1"}}}}, endpoint, exitData, `header "X-A"`},
		{"a header name that cannot be sent", &htsget.Ticket{URLs: []htsget.URL{{URL: e.file.url, Headers: map[string]string{"X A:": "v"}}}}, endpoint, exitData, `header "X A:"`},
		{"tampered", tamperedTicket, endpoint, exitData, "segment"},
		{"not for alice", &htsget.Ticket{URLs: []htsget.URL{{URL: e.file.url}}}, endpoint, exitKey, "no packet"},
		{"no server", nil, "http://" + closedAddress(t) + "/reads/x", exitError, "after 2 attempts"},
		{"no URL", nil, "", exitUsage, "one URL"},
		{"not http", nil, "ftp://x/reads/y", exitUsage, "not an http"},
	} {
		e.serveTicket(c.ticket)
		args := []string{"htsget", "--sk", "alice.sec", "--retries", "1", "-o", "out/x.bam"}
		if c.url != "" {
			args = append(args, c.url)
		}
		code, _, stderr := runIn(t, e.dir, args...)
		if code != c.code || !strings.Contains(stderr, c.says) {
			t.Errorf("%s: exit %d, want %d with %q:\n%s", c.name, code, c.code, c.says, stderr)
		}
		clitest.EmptyDir(t, e.out)
	}
	// --keep-encrypted authenticates what it keeps.
	e.serveTicket(tamperedTicket)
	if code, _, stderr := runIn(t, e.dir, "htsget", "--sk", "alice.sec", "--keep-encrypted", "-o", "out/x.c4gh", endpoint); code != exitData {
		t.Errorf("tampered, --keep-encrypted: exit %d: %s", code, stderr)
	}
	clitest.EmptyDir(t, e.out)
	// An existing output is kept.
	e.serveTicket(tk)
	os.WriteFile(filepath.Join(e.out, "x.bam"), []byte("mine"), 0o600)
	if code, _, stderr := runIn(t, e.dir, "htsget", "--sk", "alice.sec", "-o", "out/x.bam", endpoint); code != exitUsage {
		t.Errorf("existing output: exit %d: %s", code, stderr)
	}
	if b := e.readOut(t, "x.bam"); string(b) != "mine" {
		t.Error("the existing output was replaced")
	}
}

// TestHtsgetRetries: a part whose first attempt gets a 500, another whose
// connection is cut in the middle, a ticket request that gets a 503, a
// server that ignores Range: all end with the right bytes; the cut part
// goes on from the byte it stopped at.
func TestHtsgetRetries(t *testing.T) {
	e := newHtsgetEnv(t)
	tk, want := e.editListTicket(t)
	e.serveTicket(tk)
	var ticketFailed, part500, partCut atomic.Bool
	e.s.setFault(func(w http.ResponseWriter, r *http.Request) bool {
		switch {
		case strings.HasPrefix(r.URL.Path, "/reads/") && !ticketFailed.Swap(true):
			w.Header().Set("Retry-After", "0")
			htsget.WriteError(w, &htsget.Error{Status: 503, Code: "Unavailable", Message: "busy"})
			return true
		case r.Header.Get("Range") == tk.URLs[3].Headers["Range"] && !part500.Swap(true):
			http.Error(w, "oops", 500)
			return true
		case r.Header.Get("Range") == tk.URLs[4].Headers["Range"] && !partCut.Swap(true):
			// Half of what was asked, then the connection is cut.
			f := e.s.files["reads.bam.c4gh"]
			rng, _ := parseTestRange(r.Header.Get("Range"))
			w.Header().Set("Content-Range", "bytes "+r.Header.Get("Range")[6:]+"/"+strconv.Itoa(len(f)))
			w.Header().Set("Content-Length", strconv.Itoa(rng[1]-rng[0]+1))
			w.WriteHeader(http.StatusPartialContent)
			w.Write(f[rng[0] : rng[0]+70000])
			w.(http.Flusher).Flush()
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.(*net.TCPConn).SetLinger(0)
				conn.Close()
			}
			return true
		}
		return false
	})
	mustRun(t, e.dir, "htsget", "--sk", "alice.sec", "-o", "out/r.bam", e.s.URL+"/reads/r")
	sameBytes(t, "after retries", e.readOut(t, "r.bam"), want)
	if !ticketFailed.Load() || !part500.Load() || !partCut.Load() {
		t.Fatal("a fault was not met")
	}
	rng, _ := parseTestRange(tk.URLs[4].Headers["Range"])
	resumed := "bytes=" + strconv.Itoa(rng[0]+70000) + "-" + strconv.Itoa(rng[1])
	found := false
	for _, r := range e.s.requests() {
		found = found || r.Range == resumed
	}
	if !found {
		t.Errorf("no request for %s: %+v", resumed, e.s.requests())
	}

	// A server that ignores Range: the client reads from the range's
	// start of the whole resource.
	e.s.setFault(func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.HasPrefix(r.URL.Path, "/data/") {
			return false
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(e.s.files[strings.TrimPrefix(r.URL.Path, "/data/")])
		return true
	})
	mustRun(t, e.dir, "htsget", "--sk", "alice.sec", "-o", "out/norange.bam", e.s.URL+"/reads/r")
	sameBytes(t, "without ranges", e.readOut(t, "norange.bam"), want)
}

// TestHtsgetTokenOrigin: the token goes to the ticket server and to its
// own data URLs, not to another origin's URL (a presigned URL), not even
// through a redirect; a part's own Authorization header is sent as the
// ticket gives it.
func TestHtsgetTokenOrigin(t *testing.T) {
	e := newHtsgetEnv(t)
	token := "t0ken-of-the-ticket-server"
	e.s.setToken(token)
	other := newTicketServer(t)
	ou := other.addFile("reads.bam", e.plain)
	own := e.s.addFile("reads.bam", e.plain)
	e.s.setFault(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, ou, http.StatusFound)
			return true
		}
		return false
	})
	e.serveTicket(&htsget.Ticket{URLs: []htsget.URL{
		rangeURL(own, 0, 1000),
		rangeURL(ou+"?X-Amz-Signature=abc", 1000, 2000),
		rangeURL(e.s.URL+"/redirect", 2000, 3000),
		{URL: ou, Headers: map[string]string{"Range": "bytes=3000-3999", "Authorization": "Bearer for-the-bucket"}},
	}})
	t.Setenv(tokenEnv, token)
	mustRun(t, e.dir, "htsget", "--no-encryption", "-o", "out/t.bam", e.s.URL+"/reads/t")
	sameBytes(t, "output", e.readOut(t, "t.bam"), e.plain[:4000])
	for _, r := range e.s.requests() {
		if r.Auth != "Bearer "+token {
			t.Errorf("the ticket server's %s %s got Authorization %q", r.Method, r.Path, r.Auth)
		}
	}
	got := other.requests()
	if len(got) != 3 {
		t.Fatalf("the other origin got %d requests: %+v", len(got), got)
	}
	for _, r := range got {
		if r.Auth != "" && r.Auth != "Bearer for-the-bucket" || strings.Contains(r.Auth, token) {
			t.Errorf("the other origin got Authorization %q for %s", r.Auth, r.Range)
		}
	}
	for _, r := range got {
		if (r.Range == "bytes=3000-3999") != (r.Auth == "Bearer for-the-bucket") {
			t.Errorf("the part's own Authorization: %q for %s", r.Auth, r.Range)
		}
	}
}

// parseTestRange reads bytes=A-B.
func parseTestRange(v string) ([2]int, bool) {
	a, b, ok := strings.Cut(strings.TrimPrefix(v, "bytes="), "-")
	if !ok {
		return [2]int{}, false
	}
	x, err1 := strconv.Atoi(a)
	y, err2 := strconv.Atoi(b)
	return [2]int{x, y}, err1 == nil && err2 == nil
}

// TestHtsgetSamtools: samtools, a real htsget client, reads a plaintext
// ticket of the test server as it is (so the tickets these tests lay out
// are what real clients accept), and crypt4gh htsget makes of a BAM
// file's Crypt4GH ticket the same BAM, which samtools reads.
func TestHtsgetSamtools(t *testing.T) {
	e := newHtsgetEnv(t)
	writeSAM(t, e.dir, 6000)
	tool(t, e.dir, "samtools", "sort", "-o", "sorted.bam", "reads.sam")
	bam, err := os.ReadFile(filepath.Join(e.dir, "sorted.bam"))
	if err != nil {
		t.Fatal(err)
	}
	if len(bam) < 2*65536 {
		t.Fatalf("the BAM has only %d bytes", len(bam))
	}
	u := e.s.addFile("sorted.bam", bam)
	e.serveTicket(&htsget.Ticket{Format: "BAM", URLs: []htsget.URL{
		{URL: htsget.DataURL(bam[:1000]), Class: "header"},
		rangeURL(u, 1000, 70000),
		rangeURL(u, 70000, int64(len(bam))),
	}})
	want := tool(t, e.dir, "samtools", "view", "--no-PG", "-h", "sorted.bam")
	if got := tool(t, e.dir, "samtools", "view", "--no-PG", "-h", e.s.URL+"/reads/sorted"); got != want {
		t.Errorf("samtools view of the ticket: %d bytes, want %d", len(got), len(want))
	}

	mustRun(t, e.dir, "encrypt", "--recipient_pk", "archive.pub", "-i", "sorted.bam", "-o", "sorted.bam.c4gh")
	f := openC4GH(t, e.s, filepath.Join(e.dir, "sorted.bam.c4gh"), "sorted.bam.c4gh", e.archive)
	n := (f.size - f.headerSize + 65563) / 65564
	urls := headerParts(t, f, e.alice.Public(), header.DataKeyPayload(&f.dataKey))
	e.serveTicket(&htsget.Ticket{Format: "BAM", URLs: append(urls, f.segments(0, 0), f.segments(1, n-1))})
	mustRun(t, e.dir, "htsget", "--sk", "alice.sec", "-o", "out/got.bam", e.s.URL+"/reads/sorted")
	sameBytes(t, "the BAM of the Crypt4GH ticket", e.readOut(t, "got.bam"), bam)
	if got := tool(t, e.dir, "samtools", "view", "--no-PG", "-h", "out/got.bam"); got != want {
		t.Errorf("samtools view of the output differs")
	}
}

// TestHtsgetMissingWarning: an edit list that keeps more than the ticket
// holds gives what is there, with the warning decrypt gives, naming the
// URL without its query.
func TestHtsgetMissingWarning(t *testing.T) {
	e := newHtsgetEnv(t)
	el, err := header.EditListPayload([]uint64{10, 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	urls := headerParts(t, e.file, e.alice.Public(), el, header.DataKeyPayload(&e.file.dataKey))
	e.serveTicket(&htsget.Ticket{URLs: append(urls, e.file.segments(0, 1))})
	code, _, stderr := runIn(t, e.dir, "htsget", "--sk", "alice.sec", "-o", "out/m.bam", e.s.URL+"/reads/m?referenceName=chr1")
	if code != 0 || !strings.Contains(stderr, "warning: "+e.s.URL+"/reads/m: the edit list describes more data") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	sameBytes(t, "output", e.readOut(t, "m.bam"), e.plainSegments(0, 1)[10:])
}
