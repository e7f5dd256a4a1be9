package edit

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
)

// Unbounded is the End of an interval that runs to the end of its stream.
const Unbounded = math.MaxInt64

// MaxEntries is the largest number of lengths an edit list may hold
// (1<<20 lengths, 8 MiB in a header packet).
const MaxEntries = 1 << 20

var (
	// ErrTooLong is returned for an edit list of more than MaxEntries
	// lengths, or a selection that would need one.
	ErrTooLong = errkind.New(errkind.Data, "edit list too long")
	// ErrEmpty is returned when a selection keeps no bytes at all.
	ErrEmpty = errkind.New(errkind.Usage, "empty selection")
)

// Interval is the byte interval [Start, End) of a stream. End == Unbounded
// means up to the end of the stream, however long it is.
type Interval struct {
	Start, End int64
}

// Len returns End - Start, the number of bytes of the interval, or
// Unbounded - Start when it runs to the end of the stream.
func (iv Interval) Len() int64 { return iv.End - iv.Start }

// String formats the interval as "[Start,End)", with "∞" for Unbounded.
func (iv Interval) String() string {
	if iv.End == Unbounded {
		return fmt.Sprintf("[%d,∞)", iv.Start)
	}
	return fmt.Sprintf("[%d,%d)", iv.Start, iv.End)
}

// List is an edit list as stored in a Crypt4GH header: lengths that
// alternate skip, keep, skip, keep, …, starting with a skip.
type List []uint64

// Check returns ErrTooLong when the list holds more than MaxEntries
// lengths. Any other list is valid: lengths whose sum exceeds the largest
// int64 are clipped by Intervals.
func (l List) Check() error {
	if len(l) > MaxEntries {
		return fmt.Errorf("%w: %d lengths, at most %d", ErrTooLong, len(l), MaxEntries)
	}
	return nil
}

// Extent returns how much plaintext the list needs: the end of the last
// byte it keeps or, when it ends on a skip (and so keeps the rest), where
// that rest starts; 0 when it keeps nothing. Lengths after the last kept
// byte do not count: [6, 0] needs nothing and [0, 2, 10, 0] needs 2 bytes,
// while [0, 2, 10] needs 12. A body whose plaintext is shorter than Extent
// is missing data that the list keeps: whole segments were cut off its
// end, or the list is wrong. A reader that stops after the last kept byte
// can always tell, as one that reads the whole body can. A list whose
// lengths add up past the largest int64 before its last kept byte needs
// Unbounded: no body holds that much.
func (l List) Extent() int64 {
	var pos, end int64
	for i, n := range l {
		next := addClip(pos, n)
		if next == Unbounded {
			return Unbounded
		}
		if i%2 == 1 && n > 0 {
			end = next
		}
		pos = next
	}
	if len(l)%2 == 1 {
		return pos // the rest is kept from here
	}
	return end
}

// Intervals returns the intervals of the underlying plaintext that the list
// keeps, normalised: zero-length keeps produce no interval and adjacent
// keeps are merged. When the list ends on a skip (or is empty) the last
// interval runs to Unbounded. Offsets that would exceed the largest int64
// are clipped to Unbounded. The result is never nil; it is empty when the
// list keeps nothing.
func (l List) Intervals() []Interval {
	out := make([]Interval, 0, (len(l)+1)/2)
	var pos int64
	for i, n := range l {
		next := addClip(pos, n)
		if i%2 == 1 && next > pos {
			out = appendMerge(out, Interval{pos, next})
		}
		pos = next
		if pos == Unbounded {
			return out
		}
	}
	if len(l)%2 == 1 || len(l) == 0 {
		out = appendMerge(out, Interval{pos, Unbounded})
	}
	return out
}

// FromIntervals returns the edit list that keeps exactly iv (normalised
// first). FromIntervals(l.Intervals()) keeps the same bytes as l, in the
// shortest form: its first length is the skip before the first interval,
// and it ends on a skip only when the last interval is unbounded.
//
// FromIntervals(nil) is nil, no edit list; a non-nil empty iv gives [0, 0],
// which keeps nothing. The caller should check the result with
// [List.Check] before storing it.
func FromIntervals(iv []Interval) List {
	if iv == nil {
		return nil
	}
	iv = normalize(iv)
	if len(iv) == 0 {
		return List{0, 0}
	}
	l := make(List, 0, 2*len(iv))
	var pos int64
	for _, v := range iv {
		l = append(l, uint64(v.Start-pos))
		if v.End == Unbounded {
			return l
		}
		l = append(l, uint64(v.End-v.Start))
		pos = v.End
	}
	return l
}

// Map returns the bytes [start, end) of the stream that kept selects, as
// intervals of the underlying stream. end may be Unbounded; a negative
// start counts as 0; start >= end selects nothing. Map(nil, s, e) and
// Map([{0, Unbounded}], s, e) are [{s, e}]. Bytes beyond what kept selects
// are not in the result: the result is clipped, never an error, and is
// empty (not nil) when nothing remains.
func Map(kept []Interval, start, end int64) []Interval {
	start = max(start, 0)
	out := []Interval{}
	if start >= end {
		return out
	}
	if kept == nil {
		return append(out, Interval{start, end})
	}
	kept = normalize(kept)
	var off int64 // offset in the selected stream of the current interval
	for _, iv := range kept {
		if off >= end {
			break
		}
		// off <= iv.Start because the intervals are disjoint and sorted,
		// so off+n <= iv.End <= Unbounded: no overflow.
		n := iv.End - iv.Start
		s, e := max(start, off), min(end, off+n)
		if s < e {
			out = append(out, Interval{iv.Start + (s - off), iv.Start + (e - off)})
		}
		off += n
	}
	return out
}

// Compose returns the intervals of the underlying stream that the
// selection sel of the stream selected by kept stands for: Map of every
// interval of sel, concatenated. A nil kept or nil sel selects everything of
// its stream, so Compose(nil, sel) is sel normalised and Compose(kept, nil)
// is kept normalised. The result is never nil.
func Compose(kept, sel []Interval) []Interval {
	if sel == nil {
		if kept == nil {
			return []Interval{{0, Unbounded}}
		}
		return slices.Clone(normalize(kept))
	}
	out := []Interval{}
	for _, s := range normalize(sel) {
		for _, v := range Map(kept, s.Start, s.End) {
			out = appendMerge(out, v)
		}
	}
	return out
}

// addClip returns pos+n, or Unbounded when the sum exceeds it.
func addClip(pos int64, n uint64) int64 {
	if n >= uint64(Unbounded-pos) {
		return Unbounded
	}
	return pos + int64(n)
}

// appendMerge appends v to the sorted intervals out, merging it with the
// last one when they touch or overlap. v.Start must be >= the last Start.
func appendMerge(out []Interval, v Interval) []Interval {
	if k := len(out) - 1; k >= 0 && v.Start <= out[k].End {
		out[k].End = max(out[k].End, v.End)
		return out
	}
	return append(out, v)
}

// normalize returns iv sorted, with negative starts raised to 0, empty
// intervals dropped and overlapping or adjacent intervals merged. It returns
// iv itself when it is already in that form, and a non-nil result for a
// non-nil iv.
func normalize(iv []Interval) []Interval {
	if isNormal(iv) {
		return iv
	}
	c := make([]Interval, 0, len(iv))
	for _, v := range iv {
		v.Start = max(v.Start, 0)
		if v.End > v.Start {
			c = append(c, v)
		}
	}
	slices.SortFunc(c, func(a, b Interval) int { return cmp.Compare(a.Start, b.Start) })
	out := c[:0]
	for _, v := range c {
		out = appendMerge(out, v)
	}
	return out
}

func isNormal(iv []Interval) bool {
	prev := int64(-1)
	for _, v := range iv {
		if v.Start < 0 || v.End <= v.Start || v.Start <= prev {
			return false
		}
		prev = v.End
	}
	return true
}
