package edit

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParseRange(t *testing.T) {
	tests := []struct {
		in      string
		want    Range
		wantErr string // substring of the error; "" for success
	}{
		{"0-1", Range{0, 1}, ""},
		{"5", Range{5, Unbounded}, ""},
		{"0", Range{0, Unbounded}, ""},
		{"70000-140000", Range{70000, 140000}, ""},
		{"007-010", Range{7, 10}, ""},
		{"9223372036854775806-9223372036854775807", Range{Unbounded - 1, Unbounded}, ""},
		{"9223372036854775807", Range{Unbounded, Unbounded}, ""},
		{"", Range{}, "empty"},
		{"-5", Range{}, "start: missing number"},
		{"5-", Range{}, "end: missing number"},
		{"-", Range{}, "start: missing number"},
		{"5-5", Range{}, "empty, end must be larger than start"},
		{"10-5", Range{}, "end 5 before start 10"},
		{"1-2-3", Range{}, "end: \"2-3\" is not"},
		{"+1-2", Range{}, "start: \"+1\" is not"},
		{"1-+2", Range{}, "end: \"+2\" is not"},
		// Spaces around the numbers, as the reference tool's int() takes
		// them; none inside.
		{" 1-2", Range{1, 2}, ""},
		{"1 - 2", Range{1, 2}, ""},
		{"\t5\n", Range{5, Unbounded}, ""},
		{"1 0-20", Range{}, "start"},
		{"   ", Range{}, "empty"},
		{"0x10", Range{}, "start"},
		{"1e3", Range{}, "start"},
		{"9223372036854775808", Range{}, "start: 9223372036854775808 is too large"},
		{"0-99999999999999999999999", Range{}, "end: 99999999999999999999999 is too large"},
	}
	for _, tt := range tests {
		got, err := ParseRange(tt.in)
		if tt.wantErr == "" {
			if err != nil || got != tt.want {
				t.Errorf("ParseRange(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
			continue
		}
		if err == nil || !errors.Is(err, ErrInvalidRange) || !strings.Contains(err.Error(), tt.wantErr) ||
			!strings.HasPrefix(err.Error(), "invalid range "+quote(tt.in)+": ") {
			t.Errorf("ParseRange(%q) = %v, %v; want error containing %q", tt.in, got, err, tt.wantErr)
		}
	}
}

func quote(s string) string { return `"` + s + `"` }

func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"0-1", "5", "", "-5", "5-", "5-5", "10-5", "1-2-3", "+1-2", "9223372036854775808"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRange(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidRange) {
				t.Fatalf("ParseRange(%q): %v does not wrap ErrInvalidRange", s, err)
			}
			return
		}
		if r.Start < 0 || r.End <= r.Start && r.End != Unbounded {
			t.Fatalf("ParseRange(%q) = %v", s, r)
		}
		r2, err := ParseRange(r.String())
		if err != nil || r2 != r {
			t.Fatalf("ParseRange(%q) = %v, but ParseRange(%q) = %v, %v", s, r, r.String(), r2, err)
		}
		if iv, err := Normalize([]Range{r}); r.End > r.Start && (err != nil || !slices.Equal(iv, []Interval{Interval(r)})) {
			t.Fatalf("Normalize([%v]) = %v, %v", r, iv, err)
		}
	})
}

func TestRangeString(t *testing.T) {
	for r, want := range map[Range]string{{0, 1}: "0-1", {5, Unbounded}: "5", {7, 100}: "7-100"} {
		if got := r.String(); got != want {
			t.Errorf("%#v.String() = %q, want %q", r, got, want)
		}
	}
}

func TestNormalize(t *testing.T) {
	got, err := Normalize([]Range{{50, 60}, {0, 10}, {5, 20}, {20, 30}, {100, Unbounded}, {200, 300}})
	want := []Interval{{0, 30}, {50, 60}, {100, Unbounded}}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("Normalize = %v, %v; want %v", got, err, want)
	}
	for _, tc := range []struct {
		rs   []Range
		says string
	}{
		{[]Range{{5, 5}}, "end must be larger than start"},
		{[]Range{{0, 1}, {10, 5}}, "end must be larger than start"},
		{[]Range{{-1, 5}}, "start must be non-negative"},
		{[]Range{{Unbounded, Unbounded}}, "past any data"},
	} {
		if got, err := Normalize(tc.rs); !errors.Is(err, ErrInvalidRange) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("Normalize(%v) = %v, %v; want ErrInvalidRange saying %q", tc.rs, got, err, tc.says)
		}
	}
	if got, err := Normalize(nil); !errors.Is(err, ErrEmpty) {
		t.Errorf("Normalize(nil) = %v, %v; want ErrEmpty", got, err)
	}
	if _, err := Normalize(make([]Range, MaxEntries/2+1)); !errors.Is(err, ErrTooLong) {
		t.Errorf("Normalize of too many ranges: %v, want ErrTooLong", err)
	}
}
