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
// for a file; the object stays as it was.
func TestSameObjectInAndOut(t *testing.T) {
	e := newS3Env(t)
	enc := encryptBytes(t, randomData(70000, 86), e.sk)
	e.put(t, "f.c4gh", enc)
	e.put(t, "plain", []byte("plain text"))
	for _, args := range [][]string{
		{"decrypt", "--sk", "me.sec", "--force", "-i", url("f.c4gh"), "-o", url("f.c4gh")},
		{"encrypt", "--recipient_pk", "me.pub", "--force", "-i", url("plain"), "-o", url("plain")},
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
