package cli

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestListingOutsidePrefix: a store whose listing of a prefix returns a key
// outside it (here a proxy rewrites one key of every listing) made batch
// decrypt, verify and inspect panic or name the file wrongly. Such a key is
// skipped with a one-line error naming it, the others are done, and the
// command exits 1.
func TestListingOutsidePrefix(t *testing.T) {
	e := newS3Env(t)
	plain := randomData(1000, 85)
	enc := encryptBytes(t, plain, e.sk)
	e.put(t, "in/a.c4gh", enc)
	e.put(t, "in/b.c4gh", enc)
	e.put(t, "elsewhere/b.c4gh", enc)
	target, err := neturl.Parse(e.px.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ModifyResponse = func(r *http.Response) error {
		if r.Request.Method != http.MethodGet || !r.Request.URL.Query().Has("list-type") {
			return nil
		}
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return err
		}
		b = bytes.ReplaceAll(b, []byte("<Key>in/b.c4gh</Key>"), []byte("<Key>elsewhere/b.c4gh</Key>"))
		r.Body = io.NopCloser(bytes.NewReader(b))
		r.ContentLength = int64(len(b))
		r.Header.Set("Content-Length", strconv.Itoa(len(b)))
		return nil
	}
	liar := httptest.NewServer(rp)
	t.Cleanup(liar.Close)
	t.Setenv("AWS_ENDPOINT_URL_S3", liar.URL)

	for _, args := range [][]string{
		{"verify", "--sk", "me.sec", url("in/")},
		{"inspect", url("in/")},
		{"decrypt", "--sk", "me.sec", "-o", "out/", url("in/")},
	} {
		code, _, stderr := e.run(t, args...)
		if code != exitError || !strings.Contains(stderr, "elsewhere/b.c4gh: the listing of "+url("in/")+" returned this key, which is not under the prefix: skipped") {
			t.Errorf("%v: exit %d\n%s", args, code, stderr)
		}
		if strings.Contains(stderr, "panic") || !strings.Contains(stderr, "1 of 2") && args[0] != "decrypt" {
			t.Errorf("%v: stderr\n%s", args, stderr)
		}
	}
	if got, err := os.ReadFile(filepath.Join(e.dir, "out", "a")); err != nil || !bytes.Equal(got, plain) {
		t.Errorf("the object under the prefix was not decrypted: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "out", "b")); err == nil {
		t.Error("the key outside the prefix was decrypted under a wrong name")
	}
}

// TestSameObjectInAndOut: decrypt or encrypt with the same object as -i and
// -o, even with --force, is refused before anything is read (exit 2), as
// for a file, also when -i names it by an http(s) URL of the endpoint; the
// object stays as it was.
func TestSameObjectInAndOut(t *testing.T) {
	e := newS3Env(t)
	enc := encryptBytes(t, randomData(70000, 86), e.sk)
	e.put(t, "f.c4gh", enc)
	e.put(t, "plain", []byte("plain text"))
	for _, args := range [][]string{
		{"decrypt", "--sk", "me.sec", "--force", "-i", url("f.c4gh"), "-o", url("f.c4gh")},
		{"encrypt", "--recipient_pk", "me.pub", "--force", "-i", url("plain"), "-o", url("plain")},
		// Keys that a store of files (versitygw's posix backend) takes
		// as one: it encrypted the object over itself.
		{"encrypt", "--recipient_pk", "me.pub", "--force", "-i", url("plain"), "-o", url("./plain")},
		{"decrypt", "--sk", "me.sec", "--force", "-i", url("f.c4gh"), "-o", url("x/../f.c4gh")},
		// The object named by a (presigned) URL of the endpoint, in path
		// and in virtual-hosted style.
		{"decrypt", "--sk", "me.sec", "--force", "-i", e.px.Endpoint() + "/" + testBucket + "/f.c4gh?X-Amz-Signature=x", "-o", url("f.c4gh")},
		{"encrypt", "--recipient_pk", "me.pub", "--force", "-i", strings.Replace(e.px.Endpoint(), "http://", "https://"+testBucket+".", 1) + "/plain", "-o", url("plain")},
	} {
		e.px.Zero()
		code, _, stderr := e.run(t, args...)
		if code != exitUsage || !strings.Contains(stderr, "is the input object") {
			t.Errorf("%v: exit %d\n%s", args, code, stderr)
		}
		if len(e.px.Requests()) != 0 {
			t.Errorf("%v: %d requests before the refusal", args, len(e.px.Requests()))
		}
	}
	if !bytes.Equal(e.get(t, "f.c4gh"), enc) || string(e.get(t, "plain")) != "plain text" {
		t.Error("an object was changed")
	}
}

// TestRekeyInPlaceKeepsOwner: rekeying an object in place for another
// reader alone would lock the owner out for good: refused (exit 2, the
// object unchanged) unless --drop-self. --add keeps every reader and adds
// the new one; asked again, there is nothing to do. A new output keeps
// the reference tool's semantics.
func TestRekeyInPlaceKeepsOwner(t *testing.T) {
	e := newS3Env(t)
	e.keygen(t, "bob")
	e.keygen(t, "carol")
	plain := randomData(70000, 87)
	enc := encryptBytes(t, plain, e.sk)
	e.put(t, "f.c4gh", enc)
	inPlace := []string{"-i", url("f.c4gh"), "-o", url("f.c4gh"), "--force"}
	code, _, stderr := e.run(t, append([]string{"reencrypt", "--sk", "me.sec", "--recipient_pk", "bob.pub"}, inPlace...)...)
	if code != exitUsage || !strings.Contains(stderr, "would no longer open with --sk me.sec") || !strings.Contains(stderr, "--add") {
		t.Errorf("in place for bob alone: exit %d\n%s", code, stderr)
	}
	if !bytes.Equal(e.get(t, "f.c4gh"), enc) {
		t.Fatal("the object was changed")
	}
	decrypts := func(who string) bool {
		code, _, _ := e.run(t, "decrypt", "--sk", who+".sec", "-i", url("f.c4gh"), "-o", who+".out", "--force")
		return code == 0 && bytes.Equal(e.read(t, who+".out"), plain)
	}

	e.must(t, append([]string{"reencrypt", "--sk", "me.sec", "--recipient_pk", "bob.pub", "--add"}, inPlace...)...)
	if !decrypts("me") || !decrypts("bob") {
		t.Error("after --add bob: not both of me and bob read the object")
	}
	_, _, stderr = e.run(t, append([]string{"reencrypt", "--sk", "me.sec", "--recipient_pk", "bob.pub", "--add"}, inPlace...)...)
	if !strings.Contains(stderr, "every recipient can read it already: nothing to do") {
		t.Errorf("--add bob again:\n%s", stderr)
	}

	e.must(t, append([]string{"reencrypt", "--sk", "me.sec", "--recipient_pk", "carol.pub", "--trim", "--drop-self"}, inPlace...)...)
	if decrypts("me") || decrypts("bob") || !decrypts("carol") {
		t.Error("after --trim --drop-self for carol: only carol should read the object")
	}
	// To a new object: the reference semantics, no refusal.
	e.must(t, "reencrypt", "--sk", "carol.sec", "--recipient_pk", "bob.pub", "-i", url("f.c4gh"), "-o", url("g.c4gh"))
}

// TestCredentialSecrets: a host_base with a user name and password is
// refused without showing them; an s3cmd file or an AWS credentials file
// that others may read gets the warning that a secret key gets; a batch's
// records show neither a presigned URL's query nor a password.
func TestCredentialSecrets(t *testing.T) {
	e := newS3Env(t)
	e.put(t, "f.c4gh", encryptBytes(t, randomData(100, 88), e.sk))
	bad := filepath.Join(e.dir, "bad.s3cfg")
	if err := os.WriteFile(bad, []byte("[default]\naccess_key = AKIA\nsecret_key = abc\nhost_base = admin:hunter2@127.0.0.1:9\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := e.run(t, "inspect", "--s3-config", bad, url("f.c4gh"))
	if code == 0 || strings.Contains(stderr, "hunter2") || strings.Contains(stderr, "admin") || !strings.Contains(stderr, "user name or password") {
		t.Errorf("host_base with a password: exit %d\n%s", code, stderr)
	}

	if err := os.Chmod(e.conf, 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, stderr = e.run(t, "inspect", "--s3-config", e.conf, url("f.c4gh"))
	if !strings.Contains(stderr, "warning: s3cmd configuration file") || !strings.Contains(stderr, "readable by others") {
		t.Errorf("an s3cmd file of mode 0644:\n%s", stderr)
	}
	creds := filepath.Join(e.dir, "credentials")
	if err := os.WriteFile(creds, []byte("[default]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", creds)
	_, _, stderr = e.run(t, "inspect", url("f.c4gh"))
	if !strings.Contains(stderr, "warning: AWS credentials file") {
		t.Errorf("an AWS credentials file of mode 0644:\n%s", stderr)
	}
	os.Chmod(creds, 0o600)
	if _, _, stderr = e.run(t, "inspect", url("f.c4gh")); strings.Contains(stderr, "warning") {
		t.Errorf("a private credentials file:\n%s", stderr)
	}

	// The JSON records of a batch name a presigned URL without its query
	// (the signature is a credential), and a URL with a password (a / in
	// it, as written) without the password.
	presigned := e.px.Endpoint() + "/" + testBucket + "/f.c4gh"
	_, stdout, stderr := e.run(t, "decrypt", "--sk", "me.sec", "--json", "-o", "out/",
		presigned+"?X-Amz-Signature=sekrit", "s3://AKIA:hunter2/x@"+testBucket+"/f.c4gh")
	if strings.Contains(stdout+stderr, "sekrit") || strings.Contains(stdout+stderr, "hunter2") ||
		!strings.Contains(stdout, `"name":"`+presigned+`?..."`) || !strings.Contains(stdout, `"name":"s3://REDACTED@`+testBucket+`/f.c4gh"`) {
		t.Errorf("records of a presigned URL and of a URL with a password:\n%s\n%s", stdout, stderr)
	}
}

// TestPrefixWithoutSlash: an object that does not exist, where objects
// exist under it as a folder, gets the hint to add the slash.
func TestPrefixWithoutSlash(t *testing.T) {
	e := newS3Env(t)
	e.put(t, "run1/a.c4gh", encryptBytes(t, randomData(10, 89), e.sk))
	code, _, stderr := e.run(t, "verify", "--sk", "me.sec", url("run1"))
	if code == 0 || !strings.Contains(stderr, "hint: "+url("run1/")+" (with the slash) is a prefix") {
		t.Errorf("exit %d\n%s", code, stderr)
	}
	if _, _, stderr := e.run(t, "verify", "--sk", "me.sec", url("nothing")); strings.Contains(stderr, "with the slash") {
		t.Errorf("no objects under it, but:\n%s", stderr)
	}
}

// TestHeaderFetchCutShort: answers that the network cuts short, every time,
// while a header is fetched are a transfer failure (exit 1, saying so),
// not a header that ends there (exit 4), for inspect, verify, reencrypt
// and batch decrypt.
func TestHeaderFetchCutShort(t *testing.T) {
	e := newS3Env(t)
	e.keygen(t, "bob")
	e.put(t, "in/f.c4gh", encryptBytes(t, randomData(1000, 90), e.sk))
	target, err := neturl.Parse(e.px.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ModifyResponse = func(r *http.Response) error {
		if rg := r.Request.Header.Get("Range"); r.Request.Method == http.MethodGet && rg != "" {
			// 50 bytes of the first request, nothing of the retries.
			// Content-Length stays: the client sees the cut.
			left := 0
			if strings.HasPrefix(rg, "bytes=0-") {
				left = 50
			}
			r.Body = &cutBody{r: r.Body, left: left}
		}
		return nil
	}
	cutter := httptest.NewServer(rp)
	t.Cleanup(cutter.Close)
	t.Setenv("AWS_ENDPOINT_URL_S3", cutter.URL)
	t.Setenv("AWS_MAX_ATTEMPTS", "2") // fewer retries (and their backoff) before the failure
	for _, args := range [][]string{
		{"inspect", url("in/f.c4gh")},
		{"verify", "--sk", "me.sec", url("in/f.c4gh")},
		{"reencrypt", "--sk", "me.sec", "--recipient_pk", "bob.pub", "-i", url("in/f.c4gh"), "-o", "re.c4gh"},
		{"decrypt", "--sk", "me.sec", "-o", "out/", url("in/")},
	} {
		code, _, stderr := e.run(t, args...)
		if code != exitError || strings.Contains(stderr, "truncated") || !strings.Contains(stderr, "the connection ended before the answer did") {
			t.Errorf("%v: exit %d\n%s", args, code, stderr)
		}
	}
}

// cutBody ends a body after left bytes, as a connection that the network
// closed.
type cutBody struct {
	r    io.ReadCloser
	left int
}

func (b *cutBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, io.EOF
	}
	n, err := b.r.Read(p[:min(len(p), b.left)])
	b.left -= n
	return n, err
}

func (b *cutBody) Close() error { return b.r.Close() }

// TestInsecureEndpoint: a plain http:// S3 endpoint off loopback is refused
// before any request, naming --allow-insecure-http (the allowed case is not
// tried: it would leave loopback).
func TestInsecureEndpoint(t *testing.T) {
	e := newS3Env(t)
	t.Setenv("AWS_ENDPOINT_URL_S3", "http://192.0.2.1:9000")
	code, _, stderr := e.run(t, "inspect", url("f.c4gh"))
	if code != exitUsage || !strings.Contains(stderr, "plain http is accepted only to a loopback address") || !strings.Contains(stderr, "--allow-insecure-http") {
		t.Errorf("exit %d\n%s", code, stderr)
	}
}

// TestReviewFindings holds the cases of a hostile review of the fixes
// above, each of which got through before:
//   - a rekey between objects copied a body cut inside its last segment;
//   - splice in place dropped the owner's access;
//   - --continue took a file of the right size that another user planted
//     at the output's name for a complete download;
//   - --add on a file with an edit list and other readers' packets could
//     leave one of them two edit lists.
func TestReviewFindings(t *testing.T) {
	e := newS3Env(t)
	e.keygen(t, "bob")
	plain := randomData(3*65536+5000, 94)
	enc := encryptBytes(t, plain, e.sk)
	e.put(t, "cut.c4gh", enc[:len(enc)-1000])
	code, _, stderr := e.run(t, "reencrypt", "--sk", "me.sec", "--recipient_pk", "bob.pub", "-i", url("cut.c4gh"), "-o", url("cut2.c4gh"))
	if code != exitData || !strings.Contains(stderr, "segment 3 failed authentication") || e.exists(t, "cut2.c4gh") {
		t.Errorf("rekey of a cut object: exit %d\n%s", code, stderr)
	}

	e.put(t, "f.c4gh", enc)
	code, _, stderr = e.run(t, "splice", "--sk", "me.sec", "--recipient_pk", "bob.pub", "--range", "0-100000", "--force", "-i", url("f.c4gh"), "-o", url("f.c4gh"))
	if code != exitUsage || !strings.Contains(stderr, "would no longer open with --sk") || !bytes.Equal(e.get(t, "f.c4gh"), enc) {
		t.Errorf("splice in place for bob alone: exit %d\n%s", code, stderr)
	}

	planted := filepath.Join(e.dir, "out")
	if err := os.WriteFile(planted, bytes.Repeat([]byte("X"), len(plain)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = e.run(t, "decrypt", "--sk", "me.sec", "--continue", "-i", url("f.c4gh"), "-o", "out")
	if code == 0 || strings.Contains(stderr, "nothing to do") {
		t.Errorf("a planted output of the right size: exit %d\n%s", code, stderr)
	}

	// An edit list, and a packet for bob that carol wrote: --add for bob
	// is refused, since bob may hold an edit list already. Packets that
	// --sk wrote itself are found, and then there is nothing to add.
	e.keygen(t, "carol")
	e.must(t, "encrypt", "--recipient_pk", "carol.pub", "-i", "out", "-o", "c.c4gh")
	e.must(t, "splice", "--sk", "carol.sec", "--recipient_pk", "me.pub", "--recipient_pk", "bob.pub", "--range", "10-70000", "-i", "c.c4gh", "-o", "el.c4gh")
	code, _, stderr = e.run(t, "reencrypt", "--sk", "me.sec", "--recipient_pk", "bob.pub", "--add", "-i", "el.c4gh", "-o", "el2.c4gh")
	if code != exitUsage || !strings.Contains(stderr, "two edit lists") {
		t.Errorf("--add with an edit list and others' packets: exit %d\n%s", code, stderr)
	}
	e.must(t, "splice", "--sk", "me.sec", "--recipient_pk", "me.pub", "--recipient_pk", "bob.pub", "--range", "10-70000", "-i", url("f.c4gh"), "-o", "mine.c4gh")
	e.must(t, "reencrypt", "--sk", "me.sec", "--recipient_pk", "bob.pub", "--add", "-i", "mine.c4gh", "-o", "mine2.c4gh")
	if _, _, stderr := e.run(t, "decrypt", "--sk", "bob.sec", "-i", "mine2.c4gh", "-o", "bob.out"); strings.Contains(stderr, "error") {
		t.Errorf("bob after --add of packets of --sk's own: %s", stderr)
	}
}
