// Package edit implements Crypt4GH edit lists and byte ranges: turning an
// edit list into the intervals of plaintext it keeps, composing a range of
// the edited output with an existing edit list, applying a selection to a
// stream, and planning which stored segments a new file must keep.
//
// # Edit lists
//
// A [List] holds the lengths of an edit list as the format stores them:
// skip, keep, skip, keep, …, starting with a skip, over the plaintext of the
// segments present in the file. When the list ends on a skip, everything
// after it is kept; when it ends on a keep, everything after it is dropped.
// An empty List keeps everything, as if it were [0]. The example of the
// specification, [0, 7853, 71721, 307929, 51299, 38], keeps bytes
// [0, 7853), [79574, 387503) and [438802, 438840).
//
// # Selections
//
// The functions of this package describe a selection of a byte stream as a
// slice of [Interval], [Start, End) offsets of the underlying stream, with
// End == [Unbounded] meaning "to the end of the stream". [List.Intervals]
// turns a list into intervals and [FromIntervals] goes back.
//
// A nil slice of intervals means "no edit list": every byte is selected.
// A non-nil empty slice selects nothing. Functions that return intervals
// never return nil, so the result of [List.Intervals] or [Map] may be passed
// on without losing that distinction.
//
// Intervals given to [Map], [Compose], [FromIntervals], [NewReader],
// [NewWriter] and [PlanSegments] are normalised first: negative starts are
// raised to 0, empty intervals are dropped, the rest are sorted and
// overlapping or adjacent ones merged. Intervals returned by this package
// are always normalised (sorted, disjoint, non-adjacent, non-empty).
//
// # Ranges
//
// A [Range] is what a user asks for on the command line, "START-END" or
// "START", bytes [START, END) of the stream the file stands for, that is
// after its edit list. [ParseRange] parses one and [Normalize] sorts and
// merges several (overlapping and adjacent ranges are merged, so a byte
// asked for twice is output once). [Map] and [Compose] translate ranges of
// the edited stream into intervals of the underlying plaintext.
//
// # Streams
//
// [NewReader] yields only the selected bytes of a reader and stops reading
// its source after the last bounded interval. [NewWriter] writes only the
// selected bytes and reports [ErrDone] once nothing more can be selected, so
// that a caller can stop decrypting early. Both use constant memory.
//
// # Segments
//
// [PlanSegments] computes which stored segments of a body a selection
// touches and the new edit list over the plaintext of just those segments:
// this is how a range is cut out of a file without decrypting it into a new
// body.
//
// # Limits
//
// An edit list may hold at most [MaxEntries] lengths; longer lists are
// refused with [ErrTooLong] by [List.Check], [Normalize] and [PlanSegments].
// A parser of edit-list packets should check the count against MaxEntries
// before allocating.
package edit
