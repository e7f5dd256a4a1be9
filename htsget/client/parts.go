package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/c4gh-go/crypt4gh/htsget"
	"github.com/c4gh-go/crypt4gh/internal/errkind"
)

// ChunkSize is the unit in which a part is read and handed over;
// PartBuffer is what a part fetched ahead holds at most.
const (
	ChunkSize  = 64 << 10
	PartBuffer = 32 * ChunkSize
)

var chunks = sync.Pool{New: func() any { b := make([]byte, ChunkSize); return &b }}

// chunk is a piece of a part; pooled is its buffer, returned to the
// pool once read (nil for a data: part's bytes).
type chunk struct {
	b      []byte
	pooled *[]byte
}

// part is one URL of a ticket and the chunks fetched of it.
type part struct {
	n    int // from 1, for messages
	url  *url.URL
	hdr  map[string]string
	rng  *byteRange // the URL's Range, when one the client can resume
	ch   chan chunk // closed after the last chunk, err set before
	err  error
	seen bool // started
}

// Reader is the concatenation of a ticket's parts. Make it with
// [Client.Open]; the caller must call Close.
type Reader struct {
	c      *Client
	hc     *http.Client
	origin string
	ctx    context.Context
	cancel context.CancelFunc
	parts  []*part
	cur    int   // the part being read
	buf    chunk // what is left of its current chunk
	err    error // sticky
	wg     sync.WaitGroup
}

var _ io.ReadCloser = (*Reader)(nil)

// Open returns the reader of t's parts in order. ticketURL is the URL the
// ticket came from: the token goes to its origin only. The data: parts
// are decoded at once, and a malformed one, or a Range header that is
// not bytes=…, is an error of errkind.Data.
func (c *Client) Open(ctx context.Context, t *htsget.Ticket, ticketURL string) (*Reader, error) {
	from, err := url.Parse(ticketURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadURL, errors.Unwrap(err))
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &Reader{c: c, hc: c.httpClient(), origin: Origin(from), ctx: ctx, cancel: cancel}
	for i, tu := range t.URLs {
		p := &part{n: i + 1}
		if strings.HasPrefix(tu.URL, "data:") {
			b, err := htsget.DecodeDataURL(tu.URL)
			if err != nil {
				cancel()
				return nil, fmt.Errorf("part %d of %d: %w", i+1, len(t.URLs), err)
			}
			p.ch = make(chan chunk, 1)
			p.ch <- chunk{b: b}
			close(p.ch)
			p.seen = true
			r.parts = append(r.parts, p)
			continue
		}
		u, err := url.Parse(tu.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			cancel()
			return nil, fmt.Errorf("%w: part %d of %d is not an http, https or data: URL", htsget.ErrBadTicket, i+1, len(t.URLs))
		}
		p.url, p.hdr = u, map[string]string{}
		for k, v := range tu.Headers {
			if strings.EqualFold(k, "Range") {
				br, ok := parseRange(v)
				if !ok {
					cancel()
					return nil, fmt.Errorf("%w: part %d of %d: Range %q is not one range of bytes", htsget.ErrBadTicket, i+1, len(t.URLs), v)
				}
				p.rng = &br
				continue
			}
			if !validHeader(k, v) {
				cancel()
				return nil, fmt.Errorf("%w: part %d of %d: header %q is not one that can be sent", htsget.ErrBadTicket, i+1, len(t.URLs), k)
			}
			p.hdr[k] = v
		}
		r.parts = append(r.parts, p)
	}
	r.start()
	return r, nil
}

// start fetches the parts of the window that begins at the current one.
func (r *Reader) start() {
	for i := r.cur; i < len(r.parts) && i < r.cur+r.c.parallel(); i++ {
		p := r.parts[i]
		if p.seen {
			continue
		}
		p.seen = true
		// Room for the part's buffer, beside the chunk the reader holds
		// and the one being filled.
		p.ch = make(chan chunk, PartBuffer/ChunkSize-2)
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer close(p.ch)
			if err := r.fetch(p); err != nil {
				p.err = fmt.Errorf("part %d of %d (%s): %w", p.n, len(r.parts), Shown(p.url), err)
			}
		}()
	}
}

// Read reads the next bytes of the concatenation.
func (r *Reader) Read(b []byte) (int, error) {
	for r.err == nil {
		if len(r.buf.b) > 0 {
			n := copy(b, r.buf.b)
			r.buf.b = r.buf.b[n:]
			if len(r.buf.b) == 0 {
				r.release()
			}
			return n, nil
		}
		if r.cur == len(r.parts) {
			r.err = io.EOF
			break
		}
		p := r.parts[r.cur]
		select {
		case c, ok := <-p.ch:
			if ok {
				r.buf = c
				continue
			}
			if p.err != nil {
				r.fail(p.err)
				break
			}
			r.cur++
			r.start()
		case <-r.ctx.Done():
			r.fail(r.ctx.Err())
		}
	}
	return 0, r.err
}

func (r *Reader) release() {
	if r.buf.pooled != nil {
		chunks.Put(r.buf.pooled)
	}
	r.buf = chunk{}
}

func (r *Reader) fail(err error) {
	r.err = err
	r.cancel()
}

// Close stops the fetches under way and waits for them to end.
func (r *Reader) Close() error {
	r.cancel()
	r.wg.Wait()
	r.release()
	for _, p := range r.parts[min(r.cur, len(r.parts)):] {
		if p.ch == nil {
			continue
		}
		for c := range p.ch {
			if c.pooled != nil {
				chunks.Put(c.pooled)
			}
		}
	}
	if r.err == nil || r.err == io.EOF {
		r.err = errkind.New(errkind.Usage, "read after Close")
	}
	return nil
}

// fetch sends the bytes of p to p.ch, trying again from where it stopped
// when an attempt fails on the way.
func (r *Reader) fetch(p *part) error {
	var got int64 // bytes handed over
	return r.c.retry(r.ctx, func(ctx context.Context) error {
		return r.attempt(ctx, p, &got)
	})
}

// attempt makes one request for the bytes of p from *got on.
func (r *Reader) attempt(ctx context.Context, p *part, got *int64) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url.String(), nil)
	if err != nil {
		return permanent(err)
	}
	for k, v := range p.hdr {
		hr.Header.Set(k, v)
	}
	// The range still wanted: the ticket's, less what was handed over;
	// without one, the rest of the resource.
	want := byteRange{start: *got, end: -1}
	ranged := p.rng != nil || *got > 0
	if p.rng != nil {
		want = byteRange{start: p.rng.start + *got, end: p.rng.end}
	}
	if ranged {
		hr.Header.Set("Range", want.String())
	}
	r.c.authorize(hr, r.origin)

	// The watchdog ends an attempt that receives nothing for too long,
	// but not while the reader is behind.
	idle := r.c.idle()
	var stalled bool
	var mu sync.Mutex
	dog := time.AfterFunc(idle, func() { mu.Lock(); stalled = true; mu.Unlock(); cancel() })
	defer dog.Stop()
	stall := func(err error) error {
		mu.Lock()
		defer mu.Unlock()
		if stalled {
			return fmt.Errorf("nothing received for %v", idle)
		}
		return err
	}

	resp, err := r.hc.Do(hr)
	if err != nil {
		if r.ctx.Err() != nil {
			return permanent(r.ctx.Err())
		}
		return doError(err, stall)
	}
	defer resp.Body.Close()
	left := int64(-1) // bytes to read, -1 for all
	switch resp.StatusCode {
	case http.StatusPartialContent:
		if !ranged {
			return permanent(errors.New("206 Partial Content to a request without a Range"))
		}
		cr, ok := parseContentRange(resp.Header.Get("Content-Range"))
		switch {
		case !ok:
			return permanent(fmt.Errorf("206 Partial Content with Content-Range %q", resp.Header.Get("Content-Range")))
		case cr.start != want.start || want.end >= 0 && cr.end > want.end ||
			want.end >= 0 && cr.end < want.end && (cr.total < 0 || cr.end != cr.total-1):
			return permanent(fmt.Errorf("asked for %s, the server sent bytes %d-%d", want, cr.start, cr.end))
		}
		left = cr.end - cr.start + 1
	case http.StatusOK:
		// A server that ignores Range sends the whole resource: read
		// from the range's start.
		if ranged && want.start > 0 {
			n, err := skip(resp.Body, want.start, func() { dog.Reset(idle) })
			if err != nil {
				if err == io.EOF {
					return permanent(fmt.Errorf("the server ignored the Range and sent %d bytes, fewer than %s", n, want))
				}
				return transient(stall(netError(err)))
			}
		}
		if ranged && want.end >= 0 {
			left = want.end - want.start + 1
		}
	default:
		return statusError(resp)
	}
	for left != 0 {
		bp := chunks.Get().(*[]byte)
		b := *bp
		if left > 0 && left < int64(len(b)) {
			b = b[:left]
		}
		n, err := fill(resp.Body, b)
		if n > 0 {
			dog.Stop()
			select {
			case p.ch <- chunk{b: b[:n], pooled: bp}:
			case <-r.ctx.Done():
				chunks.Put(bp)
				return permanent(r.ctx.Err())
			}
			dog.Reset(idle)
			*got += int64(n)
			if left > 0 {
				left -= int64(n)
			}
		} else {
			chunks.Put(bp)
		}
		switch {
		case err == nil:
		case err == io.EOF:
			if left > 0 {
				return transient(fmt.Errorf("the response ended %d bytes early", left))
			}
			return nil
		case r.ctx.Err() != nil:
			return permanent(r.ctx.Err())
		default:
			return transient(stall(netError(err)))
		}
	}
	return nil
}

// skip reads and drops n bytes of body, calling progress after each
// read; io.EOF when the body ends first.
func skip(body io.Reader, n int64, progress func()) (int64, error) {
	bp := chunks.Get().(*[]byte)
	defer chunks.Put(bp)
	var done int64
	for done < n {
		m, err := fill(body, (*bp)[:min(int64(len(*bp)), n-done)])
		done += int64(m)
		progress()
		if err != nil && done < n {
			return done, err
		}
	}
	return done, nil
}

// fill reads into b what the body has, at least one byte, or returns
// io.EOF at a clean end only: a body shorter than its Content-Length ends
// with io.ErrUnexpectedEOF.
func fill(body io.Reader, b []byte) (int, error) {
	for {
		n, err := body.Read(b)
		if n > 0 || err != nil {
			return n, err
		}
	}
}

// validHeader reports whether a ticket's header k: v can be sent: k a
// token of RFC 9110, v without control characters but tabs. Else the
// request fails each attempt, as if the network did.
func validHeader(k, v string) bool {
	if k == "" {
		return false
	}
	for _, c := range []byte(k) {
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	for _, c := range []byte(v) {
		if c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// byteRange is the range of a Range header: bytes start to end, end
// included, -1 for the end of the resource.
type byteRange struct{ start, end int64 }

func (b byteRange) String() string {
	if b.end < 0 {
		return fmt.Sprintf("bytes=%d-", b.start)
	}
	return fmt.Sprintf("bytes=%d-%d", b.start, b.end)
}

// parseRange reads the value of a Range header of one range, bytes=A-B or
// bytes=A- (RFC 9110); ok is false for anything else (a suffix range,
// several ranges).
func parseRange(v string) (br byteRange, ok bool) {
	v = strings.TrimSpace(v)
	spec, ok := cutPrefixFold(v, "bytes=")
	if !ok {
		return byteRange{}, false
	}
	a, b, ok := strings.Cut(strings.TrimSpace(spec), "-")
	if !ok {
		return byteRange{}, false
	}
	start, ok := parseUint(a)
	if !ok {
		return byteRange{}, false
	}
	if strings.TrimSpace(b) == "" {
		return byteRange{start, -1}, true
	}
	end, ok := parseUint(b)
	if !ok || end < start {
		return byteRange{}, false
	}
	return byteRange{start, end}, true
}

// contentRange is a Content-Range header's value; total is -1 for *.
type contentRange struct{ start, end, total int64 }

// parseContentRange reads "bytes A-B/TOTAL" or "bytes A-B/*".
func parseContentRange(v string) (contentRange, bool) {
	spec, ok := cutPrefixFold(strings.TrimSpace(v), "bytes ")
	if !ok {
		return contentRange{}, false
	}
	rng, total, ok := strings.Cut(spec, "/")
	if !ok {
		return contentRange{}, false
	}
	a, b, ok := strings.Cut(rng, "-")
	if !ok {
		return contentRange{}, false
	}
	cr := contentRange{total: -1}
	if cr.start, ok = parseUint(a); !ok {
		return contentRange{}, false
	}
	if cr.end, ok = parseUint(b); !ok || cr.end < cr.start {
		return contentRange{}, false
	}
	if total != "*" {
		if cr.total, ok = parseUint(total); !ok || cr.end >= cr.total {
			return contentRange{}, false
		}
	}
	return cr, true
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) < len(prefix) || !strings.EqualFold(s[:len(prefix)], prefix) {
		return "", false
	}
	return s[len(prefix):], true
}

// parseUint reads a decimal of at most 18 digits (no sign, no spaces).
func parseUint(s string) (int64, bool) {
	if s == "" || len(s) > 18 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil
}
