// Package server is an htsget 1.3 server over a folder or a bucket of
// crypt4gh files: it answers tickets for regions of BAM, CRAM, VCF.gz and
// BCF files, either as Crypt4GH tickets re-encrypted for the requester's
// key (the parts concatenate to one crypt4gh stream, in htsget-rs's
// layout) or, when configured, as plaintext tickets that unmodified
// htslib programs read.
//
// The server reads only headers, indexes and the edge blocks of regions
// to answer a ticket. The parts of a ticket are data: URLs and signed URLs
// of the server's own /data endpoint, which serves the granted ranges of
// a file as it is stored (Crypt4GH tickets) or decrypted (plaintext
// tickets). It keeps no state: every instance that holds the same key and
// source serves the same tickets.
package server

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/c4gh-go/crypt4gh/htsget"
	"github.com/c4gh-go/crypt4gh/internal/textfmt"
	"github.com/c4gh-go/crypt4gh/keys"
)

// Config configures a [Server].
type Config struct {
	// Source holds the files.
	Source Source
	// Key is the server's secret key: the files' headers are for it. It
	// is a *keys.SecretKey, or a key that an agent holds
	// (agent.Client.Key), which opens the headers, seals the tickets'
	// headers and derives the key that signs data URLs.
	Key Key
	// Plaintext allows plaintext tickets, whose data the server decrypts.
	Plaintext bool
	// Tokens, when not empty, are the bearer tokens a ticket request
	// must carry one of.
	Tokens []string
	// BaseURL is the scheme and host of the data URLs in tickets
	// ("https://htsget.example.org"); when empty, those of the request.
	BaseURL string
	// Presign makes the stored ranges of Crypt4GH tickets presigned GET
	// URLs of the objects, when the source is a store that gives them,
	// instead of URLs of the server's /data endpoint: the requester then
	// reads the bucket directly, and must be able to reach it.
	Presign bool
	// TicketLifetime is how long the data URLs of a ticket are valid;
	// one hour when 0.
	TicketLifetime time.Duration
	// MaxStreams bounds the data responses sent at once, MaxTickets the
	// ticket requests answered at once; more wait their turn. 64 and 16
	// when 0.
	MaxStreams, MaxTickets int
	// WriteIdle cuts off a response that the client takes no bytes of
	// for that long (one that stopped reading), so that it gives back
	// its place among MaxStreams and does not hold up a shutdown; one
	// minute when 0.
	WriteIdle time.Duration
	// TicketWrite is the time a ticket's answer may take to send, however
	// steadily the client reads it: a slow client then gives back the
	// places the ticket held (that of the tickets of several regions, one
	// at a time). 30 seconds when 0.
	TicketWrite time.Duration
	// MaxNewBytes bounds the blocks a ticket makes anew, cut at the edges
	// of its regions, as they are in its answer (sealed in whole
	// segments in a Crypt4GH ticket); 8 MiB when 0.
	MaxNewBytes int64
	// Log receives one line per request and the errors; nothing when nil.
	Log *log.Logger
}

// Key is the server's key: a *keys.SecretKey is one, a key that an agent
// holds is another. Derive gives the key that signs data URLs (label
// "crypt4gh serve: data URLs v1"): every instance that holds the same key,
// in a file or in an agent, signs alike.
type Key interface {
	keys.Holder
	Derive(label string) ([]byte, error)
}

var _ Key = (*keys.SecretKey)(nil)

// Server is an http.Handler that answers htsget requests.
type Server struct {
	cfg      Config
	urlKey   []byte
	tokens   [][32]byte
	streams  chan struct{}
	tickets  chan struct{}
	regions  chan struct{}
	indexes  *indexCache
	inFlight atomic.Int64
	// readTimeout bounds the reading of a request, bodyTimeout that of a
	// ticket request's body once its turn came; tests shorten them.
	readTimeout, bodyTimeout time.Duration
}

// indexCacheBytes bounds the index files whose contents a server keeps:
// a BAI of a whole genome at 30x is about 8 MiB.
const indexCacheBytes = 16 << 20

// New returns the server of cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Source == nil || keys.IsNil(cfg.Key) {
		return nil, errors.New("server: no source or no key")
	}
	if cfg.TicketLifetime == 0 {
		cfg.TicketLifetime = time.Hour
	}
	if cfg.MaxStreams == 0 {
		cfg.MaxStreams = 64
	}
	if cfg.MaxTickets == 0 {
		cfg.MaxTickets = 16
	}
	if cfg.WriteIdle == 0 {
		cfg.WriteIdle = time.Minute
	}
	if cfg.MaxNewBytes == 0 {
		cfg.MaxNewBytes = 8 << 20
	}
	if cfg.TicketWrite == 0 {
		cfg.TicketWrite = 30 * time.Second
	}
	cfg.BaseURL = strings.TrimSuffix(cfg.BaseURL, "/")
	k, err := urlKey(cfg.Key)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, urlKey: k, streams: make(chan struct{}, cfg.MaxStreams), tickets: make(chan struct{}, cfg.MaxTickets),
		regions: make(chan struct{}, maxRegionTickets), indexes: newIndexCache(indexCacheBytes), readTimeout: readTimeout, bodyTimeout: bodyTimeout}
	for _, t := range cfg.Tokens {
		s.tokens = append(s.tokens, sha256.Sum256([]byte(t)))
	}
	return s, nil
}

// ReadTokens reads bearer tokens, one a line; blank lines and lines
// that start with # are left out. No token is an error.
func ReadTokens(r io.Reader) ([]string, error) {
	var tokens []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if t := strings.TrimSpace(sc.Text()); t != "" && !strings.HasPrefix(t, "#") {
			tokens = append(tokens, t)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(tokens) == 0 {
		return nil, errors.New("lists no token")
	}
	return tokens, nil
}

// HTTPServer returns an http.Server for s with the timeouts of a server
// on the open internet: 10 s for a request's headers, 60 s for all of it,
// 2 minutes idle between requests, 64 KiB of headers. Responses have no
// time limit: a data stream takes as long as the client needs.
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       s.readTimeout,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          s.cfg.Log,
	}
}

// readTimeout bounds the reading of a request. A ticket request that
// waited its turn has bodyTimeout from then for its body (at most 1 MiB):
// the wait does not count, and a client that sends its body slowly holds
// a place among the tickets no longer than that.
const (
	readTimeout = 60 * time.Second
	bodyTimeout = 10 * time.Second
)

// Serve serves s on ln until stop is done, then stops accepting and
// waits for the requests under way to finish, or for force to be done:
// it then closes their connections. With certFile and keyFile it serves
// TLS.
func (s *Server) Serve(stop, force context.Context, ln net.Listener, certFile, keyFile string) error {
	hs := s.HTTPServer()
	done := make(chan error, 1)
	go func() {
		if certFile != "" {
			done <- hs.ServeTLS(ln, certFile, keyFile)
		} else {
			done <- hs.Serve(ln)
		}
	}()
	select {
	case err := <-done:
		return err
	case <-stop.Done():
	}
	if err := hs.Shutdown(force); err != nil {
		if force.Err() == nil {
			return err
		}
		s.logf("shutdown forced: %d requests cut off", s.InFlight())
		hs.Close()
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// InFlight returns the number of requests being answered.
func (s *Server) InFlight() int64 { return s.inFlight.Load() }

func (s *Server) logf(format string, args ...any) {
	if s.cfg.Log != nil {
		s.cfg.Log.Printf(format, args...)
	}
}

// ServeHTTP answers /reads/…, /variants/… and /data/….
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	start := time.Now()
	lw := &logWriter{ResponseWriter: w, rc: http.NewResponseController(w), idle: s.cfg.WriteIdle}
	defer func() {
		// The path without the query: data URLs carry their signature
		// there. Never a header: they carry tokens and keys.
		s.logf("%s %s %d %dB %s", r.Method, r.URL.EscapedPath(), lw.status(), lw.n, time.Since(start).Round(time.Microsecond))
	}()
	r.Body = http.MaxBytesReader(lw, r.Body, htsget.MaxRequestSize+1)
	s.route(lw, r)
}

func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if rest, ok := strings.CutPrefix(p, "/data/"); ok {
		if e := checkEscapes(r); e != nil {
			htsget.WriteError(w, e)
			return
		}
		s.serveData(w, r, rest)
		return
	}
	for _, ep := range []string{htsget.Reads, htsget.Variants} {
		rest, ok := strings.CutPrefix(p, "/"+ep+"/")
		if !ok {
			continue
		}
		if rest == "service-info" {
			s.serviceInfo(w, r, ep)
			return
		}
		if !s.authorized(r) {
			htsget.WriteError(w, htsget.Errorf(htsget.InvalidAuthentication, "a listed bearer token is needed"))
			return
		}
		if e := checkEscapes(r); e != nil {
			htsget.WriteError(w, e)
			return
		}
		if e := checkName(rest); e != nil {
			htsget.WriteError(w, e)
			return
		}
		s.serveTicket(w, r, ep, rest)
		return
	}
	htsget.WriteError(w, htsget.Errorf(htsget.NotFound, "no such endpoint: the endpoints are /reads/ID and /variants/ID"))
}

// checkEscapes refuses a path with an encoded slash or backslash: an id
// names a path under the source with plain slashes only.
func checkEscapes(r *http.Request) *htsget.Error {
	raw := strings.ToLower(r.URL.RawPath)
	if strings.Contains(raw, "%2f") || strings.Contains(raw, "%5c") {
		return htsget.Errorf(htsget.InvalidInput, "an id has no encoded slashes")
	}
	return nil
}

// checkName refuses a name that is not a plain relative path: "..", ".",
// empty elements, backslashes, control characters.
func checkName(name string) *htsget.Error {
	if !validName(name) {
		return htsget.Errorf(htsget.InvalidInput, "%s is not an id: a path under the served folder, without . or .. elements", textfmt.QuoteShort(name))
	}
	return nil
}

func validName(name string) bool {
	if name == "" || len(name) > 1024 || strings.ContainsAny(name, "\\") {
		return false
	}
	for _, c := range name {
		if c < 0x20 || c == 0x7f {
			return false
		}
	}
	for _, el := range strings.Split(name, "/") {
		if el == "" || el == "." || el == ".." {
			return false
		}
	}
	return true
}

// authorized reports whether r carries a listed token, when tokens are
// listed. Every token is compared, in constant time, as its SHA-256, so
// that neither the token's length nor where it differs shows in the time.
func (s *Server) authorized(r *http.Request) bool {
	if len(s.tokens) == 0 {
		return true
	}
	// The scheme's name is case-insensitive (RFC 9110).
	v := r.Header.Get("Authorization")
	if len(v) < len("Bearer ") || !strings.EqualFold(v[:len("Bearer ")], "Bearer ") {
		return false
	}
	h := sha256.Sum256([]byte(strings.TrimSpace(v[len("Bearer "):])))
	found := 0
	for i := range s.tokens {
		found |= subtle.ConstantTimeCompare(h[:], s.tokens[i][:])
	}
	return found == 1
}

// acquire takes a place in sem, waiting for one while the request lasts.
func (s *Server) acquire(r *http.Request, sem chan struct{}) bool {
	select {
	case sem <- struct{}{}:
		return true
	case <-r.Context().Done():
		return false
	}
}

// serviceInfo answers GET /reads/service-info and /variants/service-info.
func (s *Server) serviceInfo(w http.ResponseWriter, r *http.Request, endpoint string) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		htsget.WriteError(w, &htsget.Error{Status: http.StatusMethodNotAllowed, Code: "MethodNotAllowed", Message: "service-info takes GET"})
		return
	}
	info := map[string]any{
		"id":           "org.c4gh-go.crypt4gh." + endpoint,
		"name":         "crypt4gh serve",
		"type":         map[string]string{"group": "org.ga4gh", "artifact": "htsget", "version": "1.3.0"},
		"description":  "htsget over crypt4gh files: Crypt4GH tickets (encryptionScheme=C4GH)" + map[bool]string{true: " and plaintext tickets", false: ""}[s.cfg.Plaintext],
		"organization": map[string]string{"name": "crypt4gh", "url": "https://github.com/c4gh-go/crypt4gh"},
		"version":      "1",
		"htsget": map[string]any{
			"datatype":                  endpoint,
			"formats":                   htsget.Formats(endpoint),
			"fieldsParametersEffective": false,
			"tagsParametersEffective":   false,
			"encryptionSchemes":         append([]string{"C4GH"}, map[bool][]string{true: {"none"}}[s.cfg.Plaintext]...),
		},
	}
	b, _ := json.Marshal(info)
	w.Header().Set("Content-Type", "application/json")
	w.Write(append(b, '\n'))
}

// writeInternal answers an error of the server's own (a damaged file, a
// key that does not open it): logged in full, answered in short.
func (s *Server) writeInternal(w http.ResponseWriter, r *http.Request, err error) {
	s.logf("%s %s: %v", r.Method, r.URL.EscapedPath(), err)
	htsget.WriteError(w, &htsget.Error{Status: http.StatusInternalServerError, Code: "InternalError", Message: "the server could not read the file: see its log"})
}

// logWriter counts what a response sends, for the log line, and sends it
// in pieces of writeChunk bytes, each of which the client must take
// within idle: a response has no time limit, but a client that stops
// reading loses its connection.
type logWriter struct {
	http.ResponseWriter
	rc       *http.ResponseController
	idle     time.Duration
	deadline time.Time // when not zero, the end of the whole response
	code     int
	n        int64
}

// writeChunk is the most a response sends under one write deadline: at
// 256 KiB a minute, a client must read 4 KiB/s to keep its connection.
const writeChunk = 256 << 10

// extend gives the next writeChunk bytes their deadline. Writers without
// deadlines (a test's recorder) go without.
func (w *logWriter) extend() {
	d := time.Now().Add(w.idle)
	if !w.deadline.IsZero() && w.deadline.Before(d) {
		d = w.deadline
	}
	_ = w.rc.SetWriteDeadline(d)
}

func (w *logWriter) status() int {
	if w.code == 0 {
		return http.StatusOK
	}
	return w.code
}

func (w *logWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *logWriter) Write(p []byte) (int, error) {
	var n int
	for len(p) > 0 {
		w.extend()
		m, err := w.ResponseWriter.Write(p[:min(len(p), writeChunk)])
		n += m
		w.n += int64(m)
		p = p[m:]
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// ReadFrom keeps the response's own ReadFrom (sendfile from a file).
func (w *logWriter) ReadFrom(r io.Reader) (int64, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	rf, ok := w.ResponseWriter.(io.ReaderFrom)
	if !ok {
		return io.Copy(struct{ io.Writer }{w}, r)
	}
	var n int64
	for {
		w.extend()
		// A file under one LimitedReader, as Stream gives it, still
		// goes by sendfile: net looks through one level only.
		chunk := &io.LimitedReader{R: r, N: writeChunk}
		lr, limited := r.(*io.LimitedReader)
		if limited {
			chunk = &io.LimitedReader{R: lr.R, N: min(lr.N, writeChunk)}
		}
		m, err := rf.ReadFrom(chunk)
		if limited {
			lr.N -= m
		}
		n += m
		w.n += m
		if err != nil || m < writeChunk {
			return n, err
		}
	}
}

func (w *logWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
