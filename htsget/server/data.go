package server

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/htsget"
)

// The data URLs of tickets point at the server's /data/KIND/NAME, KIND
// c4gh (the file as it is stored) or plain (its plaintext), with the
// window of bytes [s, e) the ticket grants, an expiry x and a signature t
// of all four: an HMAC-SHA256 under a key derived from the server's
// secret key. Every instance that holds the key checks them the same way,
// so that tickets need no state; a requester can fetch only the ranges of
// the files that a ticket gave, never another file or the rest of one.

const (
	kindC4GH  = "c4gh"
	kindPlain = "plain"
)

// urlKey derives the key that signs data URLs from the server's key.
func urlKey(k Key) ([]byte, error) {
	return k.Derive("crypt4gh serve: data URLs v1")
}

// grant is what a data URL gives: the bytes [start, end) of the file at
// name, as stored or decrypted (kind), until expires, while the file is
// the one the ticket read (id, its [Object].ID).
type grant struct {
	kind, name, id string
	start, end     int64
	expires        int64 // Unix seconds
}

func (g grant) mac(key []byte) []byte {
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "%s\x00%s\x00%s\x00%d\x00%d\x00%d", g.kind, g.name, g.id, g.start, g.end, g.expires)
	return m.Sum(nil)
}

// url returns the data URL of g under base (scheme and host, no slash at
// the end).
func (g grant) url(base string, key []byte) string {
	q := url.Values{}
	q.Set("s", strconv.FormatInt(g.start, 10))
	q.Set("e", strconv.FormatInt(g.end, 10))
	q.Set("x", strconv.FormatInt(g.expires, 10))
	q.Set("v", g.id)
	q.Set("t", base64.RawURLEncoding.EncodeToString(g.mac(key)))
	return base + "/data/" + g.kind + "/" + escapePath(g.name) + "?" + q.Encode()
}

// escapePath escapes each element of a slash path.
func escapePath(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

// parseGrant reads and checks the grant of a data URL: rest is the path
// after /data/.
func parseGrant(rest string, q url.Values, key []byte, now time.Time) (grant, *htsget.Error) {
	kind, name, ok := strings.Cut(rest, "/")
	if !ok || (kind != kindC4GH && kind != kindPlain) {
		return grant{}, htsget.Errorf(htsget.NotFound, "no such data URL")
	}
	if e := checkName(name); e != nil {
		return grant{}, e
	}
	g := grant{kind: kind, name: name, id: q.Get("v")}
	var err error
	num := func(k string) int64 {
		if err != nil {
			return 0
		}
		var v int64
		v, err = strconv.ParseInt(q.Get(k), 10, 64)
		return v
	}
	g.start, g.end, g.expires = num("s"), num("e"), num("x")
	sig, err2 := base64.RawURLEncoding.DecodeString(q.Get("t"))
	if err != nil || err2 != nil || g.start < 0 || g.end < g.start {
		return grant{}, htsget.Errorf(htsget.PermissionDenied, "not a data URL of this server: ask for a new ticket")
	}
	if !hmac.Equal(sig, g.mac(key)) {
		return grant{}, htsget.Errorf(htsget.PermissionDenied, "not a data URL of this server: ask for a new ticket")
	}
	if now.Unix() > g.expires {
		return grant{}, htsget.Errorf(htsget.PermissionDenied, "the data URL has expired: ask for a new ticket")
	}
	return g, nil
}

// parseRange reads a Range header of one byte range, which must lie in
// the window [start, end): it returns the range asked for, or the window
// itself (partial false) when there is no header, or one that RFC 9110
// lets a server ignore: another unit than bytes, which it must ignore,
// and several ranges, which this server does not send as a multipart
// body. ok is false for a range outside the window or one that is not
// a byte range.
func parseRange(h string, start, end int64) (lo, hi int64, partial, ok bool) {
	unit, spec, found := strings.Cut(h, "=")
	if h == "" || !found || !strings.EqualFold(strings.TrimSpace(unit), "bytes") || strings.Contains(spec, ",") {
		return start, end, false, true
	}
	if end <= start {
		return 0, 0, false, false
	}
	a, b, found := strings.Cut(strings.TrimSpace(spec), "-")
	if !found {
		return 0, 0, false, false
	}
	switch {
	case a == "": // the last b bytes of the window
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n <= 0 {
			return 0, 0, false, false
		}
		return max(start, end-n), end, true, true
	default:
		first, err := strconv.ParseInt(a, 10, 64)
		if err != nil || first < start || first >= end {
			return 0, 0, false, false
		}
		last := end - 1
		if b != "" {
			if last, err = strconv.ParseInt(b, 10, 64); err != nil || last < first {
				return 0, 0, false, false
			}
			last = min(last, end-1)
		}
		return first, last + 1, true, true
	}
}

// serveData answers GET /data/KIND/NAME: the bytes of the grant, or the
// range of them the Range header asks for (206).
func (s *Server) serveData(w http.ResponseWriter, r *http.Request, rest string) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		htsget.WriteError(w, &htsget.Error{Status: http.StatusMethodNotAllowed, Code: "MethodNotAllowed", Message: "data URLs take GET"})
		return
	}
	g, e := parseGrant(rest, r.URL.Query(), s.urlKey, time.Now())
	if e != nil {
		htsget.WriteError(w, e)
		return
	}
	if g.kind == kindPlain && !s.cfg.Plaintext {
		htsget.WriteError(w, htsget.Errorf(htsget.PermissionDenied, "this server gives no plaintext"))
		return
	}
	if !s.acquire(r, s.streams) {
		return
	}
	defer func() { <-s.streams }()
	obj, err := s.cfg.Source.Open(r.Context(), g.name)
	if err != nil {
		s.writeOpenError(w, g.name, err)
		return
	}
	defer obj.Close()
	if obj.ID() != g.id {
		// Another file of the same name: the ranges were of the old one.
		htsget.WriteError(w, htsget.Errorf(htsget.NotFound, "%s changed since the ticket was made: ask for a new ticket", g.name))
		return
	}
	var (
		plain *c4gh.ReaderAt
		size  = obj.Size()
	)
	if g.kind == kindPlain {
		if plain, err = c4gh.NewReaderAt(obj, obj.Size(), s.cfg.Key, nil); err != nil {
			s.writeInternal(w, r, fmt.Errorf("%s: %w", g.name, err))
			return
		}
		defer plain.Close()
		size = plain.Size()
	}
	if g.end > size {
		// The file is shorter than when the ticket was made.
		htsget.WriteError(w, htsget.Errorf(htsget.NotFound, "%s changed since the ticket was made: ask for a new ticket", g.name))
		return
	}
	lo, hi, partial, ok := parseRange(r.Header.Get("Range"), g.start, g.end)
	if !ok {
		// The length is the file's, as in a 206's Content-Range.
		w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", size))
		htsget.WriteError(w, &htsget.Error{Status: http.StatusRequestedRangeNotSatisfiable, Code: htsget.InvalidRange,
			Message: fmt.Sprintf("this URL gives bytes %d to %d", g.start, g.end-1)})
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Length", strconv.FormatInt(hi-lo, 10))
	h.Set("Cache-Control", "private, no-store")
	status := http.StatusOK
	if partial {
		h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", lo, hi-1, size))
		status = http.StatusPartialContent
	}
	w.WriteHeader(status)
	if r.Method == http.MethodHead || hi == lo {
		return
	}
	if plain != nil {
		err = copyPlain(w, plain, lo, hi)
	} else {
		_, err = obj.Stream(w, lo, hi-lo)
	}
	if err != nil {
		// The status is sent: the client sees a short body.
		s.logf("data %s: %v", g.name, err)
	}
}

// writeOpenError answers a file that could not be opened.
func (s *Server) writeOpenError(w http.ResponseWriter, name string, err error) {
	if errors.Is(err, fs.ErrNotExist) {
		htsget.WriteError(w, htsget.Errorf(htsget.NotFound, "no such file"))
		return
	}
	s.logf("open %s: %v", name, err)
	htsget.WriteError(w, &htsget.Error{Status: http.StatusInternalServerError, Code: "InternalError", Message: "the file could not be read"})
}

// plainBatch is how much of a plaintext response is decrypted at once:
// four segments, two batches to a response.
const plainBatch = 4 * body.SegmentSize

// copyPlain writes bytes [lo, hi) of plain to w. One goroutine decrypts
// the next batch of segments while this one sends the last: the copy to
// the socket, and the client's reading, overlap the decryption instead
// of waiting for it.
func copyPlain(w io.Writer, plain *c4gh.ReaderAt, lo, hi int64) error {
	type batch struct {
		b   []byte
		n   int
		err error
	}
	free := make(chan []byte, 2)
	full := make(chan batch, 2) // never full: there are two buffers
	free <- make([]byte, plainBatch)
	free <- make([]byte, plainBatch)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		defer close(full)
		for off := lo; off < hi; {
			var b []byte
			select {
			case b = <-free:
			case <-stop:
				return
			}
			// Batches end where segments end, so that none is opened
			// twice.
			end := min(hi, body.Floor(off)+plainBatch)
			n, err := plain.ReadAt(b[:end-off], off)
			full <- batch{b, n, err}
			if err != nil || n == 0 {
				return
			}
			off += int64(n)
		}
	}()
	// plain is not read once this returns: its caller closes it.
	defer func() { close(stop); <-done }()
	for c := range full {
		if c.n > 0 {
			if _, err := w.Write(c.b[:c.n]); err != nil {
				return err
			}
		}
		if c.err != nil && c.err != io.EOF {
			return c.err
		}
		free <- c.b
	}
	return nil
}
