package describe

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/internal/outfile"
	"github.com/c4gh-go/crypt4gh/keys"
)

// Entry is one line of crypt4gh ls: printed as is with --json, so keep
// the field names.
type Entry struct {
	Name              string   `json:"name"`
	Kind              string   `json:"kind"`
	Size              *int64   `json:"size"`
	BodyPlaintextSize *int64   `json:"body_plaintext_size"`
	PlaintextSize     *int64   `json:"plaintext_size"`
	OpenedBy          []string `json:"opened_by"`
	Error             *string  `json:"error"`
	// NameBytes holds the bytes of a name that is not UTF-8, which a
	// JSON string cannot (see [BytesOf]).
	NameBytes []byte `json:"name_bytes,omitempty"`
}

// Kinds of entries.
const (
	KindCrypt4GH = "crypt4gh"
	KindOther    = "other"
	KindFolder   = "folder"
	KindError    = "error" // could not be read, or damaged: see Error
)

// NamedKey is a secret key and the name it was given (its file).
type NamedKey struct {
	Name string
	Key  *keys.SecretKey
}

// List fills in ent from the file read from r, of size bytes: its kind,
// the plaintext size of its body, and which of ks open it (with the size
// after the edit list of the first that does). An error is also set in
// ent.Error, for the entry is still printed.
func List(ent Entry, r io.Reader, size int64, ks []NamedKey) (Entry, error) {
	h, err := header.Parse(r)
	if errors.Is(err, header.ErrNotCrypt4GH) || errors.Is(err, header.ErrEmptyInput) {
		ent.Kind = KindOther
		return ent, nil
	}
	ent.Kind = KindCrypt4GH
	if err != nil {
		return Failed(ent, err)
	}
	if len(h.Packets) == 0 {
		return Failed(ent, header.ErrNoPackets) // no key opens it
	}
	plain, err := body.PlaintextSize(size - h.Size())
	if err != nil {
		return Failed(ent, fmt.Errorf("body %w", err))
	}
	ent.BodyPlaintextSize = &plain
	if len(ks) == 0 {
		return ent, nil
	}
	ent.OpenedBy = []string{}
	for _, k := range ks {
		c, err := h.Decrypt(k.Key, nil)
		if errors.Is(err, header.ErrNoDecryptablePacket) {
			continue
		}
		if err != nil {
			return Failed(ent, fmt.Errorf("%s: %w", outfile.QuoteName(k.Name), err))
		}
		ent.OpenedBy = append(ent.OpenedBy, k.Name)
		if ent.PlaintextSize == nil {
			var list edit.List
			if c.HasEditList {
				list = c.EditList
			}
			n := edit.StandsFor(list, plain).Size
			ent.PlaintextSize = &n
		}
		c.Zero()
	}
	return ent, nil
}

// Failed sets err as the error of ent and returns both.
func Failed(ent Entry, err error) (Entry, error) {
	msg := err.Error()
	ent.Error, ent.Kind = &msg, KindError
	return ent, err
}

// Table prints entries as crypt4gh ls does: a table under column titles,
// with an OPENED BY column when keys were given, or one JSON object a
// line.
type Table struct {
	tw     *tabwriter.Writer
	json   *json.Encoder
	keys   bool
	titled bool
}

// NewTable returns a Table that writes to w.
func NewTable(w io.Writer, jsonLines, keyColumn bool) *Table {
	t := &Table{keys: keyColumn}
	if jsonLines {
		t.json = json.NewEncoder(w)
	} else {
		t.tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	}
	return t
}

// Print prints one entry; the errors are those of writing.
func (t *Table) Print(ent Entry) error {
	if t.json != nil {
		ent.NameBytes = BytesOf(ent.Name)
		return t.json.Encode(ent)
	}
	if !t.titled {
		t.titled = true
		titles := "SIZE\tPLAINTEXT\tKIND\t"
		if t.keys {
			titles += "OPENED BY\t"
		}
		fmt.Fprintln(t.tw, titles+"NAME")
	}
	line := sizeText(ent.Size) + "\t" + plainText(ent) + "\t" + ent.Kind + "\t"
	if t.keys {
		opened := "-"
		switch {
		case ent.Kind == KindCrypt4GH && ent.OpenedBy != nil && len(ent.OpenedBy) == 0:
			opened = "none"
		case len(ent.OpenedBy) > 0:
			opened = outfile.QuoteName(strings.Join(ent.OpenedBy, ","))
		}
		line += opened + "\t"
	}
	_, err := fmt.Fprintln(t.tw, line+outfile.QuoteName(ent.Name))
	return err
}

// Flush writes what the table holds.
func (t *Table) Flush() error {
	if t.tw == nil {
		return nil
	}
	return t.tw.Flush()
}

func sizeText(n *int64) string {
	if n == nil {
		return "-"
	}
	return strconv.FormatInt(*n, 10)
}

// plainText is the PLAINTEXT column: after the edit list when a key
// opened the file, else that of the body ("≤" when a key might find an
// edit list that keeps less).
func plainText(ent Entry) string {
	switch {
	case ent.PlaintextSize != nil:
		return sizeText(ent.PlaintextSize)
	case ent.BodyPlaintextSize != nil:
		return "≤" + sizeText(ent.BodyPlaintextSize)
	case ent.Kind == KindCrypt4GH:
		return "?"
	}
	return "-"
}
