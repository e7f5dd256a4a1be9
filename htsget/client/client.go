// Package client is an htsget client: it asks a server for the ticket of
// a request and reads the parts the ticket names as one stream.
//
// # Tickets
//
// [Client.Ticket] sends a request to an endpoint (https://host/reads/ID)
// or to a ticket URL that carries its query already: one region or none
// as a GET with the request's query, several as a POST of their JSON. The
// requester's public key, when the client has one, goes in
// [htsget.PublicKeyHeader], for a Crypt4GH ticket.
//
// # Parts
//
// [Client.Open] returns the concatenation of a ticket's parts as one
// [io.Reader]: data: URLs are decoded locally; http and https parts are
// fetched a few at a time ahead of the reader, each streamed through a
// bounded buffer, and delivered in order. A request that fails on the
// network, or with a 5xx or 429 status, is tried again after a growing
// wait; a part cut off in the middle goes on from the byte it stopped
// at. A 200 answer to a Range request (a server that ignores ranges) is
// read from the range's start.
//
// # Credentials
//
// The bearer token goes to the ticket server's origin (scheme, host and
// port) and to the parts on that origin that bring no Authorization of
// their own, never to another origin (a presigned URL of a bucket), not
// even through a redirect. Error messages name URLs without their query,
// which may hold a presigned URL's signature.
package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/c4gh-go/crypt4gh/htsget"
	"github.com/c4gh-go/crypt4gh/internal/errkind"
	"github.com/c4gh-go/crypt4gh/keys"
)

// Defaults of a [Client]'s zero fields.
const (
	DefaultAttempts    = 5
	DefaultBackoff     = 250 * time.Millisecond
	DefaultParallel    = 4
	DefaultIdleTimeout = 60 * time.Second
	// maxBackoff bounds one wait between attempts, Retry-After included.
	maxBackoff = 30 * time.Second
)

// Client fetches tickets and their parts. The zero value is ready to use
// (a plaintext client without a token); its fields must not change once
// it is in use.
type Client struct {
	// HTTP makes the requests; nil for one with timeouts on connecting
	// and on response headers (none on a whole body, which may be
	// large). Its CheckRedirect is replaced by one that keeps the token
	// on its origin.
	HTTP *http.Client
	// Token is the bearer token of the ticket server ("" for none).
	Token string
	// PublicKey, when not nil, is sent in [htsget.PublicKeyHeader] with
	// the ticket request.
	PublicKey *keys.PublicKey
	// Attempts is how many times each request is tried at most, 0 for
	// [DefaultAttempts]; Backoff is the first wait between two, doubled
	// each time (0 for [DefaultBackoff]).
	Attempts int
	Backoff  time.Duration
	// Parallel is how many parts are fetched at once, 0 for
	// [DefaultParallel]. Each holds at most [PartBuffer] bytes that the
	// reader has not taken yet.
	Parallel int
	// IdleTimeout ends an attempt whose response sends nothing for that
	// long (0 for [DefaultIdleTimeout]); the attempt is then tried again.
	IdleTimeout time.Duration
	// UserAgent is sent with every request when not empty.
	UserAgent string
}

func (c *Client) attempts() int { return positive(c.Attempts, DefaultAttempts) }
func (c *Client) parallel() int { return positive(c.Parallel, DefaultParallel) }
func (c *Client) idle() time.Duration {
	return positive(c.IdleTimeout, DefaultIdleTimeout)
}

func positive[T ~int | ~int64](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// httpClient is c.HTTP (or the default) with the redirect policy that
// keeps credentials on their origin.
func (c *Client) httpClient() *http.Client {
	var hc http.Client
	if c.HTTP != nil {
		hc = *c.HTTP
	} else {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.ResponseHeaderTimeout = 2 * time.Minute
		hc.Transport = t
	}
	hc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		if Origin(req.URL) != Origin(via[0].URL) {
			// Go keeps Authorization for a subdomain; the token is
			// for its origin only.
			req.Header.Del("Authorization")
		}
		return nil
	}
	return &hc
}

// Origin returns the origin of u: its scheme, host and port (the
// scheme's default made explicit), in lower case.
func Origin(u *url.URL) string {
	host, port := strings.ToLower(u.Hostname()), u.Port()
	scheme := strings.ToLower(u.Scheme)
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

// PlainHTTP reports whether rawURL is a plain http:// URL of another
// machine: a token sent there crosses the network in the clear.
func PlainHTTP(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil || !strings.EqualFold(u.Scheme, "http") {
		return false
	}
	h := u.Hostname()
	if strings.EqualFold(h, "localhost") {
		return false
	}
	ip := net.ParseIP(h)
	return ip == nil || !ip.IsLoopback()
}

// Shown returns u as messages name it: without its user information, its
// query and its fragment.
func Shown(u *url.URL) string {
	if u.Scheme == "data" {
		return "data: URL"
	}
	s := *u
	s.User, s.RawQuery, s.ForceQuery, s.Fragment, s.RawFragment = nil, "", false, "", ""
	return s.String()
}

// ShownURL is [Shown] of the URL rawURL, "URL" when it does not parse.
func ShownURL(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "URL"
	}
	return Shown(u)
}

// ErrBadURL is wrapped by the errors of a URL that a request cannot be
// made of.
var ErrBadURL = errkind.New(errkind.Usage, "invalid htsget URL")

// Ticket asks the server at rawURL for the ticket of req and returns it.
// rawURL is an endpoint (https://host/reads/ID) or a ticket URL with a
// query, whose parameters req may add to but not contradict. A request
// of more than one region is sent as a POST.
//
// The errors of the server are [*htsget.Error]s (their Kind gives the
// class: 401 and 403 the key class, other 4xx usage); a network failure,
// or a 5xx or 429 status, is tried again, and after the last attempt is
// an error of errkind.Other.
func (c *Client) Ticket(ctx context.Context, rawURL string, req *htsget.Request) (*htsget.Ticket, error) {
	method, u, body, err := ticketRequest(rawURL, req)
	if err != nil {
		return nil, err
	}
	hc := c.httpClient()
	origin := Origin(u)
	var t *htsget.Ticket
	err = c.retry(ctx, func(ctx context.Context) error {
		// A ticket, as a part, ends when nothing comes for too long.
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		idle := c.idle()
		dog := time.AfterFunc(idle, cancel)
		defer dog.Stop()
		stalled := func(err error) error {
			if !dog.Stop() && ctx.Err() != nil {
				return fmt.Errorf("nothing received for %v", idle)
			}
			return err
		}
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body) // NewRequest sets GetBody, for a 307
		}
		hr, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
		if err != nil {
			return permanent(fmt.Errorf("%w: %v", ErrBadURL, err))
		}
		if body != nil {
			hr.Header.Set("Content-Type", "application/json")
		}
		hr.Header.Set("Accept", "application/vnd.ga4gh.htsget.v1.3.0+json, application/json")
		if c.PublicKey != nil {
			hr.Header.Set(htsget.PublicKeyHeader, htsget.EncodePublicKey(*c.PublicKey))
		}
		c.authorize(hr, origin)
		resp, err := hc.Do(hr)
		if err != nil {
			return doError(err, stalled)
		}
		defer resp.Body.Close()
		resp.Body = struct {
			io.Reader
			io.Closer
		}{&idleReader{r: resp.Body, reset: func() { dog.Reset(idle) }}, resp.Body}
		if resp.StatusCode != http.StatusOK {
			return statusError(resp)
		}
		t, err = htsget.ReadTicket(resp.Body)
		if err != nil && errkind.Of(err) == errkind.Other {
			return transient(stalled(netError(err))) // the body was cut off
		}
		return permanent(err)
	})
	if err != nil {
		return nil, fmt.Errorf("ticket from %s: %w", Shown(u), err)
	}
	return t, nil
}

// idleReader calls reset after each read that brings bytes.
type idleReader struct {
	r     io.Reader
	reset func()
}

func (r *idleReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.reset()
	}
	return n, err
}

// authorize adds the token to hr when it goes to origin and brings no
// Authorization of its own.
func (c *Client) authorize(hr *http.Request, origin string) {
	if c.UserAgent != "" {
		hr.Header.Set("User-Agent", c.UserAgent)
	}
	if c.Token == "" || hr.Header.Get("Authorization") != "" || Origin(hr.URL) != origin {
		return
	}
	hr.Header.Set("Authorization", "Bearer "+c.Token)
}

// The parameters of a GET that name its region.
var regionParams = []string{"referenceName", "start", "end"}

// ticketRequest returns the method, URL and body of the request for the
// ticket of req at rawURL.
func ticketRequest(rawURL string, req *htsget.Request) (string, *url.URL, []byte, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", nil, nil, fmt.Errorf("%w: %v", ErrBadURL, errors.Unwrap(err))
	}
	if s := strings.ToLower(u.Scheme); s != "http" && s != "https" || u.Host == "" {
		return "", nil, nil, fmt.Errorf("%w: %s is not an http:// or https:// URL", ErrBadURL, Shown(u))
	}
	u.Fragment, u.RawFragment = "", ""
	q := u.Query()
	if s := q.Get("encryptionScheme"); s != "" && !htsget.IsCrypt4GH(s) {
		return "", nil, nil, fmt.Errorf("%w: encryptionScheme=%s is not C4GH", ErrBadURL, s)
	}
	if q.Get("encryptionScheme") != "" && req.EncryptionScheme == "" {
		return "", nil, nil, fmt.Errorf("%w: the URL asks for encryptionScheme=%s, and the request for plaintext", ErrBadURL, q.Get("encryptionScheme"))
	}
	if len(req.Regions) > 1 {
		for _, k := range regionParams {
			if q.Has(k) {
				return "", nil, nil, fmt.Errorf("%w: the URL names a region (%s) and the request several", ErrBadURL, k)
			}
		}
		// The URL's format and class go in the body with the regions.
		r := *req
		if r.Format == "" {
			r.Format = strings.ToUpper(q.Get("format"))
		}
		if r.Class == "" {
			r.Class = q.Get("class")
		}
		if err := agree(q, r.Query(), "format", "class"); err != nil {
			return "", nil, nil, err
		}
		q.Del("format")
		q.Del("class")
		if r.EncryptionScheme != "" {
			// In the query too: htsget-rs reads it there.
			q.Set("encryptionScheme", r.EncryptionScheme)
		}
		u.RawQuery = q.Encode()
		return http.MethodPost, u, r.Body(), nil
	}
	add := req.Query()
	if len(req.Regions) == 1 {
		for _, k := range regionParams {
			if q.Has(k) {
				return "", nil, nil, fmt.Errorf("%w: the URL names a region (%s) and the request another", ErrBadURL, k)
			}
		}
	}
	if err := agree(q, add, "format", "class", "encryptionScheme"); err != nil {
		return "", nil, nil, err
	}
	for k, v := range add {
		if !q.Has(k) {
			q[k] = v
		}
	}
	u.RawQuery = q.Encode()
	return http.MethodGet, u, nil, nil
}

// agree fails when the URL's query and the request's give a parameter
// different values (case aside).
func agree(q, add url.Values, names ...string) error {
	for _, k := range names {
		a, b := q.Get(k), add.Get(k)
		if k == "encryptionScheme" && htsget.IsCrypt4GH(a) && htsget.IsCrypt4GH(b) {
			continue
		}
		if a != "" && b != "" && !strings.EqualFold(a, b) {
			return fmt.Errorf("%w: the URL has %s=%s and the request %s", ErrBadURL, k, a, b)
		}
	}
	return nil
}
