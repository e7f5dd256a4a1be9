package cli

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/internal/objio"
	"github.com/c4gh-go/crypt4gh/internal/s3test"
	"github.com/c4gh-go/crypt4gh/keys"
	"github.com/c4gh-go/crypt4gh/objstore"
)

// shortIdle makes the requests of the command give up after 2 s without
// progress, for the tests that stall them.
func shortIdle(t *testing.T) {
	old := storeIdleTimeout
	storeIdleTimeout = 2 * time.Second
	t.Cleanup(func() { storeIdleTimeout = old })
}

// TestS3Faults runs encrypt to and decrypt from objects through a proxy
// that resets a connection in the middle of a part, stalls a response and
// answers a burst of 503s: the command succeeds and the bytes are right.
func TestS3Faults(t *testing.T) {
	e := newS3EnvParallel(t)
	e.shortIdle(t)
	plain := randomData(17*MiB, 11)
	e.write(t, "p", plain)
	check := func(t *testing.T, key string) {
		t.Helper()
		sameBytes(t, key, decryptBytes(t, e.get(t, key), e.sk), plain)
		e.must(t, "decrypt", "--sk", "me.sec", "--force", "-i", url(key), "-o", "back")
		sameBytes(t, "decrypted "+key, e.read(t, "back"), plain)
	}
	t.Run("reset during a part", func(t *testing.T) {
		e.px.Zero()
		e.px.ResetUpAfter(7 * MiB)
		e.must(t, "encrypt", "--recipient_pk", "me.pub", "-i", "p", "-o", url("reset.c4gh"))
		if e.px.Up() < int64(len(plain))+MiB {
			t.Errorf("%d bytes up for %d: the reset part was not sent again", e.px.Up(), len(plain))
		}
		check(t, "reset.c4gh")
	})
	t.Run("reset during a download", func(t *testing.T) {
		e.px.Zero()
		e.px.ResetDownAfter(9 * MiB)
		e.must(t, "decrypt", "--sk", "me.sec", "--force", "-i", url("reset.c4gh"), "-o", "back")
		sameBytes(t, "decrypted after a reset", e.read(t, "back"), plain)
	})
	t.Run("stalled response", func(t *testing.T) {
		e.px.Zero()
		e.px.StallDownAfter(5 * MiB)
		start := time.Now()
		e.must(t, "decrypt", "--sk", "me.sec", "--force", "-i", url("reset.c4gh"), "-o", "back")
		sameBytes(t, "decrypted after a stall", e.read(t, "back"), plain)
		t.Logf("stalled download done in %v", time.Since(start).Round(time.Millisecond))
	})
	t.Run("stalled answer to an upload", func(t *testing.T) {
		e.px.Zero()
		e.px.StallDownAfter(0)
		e.must(t, "encrypt", "--recipient_pk", "me.pub", "-i", "p", "-o", url("stall.c4gh"))
		check(t, "stall.c4gh")
	})
	t.Run("503s", func(t *testing.T) {
		e.px.Zero()
		e.px.Fail503(5)
		e.must(t, "encrypt", "--recipient_pk", "me.pub", "-i", "p", "-o", url("busy.c4gh"))
		e.px.Fail503(5)
		e.must(t, "decrypt", "--sk", "me.sec", "--force", "-i", url("busy.c4gh"), "-o", "back")
		sameBytes(t, "decrypted after 503s", e.read(t, "back"), plain)
		if n := countLines(e.px.Requests(), " "); n < 10 {
			t.Errorf("%d requests: the 503s were not retried", n)
		}
	})
	e.noUploads(t)
}

func countLines(lines []string, s string) int {
	n := 0
	for _, l := range lines {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

// pattern is a plaintext of n bytes whose every 8-byte word is its own
// offset, so that any range of it can be checked without keeping it.
type pattern struct{ off, n int64 }

func (p *pattern) Read(b []byte) (int, error) {
	if p.off >= p.n {
		return 0, io.EOF
	}
	m := 0
	for m < len(b) && p.off < p.n {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], uint64(p.off&^7))
		c := copy(b[m:], w[p.off&7:min(8, 8-(p.off&7)+p.n-p.off)])
		m += c
		p.off += int64(c)
	}
	return m, nil
}

// patternRange is bytes [start, end) of the pattern.
func patternRange(start, end int64) []byte {
	b := make([]byte, end-start)
	p := &pattern{off: start, n: end}
	io.ReadFull(p, b)
	return b
}

// putBig uploads a crypt4gh file of n pattern bytes for sk at key, from a
// file on disk, and returns its header size.
func (e *s3env) putBig(t *testing.T, key string, n int64, sk *keys.SecretKey) int64 {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "big.c4gh"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := c4gh.Encrypt(f, &pattern{n: n}, c4gh.EncryptOptions{Recipients: []keys.PublicKey{sk.Public()}}); err != nil {
		t.Fatal(err)
	}
	size, _ := f.Seek(0, io.SeekEnd)
	f.Seek(0, io.SeekStart)
	if _, err := e.sdk.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(testBucket), Key: &key, Body: f, ContentLength: aws.Int64(size)}); err != nil {
		t.Fatal(err)
	}
	return size - body.EncryptedSize(n)
}

// bodySum is the sha256 of the object at key from byte off on.
func (e *s3env) bodySum(t *testing.T, key string, off int64) string {
	t.Helper()
	out, err := e.sdk.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(testBucket), Key: &key, Range: aws.String(fmt.Sprintf("bytes=%d-", off))})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	h := sha256.New()
	if _, err := io.Copy(h, out.Body); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// TestS3Costs measures what goes through the client, at the proxy, for a
// 256 MiB object:
//
//   - decrypt --range of 1 MiB reads at most the head of the object
//     (headSize, one request), the segments the range touches, and one
//     read-ahead window of objstore.Object (1 MiB) past them, plus the
//     HTTP headers of the requests (4 KiB each at most);
//   - a rekey in place moves at most 6 MiB each way: the new header and
//     the 5 MiB that S3 needs of a first part; the rest is copied by the
//     server. The new recipient reads the object, the old one no longer
//     can (--trim), and the body is unchanged.
func TestS3Costs(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and uploads a 256 MiB object")
	}
	e := newS3EnvParallel(t)
	e.keygen(t, "bob")
	const size = 256 * MiB
	hsize := e.putBig(t, "big.c4gh", size, e.sk)
	bodyBefore := e.bodySum(t, "big.c4gh", hsize)

	const start, n = 100*MiB + 12345, 1 * MiB
	e.px.Zero()
	e.must(t, "decrypt", "--sk", "me.sec", "--range", fmt.Sprintf("%d-%d", start, start+n), "-i", url("big.c4gh"), "-o", "range")
	sameBytes(t, "--range", e.read(t, "range"), patternRange(start, start+n))
	touched := int64((start+n-1)/body.SegmentSize - start/body.SegmentSize + 1)
	requests := int64(len(e.px.Requests()))
	bound := int64(objio.HeadSize) + touched*body.EncryptedSegmentSize + objstore.ReadAheadSize + requests*4096
	t.Logf("decrypt --range of 1 MiB from 256 MiB: %d bytes down in %d requests (bound %d: head %d + %d segments + read-ahead %d + headers)",
		e.px.Down(), requests, bound, objio.HeadSize, touched, objstore.ReadAheadSize)
	if e.px.Down() > bound {
		t.Errorf("decrypt --range fetched %d bytes, more than %d", e.px.Down(), bound)
	}

	e.px.Zero()
	e.must(t, "reencrypt", "--sk", "me.sec", "--recipient_pk", "bob.pub", "--trim", "--drop-self", "--force", "-i", url("big.c4gh"), "-o", url("big.c4gh"))
	t.Logf("rekey in place of 256 MiB: %d bytes up, %d down, %d requests", e.px.Up(), e.px.Down(), len(e.px.Requests()))
	if e.px.Up() > 6*MiB || e.px.Down() > 6*MiB {
		t.Errorf("rekey in place moved %d bytes up and %d down", e.px.Up(), e.px.Down())
	}
	code, _, stderr := e.run(t, "decrypt", "--sk", "me.sec", "--range", "0-10", "-i", url("big.c4gh"), "-o", "old")
	if code != exitKey || !strings.Contains(stderr, "no packet") {
		t.Errorf("the old key after the rekey: exit %d\n%s", code, stderr)
	}
	e.must(t, "decrypt", "--sk", "bob.sec", "--range", fmt.Sprint(size-100000), "-i", url("big.c4gh"), "-o", "bob-end")
	sameBytes(t, "bob's end", e.read(t, "bob-end"), patternRange(size-100000, size))
	e.must(t, "decrypt", "--sk", "bob.sec", "--range", "0-70000", "-i", url("big.c4gh"), "-o", "bob-start")
	sameBytes(t, "bob's start", e.read(t, "bob-start"), patternRange(0, 70000))
	out, err := e.sdk.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(testBucket), Key: aws.String("big.c4gh"), Range: aws.String("bytes=0-65535")})
	if err != nil {
		t.Fatal(err)
	}
	nh, err := header.Parse(out.Body)
	out.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if got := e.bodySum(t, "big.c4gh", nh.Size()); got != bodyBefore {
		t.Error("the body changed in the rekey")
	}
	e.noUploads(t)
}

// TestS3SmallObjectCosts: rekeying a prefix of small objects in place,
// with a journal, costs one listing and three requests an object: the
// HEAD that opens it, one GET of its head, which holds all of it, and the
// PUT of the new object. The last segment's check, the journal's sum and
// the body of the new object come from the bytes of that GET; a bucket
// that keeps no versions is not asked whether it does.
func TestS3SmallObjectCosts(t *testing.T) {
	e := newS3EnvParallel(t)
	newSK := e.keygen(t, "new")
	plain := putMany(t, e, "small/", 5)
	e.px.Zero()
	rekey := []string{"reencrypt", "--sk", "me.sec", "--recipient_pk", "new.pub", "--drop-self", "--force", "-q", "--journal", "j"}
	e.must(t, append(rekey, url("small/"))...)
	count := map[string]int{}
	for _, r := range e.px.Requests() {
		method, target, _ := strings.Cut(r, " ")
		switch {
		case strings.Contains(target, "list-type="):
			count["list"]++
		case strings.Contains(target, "?") && !strings.Contains(target, "?x-id="):
			count["other"]++ // ?versioning, ?uploads, ?partNumber=
		default:
			count[method]++
		}
	}
	want := map[string]int{"list": 1, "HEAD": len(plain), "GET": len(plain), "PUT": len(plain)}
	if !maps.Equal(count, want) {
		t.Errorf("requests: %v, want %v\n%s", count, want, strings.Join(e.px.Requests(), "\n"))
	}
	for k, p := range plain {
		sameBytes(t, k, decryptBytes(t, e.get(t, k), newSK), p)
	}
	// Run again, the journal's sums (made of the cached bytes) are
	// those of the objects: nothing is rekeyed again.
	e.px.Zero()
	e.must(t, append(rekey, "--verify-journal", url("small/"))...)
	for _, r := range e.px.Requests() {
		if strings.HasPrefix(r, "PUT ") {
			t.Errorf("rerun with --verify-journal: %s", r)
		}
	}
}

// TestNoAnswer: a server that accepts connections and never answers gets
// a line on stderr while the command waits (at half the idle timeout, 30 s
// with the default one), then the command fails with exit 1 once the
// attempts are spent, naming the host; -q leaves the line out. The
// commands are processes of their own (storeEnv sets their timeout and
// attempts), so that their waits overlap each other and other tests.
func TestNoAnswer(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never answered
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	host := ln.Addr().String()
	for _, quiet := range []bool{false, true} {
		t.Run(fmt.Sprintf("quiet=%v", quiet), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			mustRun(t, dir, "keygen", "--sk", "me.sec", "--pk", "me.pub", "--nocrypt")
			args := []string{"decrypt", "--sk", "me.sec", "-i", "http://" + host + "/x.c4gh", "-o", "out"}
			if quiet {
				args = append(args, "-q")
			}
			exe, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(exe, args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), childEnv+"=1", storeEnv+"=2s,2")
			var stderr strings.Builder
			cmd.Stderr = &stderr
			start := time.Now()
			err = cmd.Run()
			took := time.Since(start)
			code := cmd.ProcessState.ExitCode()
			if _, ok := err.(*exec.ExitError); err != nil && !ok {
				t.Fatal(err)
			}
			if code != exitError || !strings.Contains(stderr.String(), host) {
				t.Errorf("%v: exit %d, want %d naming %s:\n%s", args, code, exitError, host, stderr.String())
			}
			notice := "crypt4gh: no answer from " + host + " in 1s yet; each attempt waits 2s for an answer, 2 attempts in all"
			if got := strings.Count(stderr.String(), notice); got != map[bool]int{false: 1, true: 0}[quiet] {
				t.Errorf("the notice %d times:\n%s", got, stderr.String())
			}
			if took > 20*time.Second {
				t.Errorf("the command waited %v", took)
			}
			if _, err := os.Stat(filepath.Join(dir, "out")); !os.IsNotExist(err) {
				t.Errorf("output left: %v", err)
			}
		})
	}
}

// TestS3RekeyDiedBeforeDone: a rekey in place whose run died after the
// commit and before its done line (simulated: the line taken out of the
// journal) is found done by the next run, from the header its start line
// noted, though the key dropped itself and opens the object no more. A
// header that is not the one noted is still an error of the key.
func TestS3RekeyDiedBeforeDone(t *testing.T) {
	e := newS3Env(t)
	newSK := e.keygen(t, "new")
	plain := map[string][]byte{}
	for i := range 3 {
		k := fmt.Sprintf("died/o%d.c4gh", i)
		plain[k] = randomData(3000, uint64(200+i))
		e.put(t, k, encryptBytes(t, plain[k], e.sk))
	}
	rekey := []string{"reencrypt", "--sk", "me.sec", "--recipient_pk", "new.pub", "--trim", "--drop-self", "--force", "--journal", "j", url("died/")}
	e.must(t, rekey...)
	jpath := filepath.Join(e.dir, "j")
	journal, err := os.ReadFile(jpath)
	if err != nil {
		t.Fatal(err)
	}
	lost := url("died/o1.c4gh")
	var kept []string
	for _, l := range strings.SplitAfter(string(journal), "\n") {
		if !strings.HasPrefix(l, `{"done":"`+lost+`"`) {
			kept = append(kept, l)
		}
	}
	if len(kept) != strings.Count(string(journal), "\n") {
		t.Fatalf("no done line of %s in\n%s", lost, journal)
	}
	os.WriteFile(jpath, []byte(strings.Join(kept, "")), 0o600)
	code, stdout, stderr := e.run(t, rekey...)
	if code != 0 || !strings.Contains(stdout, lost+": rekeyed (by the run that stopped before it noted it)") {
		t.Errorf("the run after: exit %d\n%s%s", code, stdout, stderr)
	}
	for k, p := range plain {
		sameBytes(t, k, decryptBytes(t, e.get(t, k), newSK), p)
	}
	if done, _ := journalLines(t, jpath); done[lost] != 1 {
		t.Errorf("%s done %d times in the journal", lost, done[lost])
	}
	if code, _, stderr := e.run(t, rekey...); code != 0 || !strings.Contains(stderr, "0 ok, 3 done before") {
		t.Errorf("a third run: exit %d\n%s", code, stderr)
	}
	// Another header than the one noted: not this tool's commit.
	e.put(t, "died/o1.c4gh", encryptBytes(t, plain["died/o1.c4gh"], newSK))
	os.WriteFile(jpath, []byte(strings.Join(kept, "")), 0o600)
	if code, _, stderr := e.run(t, rekey...); code != exitKey || !strings.Contains(stderr, "o1.c4gh") {
		t.Errorf("another header: exit %d\n%s", code, stderr)
	}
}

// TestNotAnS3Store: an endpoint that answers 200 with nothing to every
// request (a web server, a captive portal) has not stored an object: a
// write it "accepts" fails, exit 1, instead of exit 0 with nothing stored.
func TestNotAnS3Store(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	s3test.IsolateEnv(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "notasecret")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ENDPOINT_URL_S3", srv.URL)
	dir := t.TempDir()
	mustRun(t, dir, "keygen", "--sk", "me.sec", "--pk", "me.pub", "--nocrypt")
	if err := os.WriteFile(filepath.Join(dir, "plain"), []byte("some data"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runAt(t, dir, "encrypt", "--force", "--recipient_pk", "me.pub", "-i", "plain", "-o", "s3://bkt/x.c4gh")
	if code != exitError || !strings.Contains(stderr, "did not confirm the write") {
		t.Errorf("exit %d:\n%s", code, stderr)
	}
}
