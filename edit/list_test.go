package edit

import (
	"bytes"
	"errors"
	"io"
	"math"
	"reflect"
	"slices"
	"testing"
	"testing/iotest"
)

func TestSpecificationExample(t *testing.T) {
	l := List{0, 7853, 71721, 307929, 51299, 38}
	want := []Interval{{0, 7853}, {79574, 387503}, {438802, 438840}}
	if got := l.Intervals(); !slices.Equal(got, want) {
		t.Fatalf("Intervals() = %v, want %v", got, want)
	}
	if got := FromIntervals(want); !slices.Equal(got, l) {
		t.Fatalf("FromIntervals(%v) = %v, want %v", want, got, l)
	}
	data := make([]byte, 500000)
	for i := range data {
		data[i] = byte(i % 253)
	}
	got, err := io.ReadAll(NewReader(bytes.NewReader(data), l.Intervals()))
	if err != nil {
		t.Fatal(err)
	}
	wantData := slices.Concat(data[0:7853], data[79574:387503], data[438802:438840])
	if !bytes.Equal(got, wantData) {
		t.Fatalf("NewReader returned %d bytes, want %d", len(got), len(wantData))
	}
}

func TestIntervals(t *testing.T) {
	const maxU = math.MaxUint64
	tests := []struct {
		l    List
		want []Interval
	}{
		{nil, []Interval{{0, Unbounded}}},
		{List{}, []Interval{{0, Unbounded}}},
		{List{0}, []Interval{{0, Unbounded}}},
		{List{5}, []Interval{{5, Unbounded}}},
		{List{0, 0}, []Interval{}},
		{List{5, 0}, []Interval{}},
		{List{5, 0, 3}, []Interval{{8, Unbounded}}},
		{List{1, 2}, []Interval{{1, 3}}},
		{List{1, 2, 0, 3}, []Interval{{1, 6}}},            // adjacent keeps merge
		{List{1, 2, 0, 3, 0}, []Interval{{1, Unbounded}}}, // and with the tail
		{List{1, 0, 2, 3}, []Interval{{3, 6}}},            // zero keep: nothing
		{List{maxU}, []Interval{}},                        // skip everything
		{List{maxU, 5}, []Interval{}},                     //
		{List{0, maxU}, []Interval{{0, Unbounded}}},       // keep clipped
		{List{0, maxU, 5, 5}, []Interval{{0, Unbounded}}}, // nothing after ∞
		{List{10, math.MaxInt64 - 10}, []Interval{{10, Unbounded}}},
		{List{10, math.MaxInt64 - 11}, []Interval{{10, math.MaxInt64 - 1}}},
		{List{10, math.MaxInt64 - 11, 0}, []Interval{{10, Unbounded}}},
		{List{10, math.MaxInt64 - 11, 1}, []Interval{{10, math.MaxInt64 - 1}}},
		{List{math.MaxInt64 - 1, 1}, []Interval{{math.MaxInt64 - 1, Unbounded}}},
		{List{math.MaxInt64 - 1, 0}, []Interval{}},
		{List{math.MaxInt64 - 1}, []Interval{{math.MaxInt64 - 1, Unbounded}}},
	}
	for _, tt := range tests {
		got := tt.l.Intervals()
		if got == nil || !slices.Equal(got, tt.want) {
			t.Errorf("%v.Intervals() = %#v, want %v", tt.l, got, tt.want)
		}
	}
}

// TestExtent checks where the kept bytes of a list end: lengths after
// the last kept byte do not count, so that a reader that stops there
// reaches the same verdict on missing data as one that reads the body.
func TestExtent(t *testing.T) {
	tests := []struct {
		l    List
		want int64
	}{
		{nil, 0},
		{List{}, 0},
		{List{0}, 0},
		{List{6}, 6},           // the rest, from 6
		{List{6, 0}, 0},        // keeps nothing
		{List{0, 2, 10, 0}, 2}, // a skip and an empty keep after the data
		{List{0, 2, 10}, 12},   // the rest, from 12
		{List{0, 2, 0}, 2},     // two bytes, then the rest
		{List{1, 2, 0, 3}, 6},
		{List{0, 7853, 71721, 307929, 51299, 38}, 438840},
		{List{math.MaxUint64}, Unbounded},    // no body reaches past the skip
		{List{0, math.MaxUint64}, Unbounded}, // no body holds the keep
		{List{math.MaxInt64 - 1}, math.MaxInt64 - 1},
	}
	for _, tt := range tests {
		if got := tt.l.Extent(); got != tt.want {
			t.Errorf("%v.Extent() = %d, want %d", tt.l, got, tt.want)
		}
	}
}

func TestFromIntervals(t *testing.T) {
	tests := []struct {
		iv   []Interval
		want List
	}{
		{nil, nil},
		{[]Interval{}, List{0, 0}},
		{[]Interval{{0, Unbounded}}, List{0}},
		{[]Interval{{3, 5}}, List{3, 2}},
		{[]Interval{{3, 5}, {7, Unbounded}}, List{3, 2, 2}},
		// Not normalised: sorted, merged, empty and negative fixed.
		{[]Interval{{7, 9}, {3, 5}, {4, 7}}, List{3, 6}},
		{[]Interval{{-4, 2}, {5, 5}, {9, 8}}, List{0, 2}},
		{[]Interval{{5, 5}}, List{0, 0}},
	}
	for _, tt := range tests {
		if got := FromIntervals(tt.iv); !slices.Equal(got, tt.want) || (got == nil) != (tt.want == nil) {
			t.Errorf("FromIntervals(%v) = %#v, want %#v", tt.iv, got, tt.want)
		}
	}
}

func TestMap(t *testing.T) {
	tests := []struct {
		kept       []Interval
		start, end int64
		want       []Interval
	}{
		{nil, 3, 9, []Interval{{3, 9}}},
		{nil, 3, Unbounded, []Interval{{3, Unbounded}}},
		{[]Interval{{0, Unbounded}}, 3, 9, []Interval{{3, 9}}},
		{nil, 9, 3, []Interval{}},
		{nil, -2, 3, []Interval{{0, 3}}},
		{[]Interval{}, 0, Unbounded, []Interval{}},
		{[]Interval{{10, 20}, {30, 40}}, 5, 15, []Interval{{15, 20}, {30, 35}}},
		{[]Interval{{10, 20}, {30, 40}}, 0, Unbounded, []Interval{{10, 20}, {30, 40}}},
		{[]Interval{{10, 20}, {30, 40}}, 10, 20, []Interval{{30, 40}}},
		{[]Interval{{10, 20}, {30, 40}}, 20, 30, []Interval{}},
		{[]Interval{{10, 20}, {30, Unbounded}}, 15, Unbounded, []Interval{{35, Unbounded}}},
		{[]Interval{{10, 20}, {30, Unbounded}}, 15, 1000, []Interval{{35, 1020}}},
		{[]Interval{{10, Unbounded}}, 0, Unbounded - 1, []Interval{{10, Unbounded}}},
		// The interop case: --range 100-5000 on top of [70000, 139999).
		{[]Interval{{4464, 4464 + 69999}}, 100, 5000, []Interval{{4564, 9464}}},
	}
	for _, tt := range tests {
		if got := Map(tt.kept, tt.start, tt.end); got == nil || !slices.Equal(got, tt.want) {
			t.Errorf("Map(%v, %d, %d) = %#v, want %v", tt.kept, tt.start, tt.end, got, tt.want)
		}
	}
}

func TestCompose(t *testing.T) {
	kept := []Interval{{10, 20}, {30, Unbounded}}
	got := Compose(kept, []Interval{{12, 15}, {0, 2}, {5, 12}})
	// [5,12) and [12,15) merge; [5,15) spans both kept intervals.
	want := []Interval{{10, 12}, {15, 20}, {30, 35}}
	if !slices.Equal(got, want) {
		t.Errorf("Compose = %v, want %v", got, want)
	}
	if got := Compose(nil, nil); !slices.Equal(got, []Interval{{0, Unbounded}}) {
		t.Errorf("Compose(nil, nil) = %v", got)
	}
	if got := Compose(kept, nil); !slices.Equal(got, kept) {
		t.Errorf("Compose(kept, nil) = %v", got)
	}
	if got := Compose(kept, []Interval{}); got == nil || len(got) != 0 {
		t.Errorf("Compose(kept, []) = %#v, want empty", got)
	}
}

func TestListCheck(t *testing.T) {
	if err := make(List, MaxEntries).Check(); err != nil {
		t.Errorf("Check of %d lengths: %v", MaxEntries, err)
	}
	if err := make(List, MaxEntries+1).Check(); !errors.Is(err, ErrTooLong) {
		t.Errorf("Check of %d lengths: %v, want ErrTooLong", MaxEntries+1, err)
	}
}

func TestReaderStopsAtLastInterval(t *testing.T) {
	data := make([]byte, 3*65536+123)
	for i := range data {
		data[i] = byte(i * 13)
	}
	for _, iv := range [][]Interval{
		{{0, 1}},
		{{65535, 65537}},
		{{10, 20}, {70000, 140000}},
		{{100, int64(len(data))}},
		{},
	} {
		end := int64(0)
		if len(iv) > 0 {
			end = iv[len(iv)-1].End
		}
		src := &limitedSource{data: data, limit: end}
		r := NewReader(src, iv)
		got, err := io.ReadAll(r)
		if err != nil {
			t.Fatalf("%v: %v", iv, err)
		}
		if !bytes.Equal(got, naiveSelect(iv, data)) {
			t.Fatalf("%v: wrong bytes", iv)
		}
		if n, err := r.Read(make([]byte, 10)); n != 0 || err != io.EOF {
			t.Fatalf("%v: Read after EOF = %d, %v", iv, n, err)
		}
		if src.pos != end {
			t.Fatalf("%v: source read up to %d, want %d", iv, src.pos, end)
		}
		if err := iotest.TestReader(NewReader(bytes.NewReader(data), iv), naiveSelect(iv, data)); err != nil {
			t.Fatalf("%v: %v", iv, err)
		}
	}
}

func TestReaderErrors(t *testing.T) {
	boom := errors.New("boom")
	// An error while skipping is returned, and sticks.
	r := NewReader(iotest.ErrReader(boom), []Interval{{5, 10}})
	for range 2 {
		if _, err := r.Read(make([]byte, 4)); err != boom {
			t.Fatalf("Read = %v, want boom", err)
		}
	}
	// A source shorter than the selection just ends the stream.
	got, err := io.ReadAll(NewReader(bytes.NewReader([]byte("abcdef")), []Interval{{1, 3}, {5, 100}, {200, 300}}))
	if err != nil || string(got) != "bcf" {
		t.Fatalf("ReadAll = %q, %v", got, err)
	}
	// Through a one-byte reader.
	got, err = io.ReadAll(NewReader(iotest.OneByteReader(bytes.NewReader([]byte("abcdef"))), []Interval{{1, 3}, {4, Unbounded}}))
	if err != nil || string(got) != "bcef" {
		t.Fatalf("ReadAll = %q, %v", got, err)
	}
}

type failWriter struct {
	n   int // bytes accepted before failing
	buf bytes.Buffer
}

var errWrite = errors.New("disk full")

func (w *failWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		w.buf.Write(p[:w.n])
		k := w.n
		w.n = 0
		return k, errWrite
	}
	w.n -= len(p)
	return w.buf.Write(p)
}

func TestWriter(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out, []Interval{{2, 4}, {6, 8}})
	steps := []struct {
		in   string
		done bool
	}{
		{"ab", false}, {"cde", false}, {"fg", false}, {"h", true}, {"ijk", true}, {"", true},
	}
	for _, s := range steps {
		n, err := w.Write([]byte(s.in))
		if n != len(s.in) || errors.Is(err, ErrDone) != s.done || (err != nil && !s.done) {
			t.Fatalf("Write(%q) = %d, %v; want done %v", s.in, n, err, s.done)
		}
	}
	if out.String() != "cdgh" {
		t.Fatalf("wrote %q, want %q", out.String(), "cdgh")
	}

	// Nothing selected: done at once.
	if n, err := NewWriter(&out, []Interval{}).Write([]byte("x")); n != 1 || err != ErrDone {
		t.Fatalf("Write with nothing selected = %d, %v", n, err)
	}

	// Errors of the destination are returned with the bytes consumed,
	// and stick.
	fw := &failWriter{n: 3}
	w = NewWriter(fw, []Interval{{1, Unbounded}})
	if n, err := w.Write([]byte("abcdefgh")); n != 4 || err != errWrite {
		t.Fatalf("Write = %d, %v; want 4, disk full", n, err)
	}
	if n, err := w.Write([]byte("ijk")); n != 0 || err != errWrite {
		t.Fatalf("Write after error = %d, %v", n, err)
	}
	if fw.buf.String() != "bcd" {
		t.Fatalf("wrote %q", fw.buf.String())
	}
}

func BenchmarkReader(b *testing.B) {
	data := make([]byte, 1<<20)
	kept := List{100, 300000, 200000, 1000, 1, 400000}.Intervals()
	src := bytes.NewReader(data)
	buf := make([]byte, 32<<10)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		src.Reset(data)
		r := NewReader(src, kept)
		for {
			if _, err := r.Read(buf); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
	}
}

func TestStandsFor(t *testing.T) {
	tests := []struct {
		l       List
		plain   int64
		kept    []Interval
		claimed int64
		missing bool
	}{
		{nil, 0, []Interval{}, 0, false},
		{nil, 100, []Interval{{0, 100}}, 100, false},
		{List{0, 10, 10, 10, 10}, 0, []Interval{}, 20, true},
		{List{0, 10, 10, 10, 10}, 5, []Interval{{0, 5}}, 20, true},
		{List{0, 10, 10, 10, 10}, 25, []Interval{{0, 10}, {20, 25}}, 20, true},
		{List{0, 10, 10, 10, 10}, 30, []Interval{{0, 10}, {20, 30}}, 20, true}, // the rest starts at 40
		{List{0, 10, 10, 10, 10}, 40, []Interval{{0, 10}, {20, 30}}, 20, false},
		{List{0, 10, 10, 10, 10}, 100, []Interval{{0, 10}, {20, 30}, {40, 100}}, 80, false},
		// Lengths after the last kept byte do not count.
		{List{0, 2, 10, 0}, 2, []Interval{{0, 2}}, 2, false},
		{List{0, 2, 10}, 2, []Interval{{0, 2}}, 2, true},
		// A list that keeps the rest from past the end of the body.
		{List{100}, 50, []Interval{}, 0, true},
		{List{6, 0}, 0, []Interval{}, 0, false},
		// A list that keeps nothing never misses data.
		{List{0, 0}, 0, []Interval{}, 0, false},
		// No body length: what the list keeps of any body.
		{List{5, 10}, Unbounded, []Interval{{5, 15}}, 10, false},
		{List{5}, Unbounded, []Interval{{5, Unbounded}}, Unbounded - 5, false},
	}
	for _, tt := range tests {
		got := StandsFor(tt.l, tt.plain)
		if !reflect.DeepEqual(got.Kept, tt.kept) {
			t.Errorf("StandsFor(%v, %d).Kept = %v, want %v", tt.l, tt.plain, got.Kept, tt.kept)
		}
		var size int64
		for _, iv := range tt.kept {
			size += iv.Len()
		}
		if got.Size != size || got.Claimed != tt.claimed || got.Missing != tt.missing {
			t.Errorf("StandsFor(%v, %d) = size %d, claimed %d, missing %v; want %d, %d, %v",
				tt.l, tt.plain, got.Size, got.Claimed, got.Missing, size, tt.claimed, tt.missing)
		}
	}
}

// TestStandsForSize checks the sizes of lists that clip and wrap.
func TestStandsForSize(t *testing.T) {
	for _, tc := range []struct {
		list  List
		plain int64
		size  int64
		fits  bool
	}{
		{nil, 1000, 1000, true},
		{List{}, 1000, 1000, true},
		{List{100}, 1000, 900, true},
		{List{1000}, 1000, 0, true},
		{List{1001}, 1000, 0, false},
		{List{10, 20}, 1000, 20, true},
		{List{10, 20, 30, 40}, 1000, 60, true},
		{List{10, 20, 30, 40, 50}, 1000, 60 + 850, true},
		{List{900, 200}, 1000, 100, false},
		{List{0, 1 << 63, 5}, 1000, 1000, false},
		{List{1<<64 - 1, 1<<64 - 1}, 1000, 0, false},
		{List{10, 20}, 0, 0, false},
	} {
		p := StandsFor(tc.list, tc.plain)
		if p.Size != tc.size || p.Missing == tc.fits {
			t.Errorf("StandsFor(%v, %d) = size %d, missing %v; want %d, %v", tc.list, tc.plain, p.Size, p.Missing, tc.size, !tc.fits)
		}
	}
}
