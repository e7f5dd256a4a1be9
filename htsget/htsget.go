// Package htsget holds what a server and a client of the GA4GH htsget
// protocol (version 1.3) share when the files are crypt4gh files: tickets,
// the protocol's JSON errors, data: URLs, the request's parameters and the
// header that carries a requester's public key for Crypt4GH tickets.
//
// A ticket is a list of URLs whose bodies, concatenated in order, are one
// file. A Crypt4GH ticket's concatenation is one crypt4gh stream, laid out
// as htsget-rs lays it out: a data: URL with the magic, the version and the
// new packet count; the original header packets, by range; a data: URL with
// the packets sealed for the requester; then ranges of whole segments.
package htsget

import (
	"crypto/ecdh"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
	"github.com/c4gh-go/crypt4gh/keys"
)

// Endpoints of the protocol: reads (BAM, CRAM) and variants (VCF, BCF).
const (
	Reads    = "reads"
	Variants = "variants"
)

// Headers that carry the requester's public key for a Crypt4GH ticket:
// htsget-rs's, and the one other servers take.
const (
	PublicKeyHeader    = "Htsget-Context-Public-Key"
	AltPublicKeyHeader = "X-C4GH-Public-Key"
)

// PublicKeyParam is the query parameter that carries the requester's
// public key when no header can: htslib programs (samtools, bcftools)
// send a ticket request's URL as it is given and no header of one's
// choice. An extension of this server, not of the specification.
const PublicKeyParam = "publicKey"

// ContentType is the media type of tickets and errors.
const ContentType = "application/vnd.ga4gh.htsget.v1.3.0+json; charset=utf-8"

// MaxTicketSize bounds the ticket a client reads.
const MaxTicketSize = 16 << 20

// Ticket is the body of a successful ticket response, inside its
// {"htsget": …} envelope.
type Ticket struct {
	Format string `json:"format"`
	URLs   []URL  `json:"urls"`
	MD5    string `json:"md5,omitempty"`
}

// URL is one part of a ticket. Headers are sent with the request for it
// (a Range, an Authorization); Class is "header" or "body" when given.
type URL struct {
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
	Class   string            `json:"class,omitempty"`
}

type ticketEnvelope struct {
	Htsget *Ticket `json:"htsget"`
}

// WriteTicket writes t as a response with status 200: the bytes of
// json.Marshal of its envelope, and a newline. A ticket's data: URLs may
// be megabytes: it is written a URL at a time, rather than encoded whole
// and copied, which held the encoding of every URL at once.
func WriteTicket(w http.ResponseWriter, t *Ticket) error {
	head, err := json.Marshal(t.Format)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", ContentType)
	// For the one who asked: its URLs are signed for the requester (and
	// made from the Host it sent).
	w.Header().Set("Cache-Control", "private, no-store")
	w.WriteHeader(http.StatusOK)
	write := func(b []byte) {
		if err == nil {
			_, err = w.Write(b)
		}
	}
	write([]byte(`{"htsget":{"format":`))
	write(head)
	write([]byte(`,"urls":`))
	if t.URLs == nil {
		write([]byte("null")) // as json.Marshal writes a nil slice
	} else {
		sep := []byte("[")
		for _, u := range t.URLs {
			if err != nil {
				break // the client is gone
			}
			b, merr := json.Marshal(u) // strings only: it always encodes
			err = merr
			write(sep)
			write(b)
			sep = []byte(",")
		}
		if len(t.URLs) == 0 {
			write(sep)
		}
		write([]byte("]"))
	}
	if t.MD5 != "" {
		md5, _ := json.Marshal(t.MD5)
		write([]byte(`,"md5":`))
		write(md5)
	}
	write([]byte("}}\n"))
	return err
}

// ErrBadTicket is wrapped by the errors of [ReadTicket].
var ErrBadTicket = errkind.New(errkind.Data, "not an htsget ticket")

// ReadTicket reads a ticket response's body, at most [MaxTicketSize]
// bytes, and checks that each URL is an http, https or data: URL.
func ReadTicket(r io.Reader) (*Ticket, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxTicketSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxTicketSize {
		return nil, fmt.Errorf("%w: larger than %d MiB", ErrBadTicket, MaxTicketSize>>20)
	}
	var env ticketEnvelope
	if err := json.Unmarshal(b, &env); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadTicket, err)
	}
	t := env.Htsget
	if t == nil || len(t.URLs) == 0 {
		return nil, fmt.Errorf("%w: no urls", ErrBadTicket)
	}
	for i, u := range t.URLs {
		p, err := url.Parse(u.URL)
		if err != nil {
			return nil, fmt.Errorf("%w: url %d: %v", ErrBadTicket, i+1, err)
		}
		switch p.Scheme {
		case "http", "https", "data":
		default:
			return nil, fmt.Errorf("%w: url %d: scheme %q is not http, https or data", ErrBadTicket, i+1, p.Scheme)
		}
	}
	return t, nil
}

// The error codes of the protocol.
const (
	InvalidAuthentication = "InvalidAuthentication" // 401
	PermissionDenied      = "PermissionDenied"      // 403
	NotFound              = "NotFound"              // 404
	PayloadTooLarge       = "PayloadTooLarge"       // 413
	UnsupportedFormat     = "UnsupportedFormat"     // 400
	InvalidInput          = "InvalidInput"          // 400
	InvalidRange          = "InvalidRange"          // 400
)

// Error is the protocol's error: an HTTP status and the JSON body
// {"htsget":{"error":Code,"message":Message}}.
type Error struct {
	Status  int    `json:"-"`
	Code    string `json:"error"`
	Message string `json:"message"`
}

// Errorf returns the error of code, with the status the protocol gives it.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Status: statusOf(code), Code: code, Message: fmt.Sprintf(format, args...)}
}

func statusOf(code string) int {
	switch code {
	case InvalidAuthentication:
		return http.StatusUnauthorized
	case PermissionDenied:
		return http.StatusForbidden
	case NotFound:
		return http.StatusNotFound
	case PayloadTooLarge:
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusBadRequest
}

func (e *Error) Error() string {
	if e.Message == "" {
		return e.Code
	}
	return e.Code + ": " + e.Message
}

// Kind classifies the error for the command's exit code: 401 and 403 are
// the key class, other 4xx a usage error, 5xx other.
func (e *Error) Kind() errkind.Kind {
	switch {
	case e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden:
		return errkind.Key
	case e.Status >= 400 && e.Status < 500:
		return errkind.Usage
	}
	return errkind.Other
}

type errorEnvelope struct {
	Htsget *Error `json:"htsget"`
}

// WriteError writes e as a response.
func WriteError(w http.ResponseWriter, e *Error) {
	b, _ := json.Marshal(errorEnvelope{e})
	w.Header().Set("Content-Type", ContentType)
	if e.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", "Bearer")
	}
	w.WriteHeader(e.Status)
	_, _ = w.Write(append(b, '\n'))
}

// ReadError reads the body of a response with an error status: the
// protocol's error when the body is one, else an error named by the
// status, with the start of the body as its message.
func ReadError(status int, body io.Reader) *Error {
	b, _ := io.ReadAll(io.LimitReader(body, 64<<10))
	var env errorEnvelope
	if json.Unmarshal(b, &env) == nil && env.Htsget != nil && env.Htsget.Code != "" {
		env.Htsget.Status = status
		return env.Htsget
	}
	msg := strings.TrimSpace(string(b))
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	code := http.StatusText(status)
	if code == "" {
		code = fmt.Sprintf("HTTP %d", status)
	}
	return &Error{Status: status, Code: code, Message: msg}
}

// DataURL returns a data: URL of b, base64-encoded.
func DataURL(b []byte) string {
	return "data:;base64," + base64.StdEncoding.EncodeToString(b)
}

// ErrBadDataURL is wrapped by the errors of [DecodeDataURL].
var ErrBadDataURL = errkind.New(errkind.Data, "invalid data: URL")

// DecodeDataURL returns the bytes of a data: URL (RFC 2397): base64 when
// the media type part ends in ";base64", else percent-encoded.
func DecodeDataURL(s string) ([]byte, error) {
	rest, ok := strings.CutPrefix(s, "data:")
	if !ok {
		return nil, fmt.Errorf("%w: no data: scheme", ErrBadDataURL)
	}
	meta, data, ok := strings.Cut(rest, ",")
	if !ok {
		return nil, fmt.Errorf("%w: no comma", ErrBadDataURL)
	}
	if strings.HasSuffix(strings.ToLower(meta), ";base64") {
		b, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			// Some servers leave the padding out.
			b, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(data, "="))
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadDataURL, err)
		}
		return b, nil
	}
	b, err := url.PathUnescape(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadDataURL, err)
	}
	return []byte(b), nil
}

// EncodePublicKey returns the value of [PublicKeyHeader] for pk: the
// base64 of its crypt4gh public-key file, as htsget-rs takes it.
func EncodePublicKey(pk keys.PublicKey) string {
	return base64.StdEncoding.EncodeToString(keys.MarshalPublicKey(pk))
}

// ErrBadPublicKey is wrapped by the errors of [ParsePublicKey].
var ErrBadPublicKey = errkind.New(errkind.Key, "invalid public key")

// ParsePublicKey reads the value of a public-key header or of
// [PublicKeyParam]: the base64
// (standard or URL alphabet, padded or not) of a crypt4gh public-key file,
// or of the bare 32 bytes of the key.
func ParsePublicKey(v string) (keys.PublicKey, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return keys.PublicKey{}, fmt.Errorf("%w: empty", ErrBadPublicKey)
	}
	if len(v) > 4096 {
		return keys.PublicKey{}, fmt.Errorf("%w: too long", ErrBadPublicKey)
	}
	var b []byte
	var err error
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if b, err = enc.DecodeString(v); err == nil {
			break
		}
	}
	if err != nil {
		return keys.PublicKey{}, fmt.Errorf("%w: not base64", ErrBadPublicKey)
	}
	var pk keys.PublicKey
	if len(b) == keys.KeySize {
		pk = keys.PublicKey(b)
	} else if pk, err = keys.ParsePublicKey(b); err != nil {
		return keys.PublicKey{}, fmt.Errorf("%w: %v", ErrBadPublicKey, err)
	}
	if lowOrder(pk) {
		return keys.PublicKey{}, fmt.Errorf("%w: %v", ErrBadPublicKey, keys.ErrLowOrderPoint)
	}
	return pk, nil
}

// lowOrder reports whether pk is a point of small order (the all-zero
// key among them): sealing for it gives the all-zero shared secret, a
// key that anyone can compute. Any scalar shows it, clamped as X25519
// clamps: the product is then the identity.
func lowOrder(pk keys.PublicKey) bool {
	scalar := [32]byte{9}
	priv, err := ecdh.X25519().NewPrivateKey(scalar[:])
	if err != nil {
		return true
	}
	pub, err := ecdh.X25519().NewPublicKey(pk[:])
	if err != nil {
		return true
	}
	_, err = priv.ECDH(pub)
	return err != nil
}

// IsCrypt4GH reports whether an encryptionScheme parameter asks for a
// Crypt4GH ticket: "C4GH" in any case, as htsget-rs spells it, or
// "crypt4gh", as the specification's proposal may.
func IsCrypt4GH(scheme string) bool {
	return strings.EqualFold(scheme, "C4GH") || strings.EqualFold(scheme, "crypt4gh")
}
