package edit

import (
	"errors"
	"slices"
	"testing"
)

func TestPlanSegments(t *testing.T) {
	const seg = 65536
	const multi3 = 3*seg + 123
	tests := []struct {
		kept []Interval
		size int64
		want Plan
	}{
		// The interop rearrange case, with the half-open range the
		// specification means: segment 0 dropped, [4464, +70000).
		{[]Interval{{70000, 140000}}, multi3, Plan{[]int64{1, 2}, List{4464, 70000}}},
		// Everything, or whole segments: no edit list needed.
		{nil, multi3, Plan{[]int64{0, 1, 2, 3}, nil}},
		{[]Interval{{0, Unbounded}}, multi3, Plan{[]int64{0, 1, 2, 3}, nil}},
		{[]Interval{{seg, 2 * seg}}, multi3, Plan{[]int64{1}, nil}},
		{[]Interval{{3 * seg, Unbounded}}, multi3, Plan{[]int64{3}, nil}},
		{[]Interval{{0, seg}, {3 * seg, multi3 + 1000}}, multi3, Plan{[]int64{0, 3}, nil}},
		// Clipped at the end of the plaintext; the list ends on a keep.
		{[]Interval{{3*seg + 100, Unbounded}}, multi3, Plan{[]int64{3}, List{100, 23}}},
		{[]Interval{{seg - 1, seg + 1}}, multi3, Plan{[]int64{0, 1}, List{seg - 1, 2}}},
		// Two intervals in one segment, then a gap of whole segments.
		{[]Interval{{1, 2}, {5, 6}, {2*seg + 7, 2*seg + 9}}, multi3, Plan{[]int64{0, 2}, List{1, 1, 3, 1, seg + 1, 2}}},
		// An unbounded interval from the end of the plaintext on selects
		// nothing more.
		{[]Interval{{1, 2}, {multi3, Unbounded}}, multi3, Plan{[]int64{0}, List{1, 1}}},
	}
	for _, tt := range tests {
		got, err := PlanSegments(tt.kept, tt.size, seg)
		if err != nil || !slices.Equal(got.Segments, tt.want.Segments) || !slices.Equal(got.List, tt.want.List) ||
			(got.List == nil) != (tt.want.List == nil) {
			t.Errorf("PlanSegments(%v, %d) = %v, %v; want %v", tt.kept, tt.size, got, err, tt.want)
		}
	}
}

func TestPlanSegmentsErrors(t *testing.T) {
	tests := []struct {
		kept      []Interval
		size, seg int64
		want      error
	}{
		{[]Interval{}, 100, 16, ErrEmpty},
		{nil, 0, 16, ErrEmpty},
		{[]Interval{{100, Unbounded}}, 100, 16, ErrEmpty},
		{[]Interval{{100, 101}}, 100, 16, ErrOutOfRange},
		{[]Interval{{1, 2}, {200, 300}}, 100, 16, ErrOutOfRange},
		{[]Interval{{5, 5}}, 100, 16, ErrEmpty},
		{nil, 100, 0, nil},
		{nil, 100, -1, nil},
		{nil, -1, 16, nil},
	}
	for _, tt := range tests {
		p, err := PlanSegments(tt.kept, tt.size, tt.seg)
		if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) {
			t.Errorf("PlanSegments(%v, %d, %d) = %v, %v; want error %v", tt.kept, tt.size, tt.seg, p, err, tt.want)
		}
	}
}

func TestPlanSegmentsTooLong(t *testing.T) {
	// One byte out of every other 2-byte segment: MaxEntries/2+1
	// intervals need MaxEntries+2 lengths.
	n := MaxEntries/2 + 1
	kept := make([]Interval, n)
	for i := range kept {
		kept[i] = Interval{int64(4 * i), int64(4*i + 1)}
	}
	if _, err := PlanSegments(kept, int64(4*n), 2); !errors.Is(err, ErrTooLong) {
		t.Fatalf("PlanSegments of %d intervals: %v, want ErrTooLong", n, err)
	}
	if _, err := PlanSegments(kept[:n-1], int64(4*n), 2); err != nil {
		t.Fatalf("PlanSegments of %d intervals: %v", n-1, err)
	}
}
