package batch

import (
	"encoding/json"
	"io"
)

// Record is the JSON line of one input, printed with --json.
type Record struct {
	Name   string `json:"name"`
	Output string `json:"output,omitempty"`
	// Status is "ok", "failed", "done-before" (in the journal, its output
	// still there) or what the command says of an input it left alone
	// ("unchanged").
	Status string `json:"status"`
	Exit   int    `json:"exit"`
	// Class names the exit code: "usage" (2), "keys" (3), "data" (4),
	// "io" (1).
	Class       string `json:"class,omitempty"`
	BytesRead   int64  `json:"bytes_read"`
	BytesOut    int64  `json:"bytes_written"`
	PlainSHA256 string `json:"plaintext_sha256,omitempty"`
	CryptSHA256 string `json:"encrypted_sha256,omitempty"`
	Error       string `json:"error,omitempty"`
}

// Summary is the last JSON line of a batch with --json, and what the
// summary line on stderr says.
type Summary struct {
	Summary    bool    `json:"summary"` // always true: tells it from a Record
	Command    string  `json:"command"`
	Shard      string  `json:"shard,omitempty"`
	Inputs     int     `json:"inputs"`      // the inputs of this shard
	Listed     int     `json:"listed"`      // all the inputs, every shard's
	OK         int     `json:"ok"`          // done by this run
	DoneBefore int     `json:"done_before"` // skipped: done in the journal
	Failed     int     `json:"failed"`
	Exit       int     `json:"exit"`
	BytesRead  int64   `json:"bytes_read"`
	BytesOut   int64   `json:"bytes_written"`
	Seconds    float64 `json:"seconds"`

	worst error // the failure of the highest exit code
}

// Worst returns the failure of the highest exit code, nil for none.
func (s Summary) Worst() error { return s.worst }

// Class names an exit code.
func Class(code int) string {
	switch code {
	case 0:
		return ""
	case 2:
		return "usage"
	case 3:
		return "keys"
	case 4:
		return "data"
	}
	return "io"
}

// writeJSON writes v as one line.
func writeJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
