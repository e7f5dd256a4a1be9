package region

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/internal/errkind"
)

// Unbounded is the End of a region that runs to the end of its reference.
const Unbounded = edit.Unbounded

// Unmapped is the Name of the region of unplaced unmapped reads, "*".
const Unmapped = "*"

// maxPosition is the largest coordinate a region may name: far beyond any
// genome, small enough that arithmetic on it cannot overflow.
const maxPosition = 1 << 50

// ErrInvalidRegion is wrapped by the errors of [Parse] and [ReadBED].
var ErrInvalidRegion = errkind.New(errkind.Usage, "invalid region")

// Region is a stretch of one reference: positions [Start, End), counted from
// 0, with End == [Unbounded] for "to the end of the reference". Name is
// [Unmapped] for the unplaced unmapped reads of a BAM or CRAM file.
type Region struct {
	Name       string
	Start, End int64
	// whole is the text Parse split at its last colon: when it is itself
	// a reference name, the region may mean that whole reference.
	whole string
}

// String formats r as samtools takes it: 1-based and inclusive, the name in
// braces when it holds a colon.
func (r Region) String() string {
	name := r.Name
	if strings.Contains(name, ":") {
		name = "{" + name + "}"
	}
	switch {
	case r.Name == Unmapped || (r.Start == 0 && r.End == Unbounded):
		return name
	case r.End == Unbounded:
		return fmt.Sprintf("%s:%d", name, r.Start+1)
	}
	return fmt.Sprintf("%s:%d-%d", name, r.Start+1, r.End)
}

// Parse parses a region as samtools and bcftools take it: "chr20" (the whole
// reference), "chr20:1000" (from position 1000 to the end),
// "chr20:1000-2000" (1-based, both ends included), "chr20:-2000" and
// "chr20:1000-"; commas in numbers are ignored ("chr20:1,000-2,000"). A name
// that holds a colon goes in braces, "{chr:weird}:1-2"; without braces the
// text after the last colon is taken as positions when it holds only
// digits, commas and a dash. "*" is the unplaced unmapped reads. Errors
// wrap [ErrInvalidRegion] and read `invalid region "x": reason`.
func Parse(s string) (Region, error) {
	bad := func(format string, a ...any) (Region, error) {
		return Region{}, fmt.Errorf("%w %q: %s", ErrInvalidRegion, s, fmt.Sprintf(format, a...))
	}
	if s == "" {
		return bad("empty, want NAME, NAME:START or NAME:START-END")
	}
	if s == Unmapped {
		return Region{Name: Unmapped, End: Unbounded}, nil
	}
	name, pos, hasPos, err := splitName(s)
	if err != nil {
		return bad("%v", err)
	}
	if strings.ContainsAny(name, "{}") {
		return bad("a reference name cannot hold braces")
	}
	r := Region{Name: name, End: Unbounded}
	if hasPos && !strings.HasPrefix(s, "{") {
		r.whole = s
	}
	if name == Unmapped && hasPos {
		return bad("the unmapped reads (*) have no positions")
	}
	if !hasPos || pos == "" {
		return r, nil // NAME: is all of NAME, as samtools reads it
	}
	if r.Start, r.End, err = parsePositions(pos); err != nil {
		return bad("%v", err)
	}
	return r, nil
}

// splitName cuts s into a reference name and, after a colon, positions.
func splitName(s string) (name, pos string, hasPos bool, err error) {
	if strings.HasPrefix(s, "{") {
		end := strings.IndexByte(s, '}')
		if end < 0 {
			return "", "", false, fmt.Errorf("no closing brace")
		}
		name, rest := s[1:end], s[end+1:]
		if name == "" {
			return "", "", false, fmt.Errorf("empty name in braces")
		}
		if rest == "" {
			return name, "", false, nil
		}
		if rest[0] != ':' {
			return "", "", false, fmt.Errorf("want a colon after the closing brace")
		}
		return name, rest[1:], true, nil
	}
	i := strings.LastIndexByte(s, ':')
	if i > 0 && i == len(s)-1 {
		return s[:i], "", true, nil // a colon and nothing after it
	}
	if i < 0 || !looksLikePositions(s[i+1:]) {
		return s, "", false, nil
	}
	if i == 0 {
		return "", "", false, fmt.Errorf("empty reference name")
	}
	return s[:i], s[i+1:], true, nil
}

// looksLikePositions reports whether s holds only digits, commas and
// dashes, and at least one of them: the positions of a region.
func looksLikePositions(s string) bool {
	return s != "" && strings.Trim(s, "0123456789,-") == ""
}

// parsePositions parses "A", "A-B", "-B" or "A-", 1-based inclusive, into
// [start, end) counted from 0.
func parsePositions(s string) (start, end int64, err error) {
	a, b, _ := strings.Cut(s, "-")
	start, end = 0, Unbounded
	if a == "" && b == "" {
		return 0, 0, fmt.Errorf("no position after the colon")
	}
	if a != "" {
		p, err := parsePosition(a)
		if err != nil {
			return 0, 0, fmt.Errorf("start: %v", err)
		}
		start = p - 1
	}
	if b != "" {
		p, err := parsePosition(b)
		if err != nil {
			return 0, 0, fmt.Errorf("end: %v", err)
		}
		end = p
	}
	if end <= start {
		return 0, 0, fmt.Errorf("end %d before start %d", end, start+1)
	}
	return start, end, nil
}

// parsePosition parses a 1-based position, commas allowed between digits.
func parsePosition(s string) (int64, error) {
	digits := strings.ReplaceAll(s, ",", "")
	if digits == "" || strings.HasPrefix(s, ",") || strings.HasSuffix(s, ",") || strings.Contains(s, ",,") {
		return 0, fmt.Errorf("%q is not a position", s)
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, fmt.Errorf("%q is not a position", s)
		}
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n > maxPosition {
		return 0, fmt.Errorf("%s is too large", s)
	}
	if n == 0 {
		return 0, fmt.Errorf("positions start at 1")
	}
	return n, nil
}

// ParseAll parses every region of list with [Parse].
func ParseAll(list []string) ([]Region, error) {
	out := make([]Region, 0, len(list))
	for _, s := range list {
		r, err := Parse(s)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// maxBEDLine is the longest line ReadBED accepts.
const maxBEDLine = 1 << 20

// ReadBED reads regions from a BED file: a reference name, a start and an
// end per line, separated by tabs (or spaces), counted from 0 with the end
// excluded; more columns are ignored. Empty lines, lines that start with
// "#" and lines whose first word is "track" or "browser" are skipped. name is the file's name, for the
// errors, which wrap [ErrInvalidRegion] and say which line is wrong.
func ReadBED(r io.Reader, name string) ([]Region, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxBEDLine)
	var out []Region
	for n := 1; sc.Scan(); n++ {
		reg, skip, err := parseBEDLine(sc.Text())
		if err != nil {
			return nil, fmt.Errorf("%w: %s, line %d: %v", ErrInvalidRegion, name, n, err)
		}
		if !skip {
			out = append(out, reg)
		}
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return nil, fmt.Errorf("%w: %s: a line longer than %d bytes: not a BED file", ErrInvalidRegion, name, maxBEDLine)
	} else if err != nil {
		return nil, fmt.Errorf("failed to read %s: %w", name, err)
	}
	return out, nil
}

// parseBEDLine parses one line of a BED file; skip is true for a line
// that holds no region.
func parseBEDLine(line string) (r Region, skip bool, err error) {
	line = strings.TrimRight(line, "\r")
	f := strings.Fields(line)
	// A track or browser line starts with the word itself: a reference
	// named trackA is a reference, as samtools takes it.
	if len(f) == 0 || strings.HasPrefix(line, "#") || f[0] == "track" || f[0] == "browser" {
		return Region{}, true, nil
	}
	if len(f) < 3 {
		return Region{}, false, fmt.Errorf("want NAME START END, got %d columns", len(f))
	}
	start, err := parseBEDNumber(f[1])
	if err != nil {
		return Region{}, false, fmt.Errorf("start: %v", err)
	}
	end, err := parseBEDNumber(f[2])
	if err != nil {
		return Region{}, false, fmt.Errorf("end: %v", err)
	}
	if end < start {
		return Region{}, false, fmt.Errorf("end %d before start %d", end, start)
	}
	return Region{Name: f[0], Start: start, End: end}, false, nil
}

// parseBEDNumber parses a non-negative decimal coordinate.
func parseBEDNumber(s string) (int64, error) {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%q is not a non-negative integer", s)
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n > maxPosition {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return n, nil
}
