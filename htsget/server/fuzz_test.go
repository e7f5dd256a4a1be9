package server

import (
	"net/url"
	"strings"
	"testing"
	"time"
)

// FuzzParseRange: a Range header either gives a non-empty range inside
// the window or is refused; nothing panics.
func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"", "bytes=0-99", "bytes=10-", "bytes=-5", "bytes=5-1", "bytes=0-1,3-4", "bytes= 7-8", "items=0-1", "bytes=-0", "bytes=99999999999999999999-"} {
		f.Add(s, int64(3), int64(50))
	}
	f.Fuzz(func(t *testing.T, h string, start, end int64) {
		if start < 0 || end < start {
			return
		}
		lo, hi, partial, ok := parseRange(h, start, end)
		if !ok {
			return
		}
		if (h == "" || !partial) && (lo != start || hi != end || partial) {
			t.Fatalf("%q: [%d, %d) partial %v, want the window", h, lo, hi, partial)
		}
		unit, spec, found := strings.Cut(h, "=")
		if found && strings.EqualFold(strings.TrimSpace(unit), "bytes") && !strings.Contains(spec, ",") && !partial {
			t.Fatalf("%q in [%d, %d): a byte range taken as the whole window", h, start, end)
		}
		if lo < start || hi > end || (partial && lo >= hi) {
			t.Fatalf("%q in [%d, %d): [%d, %d)", h, start, end, lo, hi)
		}
	})
}

// FuzzDataURL: a data URL's path and query are accepted only as the
// server signed them: a grant round-trips, and any other input is
// refused without a panic.
func FuzzDataURL(f *testing.F) {
	key := []byte("0123456789abcdef0123456789abcdef")
	g := grant{kind: kindC4GH, name: "a/b c.bam.c4gh", start: 16, end: 1000, expires: 2e9}
	u, err := url.Parse(g.url("http://x", key))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(strings.TrimPrefix(u.Path, "/data/"), u.RawQuery)
	f.Add("plain/../x", "s=0&e=1&x=1&t=")
	f.Add("c4gh/a", "s=-1&e=1&x=99999999999&t=AAAA")
	now := time.Unix(1e9, 0)
	f.Fuzz(func(t *testing.T, rest, query string) {
		q, err := url.ParseQuery(query)
		if err != nil {
			return
		}
		got, e := parseGrant(rest, q, key, now)
		if e != nil {
			return
		}
		if got.mac(key) == nil || !validName(got.name) || got.start < 0 || got.end < got.start {
			t.Fatalf("accepted %q %q: %+v", rest, query, got)
		}
		if rest != strings.TrimPrefix(u.Path, "/data/") && got != g {
			// Only a grant the key signed is accepted: for any other
			// grant the fuzzer would have to forge an HMAC.
			t.Fatalf("accepted an unsigned grant %+v", got)
		}
	})
}

// FuzzValidName: an accepted name is a plain relative path.
func FuzzValidName(f *testing.F) {
	for _, s := range []string{"a", "a/b", "../a", "a//b", "/a", "a/./b", "a\\b", "a/..", ".hidden/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if !validName(name) {
			return
		}
		for _, el := range strings.Split(name, "/") {
			if el == "" || el == "." || el == ".." || strings.ContainsAny(el, "\\\x00") {
				t.Fatalf("accepted %q", name)
			}
		}
	})
}
