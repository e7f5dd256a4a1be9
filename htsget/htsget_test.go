package htsget

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
	"github.com/c4gh-go/crypt4gh/keys"
	"github.com/c4gh-go/crypt4gh/region"
)

func TestTicketRoundTrip(t *testing.T) {
	want := &Ticket{Format: "BAM", URLs: []URL{
		{URL: DataURL([]byte("crypt4gh\x01\x00\x00\x00")), Class: "header"},
		{URL: "http://127.0.0.1:1/data/x", Headers: map[string]string{"Range": "bytes=0-9"}},
	}}
	rec := httptest.NewRecorder()
	if err := WriteTicket(rec, want); err != nil {
		t.Fatal(err)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/vnd.ga4gh.htsget") {
		t.Errorf("Content-Type %q", ct)
	}
	got, err := ReadTicket(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	if got.Format != "BAM" || len(got.URLs) != 2 || got.URLs[1].Headers["Range"] != "bytes=0-9" || got.URLs[0].Class != "header" {
		t.Errorf("got %+v", got)
	}
	b, err := DecodeDataURL(got.URLs[0].URL)
	if err != nil || string(b) != "crypt4gh\x01\x00\x00\x00" {
		t.Errorf("data URL: %q, %v", b, err)
	}
}

func TestReadTicketRefuses(t *testing.T) {
	for _, body := range []string{
		``, `[]`, `{"htsget":{}}`, `{"htsget":{"format":"BAM","urls":[]}}`,
		`{"htsget":{"format":"BAM","urls":[{"url":"file:///etc/passwd"}]}}`,
		`{"htsget":{"format":"BAM","urls":[{"url":"ftp://x/y"}]}}`,
	} {
		if _, err := ReadTicket(strings.NewReader(body)); !errors.Is(err, ErrBadTicket) || errkind.Of(err) != errkind.Data {
			t.Errorf("%s: %v", body, err)
		}
	}
}

func TestErrors(t *testing.T) {
	rec := httptest.NewRecorder()
	WriteError(rec, Errorf(NotFound, "no file %q", "x"))
	if rec.Code != 404 {
		t.Errorf("status %d", rec.Code)
	}
	e := ReadError(rec.Code, rec.Body)
	if e.Code != NotFound || e.Message != `no file "x"` || e.Status != 404 || e.Kind() != errkind.Usage {
		t.Errorf("got %+v", e)
	}
	rec = httptest.NewRecorder()
	WriteError(rec, Errorf(InvalidAuthentication, "no token"))
	if rec.Code != 401 || rec.Header().Get("WWW-Authenticate") == "" {
		t.Errorf("401: %d %v", rec.Code, rec.Header())
	}
	if e := ReadError(rec.Code, rec.Body); e.Kind() != errkind.Key {
		t.Errorf("401 kind %v", e.Kind())
	}
	e = ReadError(502, strings.NewReader("<html>bad gateway</html>"))
	if e.Code != "Bad Gateway" || e.Kind() != errkind.Other || !strings.Contains(e.Error(), "bad gateway") {
		t.Errorf("non-JSON error: %+v", e)
	}
}

func TestDataURL(t *testing.T) {
	for s, want := range map[string]string{
		"data:;base64,aGk=":                         "hi",
		"data:application/octet-stream;base64,aGk":  "hi",
		"data:,a%20b":                               "a b",
		"data:application/vnd.ga4gh;BASE64,AAEC":    "\x00\x01\x02",
		"data:text/plain;charset=utf-8;base64,aGk=": "hi",
	} {
		b, err := DecodeDataURL(s)
		if err != nil || string(b) != want {
			t.Errorf("%s: %q, %v", s, b, err)
		}
	}
	for _, s := range []string{"http://x", "data:;base64", "data:;base64,!!!!", "data:,%zz"} {
		if _, err := DecodeDataURL(s); !errors.Is(err, ErrBadDataURL) {
			t.Errorf("%s: %v", s, err)
		}
	}
}

func TestPublicKeyHeader(t *testing.T) {
	sk, err := keys.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	pk := sk.Public()
	for _, v := range []string{
		EncodePublicKey(pk),
		strings.TrimRight(EncodePublicKey(pk), "="),
		pk.String(),
		strings.NewReplacer("+", "-", "/", "_").Replace(pk.String()),
	} {
		got, err := ParsePublicKey(v)
		if err != nil || got != pk {
			t.Errorf("%s: %v", v, err)
		}
	}
	for _, v := range []string{"", "not base64!", "aGVsbG8=", strings.Repeat("A", 5000)} {
		if _, err := ParsePublicKey(v); !errors.Is(err, ErrBadPublicKey) || errkind.Of(err) != errkind.Key {
			t.Errorf("%q: %v", v, err)
		}
	}
}

func TestParseQuery(t *testing.T) {
	q, _ := url.ParseQuery("format=bam&referenceName=chr20&start=10&end=20&encryptionScheme=c4gh&fields=QNAME,FLAG")
	r, err := ParseQuery(Reads, "NA12878", q)
	if err != nil {
		t.Fatal(err)
	}
	if r.Format != "BAM" || len(r.Regions) != 1 || !IsCrypt4GH(r.EncryptionScheme) || len(r.Fields) != 2 {
		t.Fatalf("got %+v", r)
	}
	g := r.Regions[0].Region()
	if g.Name != "chr20" || g.Start != 10 || g.End != 20 {
		t.Errorf("region %+v", g)
	}
	back, err := ParseQuery(Reads, "NA12878", r.Query())
	if err != nil || back.Regions[0].Region() != g || back.Format != "BAM" {
		t.Errorf("query round trip: %+v, %v", back, err)
	}
	for query, code := range map[string]string{
		"format=SAM":                      UnsupportedFormat,
		"start=1":                         InvalidInput,
		"referenceName=1&start=x":         InvalidRange,
		"referenceName=1&start=9&end=2":   InvalidRange,
		"referenceName=1&end=99999999999": InvalidRange,
		"class=header&referenceName=1":    InvalidInput,
		"class=foo":                       InvalidInput,
		"encryptionScheme=age":            InvalidInput,
		"referenceName=*&start=1":         InvalidInput,
	} {
		q, _ := url.ParseQuery(query)
		_, err := ParseQuery(Reads, "x", q)
		var e *Error
		if !errors.As(err, &e) || e.Code != code || e.Status != statusOf(code) {
			t.Errorf("%s: %v, want %s", query, err, code)
		}
	}
	q, _ = url.ParseQuery("referenceName=*")
	if _, err := ParseQuery(Variants, "x", q); err == nil {
		t.Error("* accepted for variants")
	}
	// A long value is not repeated whole in the answer.
	long := strings.Repeat("9", 10000) + "x"
	for _, query := range []string{"referenceName=1&start=" + long, "format=" + long, "class=" + long, "encryptionScheme=" + long} {
		q, _ := url.ParseQuery(query)
		_, err := ParseQuery(Reads, "x", q)
		if err == nil {
			t.Errorf("%.30s…: accepted", query)
		} else if len(err.Error()) > 200 {
			t.Errorf("%.30s…: an error of %d bytes: %.100s…", query, len(err.Error()), err)
		}
	}
}

func TestParsePOST(t *testing.T) {
	body := `{"format":"VCF","regions":[{"referenceName":"1","start":0,"end":100},{"referenceName":"2"}]}`
	q := url.Values{"encryptionScheme": {"C4GH"}}
	r, err := ParsePOST(Variants, "s", q, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Regions) != 2 || r.Regions[1].Region() != (region.Region{Name: "2", End: region.Unbounded}) || r.EncryptionScheme != "C4GH" {
		t.Errorf("got %+v", r)
	}
	again, err := ParsePOST(Variants, "s", nil, bytes.NewReader(r.Body()))
	if err != nil || len(again.Regions) != 2 || again.EncryptionScheme != "C4GH" {
		t.Errorf("body round trip: %+v, %v", again, err)
	}
	_, err = ParsePOST(Variants, "s", nil, strings.NewReader(strings.Repeat(" ", MaxRequestSize+1)))
	var e *Error
	if !errors.As(err, &e) || e.Status != http.StatusRequestEntityTooLarge {
		t.Errorf("large body: %v", err)
	}
	if _, err := ParsePOST(Variants, "s", nil, strings.NewReader("{")); err == nil {
		t.Error("bad JSON accepted")
	}
	if r, err := ParsePOST(Reads, "s", nil, strings.NewReader("")); err != nil || len(r.Regions) != 0 {
		t.Errorf("empty body: %v", err)
	}
}

func TestFromRegion(t *testing.T) {
	for _, s := range []string{"chr1", "chr1:5", "chr1:5-10", "*", "{a:b}:1-2"} {
		g, err := region.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		if back := FromRegion(g).Region(); back.Name != g.Name || back.Start != g.Start || back.End != g.End {
			t.Errorf("%s: %+v → %+v", s, g, back)
		}
	}
}

func FuzzReadTicket(f *testing.F) {
	f.Add(`{"htsget":{"format":"BAM","urls":[{"url":"data:;base64,aGk="}]}}`)
	f.Fuzz(func(t *testing.T, s string) {
		tk, err := ReadTicket(strings.NewReader(s))
		if err == nil && len(tk.URLs) == 0 {
			t.Fatal("ticket without urls accepted")
		}
	})
}

func FuzzDecodeDataURL(f *testing.F) {
	f.Add("data:;base64,aGk=")
	f.Add("data:,a%20b")
	f.Fuzz(func(t *testing.T, s string) {
		b, err := DecodeDataURL(s)
		if err == nil && len(b) > len(s) {
			t.Fatalf("%d bytes from %d", len(b), len(s))
		}
	})
}

func FuzzParsePublicKey(f *testing.F) {
	f.Add("LS0tLS1CRUdJTiBDUllQVDRHSCBQVUJMSUMgS0VZLS0tLS0K")
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = ParsePublicKey(s)
	})
}

func FuzzParseRequest(f *testing.F) {
	f.Add("referenceName=1&start=2&end=3", `{"regions":[{"referenceName":"1"}]}`)
	f.Fuzz(func(t *testing.T, query, body string) {
		q, _ := url.ParseQuery(query)
		for _, ep := range []string{Reads, Variants} {
			if r, err := ParseQuery(ep, "x", q); err == nil {
				if _, err := ParseQuery(ep, "x", r.Query()); err != nil {
					t.Fatalf("its own query refused: %v", err)
				}
			}
			if r, err := ParsePOST(ep, "x", q, strings.NewReader(body)); err == nil {
				for _, g := range r.Regions {
					if x := g.Region(); x.End != region.Unbounded && x.Start > x.End {
						t.Fatalf("start after end: %+v", x)
					}
				}
			}
		}
	})
}

// TestWriteTicketBytes checks that WriteTicket, which writes a ticket a
// URL at a time, writes the bytes of json.Marshal of its envelope and a
// newline, for tickets of no URLs, none at all and several, with and
// without an md5, with characters that JSON escapes.
func TestWriteTicketBytes(t *testing.T) {
	tickets := []*Ticket{
		{Format: "BAM"},
		{Format: "VCF", URLs: []URL{}},
		{Format: "CRAM", MD5: "0123456789abcdef0123456789abcdef", URLs: []URL{{URL: "http://h/x?a=1&b=<2>"}}},
		{Format: "B\"AM\u2028", URLs: []URL{
			{URL: DataURL(bytes.Repeat([]byte{0xff, 0, '<'}, 1000)), Class: "header"},
			{URL: "http://127.0.0.1:1/data/x?s=1&e=2", Headers: map[string]string{"Range": "bytes=0-9", "If-Match": `"etag&1"`}, Class: "body"},
			{URL: "data:;base64,"},
		}},
	}
	for _, tk := range tickets {
		rec := httptest.NewRecorder()
		if err := WriteTicket(rec, tk); err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(ticketEnvelope{tk})
		if err != nil {
			t.Fatal(err)
		}
		if got := rec.Body.Bytes(); !bytes.Equal(got, append(want, '\n')) {
			t.Errorf("WriteTicket wrote\n%s\nwant\n%s", got, want)
		}
		if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != ContentType {
			t.Errorf("status %d, Content-Type %q", rec.Code, rec.Header().Get("Content-Type"))
		}
	}
}
