package s3test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Proxy forwards TCP connections from 127.0.0.1 to a server, counting the
// bytes each way and injecting the faults it is told to: a connection
// reset after so many bytes, a response that stops after so many bytes,
// or a 503 answered in the server's place. It reads the requests to know
// where each one starts (HTTP/1.1 clients do not pipeline), and forwards
// the bytes unchanged.
type Proxy struct {
	Addr   string // 127.0.0.1:PORT
	target string
	ln     net.Listener

	up, down atomic.Int64 // bytes from the client, bytes to the client
	stalls   atomic.Int64 // responses stopped by StallDownAfter

	mu        sync.Mutex
	resetUp   int64 // bytes to go before a reset upstream; <0 none
	resetDown int64
	stallDown int64
	fail503   int
	requests  []string
	conns     map[net.Conn]struct{}
	closed    bool
	// Hold: the next request that hold accepts waits for release.
	hold          func(*http.Request) bool
	held, release chan struct{}
}

// NewProxy starts a proxy to target (host:port) until the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, ln: ln,
		resetUp: -1, resetDown: -1, stallDown: -1, conns: map[net.Conn]struct{}{}}
	go p.serve()
	t.Cleanup(p.Close)
	return p
}

// Endpoint is the proxy's URL.
func (p *Proxy) Endpoint() string { return "http://" + p.Addr }

// Up returns the bytes received from clients since the last Zero.
func (p *Proxy) Up() int64 { return p.up.Load() }

// Down returns the bytes sent to clients since the last Zero.
func (p *Proxy) Down() int64 { return p.down.Load() }

// Zero sets the byte counts to zero and forgets the requests seen.
func (p *Proxy) Zero() {
	p.up.Store(0)
	p.down.Store(0)
	p.mu.Lock()
	p.requests = nil
	p.mu.Unlock()
}

// Requests returns the request lines seen since the last Zero
// ("PUT /bucket/key?partNumber=2&uploadId=... HTTP/1.1").
func (p *Proxy) Requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.requests...)
}

// ResetUpAfter resets the connection that carries the n-th byte from now
// from a client to the server (once), before that byte is forwarded.
func (p *Proxy) ResetUpAfter(n int64) { p.mu.Lock(); p.resetUp = n; p.mu.Unlock() }

// ResetDownAfter resets the connection that carries the n-th byte from now
// from the server to a client (once).
func (p *Proxy) ResetDownAfter(n int64) { p.mu.Lock(); p.resetDown = n; p.mu.Unlock() }

// StallDownAfter stops forwarding to the client the connection that
// carries the n-th byte from now from the server (once): the client sees
// an answer that stops, or never comes, until it gives up.
func (p *Proxy) StallDownAfter(n int64) { p.mu.Lock(); p.stallDown = n; p.mu.Unlock() }

// Stalls returns how many responses StallDownAfter has stopped so far: a
// test waits for it to know that the client now waits for an answer that
// does not come.
func (p *Proxy) Stalls() int64 { return p.stalls.Load() }

// Fail503 answers the next n requests with 503 Slow Down, as a busy S3
// does, without passing them to the server.
func (p *Proxy) Fail503(n int) { p.mu.Lock(); p.fail503 = n; p.mu.Unlock() }

// Hold makes the proxy keep the next request that match accepts: it is
// read whole from the client and reaches the server only when release is
// called, also if the client has given up meanwhile. held is closed when
// the request is being kept.
func (p *Proxy) Hold(match func(*http.Request) bool) (held <-chan struct{}, release func()) {
	h, r := make(chan struct{}), make(chan struct{})
	p.mu.Lock()
	p.hold, p.held, p.release = match, h, r
	p.mu.Unlock()
	var once sync.Once
	return h, func() { once.Do(func() { close(r) }) }
}

// Close stops the proxy and breaks the connections through it.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	conns := p.conns
	p.conns = map[net.Conn]struct{}{}
	p.mu.Unlock()
	p.ln.Close()
	for c := range conns {
		c.Close()
	}
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.handle(c)
	}
}

// budget takes n bytes from the fault counter at *f: it returns how many
// may pass before the fault, and whether the fault fires.
func (p *Proxy) budget(f *int64, n int) (int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if *f < 0 || int64(n) <= *f {
		if *f >= 0 {
			*f -= int64(n)
		}
		return n, false
	}
	pass := int(*f)
	*f = -1
	return pass, true
}

func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

func (p *Proxy) handle(client net.Conn) {
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	if !p.track(client) || !p.track(server) {
		client.Close()
		server.Close()
		return
	}
	defer p.untrack(client)
	defer p.untrack(server)
	done := make(chan struct{})
	var once sync.Once
	stop := func(hard bool) {
		once.Do(func() {
			if hard {
				reset(client)
				reset(server)
			} else {
				client.Close()
				server.Close()
			}
			close(done)
		})
	}
	go func() {
		p.pumpDown(client, server, done, stop)
	}()
	p.pumpUp(client, server, stop)
	<-done
}

// pumpDown forwards the server's bytes to the client.
func (p *Proxy) pumpDown(client, server net.Conn, done <-chan struct{}, stop func(bool)) {
	buf := make([]byte, 32<<10)
	for {
		n, err := server.Read(buf)
		if n > 0 {
			pass, resetNow := p.budget(&p.resetDown, n)
			passStall, stall := p.budget(&p.stallDown, pass)
			if passStall > 0 {
				if _, werr := client.Write(buf[:passStall]); werr != nil {
					stop(false)
					return
				}
				p.down.Add(int64(passStall))
			}
			if stall {
				p.stalls.Add(1)
				<-done // until the client gives up
				return
			}
			if resetNow {
				stop(true)
				return
			}
		}
		if err != nil {
			stop(false)
			return
		}
	}
}

// pumpUp forwards the client's requests to the server, one at a time.
func (p *Proxy) pumpUp(client, server net.Conn, stop func(bool)) {
	br := bufio.NewReaderSize(client, 64<<10)
	for {
		head, req, err := readHead(br)
		p.up.Add(int64(len(head)))
		if err != nil {
			stop(false)
			return
		}
		p.mu.Lock()
		p.requests = append(p.requests, strings.TrimRight(string(head[:bytes.IndexByte(head, '\n')+1]), "\r\n"))
		answer503 := p.fail503 > 0
		if answer503 {
			p.fail503--
		}
		p.mu.Unlock()
		if answer503 {
			p.slowDown(client, br, req)
			stop(false)
			return
		}
		if held, release := p.holds(req); held != nil {
			body := make([]byte, max(req.ContentLength, 0))
			n, err := io.ReadFull(br, body)
			p.up.Add(int64(n))
			if err != nil {
				stop(false)
				return
			}
			close(held)
			<-release
			if !p.forward(server, head, stop) || !p.forward(server, body, stop) {
				return
			}
			continue
		}
		if !p.forward(server, head, stop) {
			return
		}
		switch {
		case len(req.TransferEncoding) > 0:
			// Not seen from the SDK; forward the rest as it comes.
			p.copyUp(server, br, -1, stop)
			return
		case req.ContentLength > 0:
			if !p.copyUp(server, br, req.ContentLength, stop) {
				return
			}
		}
	}
}

// holds reports whether req is the request to hold, with its channels.
func (p *Proxy) holds(req *http.Request) (held, release chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hold == nil || !p.hold(req) {
		return nil, nil
	}
	p.hold = nil
	return p.held, p.release
}

// forward writes b to the server, counting it against the reset fault.
func (p *Proxy) forward(server net.Conn, b []byte, stop func(bool)) bool {
	pass, resetNow := p.budget(&p.resetUp, len(b))
	if _, err := server.Write(b[:pass]); err != nil {
		stop(false)
		return false
	}
	if resetNow {
		stop(true)
		return false
	}
	return true
}

// copyUp forwards n bytes of a body (all that comes if n < 0).
func (p *Proxy) copyUp(server net.Conn, br *bufio.Reader, n int64, stop func(bool)) bool {
	buf := make([]byte, 32<<10)
	for n != 0 {
		want := len(buf)
		if n > 0 && int64(want) > n {
			want = int(n)
		}
		m, err := br.Read(buf[:want])
		p.up.Add(int64(m))
		if m > 0 && !p.forward(server, buf[:m], stop) {
			return false
		}
		if n > 0 {
			n -= int64(m)
		}
		if err != nil {
			stop(false)
			return false
		}
	}
	return true
}

// readHead reads a request line and headers, returning the raw bytes and
// the parsed request.
func readHead(br *bufio.Reader) ([]byte, *http.Request, error) {
	var head []byte
	for {
		line, err := br.ReadSlice('\n')
		head = append(head, line...)
		if err != nil {
			if err == io.EOF && len(head) == 0 {
				return nil, nil, io.EOF
			}
			return head, nil, err
		}
		if len(head) > 1<<20 {
			return head, nil, errors.New("request head too large")
		}
		if len(line) <= 2 && strings.TrimRight(string(line), "\r\n") == "" {
			break
		}
	}
	req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(head)))
	if err != nil {
		return head, nil, err
	}
	return head, req, nil
}

// slowDown answers a request with 503. A body that the client is sending
// is read first, so that it sees the answer rather than a broken pipe; a
// client waiting for 100 Continue sends none.
func (p *Proxy) slowDown(client net.Conn, br *bufio.Reader, req *http.Request) {
	if !strings.EqualFold(req.Header.Get("Expect"), "100-continue") && req.ContentLength > 0 {
		n, _ := io.CopyN(io.Discard, br, req.ContentLength)
		p.up.Add(n)
	}
	body := "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>"
	resp := fmt.Sprintf("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/xml\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
	n, _ := io.WriteString(client, resp)
	p.down.Add(int64(n))
}
