package cli

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/htsget"
	"github.com/c4gh-go/crypt4gh/keys"
)

// ticketServer is the htsget server of the client's tests, on loopback:
// GET and POST /reads/{id} and /variants/{id} answer the ticket that the
// test's function makes of the request, and /data/{name} serves the
// test's files with http.ServeContent (so ranges are real 206 answers).
// It records each request. Where a test asks only for what a server
// answers (not for a ticket laid out by hand), `crypt4gh serve` can take
// its place.
type ticketServer struct {
	*httptest.Server
	mu     sync.Mutex
	token  string // when set, /reads and /variants want it as a bearer token
	ticket func(*htsget.Request, *http.Request) (*htsget.Ticket, *htsget.Error)
	files  map[string][]byte
	// fault, when set, may answer a request in its place (a 500, a cut
	// connection); it returns whether it did.
	fault func(w http.ResponseWriter, r *http.Request) bool
	seen  []seenRequest
}

// seenRequest is what the server noted of a request.
type seenRequest struct {
	Method, Path, Query, Range, Auth, PublicKey string
	Body                                        string
}

func newTicketServer(t *testing.T) *ticketServer {
	s := &ticketServer{files: map[string][]byte{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *ticketServer) serve(w http.ResponseWriter, r *http.Request) {
	var b []byte
	if r.Body != nil {
		b = make([]byte, 0, 512)
		buf := bytes.NewBuffer(b)
		buf.ReadFrom(r.Body)
		b = buf.Bytes()
	}
	s.mu.Lock()
	s.seen = append(s.seen, seenRequest{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
		Range: r.Header.Get("Range"), Auth: r.Header.Get("Authorization"),
		PublicKey: r.Header.Get(htsget.PublicKeyHeader), Body: string(b)})
	fault, ticket, token := s.fault, s.ticket, s.token
	s.mu.Unlock()
	if fault != nil && fault(w, r) {
		return
	}
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 2)
	if len(parts) != 2 {
		htsget.WriteError(w, htsget.Errorf(htsget.NotFound, "no such endpoint"))
		return
	}
	switch parts[0] {
	case "data":
		s.mu.Lock()
		f, ok := s.files[parts[1]]
		s.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		http.ServeContent(w, r, parts[1], time.Time{}, bytes.NewReader(f))
	case htsget.Reads, htsget.Variants:
		if token != "" && r.Header.Get("Authorization") != "Bearer "+token {
			htsget.WriteError(w, htsget.Errorf(htsget.InvalidAuthentication, "a bearer token is needed"))
			return
		}
		var req *htsget.Request
		var err error
		if r.Method == http.MethodPost {
			req, err = htsget.ParsePOST(parts[0], parts[1], r.URL.Query(), bytes.NewReader(b))
		} else {
			req, err = htsget.ParseQuery(parts[0], parts[1], r.URL.Query())
		}
		if err != nil {
			htsget.WriteError(w, err.(*htsget.Error))
			return
		}
		tk, herr := ticket(req, r)
		if herr != nil {
			htsget.WriteError(w, herr)
			return
		}
		htsget.WriteTicket(w, tk)
	default:
		htsget.WriteError(w, htsget.Errorf(htsget.NotFound, "no such endpoint"))
	}
}

// requests returns the requests seen so far.
func (s *ticketServer) requests() []seenRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seenRequest(nil), s.seen...)
}

// setTicket sets the function that answers ticket requests.
func (s *ticketServer) setTicket(f func(*htsget.Request, *http.Request) (*htsget.Ticket, *htsget.Error)) {
	s.mu.Lock()
	s.ticket = f
	s.mu.Unlock()
}

// setToken makes /reads and /variants want token as a bearer token.
func (s *ticketServer) setToken(token string) {
	s.mu.Lock()
	s.token = token
	s.mu.Unlock()
}

// setFault sets the function that may answer a request in the server's
// place.
func (s *ticketServer) setFault(f func(w http.ResponseWriter, r *http.Request) bool) {
	s.mu.Lock()
	s.fault = f
	s.mu.Unlock()
}

// addFile serves b at /data/name and returns its URL.
func (s *ticketServer) addFile(name string, b []byte) string {
	s.mu.Lock()
	s.files[name] = b
	s.mu.Unlock()
	return s.URL + "/data/" + name
}

// rangeURL is a ticket URL for bytes [start, end) of the resource at u.
func rangeURL(u string, start, end int64) htsget.URL {
	return htsget.URL{URL: u, Headers: map[string]string{"Range": "bytes=" + strconv.FormatInt(start, 10) + "-" + strconv.FormatInt(end-1, 10)}}
}

// c4ghFile is a crypt4gh file that this tool wrote, opened with the
// archive's key: what a server needs to build a ticket of it.
type c4ghFile struct {
	url        string // where the server serves it
	headerSize int64
	packets    int // of its header
	dataKey    [32]byte
	size       int64
}

// openC4GH reads the file at path, written for sk, and serves it as name.
func openC4GH(t *testing.T, s *ticketServer, path, name string, sk *keys.SecretKey) c4ghFile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h, err := header.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c, err := h.Decrypt(sk, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Zero()
	return c4ghFile{url: s.addFile(name, b), headerSize: h.Size(), packets: len(h.Packets), dataKey: c.DataKeys[0], size: int64(len(b))}
}

// headerParts are the URLs of a Crypt4GH ticket's header laid out as
// htsget-rs lays it out: a data: URL with the magic, the version and the
// packet count; the original packets of f by range (for other readers);
// a data: URL of new packets sealed for the requester, each payload in
// its order.
func headerParts(t *testing.T, f c4ghFile, requester keys.PublicKey, payloads ...[]byte) []htsget.URL {
	t.Helper()
	writer, err := keys.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	var sealed header.Header
	for _, p := range payloads {
		pk, err := header.SealPacket(&writer, requester, p, nil)
		if err != nil {
			t.Fatal(err)
		}
		sealed.Packets = append(sealed.Packets, pk)
	}
	pre := append([]byte(header.Magic), 1, 0, 0, 0)
	pre = binary.LittleEndian.AppendUint32(pre, uint32(f.packets+len(payloads)))
	return []htsget.URL{
		{URL: htsget.DataURL(pre), Class: "header"},
		rangeURL(f.url, 16, f.headerSize),
		{URL: htsget.DataURL(sealed.Marshal()[16:]), Class: "header"},
	}
}

// segments is the URL of segments [first, last] of f.
func (f c4ghFile) segments(first, last int64) htsget.URL {
	end := min(f.headerSize+(last+1)*body.EncryptedSegmentSize, f.size)
	return rangeURL(f.url, f.headerSize+first*body.EncryptedSegmentSize, end)
}

// closedAddress returns a loopback address on which nothing listens.
func closedAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
