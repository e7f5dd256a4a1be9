package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
	"github.com/c4gh-go/crypt4gh/internal/tlserr"
)

// OpenURL returns the resource at an https:// URL (or an http:// URL to a
// loopback address), such as a presigned URL or a file on a web server,
// read with range requests. Of cfg it uses only Attempts, IdleTimeout and
// Notice.
//
// Requests are pinned to the resource's strong ETag with If-Match, or to
// its Last-Modified time with If-Unmodified-Since where it has no strong
// ETag; every answer's ETag and total size are checked too, so a changed
// resource is ErrChanged even from a server that ignores the conditions.
// A server that ignores Range gives ErrNoRange. A refusal (401, 403, as
// when a presigned URL has expired) is ErrAccessDenied.
func OpenURL(ctx context.Context, rawURL string, cfg Config) (*Object, error) {
	loc, err := Parse(rawURL)
	if err != nil {
		return nil, err
	}
	if loc.URL == "" {
		return nil, urlFail("open", loc, &detailed{sentinel: ErrInvalidURL, detail: "not an http(s) URL"})
	}
	idle := cfg.IdleTimeout
	if idle <= 0 {
		idle = defaultIdleTimeout
	}
	attempts := cfg.Attempts
	if attempts <= 0 {
		attempts = defaultAttempts
	}
	s := &httpSource{url: loc.URL, client: webClient(idle), attempts: attempts, notice: newNotifier(cfg.Notice, idle, attempts)}
	size, err := s.open(ctx)
	if err != nil {
		return nil, urlFail("open", loc, err)
	}
	return NewObject(ctx, loc, size, s.etag, s, Config{Attempts: attempts, IdleTimeout: idle}), nil
}

// webClients holds one client per idle timeout, so that the Objects of
// many URLs share their connections.
var webClients sync.Map // time.Duration -> *http.Client

// webClient is an HTTP client that gives up on a server that does not
// answer for idle, and that never follows a redirect to plain http.
func webClient(idle time.Duration) *http.Client {
	if c, ok := webClients.Load(idle); ok {
		return c.(*http.Client)
	}
	c, _ := webClients.LoadOrStore(idle, newWebClient(idle))
	return c.(*http.Client)
}

func newWebClient(idle time.Duration) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.ResponseHeaderTimeout = idle
	tr.MaxIdleConnsPerHost = 64
	dial := (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &writeDeadlineConn{Conn: conn, idle: idle}, nil
	}
	// Compressed answers would break byte ranges.
	tr.DisableCompression = true
	return &http.Client{
		Transport: tr,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			// Plain http only on loopback, and only from loopback: a
			// server elsewhere must not point the client at this
			// machine's own services.
			fromLoopback := len(via) > 0 && loopback(via[0].URL.Hostname())
			if req.URL.Scheme != "https" && !(req.URL.Scheme == "http" && loopback(req.URL.Hostname()) && fromLoopback) {
				return &refusedRedirect{scheme: req.URL.Scheme}
			}
			return nil
		},
	}
}

// refusedRedirect is a redirect that is not followed on principle: to
// anything but https, or plain http to a loopback address.
type refusedRedirect struct{ scheme string }

func (r *refusedRedirect) Error() string {
	return fmt.Sprintf("the server redirected to a %s:// URL, which is not followed: only https:// is (and http:// from and to a loopback address)", r.scheme)
}

func (r *refusedRedirect) Kind() errkind.Kind { return errkind.Usage }

// httpSource reads one version of a web resource with range requests.
type httpSource struct {
	url          string
	client       *http.Client
	attempts     int
	notice       *notifier
	size         int64
	etag         string // strong ETag, or ""
	weakETag     string
	lastModified string
}

// Validator returns the strong ETag of the version opened, or else its
// weak ETag or Last-Modified time (not strong), or "".
func (s *httpSource) Validator() (string, bool) {
	switch {
	case s.etag != "":
		return s.etag, true
	case s.weakETag != "":
		return s.weakETag, false
	case s.lastModified != "":
		return "Last-Modified: " + s.lastModified, false
	}
	return "", false
}

// open learns the size and version of the resource from a request for
// its first byte.
func (s *httpSource) open(ctx context.Context) (int64, error) {
	resp, err := s.do(ctx, 0, 0, true)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1))
	return s.size, nil
}

// GetRange gets n bytes at off of the version opened.
func (s *httpSource) GetRange(ctx context.Context, off, n int64) (io.ReadCloser, error) {
	resp, err := s.do(ctx, off, n, false)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// do requests n bytes at off (the first byte, to open), retrying
// connection failures, 5xx and 429 answers, and checks the answer.
func (s *httpSource) do(ctx context.Context, off, n int64, opening bool) (*http.Response, error) {
	var lastErr error
	for attempt := 1; ; attempt++ {
		if attempt > 1 {
			if attempt > s.attempts {
				return nil, fmt.Errorf("failed after %d attempts: %w", s.attempts, lastErr)
			}
			if err := sleep(ctx, attempt-1); err != nil {
				return nil, err
			}
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
		if err != nil {
			return nil, err
		}
		if opening {
			req.Header.Set("Range", "bytes=0-0")
		} else {
			req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", off, off+n-1))
			if s.etag != "" {
				req.Header.Set("If-Match", s.etag)
			} else if s.lastModified != "" {
				req.Header.Set("If-Unmodified-Since", s.lastModified)
			}
		}
		stop := s.notice.watch(req.URL.Host)
		resp, err := s.client.Do(req)
		stop()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			// The URL, query and all, is in a *url.Error: keep only why.
			var ue interface{ Unwrap() error }
			if errors.As(err, &ue) {
				err = ue.Unwrap()
			}
			var refused *refusedRedirect
			if errors.As(err, &refused) {
				return nil, refused // on principle: asking again changes nothing
			}
			if tlserr.Untrusted(err) {
				return nil, err // a certificate stays untrusted
			}
			lastErr = err
			continue
		}
		if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
			resp.Body.Close()
			lastErr = fmt.Errorf("server answered %s", resp.Status)
			continue
		}
		if err := s.check(resp, off, n, opening); err != nil {
			resp.Body.Close()
			return nil, err
		}
		return resp, nil
	}
}

// check accepts an answer that holds the range asked for, of the version
// opened.
func (s *httpSource) check(resp *http.Response, off, n int64, opening bool) error {
	status := fmt.Sprintf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	switch resp.StatusCode {
	case http.StatusPartialContent, http.StatusOK, http.StatusRequestedRangeNotSatisfiable:
	case http.StatusNotFound, http.StatusGone:
		return &detailed{sentinel: ErrNotFound, detail: status}
	case http.StatusUnauthorized, http.StatusForbidden:
		return &detailed{sentinel: ErrAccessDenied, detail: status}
	case http.StatusPreconditionFailed:
		return &detailed{sentinel: ErrChanged, detail: status}
	default:
		return fmt.Errorf("server answered %s", status)
	}
	etag := resp.Header.Get("ETag")
	lastModified := resp.Header.Get("Last-Modified")
	if opening {
		if strings.HasPrefix(etag, "W/") {
			s.weakETag = etag
		} else {
			s.etag = etag
		}
		s.lastModified = lastModified
		switch resp.StatusCode {
		case http.StatusOK:
			if resp.ContentLength == 0 {
				return nil // an empty resource: nothing to range over
			}
			return &detailed{sentinel: ErrNoRange, detail: "answered a range request with 200 OK"}
		case http.StatusRequestedRangeNotSatisfiable:
			// bytes=0-0 of an empty resource.
			if total, ok := totalSize(resp.Header.Get("Content-Range")); ok && total == 0 {
				return nil
			}
			return fmt.Errorf("server answered %s to a request for the first byte", status)
		}
		start, _, total, err := contentRange(resp.Header.Get("Content-Range"))
		if err != nil || start != 0 || total < 1 {
			return fmt.Errorf("server answered a range request with Content-Range %q", resp.Header.Get("Content-Range"))
		}
		s.size = total
		return nil
	}
	if resp.StatusCode != http.StatusPartialContent {
		return &detailed{sentinel: ErrNoRange, detail: "answered a range request with " + status}
	}
	if s.etag != "" && etag != s.etag || s.etag == "" && s.weakETag != "" && etag != s.weakETag {
		return &detailed{sentinel: ErrChanged, detail: fmt.Sprintf("ETag %s, not %s", etag, s.etag+s.weakETag)}
	}
	if s.etag == "" && s.weakETag == "" && s.lastModified != "" && lastModified != s.lastModified {
		return &detailed{sentinel: ErrChanged, detail: "Last-Modified changed"}
	}
	start, end, total, err := contentRange(resp.Header.Get("Content-Range"))
	if err != nil {
		return fmt.Errorf("server answered a range request with Content-Range %q", resp.Header.Get("Content-Range"))
	}
	if total != s.size {
		return &detailed{sentinel: ErrChanged, detail: fmt.Sprintf("size %d, not %d", total, s.size)}
	}
	if start != off || end != off+n-1 || resp.ContentLength >= 0 && resp.ContentLength != n {
		return fmt.Errorf("server answered bytes %d-%d to a request for %d-%d", start, end, off, off+n-1)
	}
	return nil
}

// contentRange parses "bytes START-END/TOTAL".
func contentRange(h string) (start, end, total int64, err error) {
	rest, ok := strings.CutPrefix(h, "bytes ")
	span, size, ok2 := strings.Cut(rest, "/")
	a, b, ok3 := strings.Cut(span, "-")
	if !ok || !ok2 || !ok3 {
		return 0, 0, 0, errors.New("malformed Content-Range")
	}
	if start, err = strconv.ParseInt(a, 10, 64); err != nil {
		return
	}
	if end, err = strconv.ParseInt(b, 10, 64); err != nil {
		return
	}
	if total, err = strconv.ParseInt(size, 10, 64); err != nil {
		return
	}
	if start < 0 || end < start || total <= end {
		err = errors.New("inconsistent Content-Range")
	}
	return
}

// totalSize parses the total of "bytes */TOTAL".
func totalSize(h string) (int64, bool) {
	rest, ok := strings.CutPrefix(h, "bytes */")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(rest, 10, 64)
	return n, err == nil && n >= 0
}

// urlFail wraps err as an *Error about a web resource.
func urlFail(op string, loc Location, err error) error {
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	hint := ""
	switch {
	case errors.Is(err, ErrAccessDenied):
		hint = "a presigned URL may have expired; ask for a new one"
	case tlserr.Untrusted(err):
		hint = "the server's certificate is not trusted here: https:// inputs trust the system's authorities; name its authority's certificate in SSL_CERT_FILE"
	}
	return &Error{Op: op, Location: loc.String(), Err: err, hint: hint}
}
