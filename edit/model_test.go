package edit

import (
	"bytes"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// naiveApply applies an edit list to data the obvious way, in memory,
// without going through Intervals.
func naiveApply(l List, data []byte) []byte {
	out := []byte{}
	n := uint64(len(data))
	var pos uint64
	for i, v := range l {
		adv := min(v, n-pos)
		if i%2 == 1 {
			out = append(out, data[pos:pos+adv]...)
		}
		pos += adv
	}
	if len(l)%2 == 1 || len(l) == 0 {
		out = append(out, data[pos:]...)
	}
	return out
}

// naiveSelect returns the bytes of data that the intervals select, nil
// meaning everything. The intervals must be sorted and disjoint.
func naiveSelect(iv []Interval, data []byte) []byte {
	if iv == nil {
		return slices.Clone(data)
	}
	out := []byte{}
	n := int64(len(data))
	for _, v := range iv {
		s, e := min(max(v.Start, 0), n), min(v.End, n)
		if s < e {
			out = append(out, data[s:e]...)
		}
	}
	return out
}

// slice returns b[s:e] clipped to b, the meaning of a range on a stream.
func slice(b []byte, s, e int64) []byte {
	n := int64(len(b))
	s, e = min(max(s, 0), n), min(max(e, 0), n)
	if s >= e {
		return []byte{}
	}
	return b[s:e]
}

// limitedSource errors when read beyond limit.
type limitedSource struct {
	data  []byte
	pos   int64
	limit int64
}

var errBeyond = errors.New("read beyond the last interval")

func (s *limitedSource) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if s.pos+int64(len(p)) > s.limit {
		return 0, errBeyond
	}
	if s.pos >= int64(len(s.data)) {
		return 0, io.EOF
	}
	n := copy(p, s.data[s.pos:])
	s.pos += int64(n)
	return n, nil
}

// check runs every property of the package on one plaintext, edit list,
// range of the edited stream and segment size.
func check(t *testing.T, data []byte, l List, s, e, segSize int64, chunk int) {
	t.Helper()
	want := naiveApply(l, data)
	iv := l.Intervals()
	if iv == nil || !isNormal(iv) {
		t.Fatalf("list %v: Intervals() = %v, not normalised", l, iv)
	}
	if got := naiveSelect(iv, data); !bytes.Equal(got, want) {
		t.Fatalf("list %v: intervals %v select %x, want %x", l, iv, got, want)
	}

	// (1) NewReader, and it never reads past the last bounded interval.
	limit := int64(Unbounded)
	if len(iv) == 0 {
		limit = 0
	} else if last := iv[len(iv)-1]; last.End != Unbounded {
		limit = last.End
	}
	src := &limitedSource{data: data, limit: limit}
	got, err := io.ReadAll(io.LimitReader(NewReader(src, iv), 1<<30))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("list %v: NewReader = %x, %v; want %x", l, got, err, want)
	}

	// (2) NewWriter, written in chunks; ErrDone on the write that
	// completes the last bounded interval and every write after it.
	var out bytes.Buffer
	w := NewWriter(&out, iv)
	done := false
	for off := 0; off < len(data); off += chunk {
		p := data[off:min(off+chunk, len(data))]
		n, err := w.Write(p)
		if n != len(p) {
			t.Fatalf("list %v: Write(%d bytes at %d) = %d, %v", l, len(p), off, n, err)
		}
		wantDone := int64(off+len(p)) >= limit
		if gotDone := errors.Is(err, ErrDone); gotDone != wantDone || (err != nil && !gotDone) {
			t.Fatalf("list %v: Write(%d bytes at %d) error %v, want ErrDone %v", l, len(p), off, err, wantDone)
		}
		if done && out.Len() != len(want) {
			t.Fatalf("list %v: wrote after ErrDone", l)
		}
		done = err != nil
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("list %v: NewWriter wrote %x, want %x", l, out.Bytes(), want)
	}

	// (3) Map composes a range with the list.
	m := Map(iv, s, e)
	if m == nil || !isNormal(m) {
		t.Fatalf("Map(%v, %d, %d) = %v, not normalised", iv, s, e, m)
	}
	wantRange := slice(want, s, e)
	if got := naiveSelect(m, data); !bytes.Equal(got, wantRange) {
		t.Fatalf("list %v: Map(%v, %d, %d) = %v selects %x, want %x", l, iv, s, e, m, got, wantRange)
	}
	if s < e {
		if c := Compose(iv, []Interval{{s, e}}); !slices.Equal(c, m) {
			t.Fatalf("Compose(%v, [{%d %d}]) = %v, want Map's %v", iv, s, e, c, m)
		}
	}

	// (4) PlanSegments, for the whole list and for the range.
	checkPlan(t, data, iv, segSize)
	checkPlan(t, data, m, segSize)

	// (5) FromIntervals is the inverse of Intervals.
	l2 := FromIntervals(iv)
	if got := naiveApply(l2, data); !bytes.Equal(got, want) {
		t.Fatalf("FromIntervals(%v) = %v selects %x, want %x", iv, l2, got, want)
	}
	if iv2 := l2.Intervals(); !slices.Equal(iv2, iv) {
		t.Fatalf("FromIntervals(%v).Intervals() = %v", iv, iv2)
	}
}

func checkPlan(t *testing.T, data []byte, kept []Interval, segSize int64) {
	t.Helper()
	size := int64(len(data))
	sel := naiveSelect(kept, data)
	p, err := PlanSegments(kept, size, segSize)
	beyond := false
	for _, v := range kept {
		beyond = beyond || (v.Start >= size && v.End != Unbounded)
	}
	switch {
	case beyond:
		if !errors.Is(err, ErrOutOfRange) {
			t.Fatalf("PlanSegments(%v, %d, %d) = %v, %v; want ErrOutOfRange", kept, size, segSize, p, err)
		}
		return
	case len(sel) == 0:
		if !errors.Is(err, ErrEmpty) {
			t.Fatalf("PlanSegments(%v, %d, %d) = %v, %v; want ErrEmpty", kept, size, segSize, p, err)
		}
		return
	case err != nil:
		t.Fatalf("PlanSegments(%v, %d, %d): %v", kept, size, segSize, err)
	}
	var concat []byte
	for i, s := range p.Segments {
		if s < 0 || s*segSize >= size || (i > 0 && s <= p.Segments[i-1]) {
			t.Fatalf("PlanSegments(%v, %d, %d): bad segments %v", kept, size, segSize, p.Segments)
		}
		seg := Interval{s * segSize, min(size, (s+1)*segSize)}
		if len(Compose(kept, nil)) > 0 && len(naiveSelect(intersect(kept, seg), data)) == 0 {
			t.Fatalf("PlanSegments(%v, %d, %d): segment %d has no selected byte", kept, size, segSize, s)
		}
		concat = append(concat, data[seg.Start:seg.End]...)
	}
	if p.List != nil && len(p.List)%2 != 0 {
		t.Fatalf("PlanSegments(%v, %d, %d): list %v ends on a skip", kept, size, segSize, p.List)
	}
	if got := naiveApply(p.List, concat); !bytes.Equal(got, sel) {
		t.Fatalf("PlanSegments(%v, %d, %d) = %v: selects %x, want %x", kept, size, segSize, p, got, sel)
	}
}

func intersect(kept []Interval, w Interval) []Interval {
	if kept == nil {
		return []Interval{w}
	}
	out := []Interval{}
	for _, v := range kept {
		if s, e := max(v.Start, w.Start), min(v.End, w.End); s < e {
			out = append(out, Interval{s, e})
		}
	}
	return out
}

func randomLength(rng *rand.Rand, scale int) uint64 {
	switch rng.IntN(20) {
	case 0:
		return math.MaxUint64
	case 1:
		return math.MaxInt64 - uint64(rng.IntN(3))
	case 2, 3:
		return 0
	}
	return uint64(rng.IntN(scale + 1))
}

func randomList(rng *rand.Rand, size int) List {
	if rng.IntN(10) == 0 {
		return nil
	}
	l := make(List, rng.IntN(9))
	for i := range l {
		l[i] = randomLength(rng, size/2+1)
	}
	return l
}

func randomOffset(rng *rand.Rand, size int) int64 {
	switch rng.IntN(12) {
	case 0:
		return Unbounded
	case 1:
		return -1 - rng.Int64N(5)
	}
	return rng.Int64N(int64(size) + 3)
}

func TestProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	iterations := 3000
	if testing.Short() {
		iterations = 300
	}
	for i := range iterations {
		segSize := int64(16)
		maxSize := 5 * 16
		if i%100 == 0 {
			segSize, maxSize = 65536, 3*65536+123
		}
		size := rng.IntN(maxSize + 1)
		data := make([]byte, size)
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		l := randomList(rng, size)
		s, e := randomOffset(rng, size), randomOffset(rng, size)
		if rng.IntN(3) == 0 {
			e = Unbounded
		}
		check(t, data, l, s, e, segSize, 1+rng.IntN(size/2+3))
	}
}

func FuzzMapPlan(f *testing.F) {
	f.Add(uint16(100), uint8(16), []byte{0, 10, 20, 30}, int64(5), int64(25), uint8(7))
	f.Add(uint16(80), uint8(16), []byte{3, 0, 0, 40, 1}, int64(0), int64(Unbounded), uint8(1))
	f.Add(uint16(64), uint8(16), []byte{0xff, 1}, int64(-3), int64(1), uint8(64))
	f.Add(uint16(0), uint8(1), []byte{}, int64(0), int64(0), uint8(0))
	f.Add(uint16(1000), uint8(3), []byte{1, 0xfe, 2}, int64(2), int64(900), uint8(100))
	f.Fuzz(func(t *testing.T, size uint16, seg uint8, listBytes []byte, s, e int64, chunk uint8) {
		data := make([]byte, int(size)%4096)
		for i := range data {
			data[i] = byte(i*7 + i/251)
		}
		var l List
		if len(listBytes) > 0 {
			l = make(List, 0, len(listBytes)-1)
			for _, b := range listBytes[1:] {
				switch b {
				case 0xff:
					l = append(l, math.MaxUint64)
				case 0xfe:
					l = append(l, math.MaxInt64)
				default:
					l = append(l, uint64(b)*uint64(listBytes[0]%16+1))
				}
			}
		}
		check(t, data, l, s, e, int64(seg)+1, int(chunk)+1)
	})
}
