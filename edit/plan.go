package edit

import (
	"fmt"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
)

// ErrOutOfRange is returned by PlanSegments for a bounded interval that
// starts at or beyond the end of the plaintext.
var ErrOutOfRange = errkind.New(errkind.Usage, "interval starts beyond the end of the plaintext")

// Plan says how to cut a selection out of a stored body: keep the stored
// segments Segments (indices, increasing, unique) and give the new file the
// edit list List, which applies to the plaintext of just those segments,
// concatenated. List is nil when the kept segments are wanted whole, so
// that the new file needs no edit list.
type Plan struct {
	Segments []int64
	List     List
}

// PlanSegments plans how to keep the intervals kept (normalised first; nil
// is everything) of a body of plainSize plaintext bytes cut into segments of
// segmentSize bytes, the last of which may be shorter. Intervals are clipped
// to plainSize. An unbounded interval that starts at or beyond plainSize
// selects nothing and is dropped; a bounded one is an error wrapping
// ErrOutOfRange. When nothing is left to keep the error wraps ErrEmpty.
//
// Applying Plan.List to the concatenated plaintext of Plan.Segments yields
// exactly the selected bytes. The list ends on a keep. Memory is 8 bytes per
// kept segment.
func PlanSegments(kept []Interval, plainSize, segmentSize int64) (Plan, error) {
	if segmentSize <= 0 {
		return Plan{}, fmt.Errorf("invalid segment size %d", segmentSize)
	}
	if plainSize < 0 {
		return Plan{}, fmt.Errorf("invalid plaintext size %d", plainSize)
	}
	if kept == nil {
		kept = []Interval{{0, Unbounded}}
	}
	var segs []int64
	var mapped []Interval // kept, as offsets of the kept segments' plaintext
	for _, iv := range normalize(kept) {
		if iv.Start >= plainSize {
			if iv.End == Unbounded {
				break
			}
			return Plan{}, fmt.Errorf("%w: interval %v, plaintext size %d", ErrOutOfRange, iv, plainSize)
		}
		end := min(iv.End, plainSize)
		first, last := iv.Start/segmentSize, (end-1)/segmentSize
		for s := first; s <= last; s++ {
			if len(segs) == 0 || s > segs[len(segs)-1] {
				segs = append(segs, s)
			}
		}
		// Segments first..last are the last ones of segs, and all of
		// them but the file's last segment are full.
		rl := int64(len(segs) - 1)
		rf := rl - (last - first)
		mapped = appendMerge(mapped, Interval{
			Start: rf*segmentSize + iv.Start%segmentSize,
			End:   rl*segmentSize + (end-1)%segmentSize + 1,
		})
	}
	if len(segs) == 0 {
		return Plan{}, fmt.Errorf("%w: nothing selected in %d bytes of plaintext", ErrEmpty, plainSize)
	}
	lastSeg := segs[len(segs)-1]
	total := int64(len(segs)-1)*segmentSize + min(segmentSize, plainSize-lastSeg*segmentSize)
	p := Plan{Segments: segs}
	if len(mapped) == 1 && mapped[0] == (Interval{0, total}) {
		return p, nil
	}
	p.List = FromIntervals(mapped)
	if err := p.List.Check(); err != nil {
		return Plan{}, err
	}
	return p, nil
}
