package region

import (
	"bytes"
	"compress/flate"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

// inflateAll decompresses a raw deflate stream with compress/flate, an
// inflater independent of deflate.
func inflateAll(t testing.TB, comp []byte) []byte {
	t.Helper()
	fr := flate.NewReader(bytes.NewReader(comp))
	out, err := io.ReadAll(fr)
	if err != nil {
		t.Fatalf("inflate: %v", err)
	}
	return out
}

// TestDeflate round-trips data of every kind a block holds through
// compress/flate: compressible data smaller than stored, incompressible
// data stored, matches of every length and distance.
func TestDeflate(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, maxStored)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	var lengths strings.Builder // every match length, at many distances
	for n := 3; lengths.Len() < 60000; n = n%300 + 1 {
		lengths.WriteString(strings.Repeat(string(rune('a'+n%26)), n))
		lengths.Write(random[n : n+n%50])
	}
	cases := map[string][]byte{
		"empty":       {},
		"one":         {'x'},
		"four":        []byte("abcd"),
		"zeros":       make([]byte, maxStored),
		"random":      random,
		"random-tail": append(bytes.Repeat([]byte("ACGT"), 1000), random[:5000]...),
		"bam":         bamRecords(blockPayload),
		"vcf":         []byte(strings.Repeat("chr20\t1000\t.\tA\tG\t50\tPASS\tDP=14;AF=0.5\tGT:GQ\t0|1:48\n", 1400)[:blockPayload]),
		"far":         append(append(append([]byte{}, random[:40000]...), random[1000:1100]...), random[39000:40000]...),
		"lengths":     []byte(lengths.String()),
	}
	for name, data := range cases {
		comp := deflate(nil, data)
		if got := inflateAll(t, comp); !bytes.Equal(got, data) {
			t.Errorf("%s: the round trip differs (%d bytes in, %d out)", name, len(data), len(got))
		}
		if len(comp) > len(data)+5 {
			t.Errorf("%s: %d bytes compressed, more than stored (%d)", name, len(comp), len(data)+5)
		}
		switch name {
		case "zeros", "bam", "vcf":
			if len(comp) > len(data)/2 {
				t.Errorf("%s: %d bytes compressed from %d", name, len(comp), len(data))
			}
		}
	}
	// A prefix is kept: deflate appends.
	if got := deflate([]byte("head"), []byte("tail")); !bytes.HasPrefix(got, []byte("head")) || !bytes.Equal(inflateAll(t, got[4:]), []byte("tail")) {
		t.Errorf("deflate does not append to dst")
	}
}

// FuzzDeflate checks that whatever a block holds comes back from
// compress/flate as it went in, never longer than stored.
func FuzzDeflate(f *testing.F) {
	f.Add([]byte("hello hello hello hello"))
	f.Add(bamRecords(4096))
	f.Add(make([]byte, 300))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxStored {
			data = data[:maxStored]
		}
		comp := deflate(nil, data)
		if len(comp) > len(data)+5 {
			t.Fatalf("%d bytes compressed, more than stored", len(comp))
		}
		if got := inflateAll(t, comp); !bytes.Equal(got, data) {
			t.Fatalf("the round trip differs")
		}
	})
}
