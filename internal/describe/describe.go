// Package describe tells what a Crypt4GH file holds without decrypting
// its body: the layout of its header and body, and, with a key, what the
// packets it opens hold. It is what crypt4gh inspect prints, and the
// lines of crypt4gh ls.
package describe

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/internal/outfile"
	"github.com/c4gh-go/crypt4gh/internal/textfmt"
	"github.com/c4gh-go/crypt4gh/keys"
)

// Packet type names in the output of inspect.
const (
	typeDataKey  = "data_key"
	typeEditList = "edit_list"
	typeUnknown  = "unknown"
)

// methodName names the header packet encryption methods, as the
// specification does.
func methodName(m uint32) string {
	if m == header.MethodX25519ChaCha20Poly1305 {
		return "X25519_chacha20_ietf_poly1305"
	}
	return "unknown"
}

// Report is what inspect finds out. It is printed as is with --json:
// the field names are documented in docs/commands.md and in the command's
// description, so keep them stable.
type Report struct {
	File               string   `json:"file"`
	Version            uint32   `json:"version"`
	HeaderSize         int64    `json:"header_size"`
	PacketCount        int      `json:"packet_count"`
	Packets            []Packet `json:"packets"`
	BodySize           int64    `json:"body_size"`
	SegmentCount       int64    `json:"segment_count"`
	BodyPlaintextSize  *int64   `json:"body_plaintext_size"`
	ReaderPublicKey    *string  `json:"reader_public_key"`
	ReaderPublicKeyHex *string  `json:"reader_public_key_hex"`
	OpenedPackets      []int    `json:"opened_packets"`
	DataKeyCount       *int     `json:"data_key_count"`
	HasEditList        *bool    `json:"has_edit_list"`
	EditList           []uint64 `json:"edit_list"`
	EditListFits       *bool    `json:"edit_list_fits"`
	PlaintextSize      *int64   `json:"plaintext_size"`
	OpenedBy           *string  `json:"opened_by"`
	// Error is why the file failed inspection, and Exit the exit code
	// that failure gives: null and 0 for a file that passed.
	Error *string `json:"error"`
	Exit  int     `json:"exit"`
	// FileBytes holds the bytes of a name that is not UTF-8.
	FileBytes []byte `json:"file_bytes,omitempty"`

	// BodyErr says why BodyPlaintextSize is unknown.
	BodyErr error `json:"-"`
}

// Packet describes one header packet.
type Packet struct {
	Index              int     `json:"index"`
	Length             int64   `json:"length"`
	Method             uint32  `json:"method"`
	MethodName         string  `json:"method_name"`
	WriterPublicKey    *string `json:"writer_public_key"`
	WriterPublicKeyHex *string `json:"writer_public_key_hex"`
	Opened             *bool   `json:"opened"`
	Type               *string `json:"type"`
	TypeCode           *uint32 `json:"type_code"`
}

// Failure is what --json prints for a file that has no description: its
// name, why and the exit code, the other fields absent.
type Failure struct {
	File      string `json:"file"`
	Error     string `json:"error"`
	Exit      int    `json:"exit"`
	FileBytes []byte `json:"file_bytes,omitempty"`
}

// Print prints f as one JSON object.
func (f *Failure) Print(w io.Writer) error {
	f.FileBytes = BytesOf(f.File)
	return printJSON(w, f)
}

// BytesOf returns the bytes of name for a "_bytes" field beside it, in
// base64, as the batch records give them: nil when the name is UTF-8,
// which a JSON string holds as it is (encoding/json puts U+FFFD for each
// byte that is not).
func BytesOf(name string) []byte {
	if utf8.ValidString(name) {
		return nil
	}
	return []byte(name)
}

// Missing reports that the edit list describes more than the body holds.
func (r *Report) Missing() bool { return r.EditListFits != nil && !*r.EditListFits }

// Describe reports what the header and the body size tell without a key.
func Describe(h *header.Header, bodySize int64) *Report {
	r := &Report{
		Version:      header.Version,
		HeaderSize:   h.Size(),
		PacketCount:  len(h.Packets),
		Packets:      make([]Packet, len(h.Packets)),
		BodySize:     bodySize,
		SegmentCount: body.StoredSegments(bodySize),
	}
	for i := range h.Packets {
		p := &h.Packets[i]
		pr := Packet{Index: i, Length: p.Size(), Method: p.Method, MethodName: methodName(p.Method)}
		if p.Method == header.MethodX25519ChaCha20Poly1305 {
			pr.WriterPublicKey, pr.WriterPublicKeyHex = keyStrings(keys.PublicKey(p.WriterPublicKey))
		}
		r.Packets[i] = pr
	}
	if n, err := body.PlaintextSize(bodySize); err == nil {
		r.BodyPlaintextSize = &n
	} else {
		var se *body.SegmentError
		if errors.As(err, &se) {
			err = fmt.Errorf("body %w: it ends inside segment %d, %d bytes into it (an encrypted segment has at least %d)",
				se.Err, se.Index, body.StoredLength(bodySize, se.Index), body.Overhead)
		}
		r.BodyErr = err
	}
	return r
}

// Open adds what sk opens to r. It returns the error of header.Decrypt,
// if any: then only the packets are described. The reader's public key is
// reported only for a [*keys.SecretKey] (an agent does not say which of
// its keys opened the packets).
func (r *Report) Open(h *header.Header, sk keys.Opener) error {
	if k, ok := sk.(*keys.SecretKey); ok {
		r.ReaderPublicKey, r.ReaderPublicKeyHex = keyStrings(k.Public())
	}
	r.OpenedPackets = []int{}
	contents, err := h.Decrypt(sk, nil)
	if err != nil && !errors.Is(err, header.ErrNoDecryptablePacket) {
		return err
	}
	for i := range r.Packets {
		opened := false
		r.Packets[i].Opened = &opened
	}
	if err != nil {
		return err
	}
	defer contents.Zero()
	for k, i := range contents.Opened {
		opened, code := true, contents.Types[k]
		name := typeUnknown
		switch code {
		case header.PacketTypeDataKey:
			name = typeDataKey
		case header.PacketTypeEditList:
			name = typeEditList
		}
		r.Packets[i].Opened, r.Packets[i].TypeCode, r.Packets[i].Type = &opened, &code, &name
		r.OpenedPackets = append(r.OpenedPackets, i)
	}
	n := len(contents.DataKeys)
	r.DataKeyCount = &n
	has := contents.HasEditList
	r.HasEditList = &has
	if has {
		r.EditList = append([]uint64{}, contents.EditList...)
	}
	if r.BodyPlaintextSize != nil {
		stands := edit.StandsFor(r.EditList, *r.BodyPlaintextSize) // nil without a list
		fits := !stands.Missing
		r.PlaintextSize = &stands.Size
		if has {
			r.EditListFits = &fits
		}
	}
	return nil
}

// Print writes r for people, or as JSON.
func (r *Report) Print(w io.Writer, asJSON bool) error {
	if asJSON {
		r.FileBytes = BytesOf(r.File)
		return printJSON(w, r)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	line := func(label, format string, args ...any) {
		fmt.Fprintf(tw, "%s:\t%s\n", label, fmt.Sprintf(format, args...))
	}
	name := r.File
	if name == "-" {
		name = "stdin"
	}
	line("file", "%s", outfile.QuoteName(name))
	line("version", "%d", r.Version)
	line("header", "%s, %s", bytesText(r.HeaderSize), textfmt.Plural(int64(r.PacketCount), "packet"))
	for _, p := range r.Packets {
		desc := fmt.Sprintf("%s, method %d (%s)", bytesText(p.Length), p.Method, p.MethodName)
		switch {
		case p.Opened == nil:
		case !*p.Opened:
			desc += ", not opened by this key"
		case *p.Type == typeUnknown:
			desc += fmt.Sprintf(", opened: unknown packet type %d", *p.TypeCode)
		default:
			desc += ", opened: " + strings.ReplaceAll(*p.Type, "_", " ")
		}
		line(fmt.Sprintf("  packet %d", p.Index), "%s", desc)
		if p.WriterPublicKey != nil {
			line("    writer key", "%s", *p.WriterPublicKey)
		}
	}
	line("body", "%s, %s", bytesText(r.BodySize), textfmt.Plural(r.SegmentCount, "segment"))
	if r.OpenedBy != nil {
		line("opened by", "%s", *r.OpenedBy)
	}
	if r.ReaderPublicKey != nil {
		line("reader key", "%s (public key of --sk)", *r.ReaderPublicKey)
		if len(r.OpenedPackets) == 0 {
			line("opened packets", "none")
		} else {
			idx := make([]string, len(r.OpenedPackets))
			for i, n := range r.OpenedPackets {
				idx[i] = strconv.Itoa(n)
			}
			line("opened packets", "%s", strings.Join(idx, ", "))
		}
		if r.DataKeyCount != nil {
			line("data keys", "%d", *r.DataKeyCount)
		}
		if r.HasEditList != nil {
			line("edit list", "%s", editListText(r.EditList, *r.HasEditList))
		}
	}
	switch {
	case r.BodyPlaintextSize == nil:
		line("plaintext size", "unknown: %v", r.BodyErr)
	case r.PlaintextSize == nil:
		line("plaintext size", "%s before any edit list (only a key that opens the header shows whether one applies)",
			bytesText(*r.BodyPlaintextSize))
	case r.Missing():
		line("plaintext size", "%s after the edit list (%s before), which describes more than the body holds",
			bytesText(*r.PlaintextSize), bytesText(*r.BodyPlaintextSize))
	case r.HasEditList != nil && *r.HasEditList:
		line("plaintext size", "%s after the edit list (%s before)",
			bytesText(*r.PlaintextSize), bytesText(*r.BodyPlaintextSize))
	default:
		line("plaintext size", "%s (no edit list)", bytesText(*r.PlaintextSize))
	}
	return tw.Flush()
}

// printJSON writes v as indented JSON and a newline.
func printJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// editListHumanMax is how many lengths of an edit list the human output
// shows; --json shows them all.
const editListHumanMax = 32

func editListText(list []uint64, has bool) string {
	if !has {
		return "none"
	}
	if len(list) == 0 {
		return "empty (keeps everything)"
	}
	var parts []string
	for i, n := range list[:min(len(list), editListHumanMax)] {
		verb := "skip"
		if i%2 == 1 {
			verb = "keep"
		}
		parts = append(parts, fmt.Sprintf("%s %d", verb, n))
	}
	s := strings.Join(parts, ", ")
	if len(list)%2 == 1 && len(list) <= editListHumanMax {
		s += ", keep the rest"
	}
	if len(list) > editListHumanMax {
		s += fmt.Sprintf(", … (%d lengths in all; --json lists them)", len(list))
	}
	return s
}

func bytesText(n int64) string { return textfmt.Plural(n, "byte") }

// keyStrings returns pk in base64, as key files and the text show it, and
// in hex.
func keyStrings(pk keys.PublicKey) (b64, hexKey *string) {
	b, h := pk.String(), hex.EncodeToString(pk[:])
	return &b, &h
}
