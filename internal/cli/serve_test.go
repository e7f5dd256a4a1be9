package cli

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	cryptorand "crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"math/rand/v2"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/htsget"
	"github.com/c4gh-go/crypt4gh/internal/clitest"
	"github.com/c4gh-go/crypt4gh/keys"
)

// The serve tests run the command as a process of its own (the test
// binary as a child), talk to it over loopback with samtools, bcftools
// and plain HTTP requests, and read what it gives with the tools, this
// command's decrypt and the other Go implementation.

// serveClient is the client of the serve tests' requests.
var serveClient = http.DefaultClient

// served is a running serve process.
type served struct {
	base string // http://127.0.0.1:PORT
	cmd  *exec.Cmd
	done chan struct{}
	mu   sync.Mutex
	log  bytes.Buffer // its stderr
	code int
}

// startServe starts crypt4gh serve in dir with args (a --listen of a
// free loopback port is added) and waits for its start line.
func startServe(t *testing.T, dir string, args ...string) *served {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(cleanServeEnv(), childEnv+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &served{cmd: cmd, done: make(chan struct{})}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.log.WriteString(line + "\n")
			s.mu.Unlock()
			if m := regexp.MustCompile(` at (https?://[^,]+), `).FindStringSubmatch(line); m != nil {
				select {
				case ready <- m[1]:
				default:
				}
			}
		}
		err := cmd.Wait()
		s.code = cmd.ProcessState.ExitCode()
		_ = err
		close(s.done)
	}()
	t.Cleanup(func() {
		// A connection that a client opened and sent nothing on (Go's
		// transport keeps the spare ones its parallel requests dialled)
		// holds a graceful shutdown for 5 s, as net/http waits for its
		// first request that long: a second SIGTERM, which forces the
		// shutdown, follows after a moment.
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
			return
		case <-time.After(250 * time.Millisecond):
			cmd.Process.Signal(syscall.SIGTERM)
		}
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-s.done
		}
	})
	select {
	case s.base = <-ready:
	case <-s.done:
		t.Fatalf("serve %v exited %d:\n%s", args, s.code, s.stderr())
	case <-time.After(20 * time.Second):
		t.Fatalf("serve %v printed no start line:\n%s", args, s.stderr())
	}
	return s
}

func (s *served) stderr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

// cleanServeEnv is the environment without the key variables.
func cleanServeEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "C4GH_") {
			env = append(env, kv)
		}
	}
	return env
}

// htsgetQuery is the query of a GET for a samtools region (1-based,
// ends included), with the extra parameters.
func htsgetQuery(region string, extra ...string) string {
	q := neturl.Values{}
	name, span, ok := strings.Cut(region, ":")
	q.Set("referenceName", name)
	if ok {
		a, b, _ := strings.Cut(span, "-")
		start, _ := strconv.Atoi(a)
		q.Set("start", strconv.Itoa(start-1))
		q.Set("end", b)
	}
	for i := 0; i+1 < len(extra); i += 2 {
		q.Set(extra[i], extra[i+1])
	}
	return q.Encode()
}

// getTicket asks for a ticket and returns it, or the protocol's error.
func getTicket(t *testing.T, method, u string, body []byte, header map[string]string) (*htsget.Ticket, *htsget.Error) {
	t.Helper()
	req, err := http.NewRequest(method, u, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp := serveDo(t, req, header)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		e := htsget.ReadError(resp.StatusCode, resp.Body)
		if ct := resp.Header.Get("Content-Type"); ct != htsget.ContentType {
			t.Errorf("%s %s: error of Content-Type %q", method, u, ct)
		}
		return nil, e
	}
	tk, err := htsget.ReadTicket(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	// Its URLs are for the requester, made from the Host it sent.
	if cc := resp.Header.Get("Cache-Control"); cc != "private, no-store" {
		t.Errorf("%s %s: a ticket of Cache-Control %q", method, u, cc)
	}
	return tk, nil
}

// serveDo sends req with the headers and returns the response.
func serveDo(t *testing.T, req *http.Request, header map[string]string) *http.Response {
	t.Helper()
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := serveClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// fetchTicket concatenates the parts of a ticket, as a client does.
func fetchTicket(t *testing.T, tk *htsget.Ticket) []byte {
	t.Helper()
	var out []byte
	for i, u := range tk.URLs {
		if strings.HasPrefix(u.URL, "data:") {
			b, err := htsget.DecodeDataURL(u.URL)
			if err != nil {
				t.Fatalf("part %d: %v", i, err)
			}
			out = append(out, b...)
			continue
		}
		b, status := fetchPart(t, u)
		if status != http.StatusOK && status != http.StatusPartialContent {
			t.Fatalf("part %d (%s): status %d: %s", i, u.URL, status, b)
		}
		out = append(out, b...)
	}
	return out
}

func fetchPart(t *testing.T, u htsget.URL) ([]byte, int) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp := serveDo(t, req, u.Headers)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b, resp.StatusCode
}

// htsgetCase is a file of regionFixtures as the server names it.
type htsgetCase struct {
	regionCase
	endpoint, id, format string
	// write writes what the tool reads from a URL to out, in the
	// file's format.
	write []string
}

func htsgetCases(cases []regionCase) []htsgetCase {
	return []htsgetCase{
		{cases[0], "reads", "reads", "", []string{"samtools", "view", "--no-PG", "-b", "-o"}},
		{cases[1], "reads", "csi", "BAM", []string{"samtools", "view", "--no-PG", "-b", "-o"}},
		{cases[2], "reads", "reads", "CRAM", []string{"samtools", "view", "--no-PG", "-C", "-T", "ref.fa", "-o"}},
		{cases[3], "variants", "calls", "", []string{"bcftools", "view", "--no-version", "-Oz", "-o"}},
		{cases[4], "variants", "calls", "BCF", []string{"bcftools", "view", "--no-version", "-Ob", "-o"}},
	}
}

// serveRegions are the regions asked for: inside a block or two, many
// blocks and segments, the last records of a reference, a whole one.
var serveRegions = []string{"chr1:150000-150200", "chr2:20000-90000", "chr2:199000-200000", "chr2"}

// checkRegionFile checks that the file got holds every record of region
// and the header of the original. The tools read the bytes of a file once
// for a region: another file of the same bytes (what the client, a
// Crypt4GH ticket and a plaintext one give of a region) passes as it did.
func checkRegionFile(t *testing.T, dir string, c regionCase, got, region string) {
	t.Helper()
	plainIndex(t, dir, c)
	var seen string
	if c.original != nil {
		seen = fmt.Sprintf("\x01%s\x00%x", region, sha256.Sum256(mustRead(t, filepath.Join(dir, got))))
		if _, ok := c.original.Load(seen); ok {
			return
		}
		defer func() {
			if !t.Failed() && !t.Skipped() {
				c.original.Store(seen, true)
			}
		}()
	}
	c.index2(t, dir, got)
	if h, want := c.head(t, dir, got), c.wantHead(t, dir); h != want {
		t.Errorf("%s %s: the header differs:\n%s\nwant\n%s", got, region, h, want)
	}
	if n, want := c.count(t, dir, got, region), c.wantCount(t, dir, region); n != want {
		t.Errorf("%s: %d records in %s, want %d", got, n, region, want)
	}
}

// TestServeRegions serves the region fixtures (BAM with BAI and CSI,
// CRAM, VCF.gz, BCF; some indexes encrypted) with serve --plaintext, and
// asks for regions of each with both kinds of tickets.
func TestServeRegions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cases := regionFixtures(t, dir)
	s := startServe(t, dir, "--sk", "me.sec", "--plaintext", ".")
	themKey(t, dir) // before the parts that read it run at once
	// The three write files of their own names: they run side by side,
	// each a chain of short tool runs that leaves a core idle.
	t.Run("htslib", func(t *testing.T) { t.Parallel(); servePlaintextHtslib(t, dir, cases, s) })
	t.Run("c4gh", func(t *testing.T) { t.Parallel(); serveC4GH(t, dir, cases, s) })
	t.Run("client", func(t *testing.T) { t.Parallel(); serveClientCommand(t, dir, cases, s) })
}

// serveClientCommand: crypt4gh htsget, the client, against crypt4gh serve:
// a region of every format for another reader's key (one region as a GET,
// two as a POST), the same as a crypt4gh file (--keep-encrypted) that
// decrypt opens, and a plaintext ticket (--no-encryption); each file holds
// every record of its regions and the original's header.
func serveClientCommand(t *testing.T, dir string, cases []regionCase, s *served) {
	themKey(t, dir)
	region := serveRegions[1]
	formats := htsgetCases(cases)
	if testing.Short() {
		// The client does the same for every format: one of each
		// endpoint (the others run in TestServeRegions/htslib and /c4gh).
		formats = []htsgetCase{formats[0], formats[4]}
	}
	for _, c := range formats {
		t.Run(c.name, func(t *testing.T) {
			u := s.base + "/" + c.endpoint + "/" + c.id
			args := []string{"htsget", "--sk", "them.sec"}
			if c.format != "" {
				args = append(args, "--format", c.format)
			}
			out := "client-" + c.name
			mustRun(t, dir, append(args, "--region", region, "-o", out, u)...)
			checkRegionFile(t, dir, c.regionCase, out, region)

			two := "client-two-" + c.name
			mustRun(t, dir, append(args, "--region", "chr1:100000-100010", "--region", "chr2:5000-9000", "-o", two, u)...)
			checkRegionFile(t, dir, c.regionCase, two, "chr1:100000-100010")
			checkRegionFile(t, dir, c.regionCase, two, "chr2:5000-9000")

			kept := "client-kept-" + c.name
			mustRun(t, dir, append(args, "--region", region, "--keep-encrypted", "-o", kept+".c4gh", u)...)
			mustRun(t, dir, "decrypt", "--sk", "them.sec", "-i", kept+".c4gh", "-o", kept)
			checkRegionFile(t, dir, c.regionCase, kept, region)

			plain := "client-plain-" + c.name
			noKey := []string{"htsget", "--no-encryption", "--region", region, "-o", plain}
			if c.format != "" {
				noKey = append(noKey, "--format", c.format)
			}
			mustRun(t, dir, append(noKey, u)...)
			checkRegionFile(t, dir, c.regionCase, plain, region)
		})
	}
}

// servePlaintextHtslib: samtools and bcftools, unmodified, read regions
// of the encrypted files through serve --plaintext: the records of each
// region and the header are those of the original.
func servePlaintextHtslib(t *testing.T, dir string, cases []regionCase, s *served) {
	if !strings.Contains(s.stderr(), "on loopback only") {
		t.Errorf("the start line does not say it listens on loopback:\n%s", s.stderr())
	}
	regions := serveRegions
	if testing.Short() {
		regions = regions[1:3] // many blocks; the end of a reference
	}
	for _, c := range htsgetCases(cases) {
		t.Run(c.name, func(t *testing.T) {
			for i, region := range regions {
				u := fmt.Sprintf("%s/%s/%s?%s", s.base, c.endpoint, c.id, htsgetQuery(region, "format", c.format))
				out := fmt.Sprintf("htsget%d-%s", i, c.name)
				tool(t, dir, c.write[0], append(c.write[1:], out, u)...)
				checkRegionFile(t, dir, c.regionCase, out, region)
			}
			if testing.Short() {
				return
			}
			// The whole file, and the header alone.
			out := "whole-" + c.name
			tool(t, dir, c.write[0], append(c.write[1:], out, fmt.Sprintf("%s/%s/%s?format=%s", s.base, c.endpoint, c.id, c.format))...)
			checkRegionFile(t, dir, c.regionCase, out, "chr1")
			if c.endpoint == htsget.Reads {
				out := "unplaced-" + c.name
				tool(t, dir, c.write[0], append(c.write[1:], out, fmt.Sprintf("%s/%s/%s?format=%s&referenceName=*", s.base, c.endpoint, c.id, c.format))...)
				checkRegionFile(t, dir, c.regionCase, out, "*")
				out = "header-" + c.name
				tool(t, dir, c.write[0], append(c.write[1:], out, fmt.Sprintf("%s/%s/%s?format=%s&class=header", s.base, c.endpoint, c.id, c.format))...)
				if h, want := c.head(t, dir, out), c.wantHead(t, dir); h != want {
					t.Errorf("class=header: the header differs:\n%s\nwant\n%s", h, want)
				}
				if n := strings.Count(tool(t, dir, "samtools", "view", "-T", "ref.fa", out), "\n"); n != 0 {
					t.Errorf("class=header: %d records", n)
				}
			}
		})
	}
	// One line a request, without the query of data URLs.
	log := s.stderr()
	if !regexp.MustCompile(`GET /reads/reads 200 \d+B `).MatchString(log) || !regexp.MustCompile(`GET /data/plain/reads.bam.c4gh 206 \d+B `).MatchString(log) {
		t.Errorf("no request lines in the log:\n%s", log)
	}
	if strings.Contains(log, "t=") || strings.Contains(log, "?") {
		t.Errorf("the log shows queries:\n%s", log)
	}
}

// c4ghTicket fetches a Crypt4GH ticket for pub, assembles it, decrypts it
// with this command and with the other implementation, and writes the
// plaintext to out.
func c4ghTicket(t *testing.T, dir string, method, u string, body []byte, pub []byte, sk *keys.SecretKey, out string) *htsget.Ticket {
	t.Helper()
	tk, he := getTicket(t, method, u, body, map[string]string{htsget.PublicKeyHeader: string(pub)})
	if he != nil {
		t.Fatalf("%s %s: %v", method, u, he)
	}
	enc := fetchTicket(t, tk)
	if err := os.WriteFile(filepath.Join(dir, out+".c4gh"), enc, 0o600); err != nil {
		t.Fatal(err)
	}
	mustRun(t, dir, "decrypt", "--sk", "them.sec", "-i", out+".c4gh", "-o", out)
	ours, err := os.ReadFile(filepath.Join(dir, out))
	if err != nil {
		t.Fatal(err)
	}
	if got := theirsDecrypt(t, enc, sk); !bytes.Equal(got, ours) && !oracleEditListBug(t, enc, sk) {
		t.Fatalf("the other implementation decrypts %d bytes, this one %d", len(got), len(ours))
	}
	return tk
}

// themKey makes them.sec and them.pub in dir, unless they are there, and
// returns the secret key and the header value of the public key.
func themKey(t *testing.T, dir string) (*keys.SecretKey, []byte) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "them.sec")); err != nil {
		mustRun(t, dir, "keygen", "--sk", "them.sec", "--pk", "them.pub", "--nocrypt")
	}
	sk := readKey(t, dir, "them")
	return sk, []byte(htsget.EncodePublicKey(sk.Public()))
}

// serveC4GH: Crypt4GH tickets, fetched with plain HTTP requests and
// concatenated, are crypt4gh files for the requester's key that both
// implementations decrypt to a file holding every record of the regions;
// the server's own key never reaches the requester, and the body comes as
// ranges of the file as stored, not decrypted.
func serveC4GH(t *testing.T, dir string, cases []regionCase, s *served) {
	sk, pub := themKey(t, dir)
	regions := serveRegions[:3]
	if testing.Short() {
		regions = regions[1:2]
	}
	for _, c := range htsgetCases(cases) {
		t.Run(c.name, func(t *testing.T) {
			for i, region := range regions {
				u := fmt.Sprintf("%s/%s/%s?%s", s.base, c.endpoint, c.id, htsgetQuery(region, "format", c.format, "encryptionScheme", "C4GH"))
				out := fmt.Sprintf("c4gh%d-%s", i, c.name)
				tk := c4ghTicket(t, dir, http.MethodGet, u, nil, pub, sk, out)
				checkRegionFile(t, dir, c.regionCase, out, region)
				// htsget-rs's layout: magic, the original packets, the new
				// ones, then the body; only /data/c4gh ranges.
				if len(tk.URLs) < 4 || !strings.HasPrefix(tk.URLs[0].URL, "data:") || strings.HasPrefix(tk.URLs[1].URL, "data:") || !strings.HasPrefix(tk.URLs[2].URL, "data:") {
					t.Fatalf("the ticket is not in htsget-rs's layout: %+v", tk.URLs[:min(4, len(tk.URLs))])
				}
				for _, u := range tk.URLs {
					if !strings.HasPrefix(u.URL, "data:") && !strings.Contains(u.URL, "/data/c4gh/") {
						t.Fatalf("a part of a C4GH ticket is not a stored range: %s", u.URL)
					}
				}
			}
			// POST: two regions, crypt4gh spelled in lower case.
			body := fmt.Sprintf(`{"format":%q,"encryptionScheme":"crypt4gh","regions":[{"referenceName":"chr1","start":99999,"end":100010},{"referenceName":"chr2","start":4999,"end":9000}]}`, c.format)
			if c.format == "" {
				body = strings.Replace(body, `"format":"",`, "", 1)
			}
			out := "post-" + c.name
			c4ghTicket(t, dir, http.MethodPost, fmt.Sprintf("%s/%s/%s", s.base, c.endpoint, c.id), []byte(body), pub, sk, out)
			checkRegionFile(t, dir, c.regionCase, out, "chr1:100000-100010")
			checkRegionFile(t, dir, c.regionCase, out, "chr2:5000-9000")
		})
	}
	// stream=true: a region's parts in one response, for the key in the
	// query, as pasted from a key file (no header).
	c := htsgetCases(cases)[0]
	u := fmt.Sprintf("%s/reads/reads?%s&publicKey=%s&stream=true", s.base, htsgetQuery(serveRegions[1], "encryptionScheme", "C4GH"), base64Std(sk.Public()))
	body, status := fetchPart(t, htsget.URL{URL: u})
	if status != http.StatusOK {
		t.Fatalf("stream=true: %d %s", status, body)
	}
	os.WriteFile(filepath.Join(dir, "stream.bam.c4gh"), body, 0o600)
	mustRun(t, dir, "decrypt", "--sk", "them.sec", "-i", "stream.bam.c4gh", "-o", "stream.bam")
	checkRegionFile(t, dir, c.regionCase, "stream.bam", serveRegions[1])

	// The whole file, and the header alone, for the bare key.
	bare := []byte(base64Std(sk.Public()))
	c4ghTicket(t, dir, http.MethodGet, s.base+"/reads/reads?encryptionScheme=C4GH", nil, bare, sk, "whole.bam")
	want, _ := os.ReadFile(filepath.Join(dir, "reads.bam"))
	if got, _ := os.ReadFile(filepath.Join(dir, "whole.bam")); !bytes.Equal(got, want) {
		t.Errorf("the whole file: %d bytes, want the %d of the original", len(got), len(want))
	}
	c4ghTicket(t, dir, http.MethodGet, s.base+"/reads/reads?class=header&encryptionScheme=C4GH", nil, pub, sk, "header.bam")
	if h, want := c.head(t, dir, "header.bam"), c.head(t, dir, "reads.bam"); h != want {
		t.Errorf("class=header: the header differs:\n%s\nwant\n%s", h, want)
	}
}

// oracleEditListBug reports whether the other implementation is known to
// misread file (internal/difftest's theirEditListBug): its edit list ends
// on a keep and adds up to the end of a segment or of the body, when the
// oracle returns the bytes after it too.
func oracleEditListBug(t *testing.T, file []byte, sk *keys.SecretKey) bool {
	t.Helper()
	h, err := header.Parse(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	c, err := h.Decrypt(sk, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Zero()
	n, err := body.PlaintextSize(int64(len(file)) - h.Size())
	if err != nil {
		t.Fatal(err)
	}
	el := c.EditList
	if len(el) == 0 || len(el)%2 == 1 {
		return false
	}
	var sum uint64
	for _, k := range el {
		sum += k
	}
	return sum > 0 && sum <= uint64(n) && (sum == uint64(n) || sum%body.SegmentSize == 0)
}

func base64Std(pk keys.PublicKey) string { return base64.StdEncoding.EncodeToString(pk[:]) }

// smallBAM makes reads.bam (with its index) in dir, encrypted for me.pub
// (made there too) as reads.bam.c4gh.
func smallBAM(t *testing.T, dir string) {
	t.Helper()
	writeSAM(t, dir, 3000)
	tool(t, dir, "samtools", "sort", "-o", "reads.bam", "reads.sam")
	tool(t, dir, "samtools", "index", "reads.bam")
	mustRun(t, dir, "keygen", "--sk", "me.sec", "--pk", "me.pub", "--nocrypt")
	mustRun(t, dir, "encrypt", "--recipient_pk", "me.pub", "-i", "reads.bam", "-o", "reads.bam.c4gh")
}

// rawGet sends a GET of path exactly as given (no cleaning, no
// escaping) and returns the status and the body.
func rawGet(t *testing.T, base, path string, header map[string]string) (int, string) {
	t.Helper()
	u, err := neturl.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodGet, base, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.URL = &neturl.URL{Scheme: u.Scheme, Host: u.Host, Opaque: "//" + u.Host + path}
	resp := serveDo(t, req, header)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestServeRefusals: what a server is not configured for gets the
// protocol's error and status, and nothing outside SOURCE is read or
// served, however the path is spelled.
func TestServeRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	smallBAM(t, dir)
	_, pub := themKey(t, dir)
	src := filepath.Join(dir, "src")
	for _, d := range []string{"src/sub", "src/sub/deeper"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"src/reads.bam.c4gh", "src/sub/x.bam.c4gh", "secret.bam.c4gh"} {
		if err := os.Link(filepath.Join(dir, "reads.bam.c4gh"), filepath.Join(dir, p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(filepath.Join(dir, "reads.bam.bai"), filepath.Join(src, "reads.bam.bai")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../secret.bam.c4gh", filepath.Join(src, "link.bam.c4gh")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir, filepath.Join(src, "sub", "out")); err != nil {
		t.Fatal(err)
	}
	// A named pipe that nobody writes: opening it must not hold the
	// request.
	makeFIFO(t, filepath.Join(src, "pipe.bam.c4gh"))
	if err := os.WriteFile(filepath.Join(dir, "tokens"), []byte("# the tokens\ns3cr3t-token\n\nsecond-t0ken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, dir, "--sk", "me.sec", "--token-file", "tokens", "src")
	auth := map[string]string{"Authorization": "Bearer s3cr3t-token", htsget.PublicKeyHeader: string(pub)}
	c4gh := "?encryptionScheme=C4GH"
	for _, c := range []struct {
		what, path string
		header     map[string]string
		status     int
		code       string
	}{
		{"no token", "/reads/reads" + c4gh, map[string]string{htsget.PublicKeyHeader: string(pub)}, 401, htsget.InvalidAuthentication},
		{"a wrong token", "/reads/reads" + c4gh, map[string]string{"Authorization": "Bearer s3cr3t-tokeN", htsget.PublicKeyHeader: string(pub)}, 401, htsget.InvalidAuthentication},
		{"a token's prefix", "/reads/reads" + c4gh, map[string]string{"Authorization": "Bearer s3cr3t", htsget.PublicKeyHeader: string(pub)}, 401, htsget.InvalidAuthentication},
		{"the comment as a token", "/reads/reads" + c4gh, map[string]string{"Authorization": "Bearer # the tokens", htsget.PublicKeyHeader: string(pub)}, 401, htsget.InvalidAuthentication},
		{"plaintext from a C4GH-only server", "/reads/reads", auth, 403, htsget.PermissionDenied},
		{"no key header", "/reads/reads" + c4gh, map[string]string{"Authorization": "Bearer second-t0ken"}, 400, htsget.InvalidInput},
		{"a key header that is not a key", "/reads/reads" + c4gh, map[string]string{"Authorization": "Bearer second-t0ken", htsget.AltPublicKeyHeader: "bm90IGEga2V5"}, 400, htsget.InvalidInput},
		{"a key header of a low-order point", "/reads/reads" + c4gh, map[string]string{"Authorization": "Bearer second-t0ken", htsget.PublicKeyHeader: base64Std(keys.PublicKey{})}, 400, htsget.InvalidInput},
		{"a key header of another low-order point", "/reads/reads" + c4gh, map[string]string{"Authorization": "Bearer second-t0ken", htsget.PublicKeyHeader: base64Std(keys.PublicKey{1})}, 400, htsget.InvalidInput},
		{"an unknown id", "/reads/nothere" + c4gh, auth, 404, htsget.NotFound},
		{"an unknown reference", "/reads/reads" + c4gh + "&referenceName=chrX", auth, 400, htsget.InvalidRange},
		{"start after end", "/reads/reads" + c4gh + "&referenceName=chr1&start=10&end=5", auth, 400, htsget.InvalidRange},
		{"an unknown format", "/reads/reads" + c4gh + "&format=VCF", auth, 400, htsget.UnsupportedFormat},
		{"no index", "/reads/sub/x" + c4gh + "&referenceName=chr1", auth, 404, htsget.NotFound},
		{"..", "/reads/../secret" + c4gh, auth, 400, htsget.InvalidInput},
		{"sub/../..", "/reads/sub/../../secret" + c4gh, auth, 400, htsget.InvalidInput},
		{"encoded dots", "/reads/%2e%2e/secret" + c4gh, auth, 400, htsget.InvalidInput},
		{"encoded slashes", "/reads/sub%2F..%2F..%2Fsecret" + c4gh, auth, 400, htsget.InvalidInput},
		{"an encoded slash in a name that exists", "/reads/sub%2fx" + c4gh, auth, 400, htsget.InvalidInput},
		{"an absolute path", "/reads//" + strings.TrimPrefix(dir, "/") + "/secret" + c4gh, auth, 400, htsget.InvalidInput},
		{"a symbolic link out of SOURCE", "/reads/link" + c4gh, auth, 404, htsget.NotFound},
		{"a folder link out of SOURCE", "/reads/sub/out/secret" + c4gh, auth, 404, htsget.NotFound},
		{"a named pipe", "/reads/pipe" + c4gh, auth, 404, htsget.NotFound},
		{"a forged data URL", "/data/c4gh/reads.bam.c4gh?s=0&e=100&x=9999999999&t=AAAA", nil, 403, htsget.PermissionDenied},
		{"a data URL out of SOURCE", "/data/c4gh/../secret.bam.c4gh?s=0&e=100&x=9999999999&t=AAAA", nil, 400, htsget.InvalidInput},
		{"an unknown endpoint", "/other/reads", auth, 404, htsget.NotFound},
	} {
		status, body := rawGet(t, s.base, c.path, c.header)
		e := htsget.ReadError(status, strings.NewReader(body))
		if status != c.status || e.Code != c.code {
			t.Errorf("%s (%s): %d %s, want %d %s", c.what, c.path, status, body, c.status, c.code)
		}
	}
	// A listed token and a key: a ticket, for a subfolder too; the
	// service-info needs no token.
	for _, p := range []string{"/reads/reads" + c4gh + "&referenceName=chr1", "/reads/sub/x" + c4gh, "/reads/service-info"} {
		h := auth
		if strings.HasSuffix(p, "service-info") {
			h = nil
		}
		if status, body := rawGet(t, s.base, p, h); status != 200 {
			t.Errorf("%s: %d %s", p, status, body)
		}
	}
	// The scheme's name in any case, as RFC 9110 has it.
	if status, body := rawGet(t, s.base, "/reads/reads"+c4gh, map[string]string{"Authorization": "bearer s3cr3t-token", htsget.PublicKeyHeader: string(pub)}); status != 200 {
		t.Errorf("a lower-case bearer: %d %s", status, body)
	}
	// Too many regions at once.
	var many []string
	for i := range 1025 {
		many = append(many, fmt.Sprintf(`{"referenceName":"chr1","start":%d,"end":%d}`, i*100, i*100+50))
	}
	if _, he := getTicket(t, http.MethodPost, s.base+"/reads/reads"+c4gh, []byte(`{"regions":[`+strings.Join(many, ",")+`]}`), auth); he == nil || he.Status != 413 || he.Code != htsget.PayloadTooLarge {
		t.Errorf("1025 regions: %v, want 413 PayloadTooLarge", he)
	}
	big := append([]byte(`{"regions":[],"x":"`), bytes.Repeat([]byte("a"), 2<<20)...)
	if _, he := getTicket(t, http.MethodPost, s.base+"/reads/reads"+c4gh, append(big, `"}`...), auth); he == nil || he.Status != 413 {
		t.Errorf("a 2 MiB request: %v, want 413", he)
	}
	// A data URL gives its file and its range only.
	tk, he := getTicket(t, http.MethodGet, s.base+"/reads/reads"+c4gh+"&referenceName=chr1&start=1000&end=2000", nil, auth)
	if he != nil {
		t.Fatal(he)
	}
	var part htsget.URL
	for _, u := range tk.URLs {
		if strings.Contains(u.URL, "/data/") && part.URL == "" {
			part = u
		}
	}
	for _, forged := range []string{
		strings.Replace(part.URL, "/reads.bam.c4gh?", "/sub/x.bam.c4gh?", 1),
		strings.Replace(part.URL, "/data/c4gh/", "/data/plain/", 1),
		regexp.MustCompile(`e=\d+`).ReplaceAllString(part.URL, "e=99999999"),
	} {
		if b, status := fetchPart(t, htsget.URL{URL: forged}); status != 403 {
			t.Errorf("forged %s: %d %s", forged, status, b)
		}
	}
	whole, status := fetchPart(t, htsget.URL{URL: part.URL})
	if status != 200 || len(whole) == 0 {
		t.Fatalf("the data URL: %d, %d bytes", status, len(whole))
	}
	req, err := http.NewRequest(http.MethodGet, part.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp := serveDo(t, req, map[string]string{"Range": "bytes=0-99999999"})
	resp.Body.Close()
	fi, _ := os.Stat(filepath.Join(src, "reads.bam.c4gh"))
	if cr := resp.Header.Get("Content-Range"); resp.StatusCode != 416 || cr != fmt.Sprintf("bytes */%d", fi.Size()) {
		t.Errorf("a range past the grant: %d, Content-Range %q, want 416 and the file's length %d", resp.StatusCode, cr, fi.Size())
	}
	// RFC 9110: a range of another unit is ignored, and several ranges
	// may be: the whole grant is sent.
	for _, rg := range []string{"items=0-1", "bytes=0-0,5-9"} {
		if b, status := fetchPart(t, htsget.URL{URL: part.URL, Headers: map[string]string{"Range": rg}}); status != 200 || !bytes.Equal(b, whole) {
			t.Errorf("Range: %s: %d, %d bytes, want 200 and the grant's %d", rg, status, len(b), len(whole))
		}
	}
	// A data URL is of the file the ticket read: one put in its place
	// since, of the same size and time (as cp -p, rsync -a or tar leave
	// it), is refused.
	tk, he = getTicket(t, http.MethodGet, s.base+"/reads/sub/x"+c4gh, nil, auth)
	if he != nil {
		t.Fatal(he)
	}
	x := filepath.Join(src, "sub", "x.bam.c4gh")
	before, _ := os.Stat(x)
	mustRun(t, dir, "encrypt", "--recipient_pk", "me.pub", "-i", "reads.bam", "-o", "replaced.c4gh")
	if after, _ := os.Stat(filepath.Join(dir, "replaced.c4gh")); after.Size() != before.Size() {
		t.Fatalf("the replacement is of %d bytes, not %d", after.Size(), before.Size())
	}
	os.Chtimes(filepath.Join(dir, "replaced.c4gh"), time.Now(), before.ModTime())
	if err := os.Rename(filepath.Join(dir, "replaced.c4gh"), x); err != nil {
		t.Fatal(err)
	}
	for _, u := range tk.URLs {
		if strings.HasPrefix(u.URL, "http") {
			b, status := fetchPart(t, u)
			if e := htsget.ReadError(status, bytes.NewReader(b)); status != 404 || !strings.Contains(e.Message, "changed since the ticket was made") {
				t.Errorf("a part of a file replaced since its ticket: %d %.200q", status, b)
			}
		}
	}
	// Tokens and keys never reach the log.
	if log := s.stderr(); strings.Contains(log, "s3cr3t") || strings.Contains(log, string(pub)) || strings.Contains(log, "t0ken") {
		t.Errorf("the log shows a token or a key:\n%s", log)
	}
	if !strings.Contains(s.stderr(), "Crypt4GH tickets of") || strings.Contains(s.stderr(), "plaintext tickets") {
		t.Errorf("the start line:\n%s", s.stderr())
	}
}

// TestServeUsage: bad flags and sources are usage errors, before
// anything listens.
func TestServeUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustRun(t, dir, "keygen", "--sk", "me.sec", "--pk", "me.pub", "--nocrypt")
	os.WriteFile(filepath.Join(dir, "empty"), []byte("# none\n\n"), 0o600)
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"serve", "--sk", "me.sec"}, exitUsage, "serve needs SOURCE"},
		{[]string{"serve", "--sk", "me.sec", "nothere"}, exitUsage, "nothere"},
		{[]string{"serve", "--sk", "me.sec", "me.pub"}, exitUsage, "is not a folder"},
		{[]string{"serve", "--sk", "me.sec", "--tls-cert", "c.pem", "."}, exitUsage, "--tls-cert and --tls-key go together"},
		{[]string{"serve", "--sk", "me.sec", "--token-file", "empty", "."}, exitUsage, "lists no token"},
		{[]string{"serve", "--sk", "me.sec", "--token-file", "nothere", "."}, exitUsage, "--token-file"},
		{[]string{"serve", "--sk", "me.sec", "--listen", "8080", "."}, exitUsage, "not HOST:PORT"},
		{[]string{"serve", "--sk", "me.sec", "s3://bucket/key"}, exitUsage, "end a prefix with /"},
		{[]string{"serve", "--sk", "me.sec", "--presign", "."}, exitUsage, "--presign is for an s3:// SOURCE"},
		{[]string{"serve", "--sk", "me.pub", "."}, exitKey, ""},
		// A certificate that is not there is found before the start line.
		{[]string{"serve", "--sk", "me.sec", "--listen", "127.0.0.1:0", "--tls-cert", "nothere.pem", "--tls-key", "nothere.key", "."}, exitUsage, "nothere.pem"},
		{[]string{"serve", "--sk", "me.sec", "--listen", "127.0.0.1:0", "--tls-cert", "empty", "--tls-key", "empty", "."}, exitUsage, "--tls-cert"},
	} {
		code, _, stderr := runAt(t, dir, c.args...)
		if code != c.code || !strings.Contains(stderr, c.msg) || strings.Contains(stderr, "serving") {
			t.Errorf("%v: exit %d, %q; want %d and %q", c.args, code, stderr, c.code, c.msg)
		}
	}
}

// TestServeSignals: SIGHUP and SIGQUIT stop the server as SIGTERM does,
// with 128+N and its last line; SIGQUIT dumped the goroutines into the
// log with exit 2, and SIGHUP ended it without a word.
func TestServeSignals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	smallBAM(t, dir)
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGINT} {
		s := startServe(t, dir, "--sk", "me.sec", ".")
		if err := s.cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		select {
		case <-s.done:
		case <-time.After(20 * time.Second):
			t.Fatalf("serve did not stop on %v", sig)
		}
		if s.code != 128+int(sig) || !strings.Contains(s.stderr(), "stopped serving") || strings.Contains(s.stderr(), "goroutine") {
			t.Errorf("%v: exit %d:\n%s", sig, s.code, s.stderr())
		}
	}
}

// TestServeS3: a bucket prefix served as a folder is: samtools reads a
// region through a plaintext ticket, and a Crypt4GH ticket decrypts to
// the same records; ids with slashes are keys under the prefix, and
// nothing outside the prefix is served.
func TestServeS3(t *testing.T) {
	e := newS3Env(t)
	writeSAM(t, e.dir, 3000)
	tool(t, e.dir, "samtools", "sort", "-o", "reads.bam", "reads.sam")
	tool(t, e.dir, "samtools", "index", "reads.bam")
	e.must(t, "encrypt", "--recipient_pk", "me.pub", "-i", "reads.bam", "-o", "reads.bam.c4gh")
	e.must(t, "encrypt", "--recipient_pk", "me.pub", "-i", "reads.bam.bai", "-o", "reads.bam.bai.c4gh")
	for _, k := range []string{"archive/runs/reads.bam.c4gh", "archive/runs/reads.bam.bai.c4gh", "other/reads.bam.c4gh"} {
		e.put(t, k, e.read(t, filepath.Base(k)))
	}
	sk, pub := themKey(t, e.dir)
	s := startServe(t, e.dir, "--sk", "me.sec", "--plaintext", "s3://"+testBucket+"/archive/")
	const region = "chr1:100000-150000"
	c := regionCase{name: "reads.bam", index: "reads.bam.bai", count: samCount, head: samHeader, index2: samIndex}
	tool(t, e.dir, "samtools", "view", "--no-PG", "-b", "-o", "s3.bam", s.base+"/reads/runs/reads?"+htsgetQuery(region))
	checkRegionFile(t, e.dir, c, "s3.bam", region)
	c4ghTicket(t, e.dir, http.MethodGet, s.base+"/reads/runs/reads?"+htsgetQuery(region, "encryptionScheme", "C4GH"), nil, pub, sk, "s3c4gh.bam")
	checkRegionFile(t, e.dir, c, "s3c4gh.bam", region)
	for _, p := range []string{"/reads/../other/reads", "/reads/runs%2F..%2F..%2Fother%2Freads", "/reads/reads"} {
		if status, body := rawGet(t, s.base, p, nil); status != 400 && status != 404 {
			t.Errorf("%s: %d %s", p, status, body)
		}
	}

	// With --presign the stored ranges are presigned URLs of the object:
	// the requester reads the bucket, not the server.
	p := startServe(t, e.dir, "--sk", "me.sec", "--presign", "s3://"+testBucket+"/archive/")
	tk := c4ghTicket(t, e.dir, http.MethodGet, p.base+"/reads/runs/reads?"+htsgetQuery(region, "encryptionScheme", "C4GH"), nil, pub, sk, "presigned.bam")
	checkRegionFile(t, e.dir, c, "presigned.bam", region)
	for _, u := range tk.URLs {
		if !strings.HasPrefix(u.URL, "data:") && (!strings.HasPrefix(u.URL, e.px.Endpoint()) || !strings.Contains(u.URL, "X-Amz-Signature=")) {
			t.Errorf("not a presigned URL of the store: %s", u.URL)
		}
	}
	if strings.Contains(p.stderr(), "GET /data/") {
		t.Errorf("the server served data:\n%s", p.stderr())
	}
	// The presigned ranges are of the object the ticket read: one put in
	// its place since is refused by the store (If-Match).
	e.must(t, "encrypt", "--recipient_pk", "me.pub", "-i", "reads.bam", "-o", "again.c4gh")
	e.put(t, "archive/runs/reads.bam.c4gh", e.read(t, "again.c4gh"))
	for _, u := range tk.URLs {
		if strings.HasPrefix(u.URL, "http") {
			if u.Headers["If-Match"] == "" {
				t.Errorf("a presigned part without If-Match: %+v", u.Headers)
			}
			if b, status := fetchPart(t, u); status != http.StatusPreconditionFailed {
				t.Errorf("a presigned part of a replaced object: %d %.200q", status, b)
			}
		}
	}
}

// bigBAM writes big.bam.c4gh in dir: the small reads.bam followed by
// random bytes up to n bytes, a file whose header is a BAM's (a
// whole-file ticket reads no further), and returns its plaintext.
func bigBAM(t *testing.T, dir string, n int) []byte {
	t.Helper()
	small, err := os.ReadFile(filepath.Join(dir, "reads.bam"))
	if err != nil {
		t.Fatal(err)
	}
	plain := make([]byte, n)
	copy(plain, small)
	rand.NewChaCha8([32]byte{5}).Read(plain[len(small):])
	if err := os.WriteFile(filepath.Join(dir, "big.bam"), plain, 0o600); err != nil {
		t.Fatal(err)
	}
	mustRun(t, dir, "encrypt", "--recipient_pk", "me.pub", "-i", "big.bam", "-o", "big.bam.c4gh")
	os.Remove(filepath.Join(dir, "big.bam"))
	return plain
}

// download fetches the parts of tk with a reader that takes at most
// rate bytes a second (0: no limit) and returns the SHA-256 of the
// concatenation and its length.
func download(tk *htsget.Ticket, rate int, got *atomic.Int64) ([32]byte, int64, error) {
	h := sha256.New()
	var n int64
	for _, u := range tk.URLs {
		if strings.HasPrefix(u.URL, "data:") {
			b, err := htsget.DecodeDataURL(u.URL)
			if err != nil {
				return [32]byte{}, 0, err
			}
			h.Write(b)
			n += int64(len(b))
			continue
		}
		req, err := http.NewRequest(http.MethodGet, u.URL, nil)
		if err != nil {
			return [32]byte{}, 0, err
		}
		for k, v := range u.Headers {
			req.Header.Set(k, v)
		}
		resp, err := serveClient.Do(req)
		if err != nil {
			return [32]byte{}, 0, err
		}
		if resp.StatusCode != http.StatusPartialContent && resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return [32]byte{}, 0, fmt.Errorf("status %d", resp.StatusCode)
		}
		buf := make([]byte, 256<<10)
		for {
			k, err := resp.Body.Read(buf)
			h.Write(buf[:k])
			n += int64(k)
			got.Add(int64(k))
			if rate > 0 && k > 0 {
				time.Sleep(time.Duration(k) * time.Second / time.Duration(rate))
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				resp.Body.Close()
				return [32]byte{}, n, err
			}
		}
		resp.Body.Close()
	}
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return sum, n, nil
}

// serveRSSLimit bounds the server's peak resident memory under load: 128
// MiB, as the issue asks, and three times that in a -race build (the
// server is this test binary), whose shadow memory and slower collector
// take more (139 MiB for the load test and 260–267 MiB for the ticket
// tests in CI runs; the 128 MiB bound holds without -race).
var serveRSSLimit int64 = map[bool]int64{false: 128 << 20, true: 384 << 20}[raceEnabled]

// serverRSS is the peak resident memory of the serve process s.
func serverRSS(t *testing.T, s *served) int64 {
	t.Helper()
	rss, err := vmHWM(s.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return rss
}

// vmHWM is the peak resident memory of the process pid in bytes, from
// the VmHWM line of its /proc status.
func vmHWM(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	m := regexp.MustCompile(`VmHWM:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
	}
	kb, err := strconv.ParseInt(string(m[1]), 10, 64)
	return kb << 10, err
}

// TestServeLoad: 200 ticket requests, 20 at a time, and 20 downloads of
// 100 MiB at once (plaintext and Crypt4GH; 16 MiB unless clitest.AtScale)
// all succeed, with the right bytes, while the server's peak memory stays
// within 128 MiB.
func TestServeLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("a load test: 2 GiB over loopback")
	}
	t.Parallel()
	dir := t.TempDir()
	smallBAM(t, dir)
	_, pub := themKey(t, dir)
	plain := bigBAM(t, dir, clitest.Size(100, 16)<<20)
	stored, err := os.ReadFile(filepath.Join(dir, "big.bam.c4gh"))
	if err != nil {
		t.Fatal(err)
	}
	s := startServe(t, dir, "--sk", "me.sec", "--plaintext", ".")
	key := map[string]string{htsget.PublicKeyHeader: string(pub)}

	var wg sync.WaitGroup
	errs := make(chan error, 400)
	sem := make(chan struct{}, 20)
	for i := range 200 {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			q := htsgetQuery(fmt.Sprintf("chr%d:%d-%d", 1+i%2, 1000*i+1, 1000*i+5000))
			if i%2 == 0 {
				q += "&encryptionScheme=C4GH"
			}
			req, _ := http.NewRequest(http.MethodGet, s.base+"/reads/reads?"+q, nil)
			req.Header.Set(htsget.PublicKeyHeader, string(pub))
			resp, err := serveClient.Do(req)
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			if _, err := htsget.ReadTicket(resp.Body); resp.StatusCode != 200 || err != nil {
				errs <- fmt.Errorf("ticket %d: status %d, %v", i, resp.StatusCode, err)
			}
		}()
	}
	wg.Wait()

	plainTicket, he := getTicket(t, http.MethodGet, s.base+"/reads/big", nil, nil)
	if he != nil {
		t.Fatal(he)
	}
	c4ghTk, he := getTicket(t, http.MethodGet, s.base+"/reads/big?encryptionScheme=C4GH", nil, key)
	if he != nil {
		t.Fatal(he)
	}
	// What the Crypt4GH ticket's ranges of the stored file hold.
	var c4ghWant []byte
	for _, u := range c4ghTk.URLs {
		if !strings.HasPrefix(u.URL, "data:") {
			var a, b int64
			fmt.Sscanf(u.Headers["Range"], "bytes=%d-%d", &a, &b)
			c4ghWant = append(c4ghWant, stored[a:b+1]...)
		} else {
			d, _ := htsget.DecodeDataURL(u.URL)
			c4ghWant = append(c4ghWant, d...)
		}
	}
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tk, want := plainTicket, plain
			if i%2 == 1 {
				tk, want = c4ghTk, c4ghWant
			}
			sum, n, err := download(tk, 0, new(atomic.Int64))
			if err != nil {
				errs <- fmt.Errorf("download %d: %v", i, err)
			} else if sum != sha256.Sum256(want) {
				errs <- fmt.Errorf("download %d: %d bytes, not the %d of the file", i, n, len(want))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	rss, err := vmHWM(s.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if rss > serveRSSLimit {
		t.Errorf("the server's peak RSS is %d MiB, more than %d MiB", rss>>20, serveRSSLimit>>20)
	} else {
		t.Logf("the server's peak RSS: %d MiB", rss>>20)
	}
}

// TestServeSIGTERM: SIGTERM during downloads stops the server from
// taking new requests, lets the downloads finish whole, then ends the
// command with 143.
func TestServeSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("downloads of 16 MiB at a few MiB a second")
	}
	t.Parallel()
	dir := t.TempDir()
	smallBAM(t, dir)
	plain := bigBAM(t, dir, 16<<20)
	s := startServe(t, dir, "--sk", "me.sec", "--plaintext", ".")
	tk, he := getTicket(t, http.MethodGet, s.base+"/reads/big", nil, nil)
	if he != nil {
		t.Fatal(he)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	var got [4]atomic.Int64
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sum, n, err := download(tk, 8<<20, &got[i]) // about 2 s
			if err != nil {
				errs <- fmt.Errorf("download %d: %v after %d bytes", i, err, n)
			} else if sum != sha256.Sum256(plain) {
				errs <- fmt.Errorf("download %d: %d bytes, not the file", i, n)
			}
		}()
	}
	// Signal once every download is under way.
	for i := range got {
		for got[i].Load() < 1<<20 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop after the downloads")
	}
	if s.code != 128+int(syscall.SIGTERM) || !strings.Contains(s.stderr(), "stopped serving") {
		t.Errorf("exit %d:\n%s", s.code, s.stderr())
	}
	if n := strings.Count(s.stderr(), "GET /data/plain/big.bam.c4gh 206 16777216B "); n != 4 {
		t.Errorf("%d whole downloads logged, want 4:\n%s", n, s.stderr())
	}
}

// TestServeSecondSIGTERM: a second SIGTERM after the first cuts off the
// downloads that the first let go on, and ends the command.
func TestServeSecondSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("a download of 16 MiB at 1 MiB a second, cut off")
	}
	t.Parallel()
	dir := t.TempDir()
	smallBAM(t, dir)
	bigBAM(t, dir, 16<<20)
	s := startServe(t, dir, "--sk", "me.sec", "--plaintext", ".")
	tk, he := getTicket(t, http.MethodGet, s.base+"/reads/big", nil, nil)
	if he != nil {
		t.Fatal(he)
	}
	var got atomic.Int64
	errs := make(chan error, 1)
	go func() {
		_, n, err := download(tk, 1<<20, &got) // 16 s whole
		if err == nil {
			err = fmt.Errorf("the download of %d bytes finished", n)
		}
		errs <- err
	}()
	for got.Load() < 1<<20 {
		time.Sleep(10 * time.Millisecond)
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
		t.Fatalf("serve stopped on the first SIGTERM during a download:\n%s", s.stderr())
	case <-time.After(500 * time.Millisecond):
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		t.Fatalf("serve still runs 5 s after a second SIGTERM:\n%s", s.stderr())
	}
	if err := <-errs; strings.Contains(err.Error(), "finished") {
		t.Error(err)
	}
	if s.code != 128+int(syscall.SIGTERM) || !strings.Contains(s.stderr(), "shutdown forced") {
		t.Errorf("exit %d:\n%s", s.code, s.stderr())
	}
}

// TestServeTLS: with --tls-cert and --tls-key the server speaks HTTPS
// only, and the data URLs of its tickets are https URLs.
func TestServeTLS(t *testing.T) {
	t.Setenv(secretKeyEnv, "")
	t.Setenv(passphraseEnv, "")
	dir := t.TempDir()
	smallBAM(t, dir)
	sk, pub := themKey(t, dir)
	priv, err := ecdsa.GenerateKey(elliptic.P256(), cryptorand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(cryptorand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "cert.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(filepath.Join(dir, "key.pem"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	serveClient = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	t.Cleanup(func() { serveClient = http.DefaultClient })

	s := startServe(t, dir, "--sk", "me.sec", "--tls-cert", "cert.pem", "--tls-key", "key.pem", ".")
	if !strings.HasPrefix(s.base, "https://") {
		t.Fatalf("the start line names %s", s.base)
	}
	const region = "chr1:1000-90000"
	tk := c4ghTicket(t, dir, http.MethodGet, s.base+"/reads/reads?"+htsgetQuery(region, "encryptionScheme", "C4GH"), nil, pub, sk, "tls.bam")
	for _, u := range tk.URLs {
		if !strings.HasPrefix(u.URL, "data:") && !strings.HasPrefix(u.URL, "https://127.0.0.1") {
			t.Errorf("a data URL of an HTTPS server: %s", u.URL)
		}
	}
	checkRegionFile(t, dir, regionCase{name: "reads.bam", index: "reads.bam.bai", count: samCount, head: samHeader, index2: samIndex}, "tls.bam", region)
	// The htsget command, which trusts the system's authorities only:
	// refused at once (not tried again), with a hint, and no output.
	code, _, stderr := runAt(t, dir, "htsget", "--sk", "me.sec", "--region", region, "-o", "untrusted.bam", s.base+"/reads/reads")
	if code != exitError || !strings.Contains(stderr, "certificate") || !strings.Contains(stderr, "SSL_CERT_FILE") || strings.Contains(stderr, "attempts") {
		t.Errorf("htsget of a server not trusted: exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "untrusted.bam")); err == nil {
		t.Error("htsget of a server not trusted left an output")
	}
	// Plain HTTP gets nothing.
	if resp, err := http.Get("http" + strings.TrimPrefix(s.base, "https") + "/reads/service-info"); err == nil {
		if resp.StatusCode == 200 {
			t.Error("plain HTTP to an HTTPS server got 200")
		}
		resp.Body.Close()
	}
}

// TestServeInstances: two instances with the same key and folder serve
// each other's tickets (the parts of a ticket from one, fetched from the
// other, decrypt to the region), while an instance with another key
// refuses them.
func TestServeInstances(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	smallBAM(t, dir)
	_, pub := themKey(t, dir)
	mustRun(t, dir, "keygen", "--sk", "other.sec", "--pk", "other.pub", "--nocrypt")
	a := startServe(t, dir, "--sk", "me.sec", "--plaintext", ".")
	b := startServe(t, dir, "--sk", "me.sec", "--plaintext", ".")
	other := startServe(t, dir, "--sk", "other.sec", "--plaintext", ".")
	const region = "chr1:20000-120000"
	c := regionCase{name: "reads.bam", index: "reads.bam.bai", count: samCount, head: samHeader, index2: samIndex}
	for _, q := range []string{htsgetQuery(region, "encryptionScheme", "C4GH"), htsgetQuery(region)} {
		tk, he := getTicket(t, http.MethodGet, a.base+"/reads/reads?"+q, nil, map[string]string{htsget.PublicKeyHeader: string(pub)})
		if he != nil {
			t.Fatal(he)
		}
		moved := func(base string) *htsget.Ticket {
			m := &htsget.Ticket{Format: tk.Format}
			for _, u := range tk.URLs {
				u.URL = strings.Replace(u.URL, a.base, base, 1)
				m.URLs = append(m.URLs, u)
			}
			return m
		}
		got := fetchTicket(t, moved(b.base))
		out := "moved.bam"
		if strings.Contains(q, "C4GH") {
			os.WriteFile(filepath.Join(dir, out+".c4gh"), got, 0o600)
			mustRun(t, dir, "decrypt", "--sk", "them.sec", "-i", out+".c4gh", "-o", out, "-f")
		} else {
			os.WriteFile(filepath.Join(dir, out), got, 0o600)
		}
		checkRegionFile(t, dir, c, out, region)
		for _, u := range moved(other.base).URLs {
			if strings.HasPrefix(u.URL, "http") {
				if body, status := fetchPart(t, u); status != http.StatusForbidden {
					t.Errorf("another key's instance: %d %s", status, body)
				}
			}
		}
	}
}

// TestServeRegionTickets: tickets of many regions, whose data: URLs hold
// megabytes of blocks cut at the regions' edges, asked for 16 at once,
// all succeed while the server's peak memory stays within 128 MiB.
func TestServeRegionTickets(t *testing.T) {
	if testing.Short() {
		t.Skip("a load test: 16 tickets of megabytes")
	}
	t.Parallel()
	dir := t.TempDir()
	// Reads of 100 bases that cross no 16 kb bin: a region's chunks are
	// its own, and every region cuts blocks at its edges.
	const refLen, reads = 2000000, 150000
	r := rand.New(rand.NewPCG(3, 4))
	var pool []string
	for range 64 {
		b := make([]byte, 100)
		for i := range b {
			b[i] = "ACGT"[r.IntN(4)]
		}
		pool = append(pool, string(b))
	}
	var sam strings.Builder
	sam.WriteString("@HD\tVN:1.6\tSO:unsorted\n")
	for _, name := range []string{"chr1", "chr2"} {
		fmt.Fprintf(&sam, "@SQ\tSN:%s\tLN:%d\n", name, refLen)
	}
	for i := 0; i < reads; {
		at := r.IntN(refLen - 100)
		if at/16384 != (at+99)/16384 {
			continue
		}
		fmt.Fprintf(&sam, "r%d\t0\tchr%d\t%d\t60\t100M\t*\t0\t0\t%s\t%s\n", i, 1+i%2, at+1, pool[r.IntN(len(pool))], strings.Repeat("I", 100))
		i++
	}
	if err := os.WriteFile(filepath.Join(dir, "reads.sam"), []byte(sam.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	tool(t, dir, "samtools", "sort", "-o", "reads.bam", "reads.sam")
	tool(t, dir, "samtools", "index", "reads.bam")
	os.Remove(filepath.Join(dir, "reads.sam"))
	mustRun(t, dir, "keygen", "--sk", "me.sec", "--pk", "me.pub", "--nocrypt")
	mustRun(t, dir, "encrypt", "--recipient_pk", "me.pub", "-i", "reads.bam", "-o", "reads.bam.c4gh")
	_, pub := themKey(t, dir)
	s := startServe(t, dir, "--sk", "me.sec", ".")
	var regions []string
	for _, name := range []string{"chr1", "chr2"} {
		for at := 1000; at+4000 < refLen; at += 40000 {
			regions = append(regions, fmt.Sprintf(`{"referenceName":%q,"start":%d,"end":%d}`, name, at, at+4000))
		}
	}
	body := []byte(`{"regions":[` + strings.Join(regions, ",") + `]}`)
	u := s.base + "/reads/reads?encryptionScheme=C4GH"
	key := map[string]string{htsget.PublicKeyHeader: string(pub)}
	tk, he := getTicket(t, http.MethodPost, u, body, key)
	if he != nil {
		t.Fatal(he)
	}
	var size int
	for _, p := range tk.URLs {
		size += len(p.URL)
	}
	if size < 3<<20 {
		t.Fatalf("a ticket of %d regions is %d KiB: too small to load the server", len(regions), size>>10)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, u, bytes.NewReader(body))
			req.Header.Set(htsget.PublicKeyHeader, string(pub))
			resp, err := serveClient.Do(req)
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			if _, err := htsget.ReadTicket(resp.Body); resp.StatusCode != 200 || err != nil {
				errs <- fmt.Errorf("status %d, %v", resp.StatusCode, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if rss := serverRSS(t, s); rss > serveRSSLimit {
		t.Errorf("16 tickets of %d KiB: the server's peak RSS is %d MiB, more than %d MiB", size>>10, rss>>20, serveRSSLimit>>20)
	} else {
		t.Logf("16 tickets of %d KiB: the server's peak RSS is %d MiB", size>>10, rss>>20)
	}

	// 200 requests at once of almost 1 MiB of regions each (too many
	// for a ticket): those that wait hold no more than their connection.
	many := make([]string, 17000)
	for i := range many {
		many[i] = fmt.Sprintf(`{"referenceName":"chr1","start":%d,"end":%d}`, i, i+1)
	}
	flood := []byte(`{"regions":[` + strings.Join(many, ",") + `]}`)
	head := fmt.Sprintf("POST /reads/reads?encryptionScheme=C4GH HTTP/1.1\r\nHost: h\r\n%s: %s\r\nContent-Length: %d\r\n\r\n", htsget.PublicKeyHeader, pub, len(flood))
	statuses := make(chan string, 200)
	for range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", strings.TrimPrefix(s.base, "http://"))
			if err != nil {
				statuses <- err.Error()
				return
			}
			defer c.Close()
			// Each waits its turn for one of 16 places; under -race
			// and other tests, 200 of them took over a minute.
			c.SetDeadline(time.Now().Add(5 * time.Minute))
			if _, err := c.Write(append([]byte(head), flood...)); err != nil {
				statuses <- err.Error()
				return
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				statuses <- err.Error()
				return
			}
			defer resp.Body.Close()
			statuses <- fmt.Sprintf("%s %v", resp.Status, htsget.ReadError(resp.StatusCode, resp.Body))
		}()
	}
	floodStart := time.Now()
	wg.Wait()
	t.Logf("200 requests of 17000 regions answered in %v", time.Since(floodStart).Round(time.Millisecond))
	close(statuses)
	for st := range statuses {
		if !strings.HasPrefix(st, "413 ") {
			t.Errorf("a request of 17000 regions: %s, want 413", st)
			break
		}
	}
	if rss := serverRSS(t, s); rss > serveRSSLimit {
		t.Errorf("200 requests of 17000 regions at once: the server's peak RSS is %d MiB, more than %d MiB", rss>>20, serveRSSLimit>>20)
	}
}

// TestServeNoHost: a request without a host (HTTP/1.0, or an empty Host
// header) gets data URLs of the address it came in on, not URLs without
// a host ("http:///data/…").
func TestServeNoHost(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	smallBAM(t, dir)
	_, pub := themKey(t, dir)
	s := startServe(t, dir, "--sk", "me.sec", ".")
	addr := strings.TrimPrefix(s.base, "http://")
	for _, head := range []string{
		"GET /reads/reads?encryptionScheme=C4GH HTTP/1.1\r\nHost: \r\n",
		"GET /reads/reads?encryptionScheme=C4GH HTTP/1.0\r\n",
	} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(20 * time.Second))
		fmt.Fprintf(c, "%s%s: %s\r\nConnection: close\r\n\r\n", head, htsget.PublicKeyHeader, pub)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Htsget htsget.Ticket `json:"htsget"`
		}
		err = json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		c.Close()
		tk := got.Htsget
		if resp.StatusCode != http.StatusOK || err != nil || len(tk.URLs) == 0 {
			t.Fatalf("%q: %d, %v", head, resp.StatusCode, err)
		}
		for _, u := range tk.URLs {
			if !strings.HasPrefix(u.URL, "data:") && !strings.HasPrefix(u.URL, s.base+"/data/") {
				t.Errorf("%q: data URL %.60s…, want one of %s", head, u.URL, s.base)
			}
		}
	}
}
