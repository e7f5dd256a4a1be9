package htsget

import (
	"encoding/json"
	"io"
	"math"
	"net/url"
	"strconv"
	"strings"

	"github.com/c4gh-go/crypt4gh/internal/textfmt"
	"github.com/c4gh-go/crypt4gh/region"
)

// MaxRequestSize bounds the body of a POST request.
const MaxRequestSize = 1 << 20

// Request is a ticket request, from the query of a GET or the body of a
// POST (whose query may still carry encryptionScheme).
type Request struct {
	Endpoint string // Reads or Variants
	ID       string
	// Format is upper case ("BAM", "CRAM", "VCF", "BCF"), "" for the
	// endpoint's default.
	Format string
	// Class is "header" for the header alone, "" for the whole answer.
	Class   string
	Regions []Region // none for the whole file
	// EncryptionScheme is the parameter as given, "" for a plaintext
	// ticket; see [IsCrypt4GH].
	EncryptionScheme string
	// Fields, Tags and NoTags are accepted and ignored, as the
	// specification allows.
	Fields, Tags, NoTags []string
}

// Region is one region of a request: positions [Start, End) counted from
// 0, either bound left out for the start or the end of the reference.
type Region struct {
	ReferenceName string  `json:"referenceName"`
	Start         *uint64 `json:"start,omitempty"`
	End           *uint64 `json:"end,omitempty"`
}

// Region returns r as the region package takes it.
func (r Region) Region() region.Region {
	g := region.Region{Name: r.ReferenceName, End: region.Unbounded}
	if r.Start != nil {
		g.Start = int64(*r.Start)
	}
	if r.End != nil {
		g.End = int64(*r.End)
	}
	return g
}

// FromRegion returns g as a request's region.
func FromRegion(g region.Region) Region {
	r := Region{ReferenceName: g.Name}
	if g.Name == region.Unmapped {
		return r
	}
	if g.Start > 0 {
		s := uint64(g.Start)
		r.Start = &s
	}
	if g.End != region.Unbounded {
		e := uint64(g.End)
		r.End = &e
	}
	return r
}

// Formats returns the formats of an endpoint, its default first.
func Formats(endpoint string) []string {
	switch endpoint {
	case Reads:
		return []string{"BAM", "CRAM"}
	case Variants:
		return []string{"VCF", "BCF"}
	}
	return nil
}

// ParseQuery reads the request of a GET. Its errors are [*Error]s.
func ParseQuery(endpoint, id string, q url.Values) (*Request, error) {
	r := &Request{Endpoint: endpoint, ID: id}
	r.Format = strings.ToUpper(q.Get("format"))
	r.Class = q.Get("class")
	r.EncryptionScheme = q.Get("encryptionScheme")
	r.Fields = splitList(q.Get("fields"))
	r.Tags = splitList(q.Get("tags"))
	r.NoTags = splitList(q.Get("notags"))
	name := q.Get("referenceName")
	start, e := uintParam(q, "start")
	if e != nil {
		return nil, e
	}
	end, e := uintParam(q, "end")
	if e != nil {
		return nil, e
	}
	if name == "" && (start != nil || end != nil) {
		return nil, Errorf(InvalidInput, "start and end need referenceName")
	}
	if name != "" {
		r.Regions = []Region{{ReferenceName: name, Start: start, End: end}}
	}
	return r.checked()
}

// ParsePOST reads the request of a POST: its JSON body, at most
// [MaxRequestSize] bytes, and encryptionScheme from the query or the body.
// Its errors are [*Error]s.
func ParsePOST(endpoint, id string, q url.Values, body io.Reader) (*Request, error) {
	b, err := io.ReadAll(io.LimitReader(body, MaxRequestSize+1))
	if err != nil {
		return nil, Errorf(InvalidInput, "reading the request: %v", err)
	}
	if len(b) > MaxRequestSize {
		return nil, Errorf(PayloadTooLarge, "the request is larger than %d KiB", MaxRequestSize>>10)
	}
	var p struct {
		Format           string   `json:"format"`
		Class            string   `json:"class"`
		Fields           []string `json:"fields"`
		Tags             []string `json:"tags"`
		NoTags           []string `json:"notags"`
		Regions          []Region `json:"regions"`
		EncryptionScheme string   `json:"encryptionScheme"`
	}
	if len(strings.TrimSpace(string(b))) > 0 {
		if err := json.Unmarshal(b, &p); err != nil {
			return nil, Errorf(InvalidInput, "the request is not JSON: %v", err)
		}
	}
	r := &Request{Endpoint: endpoint, ID: id, Format: strings.ToUpper(p.Format), Class: p.Class,
		Regions: p.Regions, EncryptionScheme: p.EncryptionScheme, Fields: p.Fields, Tags: p.Tags, NoTags: p.NoTags}
	if s := q.Get("encryptionScheme"); s != "" {
		r.EncryptionScheme = s
	}
	if s := q.Get("format"); s != "" && r.Format == "" {
		r.Format = strings.ToUpper(s)
	}
	return r.checked()
}

// maxPosition is the largest position the formats hold.
const maxPosition = math.MaxInt32

func (r *Request) checked() (*Request, error) {
	if e := r.check(); e != nil {
		return nil, e
	}
	return r, nil
}

func (r *Request) check() *Error {
	if r.Format != "" {
		ok := false
		for _, f := range Formats(r.Endpoint) {
			ok = ok || f == r.Format
		}
		if !ok {
			return Errorf(UnsupportedFormat, "format %s is not one of %s for %s", textfmt.QuoteShort(r.Format), strings.Join(Formats(r.Endpoint), ", "), r.Endpoint)
		}
	}
	switch r.Class {
	case "", "body":
		r.Class = ""
	case "header":
		if len(r.Regions) > 0 {
			return Errorf(InvalidInput, "class=header takes no region")
		}
	default:
		return Errorf(InvalidInput, "class %s is not header", textfmt.QuoteShort(r.Class))
	}
	if r.EncryptionScheme != "" && !IsCrypt4GH(r.EncryptionScheme) && !strings.EqualFold(r.EncryptionScheme, "none") {
		return Errorf(InvalidInput, "encryptionScheme %s is not C4GH or none", textfmt.QuoteShort(r.EncryptionScheme))
	}
	for _, g := range r.Regions {
		if g.ReferenceName == "" {
			return Errorf(InvalidInput, "a region without referenceName")
		}
		if g.ReferenceName == region.Unmapped {
			if r.Endpoint != Reads {
				return Errorf(InvalidInput, "referenceName * is for reads only")
			}
			if g.Start != nil || g.End != nil {
				return Errorf(InvalidInput, "referenceName * takes no start or end")
			}
		}
		if (g.Start != nil && *g.Start > maxPosition) || (g.End != nil && *g.End > maxPosition) {
			return Errorf(InvalidRange, "positions go up to %d", maxPosition)
		}
		if g.Start != nil && g.End != nil && *g.Start > *g.End {
			return Errorf(InvalidRange, "start %d is after end %d", *g.Start, *g.End)
		}
	}
	return nil
}

// Query returns the query of a GET for r, which holds at most one region.
func (r *Request) Query() url.Values {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("format", r.Format)
	set("class", r.Class)
	set("encryptionScheme", r.EncryptionScheme)
	set("fields", strings.Join(r.Fields, ","))
	set("tags", strings.Join(r.Tags, ","))
	set("notags", strings.Join(r.NoTags, ","))
	if len(r.Regions) > 0 {
		g := r.Regions[0]
		q.Set("referenceName", g.ReferenceName)
		if g.Start != nil {
			q.Set("start", strconv.FormatUint(*g.Start, 10))
		}
		if g.End != nil {
			q.Set("end", strconv.FormatUint(*g.End, 10))
		}
	}
	return q
}

// Body returns the JSON body of a POST for r.
func (r *Request) Body() []byte {
	p := map[string]any{}
	if r.Format != "" {
		p["format"] = r.Format
	}
	if r.Class != "" {
		p["class"] = r.Class
	}
	if len(r.Regions) > 0 {
		p["regions"] = r.Regions
	}
	if r.EncryptionScheme != "" {
		p["encryptionScheme"] = r.EncryptionScheme
	}
	b, _ := json.Marshal(p)
	return b
}

func uintParam(q url.Values, name string) (*uint64, *Error) {
	s := q.Get(name)
	if s == "" {
		return nil, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return nil, Errorf(InvalidRange, "%s %s is not a position", name, textfmt.QuoteShort(s))
	}
	return &v, nil
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
