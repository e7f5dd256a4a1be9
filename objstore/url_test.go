package objstore_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
	"github.com/c4gh-go/crypt4gh/objstore"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in     string
		want   objstore.Location
		prefix bool
		shown  string
	}{
		{"s3://my-bucket/dir/file.c4gh", objstore.Location{Bucket: "my-bucket", Key: "dir/file.c4gh"}, false, "s3://my-bucket/dir/file.c4gh"},
		{"S3://my-bucket/a b?c#d", objstore.Location{Bucket: "my-bucket", Key: "a b?c#d"}, false, "s3://my-bucket/a b?c#d"},
		{"s3://my-bucket/dir/", objstore.Location{Bucket: "my-bucket", Key: "dir/"}, true, "s3://my-bucket/dir/"},
		{"s3://my-bucket/", objstore.Location{Bucket: "my-bucket"}, true, "s3://my-bucket/"},
		{"s3://my-bucket", objstore.Location{Bucket: "my-bucket"}, true, "s3://my-bucket/"},
		{"s3://Old_Bucket.1/k", objstore.Location{Bucket: "Old_Bucket.1", Key: "k"}, false, "s3://Old_Bucket.1/k"},
		{"https://host.example/f.c4gh?X-Amz-Signature=abc&X-Amz-Credential=AKIA", objstore.Location{URL: "https://host.example/f.c4gh?X-Amz-Signature=abc&X-Amz-Credential=AKIA"}, false, "https://host.example/f.c4gh?..."},
		{"https://host.example:8443/a/b#frag", objstore.Location{URL: "https://host.example:8443/a/b"}, false, "https://host.example:8443/a/b"},
		{"http://127.0.0.1:9000/x", objstore.Location{URL: "http://127.0.0.1:9000/x"}, false, "http://127.0.0.1:9000/x"},
		{"http://localhost/x", objstore.Location{URL: "http://localhost/x"}, false, "http://localhost/x"},
		{"http://[::1]:80/x", objstore.Location{URL: "http://[::1]:80/x"}, false, "http://[::1]:80/x"},
		// An @ in a later part of the path, after a port: an S3 key
		// in a user's folder, not a password.
		{"https://s3.example.org:9000/inbox/me@example.org/f.c4gh", objstore.Location{URL: "https://s3.example.org:9000/inbox/me@example.org/f.c4gh"}, false, "https://s3.example.org:9000/inbox/me@example.org/f.c4gh"},
	} {
		got, err := objstore.Parse(tc.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		if got != tc.want || got.IsPrefix() != tc.prefix || got.String() != tc.shown {
			t.Errorf("Parse(%q) = %+v (prefix %v, shown %q), want %+v (%v, %q)", tc.in, got, got.IsPrefix(), got.String(), tc.want, tc.prefix, tc.shown)
		}
		if !objstore.IsURL(tc.in) {
			t.Errorf("IsURL(%q) = false", tc.in)
		}
	}
	for _, tc := range []struct{ in, secret string }{
		{"s3://AKIAEXAMPLE:wJalrXUtnFEMI@my-bucket/k", "wJalrXUtnFEMI"},
		{"https://user:hunter2@host.example/f", "hunter2"},
		{"https://user:hunter2@host.example/f%zz", "hunter2"},
		{"https://user:hunter2/x@host.example/f", "hunter2"},
		{"https://user:hunter2?x@host.example/f", "hunter2"},
		{"s3://AKIAEXAMPLE:hunter2/x@my-bucket/k", "hunter2"},
		{"s3://me@example.org:hunter2/x@my-bucket/k", "hunter2"},
		{"ftp://user:hunter2@host.example/f", "hunter2"},
		{"https://user:1234/hunter2@host.example/f", "hunter2"},
		{"https://user:1234?hunter2@host.example/f", "hunter2"},
		{"http://host.example/f", ""},
		{"http://10.0.0.1/f", ""},
		{"ftp://host/f", ""},
		{"s3://", ""},
		{"s3:///key", ""},
		{"s3://ab/k", ""},
		{"s3://-bucket/k", ""},
		{"s3://host:9000/bucket/k", ""},
		{"s3://bucket/" + strings.Repeat("k", 1025), ""},
		{"s3://bucket/a\x01b", ""},
		{"https:///nohost", ""},
		{"file.c4gh", ""},
	} {
		_, err := objstore.Parse(tc.in)
		if err == nil {
			t.Errorf("Parse(%q) succeeded", tc.in)
			continue
		}
		isKind(t, err, objstore.ErrInvalidURL, errkind.Usage)
		if tc.secret != "" && strings.Contains(err.Error(), tc.secret) {
			t.Errorf("error repeats the password: %v", err)
		}
	}
	// A refused URL with an @ but no password before it is shown with its
	// host or its key, not cut at the @.
	for in, shown := range map[string]string{
		"http://host.example/a@b/f":  "http://host.example/...",
		"s3://ab/me@example.org/f":   "s3://ab/me@example.org/f",
		"https://host.example/f%zz@": "https://host.example/...",
	} {
		var e *objstore.Error
		if _, err := objstore.Parse(in); !errors.As(err, &e) || e.Location != shown {
			t.Errorf("Parse(%q): %v; want it shown as %q", in, err, shown)
		}
	}
	for _, s := range []string{"file.c4gh", "dir/s3://x", "c:\\x", "-", ""} {
		if objstore.IsURL(s) {
			t.Errorf("IsURL(%q) = true", s)
		}
	}
	l, _ := objstore.Parse("s3://my-bucket/in/")
	if got := l.Join("a.c4gh"); got != (objstore.Location{Bucket: "my-bucket", Key: "in/a.c4gh"}) {
		t.Errorf("Join: %+v", got)
	}
}

func TestObjectOfURL(t *testing.T) {
	obj := func(b, k string) objstore.Location { return objstore.Location{Bucket: b, Key: k} }
	for _, c := range []struct {
		url, endpoint string
		want          objstore.Location
		ok            bool
	}{
		{"https://s3.example.org/b/dir/k.c4gh?X-Amz-Signature=1", "https://s3.example.org", obj("b", "dir/k.c4gh"), true},
		{"https://b.s3.example.org/dir/k.c4gh", "https://S3.example.org", obj("b", "dir/k.c4gh"), true},
		{"http://127.0.0.1:9000/b/k", "http://127.0.0.1:9000", obj("b", "k"), true},
		{"http://127.0.0.1:9001/b/k", "http://127.0.0.1:9000", objstore.Location{}, false},
		{"https://s3.example.org/b", "https://s3.example.org", objstore.Location{}, false},
		{"https://other.org/b/k", "https://s3.example.org", objstore.Location{}, false},
		{"https://my.bucket.s3.amazonaws.com/k%20x", "", obj("my.bucket", "k x"), true},
		{"https://b.s3.eu-west-1.amazonaws.com/k", "", obj("b", "k"), true},
		{"https://s3.eu-west-1.amazonaws.com/b/k", "", obj("b", "k"), true},
		{"https://s3-eu-west-1.amazonaws.com/b/k", "", obj("b", "k"), true},
		{"https://b.s3.dualstack.us-east-2.amazonaws.com/k", "", obj("b", "k"), true},
		{"https://example.org/b/k", "", objstore.Location{}, false},
		{"ftp://s3.amazonaws.com/b/k", "", objstore.Location{}, false},
	} {
		got, ok := objstore.ObjectOfURL(c.url, c.endpoint)
		if got != c.want || ok != c.ok {
			t.Errorf("ObjectOfURL(%q, %q) = %v, %v; want %v, %v", c.url, c.endpoint, got, ok, c.want, c.ok)
		}
	}
}
