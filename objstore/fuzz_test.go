package objstore_test

import (
	"strings"
	"testing"

	"github.com/c4gh-go/crypt4gh/objstore"
)

// FuzzParse checks that Parse never panics, that what it accepts it
// shows again as the same location, and that a URL with a user and a
// password in it is refused without the password in the error, however
// the rest of the URL is written.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"s3://my-bucket/dir/file.c4gh", "s3://my-bucket/", "s3://b", "S3://my-bucket/a b?c#d",
		"https://host.example/f.c4gh?X-Amz-Signature=abc", "http://127.0.0.1:9000/x", "http://[::1]:80/x",
		"https://host.example:8443/a/b#frag", "ftp://x", "s3://-b/k", "https:///x", "http://10.0.0.1/f",
	} {
		f.Add(s, "", "")
	}
	f.Add("https://host.example/f", "user", "hunter2")
	f.Add("https://host.example/f%zz", "user", "hunter2")
	f.Add("s3://bucket/k", "AKIAEXAMPLE", "wJalrXUtnFEMI")
	f.Add("https://host/x", "u", "pa/ss")
	f.Add("https://host:port/x", "u", "pa?ss")
	f.Add("s3://bucket/k", "me@example.org", "pa/ss")
	f.Add("http://[::1]/x", "u", "pa#ss")
	f.Add("https://host.example/f", "user", "/secretpw")
	f.Add("https://host.example/f", "user", "?secretpw")
	f.Add("https://s3.example.org:9000/bucket/me@example.org/f", "", "")
	f.Add("s3://bucket/me@example.org/f", "", "")
	f.Fuzz(func(t *testing.T, s, user, pass string) {
		// The password is marked at both ends, so that a part of it
		// shown is found, whatever the rest of the URL shows. Its first
		// mark is digits: user:4711/… parses as a host and its port.
		const first, last = "4711", "Xj7"
		withPass := user != "" || pass != ""
		if withPass {
			if strings.Contains(s+user, first) || strings.Contains(s+user, last) {
				return
			}
			// The credentials go right after the scheme, as in a URL (a
			// seed's %s, which marked where they went, is dropped).
			scheme, rest, ok := strings.Cut(strings.Replace(s, "%s", "", 1), "://")
			if !ok {
				return
			}
			s = scheme + "://" + user + ":" + first + pass + last + "@" + rest
		}
		loc, err := objstore.Parse(s)
		if err != nil {
			if withPass && (strings.Contains(err.Error(), first) || strings.Contains(err.Error(), last)) {
				t.Fatalf("Parse(%q): the error shows the password: %v", s, err)
			}
			return
		}
		// A user name with a / ? or # in it ends the host before it:
		// what follows is a path, which may hold anything. So does a
		// password with two of them: user:4711/a/b@host is also the
		// port 4711 of the host user, and a path with an @ in a later
		// part (an S3 key of a user's folder) is no password.
		delims := 0
		for _, c := range pass {
			if strings.ContainsRune("/?#", c) {
				delims++
			}
		}
		if withPass && !strings.ContainsAny(user, "/?#") && delims < 2 && (strings.Contains(loc.String(), first) || strings.Contains(loc.String(), last)) {
			t.Fatalf("Parse(%q) accepted a URL with a password: %+v", s, loc)
		}
		if (loc.URL == "") == (loc.Bucket == "") {
			t.Fatalf("Parse(%q) = %+v: want a bucket or a URL", s, loc)
		}
		again, err := objstore.Parse(loc.String())
		if loc.URL != "" {
			// URLs are shown without their query; the location keeps it.
			again, err = objstore.Parse(loc.URL)
		}
		if err != nil || again != loc {
			t.Fatalf("Parse(%q) = %+v, shown as %q, which parses as %+v, %v", s, loc, loc.String(), again, err)
		}
	})
}
