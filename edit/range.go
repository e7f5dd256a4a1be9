package edit

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
)

// ErrInvalidRange is wrapped by the errors of ParseRange and Normalize.
var ErrInvalidRange = errkind.New(errkind.Usage, "invalid range")

// ErrBeyondEnd is returned by the users of this package when a range starts
// at or after the end of the data it selects from.
var ErrBeyondEnd = errkind.New(errkind.Usage, "range starts beyond the end of the data")

// Range is a byte range [Start, End) of the stream a file stands for (after
// its edit list), as given on the command line. End == Unbounded means to
// the end of the stream.
type Range struct {
	Start, End int64
}

// String formats r as ParseRange accepts it: "START-END", or "START" when
// End is Unbounded.
func (r Range) String() string {
	if r.End == Unbounded {
		return strconv.FormatInt(r.Start, 10)
	}
	return strconv.FormatInt(r.Start, 10) + "-" + strconv.FormatInt(r.End, 10)
}

// ParseRange parses "START-END" (bytes START to END, END excluded) or
// "START" (from START to the end of the stream). Both are non-negative
// decimal integers without sign, spaces around them allowed (as the
// reference tool's int() allows them), and END must be larger than START.
// Errors wrap ErrInvalidRange and read `invalid range "x": reason`.
func ParseRange(s string) (Range, error) {
	bad := func(format string, a ...any) (Range, error) {
		return Range{}, fmt.Errorf("%w %q: %s", ErrInvalidRange, s, fmt.Sprintf(format, a...))
	}
	if strings.TrimSpace(s) == "" {
		return bad("empty, want START-END or START")
	}
	startText, endText, hasEnd := strings.Cut(s, "-")
	start, err := parseOffset(startText)
	if err != nil {
		return bad("start: %v", err)
	}
	if !hasEnd {
		return Range{start, Unbounded}, nil
	}
	end, err := parseOffset(endText)
	if err != nil {
		return bad("end: %v", err)
	}
	if end == start {
		return bad("empty, end must be larger than start")
	}
	if end < start {
		return bad("end %d before start %d", end, start)
	}
	return Range{start, end}, nil
}

func parseOffset(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("missing number")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%q is not a non-negative decimal integer", s)
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s is too large", s)
	}
	return n, nil
}

// Normalize checks rs and returns them as intervals, sorted, with
// overlapping or adjacent ranges merged: a byte asked for by two ranges is
// selected once, and ranges out of order are put in order. Errors wrap
// ErrInvalidRange for a range with a negative start or End <= Start, ErrEmpty
// when rs is empty, and ErrTooLong when the selection would need an edit
// list of more than MaxEntries lengths.
func Normalize(rs []Range) ([]Interval, error) {
	if len(rs) == 0 {
		return nil, fmt.Errorf("%w: no ranges", ErrEmpty)
	}
	if len(rs) > MaxEntries/2 {
		return nil, errkind.Errorf(errkind.Usage, "%w: %d ranges, at most %d", ErrTooLong, len(rs), MaxEntries/2)
	}
	iv := make([]Interval, len(rs))
	for i, r := range rs {
		switch {
		case r.Start < 0:
			return nil, fmt.Errorf("%w %q: start must be non-negative", ErrInvalidRange, r.String())
		case r.End == Unbounded && r.Start == Unbounded:
			return nil, fmt.Errorf("%w %q: start %d is past any data", ErrInvalidRange, r.String(), r.Start)
		case r.End <= r.Start:
			return nil, fmt.Errorf("%w %q: end must be larger than start", ErrInvalidRange, r.String())
		}
		iv[i] = Interval(r)
	}
	return normalize(iv), nil
}
