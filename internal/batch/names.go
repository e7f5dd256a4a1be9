package batch

import (
	"encoding/json"
	"unicode/utf8"
)

// A file name need not be UTF-8, and a JSON string can hold only UTF-8
// (encoding/json puts U+FFFD for each byte that is not), so that a name
// such as "bad\xff" would come back from a journal as another name, and
// its input never be found done. Where a name is not UTF-8, its bytes go
// beside it, in base64, in a field named after it with "_bytes"; the
// string keeps the readable form. A reader takes the bytes when they are
// there.

// bytesOf returns the bytes of name for its "_bytes" field: nil when the
// string says it all.
func bytesOf(name string) []byte {
	if utf8.ValidString(name) {
		return nil
	}
	return []byte(name)
}

// fromBytes returns name, or the name that b holds.
func fromBytes(name string, b []byte) string {
	if b != nil {
		return string(b)
	}
	return name
}

type plainLine line

type lineJSON struct {
	plainLine
	StartBytes  []byte `json:"start_bytes,omitempty"`
	DoneBytes   []byte `json:"done_bytes,omitempty"`
	OutputBytes []byte `json:"output_bytes,omitempty"`
}

func (l line) MarshalJSON() ([]byte, error) {
	return json.Marshal(lineJSON{plainLine(l), bytesOf(l.Start), bytesOf(l.Input), bytesOf(l.Output)})
}

func (l *line) UnmarshalJSON(b []byte) error {
	var v lineJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*l = line(v.plainLine)
	l.Start = fromBytes(l.Start, v.StartBytes)
	l.Input = fromBytes(l.Input, v.DoneBytes)
	l.Output = fromBytes(l.Output, v.OutputBytes)
	return nil
}

type plainRecord Record

type recordJSON struct {
	plainRecord
	NameBytes   []byte `json:"name_bytes,omitempty"`
	OutputBytes []byte `json:"output_bytes,omitempty"`
}

func (r Record) MarshalJSON() ([]byte, error) {
	return json.Marshal(recordJSON{plainRecord(r), bytesOf(r.Name), bytesOf(r.Output)})
}

func (r *Record) UnmarshalJSON(b []byte) error {
	var v recordJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*r = Record(v.plainRecord)
	r.Name = fromBytes(r.Name, v.NameBytes)
	r.Output = fromBytes(r.Output, v.OutputBytes)
	return nil
}
