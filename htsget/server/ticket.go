package server

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/htsget"
	"github.com/c4gh-go/crypt4gh/internal/errkind"
	"github.com/c4gh-go/crypt4gh/internal/textfmt"
	"github.com/c4gh-go/crypt4gh/keys"
	"github.com/c4gh-go/crypt4gh/reencrypt"
	"github.com/c4gh-go/crypt4gh/region"
)

// extensions are the names of a format's files: ID + extension.
var extensions = map[string]string{
	"BAM":  ".bam.c4gh",
	"CRAM": ".cram.c4gh",
	"VCF":  ".vcf.gz.c4gh",
	"BCF":  ".bcf.c4gh",
}

var formatOf = map[region.Format]string{region.BAM: "BAM", region.CRAM: "CRAM", region.VCF: "VCF", region.BCF: "BCF"}

// A ticket's bound on regions: its data: URLs hold the blocks cut at the
// regions' edges, made anew for each ticket, so that a request for many
// regions would hold many blocks in memory and in the answer
// (Config.MaxNewBytes bounds those).
const maxRegions = 1024

// maxRegionTickets bounds the tickets of several regions answered at
// once: each may hold MaxNewBytes of new blocks, sealed in segments, and
// many times that while it is encoded (tens of MiB), where a ticket of
// one region holds two blocks. Sixteen at once took 640 MiB.
const maxRegionTickets = 1

// serveTicket answers GET and POST /ENDPOINT/ID.
func (s *Server) serveTicket(w http.ResponseWriter, r *http.Request, endpoint, id string) {
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		w.Header().Set("Allow", "GET, POST")
		htsget.WriteError(w, &htsget.Error{Status: http.StatusMethodNotAllowed, Code: "MethodNotAllowed", Message: "tickets take GET or POST"})
		return
	}
	// A place among the tickets before the body is read: requests that
	// wait hold no more than their connection, however many there are.
	held := s.acquire(r, s.tickets)
	if !held {
		return
	}
	defer func() {
		if held {
			<-s.tickets
		}
	}()
	if lw, ok := w.(*logWriter); ok && r.Method == http.MethodPost {
		// The wait does not come out of the time the body has (under
		// load, bodies sent at once timed out), and a body sent slowly
		// holds the place for bodyTimeout at most.
		_ = lw.rc.SetReadDeadline(time.Now().Add(s.bodyTimeout))
	}
	var (
		req *htsget.Request
		err error
	)
	if r.Method == http.MethodGet {
		req, err = htsget.ParseQuery(endpoint, id, r.URL.Query())
	} else {
		req, err = htsget.ParsePOST(endpoint, id, r.URL.Query(), r.Body)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	if len(req.Regions) > maxRegions {
		htsget.WriteError(w, htsget.Errorf(htsget.PayloadTooLarge, "%d regions: a ticket takes at most %d", len(req.Regions), maxRegions))
		return
	}
	sp := cmp.Or(r.URL.Query().Get(StreamParam), "false")
	stream := sp == "true"
	if sp != "true" && sp != "false" {
		htsget.WriteError(w, htsget.Errorf(htsget.InvalidInput, "%s=%s: say true or false", StreamParam, r.URL.Query().Get(StreamParam)))
		return
	}
	var recipient *keys.PublicKey
	if htsget.IsCrypt4GH(req.EncryptionScheme) {
		v, from := requesterKey(r)
		if v == "" {
			// Not 401: that would send a client looking for a token.
			htsget.WriteError(w, htsget.Errorf(htsget.InvalidInput, "a C4GH ticket needs the requester's public key in the %s header or the %s parameter", htsget.PublicKeyHeader, htsget.PublicKeyParam))
			return
		}
		pk, err := htsget.ParsePublicKey(v)
		if err != nil {
			htsget.WriteError(w, htsget.Errorf(htsget.InvalidInput, "%s: %v", from, err))
			return
		}
		recipient = &pk
	} else if !s.cfg.Plaintext {
		htsget.WriteError(w, htsget.Errorf(htsget.PermissionDenied, "this server gives Crypt4GH tickets only: ask with encryptionScheme=C4GH and your public key in %s or %s", htsget.PublicKeyHeader, htsget.PublicKeyParam))
		return
	}
	if stream && len(req.Regions) > 1 {
		// Its new blocks would stay in memory as long as it is read.
		htsget.WriteError(w, htsget.Errorf(htsget.InvalidInput, "%s=true takes one region: ask for a ticket of several", StreamParam))
		return
	}
	if len(req.Regions) > 1 {
		// Its place among the tickets is given back while it waits, for
		// the tickets of one region to go on.
		<-s.tickets
		held = false
		if !s.acquire(r, s.regions) {
			return
		}
		defer func() { <-s.regions }()
		if held = s.acquire(r, s.tickets); !held {
			return
		}
	}
	if stream {
		// The bytes of the parts take a place among the streams, not
		// among the tickets, for as long as the client reads them; it is
		// taken before the file is opened, so that requests that wait
		// for it hold no more than their connection.
		<-s.tickets
		held = false
		if !s.acquire(r, s.streams) {
			return
		}
		defer func() { <-s.streams }()
	}
	p, err := s.prepare(r, req, recipient)
	if err != nil {
		writeTicketErr(s, w, r, err)
		return
	}
	defer p.Close()
	if stream {
		s.stream(w, r, p)
		return
	}
	t, err := s.ticket(r, p)
	if err != nil {
		writeTicketErr(s, w, r, err)
		return
	}
	// However slowly the client reads, the ticket (megabytes, with the
	// places it holds) is sent or given up within TicketWrite.
	if lw, ok := w.(*logWriter); ok {
		lw.deadline = time.Now().Add(s.cfg.TicketWrite)
	}
	if err := htsget.WriteTicket(w, t); err != nil {
		s.logf("%s %s: %v", r.Method, r.URL.EscapedPath(), err)
	}
}

// writeTicketErr answers the error of a ticket: the protocol's, or the
// server's own (logged).
func writeTicketErr(s *Server, w http.ResponseWriter, r *http.Request, err error) {
	var he *htsget.Error
	if errors.As(err, &he) {
		htsget.WriteError(w, he)
		return
	}
	s.writeInternal(w, r, err)
}

// requesterKey returns the requester's public key as r gives it, and
// where: a header, or the query for clients that send no header of
// their own (samtools and every htslib program). A "+" in a query stands
// for a space: the base64 pasted from a key file comes back whole.
func requesterKey(r *http.Request) (value, from string) {
	for _, h := range []string{htsget.PublicKeyHeader, htsget.AltPublicKeyHeader} {
		if v := r.Header.Get(h); v != "" {
			return v, "the " + h + " header"
		}
	}
	v := r.URL.Query().Get(htsget.PublicKeyParam)
	return strings.ReplaceAll(v, " ", "+"), "the " + htsget.PublicKeyParam + " parameter"
}

func writeErr(w http.ResponseWriter, err error) {
	var he *htsget.Error
	if errors.As(err, &he) {
		htsget.WriteError(w, he)
		return
	}
	htsget.WriteError(w, htsget.Errorf(htsget.InvalidInput, "%v", err))
}

// open finds the file of the request: ID with the extension of the
// format asked for, or of the endpoint's formats in order.
func (s *Server) open(r *http.Request, req *htsget.Request) (string, string, Object, error) {
	formats := htsget.Formats(req.Endpoint)
	if req.Format != "" {
		formats = []string{req.Format}
	}
	for _, f := range formats {
		name := req.ID + extensions[f]
		obj, err := s.cfg.Source.Open(r.Context(), name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", "", nil, err
		}
		return name, f, obj, nil
	}
	return "", "", nil, htsget.Errorf(htsget.NotFound, "no %s file %s", strings.Join(formats, " or "), textfmt.QuoteShort(req.ID))
}

// StreamParam is the query parameter that asks for the bytes of a
// ticket's parts, concatenated, instead of the ticket: one crypt4gh
// stream (or the plaintext of the region) for clients that read no
// tickets, or whose reading of them stops short of Crypt4GH: htslib
// before 1.18 re-opens a crypt4gh stream that came by htsget from the
// ticket's URL, and reads the ticket instead of the stream. An extension
// of this server.
const StreamParam = "stream"

// prepared is a ticket's answer before it is sent: the file, opened, and
// the parts.
type prepared struct {
	name, format, class string
	obj                 Object
	plain               *c4gh.ReaderAt
	id                  string // the file's identity, bound into data URLs
	kind                string // of the ranges of parts
	parts               []reencrypt.Part
}

func (p *prepared) Close() {
	p.plain.Close()
	p.obj.Close()
}

// prepare opens the file of req and plans the parts of its answer: for
// recipient when not nil, else plaintext.
func (s *Server) prepare(r *http.Request, req *htsget.Request, recipient *keys.PublicKey) (_ *prepared, err error) {
	name, format, obj, err := s.open(r, req)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			obj.Close()
		}
	}()
	plain, err := c4gh.NewReaderAt(obj, obj.Size(), s.cfg.Key, nil)
	if err != nil {
		if errors.Is(err, header.ErrNoDecryptablePacket) {
			return nil, htsget.Errorf(htsget.PermissionDenied, "%s is not for this server's key", req.ID)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	defer func() {
		if err != nil {
			plain.Close()
		}
	}()
	got, err := region.Detect(plain, plain.Size())
	if err != nil || formatOf[got] != format {
		return nil, htsget.Errorf(htsget.UnsupportedFormat, "%s is not a %s file", req.ID, format)
	}
	pieces, err := s.plan(r, req, name, plain, recipient != nil)
	if err != nil {
		return nil, err
	}
	p := &prepared{name: name, format: format, class: req.Class, obj: obj, plain: plain, id: obj.ID()}
	if recipient == nil {
		p.kind = kindPlain
		for _, pc := range pieces {
			end := pc.End
			if pc.Data == nil && end == edit.Unbounded {
				end = plain.Size()
			}
			p.parts = append(p.parts, reencrypt.Part{Start: pc.Start, End: end, Data: pc.Data})
		}
		return p, nil
	}
	rp := make([]reencrypt.Piece, len(pieces))
	for i, pc := range pieces {
		rp[i] = reencrypt.Piece(pc)
	}
	l, err := reencrypt.PlanLayout(io.NewSectionReader(obj, 0, obj.Size()), rp,
		reencrypt.AssembleOptions{Reader: s.cfg.Key, Recipients: []keys.PublicKey{*recipient}})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p.kind = kindC4GH
	p.parts = l.Parts()
	return p, nil
}

// ticket returns the ticket of p: data: URLs for its own bytes, signed
// URLs of /data (or presigned URLs of the object) for its ranges.
func (s *Server) ticket(r *http.Request, p *prepared) (*htsget.Ticket, error) {
	base := s.cfg.BaseURL
	if base == "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		host := r.Host
		if host == "" {
			// An HTTP/1.0 request, or an empty Host header: the
			// address the request came in on, rather than URLs
			// without a host.
			if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
				host = a.String()
			}
		}
		base = scheme + "://" + host
	}
	expires := time.Now().Add(s.cfg.TicketLifetime).Unix()
	t := &htsget.Ticket{Format: p.format}
	var presigned string
	if p.kind == kindC4GH && s.cfg.Presign {
		if ss, ok := s.cfg.Source.(*storeSource); ok {
			u, ok, err := ss.presignGet(r.Context(), p.name, s.cfg.TicketLifetime)
			if err != nil {
				return nil, err
			}
			if ok {
				presigned = u
			}
		}
	}
	for _, part := range p.parts {
		if part.Data != nil {
			if len(part.Data) > 0 {
				t.URLs = append(t.URLs, htsget.URL{URL: htsget.DataURL(part.Data), Class: p.class})
			}
			continue
		}
		if part.End == part.Start {
			continue
		}
		h := map[string]string{"Range": fmt.Sprintf("bytes=%d-%d", part.Start, part.End-1)}
		u := presigned
		if u == "" {
			g := grant{kind: p.kind, name: p.name, id: p.id, start: part.Start, end: part.End, expires: expires}
			u = g.url(base, s.urlKey)
		} else if p.id != "" {
			// The object as the ticket saw it, not one put since.
			h["If-Match"] = p.id
		}
		t.URLs = append(t.URLs, htsget.URL{URL: u, Class: p.class, Headers: h})
	}
	return t, nil
}

// stream sends the bytes of p's parts, concatenated: what a client of
// its ticket would assemble. Its length is not announced: a client that
// seeks to the end (htslib, for the end-of-file block) is told it cannot,
// rather than sent a range this response does not serve.
// The caller holds a place among the streams.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, p *prepared) {
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Cache-Control", "private, no-store")
	w.WriteHeader(http.StatusOK)
	for _, part := range p.parts {
		var err error
		switch {
		case part.Data != nil:
			_, err = w.Write(part.Data)
		case p.kind == kindPlain:
			err = copyPlain(w, p.plain, part.Start, part.End)
		default:
			_, err = p.obj.Stream(w, part.Start, part.End-part.Start)
		}
		if err != nil {
			// The status is sent: the client sees a cut response.
			s.logf("stream %s: %v", p.name, err)
			panic(http.ErrAbortHandler)
		}
	}
}

// plan returns the pieces of the plaintext that the ticket holds: all of
// it, the header alone, or the regions.
func (s *Server) plan(r *http.Request, req *htsget.Request, name string, plain *c4gh.ReaderAt, sealed bool) ([]region.Piece, error) {
	if req.Class == "" && len(req.Regions) == 0 {
		return []region.Piece{{Start: 0, End: plain.Size()}}, nil
	}
	if len(req.Regions) > maxRegions {
		return nil, htsget.Errorf(htsget.PayloadTooLarge, "%d regions: a ticket takes at most %d", len(req.Regions), maxRegions)
	}
	idx, err := s.readIndex(r, name)
	if err != nil {
		return nil, err
	}
	f, err := region.Open(plain, plain.Size(), req.ID, idx)
	if err != nil {
		return nil, err // the server's files do not fit: logged
	}
	regions := make([]region.Region, len(req.Regions))
	for i, g := range req.Regions {
		regions[i] = g.Region()
	}
	p, err := f.Plan(regions)
	if err != nil {
		return nil, regionError(err)
	}
	// What the new blocks weigh in the answer: as they are in a
	// plaintext ticket, sealed in whole segments in a Crypt4GH one.
	weight := p.New
	if sealed {
		weight = sealedSize(p.Pieces)
	}
	if weight > s.cfg.MaxNewBytes {
		return nil, htsget.Errorf(htsget.PayloadTooLarge, "the regions cut %d KiB of blocks at their edges (%d KiB in the ticket), more than the %d KiB a ticket holds: ask for fewer regions at once", p.New>>10, weight>>10, s.cfg.MaxNewBytes>>10)
	}
	return p.Pieces, nil
}

// sealedSize is the length of the new segments that hold the new blocks
// of pieces in a Crypt4GH ticket: each run of them between ranges of the
// file is sealed in whole segments, the padding skipped by the edit list,
// but for a run that ends the body.
func sealedSize(pieces []region.Piece) int64 {
	var total, run int64
	for i, p := range pieces {
		if p.Data != nil {
			run += int64(len(p.Data))
			if i < len(pieces)-1 {
				continue
			}
			total += body.EncryptedSize(run)
			break
		}
		if run > 0 {
			total += body.SegmentCount(run) * body.EncryptedSegmentSize
			run = 0
		}
	}
	return total
}

// regionError gives the request's errors their htsget codes.
func regionError(err error) error {
	switch {
	case errors.Is(err, region.ErrUnknownReference), errors.Is(err, region.ErrInvalidRegion):
		return htsget.Errorf(htsget.InvalidRange, "%v", err)
	case errors.Is(err, region.ErrNoIndex):
		return htsget.Errorf(htsget.NotFound, "%v", err)
	case errkind.Of(err) == errkind.Usage:
		// A region the file cannot have (unplaced reads of a VCF).
		return htsget.Errorf(htsget.InvalidInput, "%v", err)
	}
	return err
}

// readIndex reads the index beside the file at name, plain or crypt4gh,
// or finds it in the cache when that file is still the one read.
func (s *Server) readIndex(r *http.Request, name string) (*region.Index, error) {
	var opened []io.Closer
	defer func() {
		for _, c := range opened {
			c.Close()
		}
	}()
	var (
		cached *region.Index
		key    string // of the index found, "" when it has no identity
		stored int64
	)
	open := func(p string) (io.ReaderAt, int64, error) {
		if !validName(p) {
			return nil, 0, fs.ErrNotExist
		}
		obj, err := s.cfg.Source.Open(r.Context(), p)
		if err != nil {
			return nil, 0, err
		}
		opened = append(opened, obj)
		key, stored = "", obj.Size()
		if id := obj.ID(); id != "" {
			key = indexKey(p, id)
			cached = s.indexes.get(key)
		}
		if cached != nil || !strings.HasSuffix(p, ".c4gh") {
			return obj, obj.Size(), nil
		}
		ra, err := c4gh.NewReaderAt(obj, obj.Size(), s.cfg.Key, nil)
		if err != nil {
			return nil, 0, fmt.Errorf("index %s: %w", p, err)
		}
		opened = append(opened, ra)
		return ra, ra.Size(), nil
	}
	idxName, ra, size, err := region.FindIndex(name, "", open)
	if err != nil {
		if errors.Is(err, region.ErrNoIndex) {
			return nil, htsget.Errorf(htsget.NotFound, "no index beside %s: a region needs one", strings.TrimSuffix(name, ".c4gh"))
		}
		return nil, err
	}
	if cached != nil {
		return cached, nil
	}
	x, err := region.ReadIndex(ra, size, idxName)
	if err == nil && key != "" {
		s.indexes.put(key, stored, x)
	}
	return x, err
}
