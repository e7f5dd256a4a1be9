package region

import (
	"bytes"
	"compress/flate"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

// inflateAll decompresses a raw deflate stream with compress/flate.
func inflateAll(t testing.TB, comp []byte) []byte {
	t.Helper()
	out, err := io.ReadAll(flate.NewReader(bytes.NewReader(comp)))
	if err != nil {
		t.Fatalf("compress/flate cannot read the stream: %v", err)
	}
	return out
}

// checkDeflate compresses data and checks that compress/flate gives it
// back, and that the stream is no longer than stored data.
func checkDeflate(t testing.TB, e *encoder, name string, data []byte) []byte {
	t.Helper()
	comp := e.appendDeflate([]byte("prefix"), data)
	if !bytes.HasPrefix(comp, []byte("prefix")) {
		t.Fatalf("%s: the stream does not follow what was there", name)
	}
	comp = comp[len("prefix"):]
	if got := inflateAll(t, comp); !bytes.Equal(got, data) {
		t.Fatalf("%s: %d bytes came back as %d different ones", name, len(data), len(got))
	}
	if len(comp) > len(data)+5 {
		t.Fatalf("%s: %d bytes compressed to %d, more than stored", name, len(data), len(comp))
	}
	return comp
}

// TestDeflate compresses data of many shapes and sizes, with one encoder
// (its memory kept between blocks) and reads each back with
// compress/flate.
func TestDeflate(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	few := func(n, k int) []byte { // k distinct bytes, unevenly
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.IntN(k) * rng.IntN(k) / k)
		}
		return b
	}
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	cases := map[string][]byte{
		"empty":          {},
		"one":            {'x'},
		"short":          []byte("hello, hello, hello"),
		"all bytes":      all,
		"zeros":          make([]byte, blockPayload),
		"long runs":      bytes.Repeat([]byte("abc"), 30000)[:maxBlock-1],
		"random":         random(blockPayload),
		"random short":   random(100),
		"few symbols":    few(blockPayload, 3),
		"two symbols":    few(5000, 2),
		"text":           []byte(strings.Repeat("##INFO=<ID=DP,Number=1,Type=Integer,Description=\"Depth\">\nchr1\t12345\t.\tA\tG\t50\tPASS\tDP=14\n", 700))[:blockPayload],
		"BAM records":    bamRecords(blockPayload),
		"BAM half":       bamRecords(blockPayload / 2),
		"far matches":    append(append(random(20000), random(20000)...), random(20000)...),
		"largest stored": random(maxBlock - 1),
	}
	// A match exactly 32 KiB back, and one just past it.
	head := random(300)
	for _, gap := range []int{encMaxDist - 300, encMaxDist - 299} {
		b := append(append(append([]byte{}, head...), random(gap)...), head...)
		cases[fmt.Sprint("gap of ", gap)] = b
	}
	var e encoder
	for name, data := range cases {
		checkDeflate(t, &e, name, data)
	}
	for n := range 300 {
		checkDeflate(t, &e, "random size", few(n, 1+n%7))
	}
	// Compressible data compresses: BAM records to about a fifth.
	if comp := checkDeflate(t, &e, "BAM", bamRecords(blockPayload)); len(comp) > blockPayload/4 {
		t.Errorf("a block of BAM records compressed to %d bytes of %d", len(comp), blockPayload)
	}
}

// TestHuffLengths checks the code lengths of skewed and random
// frequencies: none longer than the limit, and a complete code.
func TestHuffLengths(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var s huffScratch
	check := func(name string, freq []uint32, maxBits int) {
		t.Helper()
		lens := make([]uint8, len(freq))
		if !huffLengths(freq, lens, maxBits, &s) {
			t.Fatalf("%s: no code", name)
		}
		used, kraft := 0, 0
		for i, l := range lens {
			if (freq[i] > 0) != (l > 0) || int(l) > maxBits {
				t.Fatalf("%s: symbol %d of frequency %d has length %d (limit %d)", name, i, freq[i], l, maxBits)
			}
			if l > 0 {
				used++
				kraft += 1 << (maxBits - int(l))
			}
		}
		if used > 1 && kraft != 1<<maxBits {
			t.Fatalf("%s: the code is not complete: %d of %d", name, kraft, 1<<maxBits)
		}
	}
	// Fibonacci frequencies make the deepest trees.
	fib := make([]uint32, 286)
	a, b := uint32(1), uint32(1)
	for i := range 40 {
		fib[i] = a
		a, b = b, a+b
	}
	check("fibonacci", fib, maxCodeBits)
	check("fibonacci, 7 bits", fib[:19], maxLengthBits)
	for range 2000 {
		n := 2 + rng.IntN(285)
		freq := make([]uint32, n)
		for j := range freq {
			if rng.IntN(3) > 0 {
				freq[j] = uint32(rng.ExpFloat64() * float64(1+rng.IntN(1<<uint(rng.IntN(20)))))
			}
		}
		check("random", freq, maxCodeBits)
		check("random, 7 bits", freq[:min(n, 19)], maxLengthBits)
	}
}

// FuzzDeflate: what the encoder writes, compress/flate reads back as it
// was, and it is never longer than the data stored.
func FuzzDeflate(f *testing.F) {
	f.Add([]byte("hello, hello, hello"))
	f.Add(bamRecords(4000))
	f.Add(bytes.Repeat([]byte{0}, 1000))
	var e encoder
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxBlock-1 {
			data = data[:maxBlock-1]
		}
		checkDeflate(t, &e, "fuzz", data)
	})
}
