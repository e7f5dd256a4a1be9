package header

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// preamble returns magic, version 1 and the packet count.
func preamble(count uint32) []byte {
	b := append([]byte(Magic), 1, 0, 0, 0)
	return binary.LittleEndian.AppendUint32(b, count)
}

func u32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func TestParseHostile(t *testing.T) {
	method0 := func(length uint32, rest int) []byte {
		return cat(u32(length), u32(0), make([]byte, rest))
	}
	tests := []struct {
		name  string
		input []byte
		want  []error // all must match
	}{
		{"empty", nil, []error{ErrEmptyInput}},
		{"short magic prefix", []byte("cry"), []error{ErrTruncated}},
		{"short non-magic", []byte("abc"), []error{ErrNotCrypt4GH}},
		{"bad magic", cat([]byte("crypt4gx"), u32(1), u32(0)), []error{ErrNotCrypt4GH}},
		{"no version", []byte(Magic), []error{ErrTruncated}},
		{"half version", []byte(Magic + "\x01\x00"), []error{ErrTruncated}},
		{"no count", cat([]byte(Magic), u32(1)), []error{ErrTruncated}},
		{"version 0", cat([]byte(Magic), u32(0), u32(0)), []error{ErrUnsupportedVersion}},
		{"version 2", cat([]byte(Magic), u32(2), u32(0)), []error{ErrUnsupportedVersion}},
		{"count 2^32-1", preamble(0xFFFFFFFF), []error{ErrTooManyPackets}},
		{"count MaxPackets+1", preamble(MaxPackets + 1), []error{ErrTooManyPackets}},
		{"count MaxPackets, no packets", preamble(MaxPackets), []error{ErrTruncated}},
		{"count 2, one packet", cat(preamble(2), method0(68, 60)), []error{ErrTruncated}},
		{"length cut", cat(preamble(1), []byte{68, 0}), []error{ErrTruncated}},
		{"method cut", cat(preamble(1), u32(68), []byte{0}), []error{ErrTruncated}},
		{"packet cut", cat(preamble(1), method0(108, 50)), []error{ErrTruncated}},
		{"length 0xFFFFFFFF", cat(preamble(1), u32(0xFFFFFFFF), make([]byte, 100)), []error{ErrInvalidPacket}},
		{"length MaxPacketLength+1", cat(preamble(1), u32(MaxPacketLength+1), make([]byte, 100)), []error{ErrInvalidPacket}},
		{"length MaxPacketLength, input short", cat(preamble(1), u32(MaxPacketLength), make([]byte, 100)), []error{ErrTruncated}},
		{"method 0 length 67", cat(preamble(1), method0(67, 59)), []error{ErrInvalidPacket}},
		{"method 0 length 8", cat(preamble(1), method0(8, 0)), []error{ErrInvalidPacket}},
	}
	for n := range uint32(8) {
		tests = append(tests, struct {
			name  string
			input []byte
			want  []error
		}{"length " + string(rune('0'+n)), cat(preamble(1), u32(n), make([]byte, 80)), []error{ErrInvalidPacket}})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			h, err := Parse(bytes.NewReader(tt.input))
			if h != nil || err == nil {
				t.Fatalf("parsed: %+v", h)
			}
			for _, s := range tt.want {
				if !errors.Is(err, s) {
					t.Errorf("error %q does not wrap %q", err, s)
				}
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("took %v", d)
			}
			if msg := err.Error(); msg != strings.ToLower(msg[:1])+msg[1:] || strings.HasSuffix(msg, ".") {
				t.Errorf("message %q: not lowercase or ends with a period", msg)
			}
		})
	}
}

func TestParseOversizedPacketReadsNoFurther(t *testing.T) {
	// A packet over the limit is refused without reading its bytes: the
	// source fails if it is read past the length field.
	r := io.MultiReader(bytes.NewReader(cat(preamble(1), u32(MaxPacketLength+1))), failReader{})
	_, err := Parse(r)
	if !errors.Is(err, ErrInvalidPacket) {
		t.Fatalf("got %v, want ErrInvalidPacket", err)
	}
}

type failReader struct{}

func (failReader) Read([]byte) (int, error) { return 0, errors.New("read past the length field") }

func TestParseSmallPackets(t *testing.T) {
	// Packets of other methods may be as short as 8 bytes; method 0 needs 68.
	in := cat(preamble(3), u32(8), u32(1), u32(12), u32(99), []byte("abcd"), u32(68), u32(0), make([]byte, 60), []byte("body"))
	r := bytes.NewReader(in)
	h, err := Parse(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Packets) != 3 || h.Packets[0].Method != 1 || len(h.Packets[0].Opaque) != 0 ||
		h.Packets[1].Method != 99 || string(h.Packets[1].Opaque) != "abcd" || len(h.Packets[2].Ciphertext) != 16 {
		t.Fatalf("packets %+v", h.Packets)
	}
	if rest, _ := io.ReadAll(r); string(rest) != "body" {
		t.Errorf("left %q, want the body", rest)
	}
	if !bytes.Equal(h.Marshal(), in[:len(in)-4]) {
		t.Error("Marshal differs")
	}
}

func TestParseReadError(t *testing.T) {
	boom := errors.New("boom")
	for _, n := range []int{0, 5, 8, 14, 18, 22, 40} {
		in := cat(preamble(1), u32(68), u32(0), make([]byte, 60))
		r := io.MultiReader(bytes.NewReader(in[:n]), iotest.ErrReader(boom))
		_, err := Parse(r)
		if !errors.Is(err, boom) {
			t.Errorf("error after %d bytes: got %v, want boom", n, err)
		}
		for _, s := range []error{ErrTruncated, ErrEmptyInput, ErrNotCrypt4GH} {
			if errors.Is(err, s) {
				t.Errorf("error after %d bytes: %v is not a format error", n, err)
			}
		}
	}
}

func TestParseErrorMessages(t *testing.T) {
	tests := []struct {
		input []byte
		want  string
	}{
		{nil, "empty input: expected a crypt4gh header"},
		{cat([]byte("crypt4gx"), u32(1), u32(0)), `not a crypt4gh file (bad magic "crypt4gx")`},
		// Bytes that are not text, such as a bare secret key's, are not shown.
		{[]byte("\x9f\x01secretkeybytes"), `not a crypt4gh file (its first 8 bytes are not text)`},
		// A short line of text is text.
		{[]byte("hello\r\n\tx"), `not a crypt4gh file (bad magic "hello\r\n\t")`},
		{cat([]byte(Magic), u32(2), u32(0)), "unsupported crypt4gh version 2 (only version 1 is supported)"},
		{preamble(0xFFFFFFFF), "too many header packets: 4294967295 (limit 65536)"},
		{cat(preamble(1), u32(3)), "invalid header packet: packet 1 of 1 has length 3 (minimum 8)"},
		{cat(preamble(3), u32(68), u32(0), make([]byte, 60), u32(108), u32(0), make([]byte, 42)),
			"header truncated: packet 2 of 3 ends after 50 of its 108 bytes"},
		{cat(preamble(2), u32(68), u32(0), make([]byte, 60)),
			"header truncated: packet 2 of 2 is missing (the input ends after packet 1)"},
		{preamble(4), "header truncated: packet 1 of 4 is missing (the input ends after the packet count)"},
		{cat(preamble(1), u32(0xFFFFFFFF), make([]byte, 100)),
			"invalid header packet: packet 1 of 1 has length 4294967295 (limit 16777216); the packet count may be wrong or the header damaged"},
	}
	for _, tt := range tests {
		_, err := Parse(bytes.NewReader(tt.input))
		if err == nil || err.Error() != tt.want {
			t.Errorf("got %q, want %q", err, tt.want)
		}
	}
}

// TestParseMemory checks that a header claiming far more than the input
// holds costs memory in proportion to the input.
func TestParseMemory(t *testing.T) {
	for _, length := range []uint32{0xFFFFFFFF, MaxPacketLength, MaxPacketLength - 1} {
		in := cat(preamble(1), u32(length), u32(0), make([]byte, 92)) // 100 bytes of packet
		const runs = 10
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for range runs {
			_, err := Parse(bytes.NewReader(in))
			want := ErrTruncated
			if length > MaxPacketLength {
				want = ErrInvalidPacket
			}
			if !errors.Is(err, want) {
				t.Fatalf("length %d: got %v, want %v", length, err, want)
			}
		}
		runtime.ReadMemStats(&after)
		if perRun := (after.TotalAlloc - before.TotalAlloc) / runs; perRun > 256<<10 {
			t.Errorf("length %d: Parse allocated %d bytes per run for a 116-byte input", length, perRun)
		}
	}
	// A packet count of MaxPackets with nothing behind it reserves nothing
	// in proportion to the count.
	allocs := testing.AllocsPerRun(10, func() { Parse(bytes.NewReader(preamble(MaxPackets))) })
	if allocs > 20 {
		t.Errorf("%v allocations for an empty header claiming %d packets", allocs, MaxPackets)
	}
}

// TestMagicError: an input that is not a crypt4gh file is a *MagicError
// holding its first bytes, which tells a key file from other data.
func TestMagicError(t *testing.T) {
	for in, keyFile := range map[string]bool{
		"-----BEGIN CRYPT4GH PRIVATE KEY-----\n": true,
		"\uFEFF-----BEGIN PRIVATE KEY-----\n":    true,
		"ssh-ed25519 AAAAC3Nza me@host\n":        true,
		"\x1f\x8b\x08\x04BC gzip":                false,
		"BAM\x01 and more":                       false,
	} {
		_, err := Parse(strings.NewReader(in))
		var me *MagicError
		if !errors.As(err, &me) || !errors.Is(err, ErrNotCrypt4GH) || me.KeyFile() != keyFile {
			t.Errorf("Parse(%q): %v; want a MagicError, KeyFile %v", in, err, keyFile)
		}
	}
}
