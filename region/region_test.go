package region

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Region
	}{
		{"chr20", Region{Name: "chr20", End: Unbounded}},
		{"chr20:1000", Region{Name: "chr20", Start: 999, End: Unbounded}},
		{"chr20:1000-2000", Region{Name: "chr20", Start: 999, End: 2000}},
		{"chr20:1,000-2,000", Region{Name: "chr20", Start: 999, End: 2000}},
		{"chr20:-2000", Region{Name: "chr20", End: 2000}},
		{"chr20:1000-", Region{Name: "chr20", Start: 999, End: Unbounded}},
		{"chr20:5-5", Region{Name: "chr20", Start: 4, End: 5}},
		{"{chr:weird}:1-2", Region{Name: "chr:weird", End: 2}},
		{"{chr:weird}", Region{Name: "chr:weird", End: Unbounded}},
		{"HLA-A*01:01:01:01", Region{Name: "HLA-A*01:01:01", End: Unbounded}}, // see TestDisambiguate
		{"{HLA-A*01:01:01:01}:1-5", Region{Name: "HLA-A*01:01:01:01", End: 5}},
		{"chrUn:abc", Region{Name: "chrUn:abc", End: Unbounded}},
		{"*", Region{Name: Unmapped, End: Unbounded}},
		{"1:100", Region{Name: "1", Start: 99, End: Unbounded}},
		{"chr20:", Region{Name: "chr20", End: Unbounded}}, // as samtools reads it
		{"{chr:weird}:", Region{Name: "chr:weird", End: Unbounded}},
	} {
		got, err := Parse(tc.in)
		got.whole = ""
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			continue
		}
		if again, err := Parse(got.String()); err != nil || again.Name != got.Name || again.Start != got.Start || again.End != got.End {
			t.Errorf("Parse(%q.String() = %q) = %+v, %v", tc.in, got.String(), again, err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, in := range []string{
		"", ":100", "chr1:0", "chr1:0-5", "chr1:200-100", "chr1:1,,0", "chr1:,100",
		"chr1:100,", "chr1:-", "chr1:1-2-3", "{chr1", "{}:1-2", "{chr:1}x", "chr1:99999999999999999999",
		"chr1:1125899906842625",
	} {
		_, err := Parse(in)
		if !errors.Is(err, ErrInvalidRegion) || errkind.Of(err) != errkind.Usage {
			t.Errorf("Parse(%q): %v", in, err)
			continue
		}
		if !strings.HasPrefix(err.Error(), "invalid region ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("Parse(%q): message %q", in, err)
		}
	}
}

func TestDisambiguate(t *testing.T) {
	f := &File{name: "x.bam"}
	ids := map[string]int{"HLA-A*01:01:01:01": 0, "chr1": 1, "a:1": 2, "a": 3, "c:": 4}
	for in, want := range map[string]Region{
		"HLA-A*01:01:01:01":     {Name: "HLA-A*01:01:01:01", End: Unbounded},
		"chr1:":                 {Name: "chr1", End: Unbounded},
		"c:":                    {Name: "c:", End: Unbounded}, // a reference named so
		"chr1:5":                {Name: "chr1", Start: 4, End: Unbounded},
		"{HLA-A*01:01:01:01}:5": {Name: "HLA-A*01:01:01:01", Start: 4, End: Unbounded},
	} {
		r, _ := Parse(in)
		got, err := f.disambiguate(r, ids)
		got.whole = ""
		if err != nil || got != want {
			t.Errorf("%q: %+v, %v", in, got, err)
		}
	}
	r, _ := Parse("a:1")
	if _, err := f.disambiguate(r, ids); !errors.Is(err, ErrInvalidRegion) {
		t.Errorf("ambiguous a:1: %v", err)
	}
}

func TestReadBED(t *testing.T) {
	in := "track name=x\nbrowser position chr1\n# comment\n\nchr1\t0\t100\tgene\nchr2 5 6\r\nchr3\t7\t7\ntrackA\t1\t2\nbrowsers 3 4\ntrack\n"
	got, err := ReadBED(strings.NewReader(in), "genes.bed")
	want := []Region{{Name: "chr1", End: 100}, {Name: "chr2", Start: 5, End: 6}, {Name: "chr3", Start: 7, End: 7},
		{Name: "trackA", Start: 1, End: 2}, {Name: "browsers", Start: 3, End: 4}}
	if err != nil || len(got) != len(want) {
		t.Fatalf("got %v, %v", got, err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("region %d: %v, want %v", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"chr1\t5\n", "chr1\t-1\t5\n", "chr1\t9\t5\n", "chr1\tx\t5\n"} {
		_, err := ReadBED(strings.NewReader("chr0\t0\t1\n"+bad), "genes.bed")
		if !errors.Is(err, ErrInvalidRegion) || !strings.Contains(err.Error(), "genes.bed, line 2") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestMergeTargets(t *testing.T) {
	got := mergeTargets([]target{{-1, 0, 0}, {1, 50, 60}, {0, 10, 20}, {0, 15, 30}, {0, 30, 40}, {1, 0, 10}, {0, 41, 42}})
	want := []target{{0, 10, 40}, {0, 41, 42}, {1, 0, 10}, {1, 50, 60}, {-1, 0, 0}}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%d: %v, want %v", i, got[i], want[i])
		}
	}
}

func TestCRAI(t *testing.T) {
	got, err := parseCRAI(strings.NewReader("0\t1\t100\t500\t10\t300\n-1\t0\t0\t900\t10\t50\n\n"))
	if err != nil || len(got) != 2 || got[0] != (craiEntry{0, 1, 100, 500}) || got[1].ref != -1 {
		t.Fatalf("got %v, %v", got, err)
	}
	for _, bad := range []string{"0\t1\t100\n", "0\t1\t-100\t500\t10\t300\n", "x\t1\t1\t1\t1\t1\n",
		"9223372036854775807\t1\t1\t1\t1\t1\n", "0\t1\t9223372036854775807\t500\t10\t300\n", "0\t9223372036854775807\t1\t500\t10\t300\n"} {
		if _, err := parseCRAI(strings.NewReader(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestBadIndex(t *testing.T) {
	for name, b := range map[string][]byte{
		"empty":   nil,
		"text":    []byte("hello, world"),
		"bai":     []byte("BAI\x01\xff\xff\xff\x7f"),
		"csi":     compressBlocks([]byte("CSI\x01\x0e\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\xff\xff\xff\x7f")),
		"csideep": compressBlocks([]byte("CSI\x01\x0e\x00\x00\x00\x30\x00\x00\x00")),
		// min_shift 2^31-1: min_shift + 3 × depth overflowed an int32
		// and passed, and every region came out empty.
		"cshift":   compressBlocks([]byte("CSI\x01\xff\xff\xff\x7f\x05\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00")),
		"tbi":      compressBlocks([]byte("TBI\x01\xff\xff\xff\x7f")),
		"tbicut":   compressBlocks([]byte("TBI")),
		"crai":     gzipped("0\t1\n"),
		"negative": []byte("BAI\x01\x01\x00\x00\x00\xff\xff\xff\xff"),
		"negbins":  []byte("BAI\x01\x01\x00\x00\x00\xff\xff\xff\xff\x00\x00\x00\x00"),
		// A chunk that ends before it begins, dropped quietly before.
		"reversed": []byte("BAI\x01\x01\x00\x00\x00\x01\x00\x00\x00\x49\x12\x00\x00\x01\x00\x00\x00" +
			"\x00\x00\x20\x00\x00\x00\x00\x00" + "\x00\x00\x10\x00\x00\x00\x00\x00" + "\x00\x00\x00\x00"),
		"csireversed": compressBlocks([]byte("CSI\x01\x0e\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00" +
			"\x49\x12\x00\x00" + strings.Repeat("\x00", 8) + "\x01\x00\x00\x00" + "\x00\x00\x20\x00\x00\x00\x00\x00" + "\x00\x00\x10\x00\x00\x00\x00\x00")),
	} {
		_, err := ReadIndex(bytes.NewReader(b), int64(len(b)), name)
		if !errors.Is(err, ErrData) || !strings.Contains(err.Error(), name) || strings.Contains(err.Error(), "crai") != (name == "crai") ||
			name == "negbins" && !strings.Contains(err.Error(), "negative count -1") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func gzipped(s string) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(s))
	zw.Close()
	return b.Bytes()
}

func TestBlocks(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 10000) // several blocks
	b := append(compressBlocks(data), eofBlock...)
	s := newStream(bytes.NewReader(b), int64(len(b)))
	var got bytes.Buffer
	if _, err := got.ReadFrom(s); err != nil || !bytes.Equal(got.Bytes(), data) {
		t.Fatalf("round trip: %d bytes, %v", got.Len(), err)
	}
	if v := s.tell(); v.file != int64(len(b)-len(eofBlock)) || v.block != 0 {
		t.Errorf("tell at the end: %+v", v)
	}
	if compressBlocks(nil) != nil {
		t.Errorf("no data gives a block")
	}
	// The start of a block, decompressed alone (the last block of a
	// region), and all of it.
	for _, n := range []int{0, 100, blockPayload, maxBlock} {
		first, err := readBlockPrefix(bytes.NewReader(b), int64(len(b)), 0, n)
		if want := data[:min(n, blockPayload)]; err != nil || !bytes.Equal(first.data, want) {
			t.Errorf("the first %d bytes: %d bytes, %v", n, len(first.data), err)
		}
	}
	// A prefix is no excuse for a block that is not one.
	bad := bytes.Clone(b)
	bad[30] ^= 0xff
	if _, err := readBlockPrefix(bytes.NewReader(bad), int64(len(bad)), 0, maxBlock); err == nil {
		t.Errorf("a damaged block reads")
	}
}

// TestBlocksIncompressible: random bytes, which deflate cannot make
// shorter, still make blocks of at most maxBlock bytes that read back.
func TestBlocksIncompressible(t *testing.T) {
	data := make([]byte, 3*blockPayload+17)
	rand.NewChaCha8([32]byte{1}).Read(data)
	b := compressBlocks(data)
	var got []byte
	for off := int64(0); off < int64(len(b)); {
		blk, err := readBlock(bytes.NewReader(b), int64(len(b)), off)
		if err != nil {
			t.Fatalf("block at %d: %v", off, err)
		}
		if blk.size > maxBlock {
			t.Errorf("block at %d: %d bytes", off, blk.size)
		}
		got = append(got, blk.data...)
		off += int64(blk.size)
	}
	if !bytes.Equal(got, data) {
		t.Errorf("read back %d bytes of %d", len(got), len(data))
	}
}

// countingReaderAt counts the bytes read from it, by any goroutine.
type countingReaderAt struct {
	r io.ReaderAt
	n atomic.Int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n.Add(int64(n))
	return n, err
}

// TestStreamReadsOnce checks that reading blocks in order reads each byte
// of the file about once, not a block's maximum size per block.
func TestStreamReadsOnce(t *testing.T) {
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(i * i >> 7)
	}
	b := append(compressBlocks(data), eofBlock...)
	c := &countingReaderAt{r: bytes.NewReader(b)}
	var got bytes.Buffer
	if _, err := got.ReadFrom(newStream(c, int64(len(b)))); err != nil || !bytes.Equal(got.Bytes(), data) {
		t.Fatalf("round trip: %v", err)
	}
	if n := c.n.Load(); n > int64(len(b))*3/2+windowSize {
		t.Errorf("read %d bytes of a file of %d", n, len(b))
	}
}

func FuzzParseRegion(f *testing.F) {
	for _, s := range []string{"chr20", "chr20:1,000-2,000", "{chr:weird}:1-2", "*", "x:-5", "a:b:1-", "{", ":"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := Parse(s)
		if err != nil {
			return
		}
		if r.Name == "" || r.Start < 0 || r.End <= r.Start {
			t.Fatalf("Parse(%q) = %+v", s, r)
		}
		if again, err := Parse(r.String()); err != nil || again.Name != r.Name || again.Start != r.Start || again.End != r.End {
			t.Fatalf("Parse(%q) = %+v, but Parse(%q) = %+v, %v", s, r, r.String(), again, err)
		}
	})
}

func FuzzBED(f *testing.F) {
	f.Add("chr1\t0\t100\n#x\ntrack\nchr2 5 6 name\n")
	f.Add("chr1\t9\t5\n")
	f.Fuzz(func(t *testing.T, s string) {
		rs, err := ReadBED(strings.NewReader(s), "f.bed")
		if err != nil {
			return
		}
		for _, r := range rs {
			if r.Name == "" || r.Start < 0 || r.End < r.Start {
				t.Fatalf("bad region %+v", r)
			}
		}
	})
}

func FuzzCRAI(f *testing.F) {
	f.Add([]byte("0\t1\t100\t500\t10\t300\n-1\t0\t0\t900\t10\t50\n"))
	f.Add([]byte("0 1 2 3 4\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		es, err := parseCRAI(bytes.NewReader(b))
		if err != nil {
			return
		}
		if len(es) > len(b)/11 {
			t.Fatalf("%d entries from %d bytes", len(es), len(b))
		}
		gz := gzipped(string(b))
		if _, err := ReadIndex(bytes.NewReader(gz), int64(len(gz)), "x.crai"); err != nil && !errors.Is(err, ErrData) {
			t.Fatal(err)
		}
	})
}

// FuzzIndex feeds BAI, CSI and TBI lookalikes to ReadIndex: it may fail,
// but not panic, and not allocate much more than the index is long.
func FuzzIndex(f *testing.F) {
	f.Add([]byte("BAI\x01\x01\x00\x00\x00\x01\x00\x00\x00\x49\x92\x00\x00\x01\x00\x00\x00" + strings.Repeat("\x00", 16) + "\x00\x00\x00\x00"))
	f.Add(compressBlocks([]byte("CSI\x01\x0e\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00")))
	f.Add(compressBlocks([]byte("TBI\x01\x00\x00\x00\x00" + strings.Repeat("\x00", 28))))
	// Depth 0: bin 0 and the pseudo-bin 2 of the counts.
	f.Add(compressBlocks([]byte("CSI\x01\x0e\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x02\x00\x00\x00" +
		"\x00\x00\x00\x00" + strings.Repeat("\x00", 8) + "\x01\x00\x00\x00" + strings.Repeat("\x00", 8) + "\x00\x00\x01\x00\x00\x00\x00\x00" +
		"\x02\x00\x00\x00" + strings.Repeat("\x00", 8) + "\x02\x00\x00\x00" + strings.Repeat("\x00", 32) + strings.Repeat("\x00", 8))))
	// A TBI of one reference, named, with one bin of one chunk and a
	// linear index of one entry.
	f.Add(compressBlocks([]byte("TBI\x01\x01\x00\x00\x00" + strings.Repeat("\x00", 24) + "\x05\x00\x00\x00chr1\x00" +
		"\x01\x00\x00\x00\x49\x12\x00\x00\x01\x00\x00\x00" + "\x00\x00\x10\x00\x00\x00\x00\x00" + "\x00\x00\x20\x00\x00\x00\x00\x00" +
		"\x01\x00\x00\x00" + "\x00\x00\x10\x00\x00\x00\x00\x00")))
	f.Fuzz(func(t *testing.T, b []byte) {
		x, err := ReadIndex(bytes.NewReader(b), int64(len(b)), "x")
		if err != nil {
			return
		}
		_ = x.Names()
		// The chunks of every reference, all of it and a part: read
		// without the recover that File.chunks keeps as a last guard.
		switch {
		case x.csi != nil:
			for ref := range x.csi.refs {
				x.csi.chunks(ref, 0, 1<<(x.minShift+3*x.depth))
				x.csi.chunks(ref, 1000, 70000)
			}
		case x.bai != nil && x.bai.answers == nil:
			for ref := range x.bai.refs {
				x.bai.chunks(ref, 0, baiLimit)
				x.bai.chunks(ref, 1000, 70000)
				x.bai.after(ref, 70000)
			}
		}
	})
}

// FuzzOpen feeds bytes that start like each format to Detect and the
// header readers, and plans a region with an index of nothing: they may
// fail, but must not panic.
func FuzzOpen(f *testing.F) {
	f.Add(compressBlocks([]byte("BAM\x01\x05\x00\x00\x00@HD\n\x00\x01\x00\x00\x00\x05\x00\x00\x00chr1\x00\x10\x00\x00\x00")))
	f.Add(append(compressBlocks([]byte("##fileformat=VCFv4.2\n##contig=<ID=chr1>\n#CHROM\nchr1\t5\n")), eofBlock...))
	f.Add(compressBlocks([]byte("BCF\x02\x02\x20\x00\x00\x00##contig=<ID=chr1,IDX=0>\n\x00")))
	f.Add([]byte("CRAM\x03\x00" + strings.Repeat("x", 20) + "\x10\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x0a\x0a\x00\x00\x00\x00hello"))
	bai := []byte("BAI\x01\x00\x00\x00\x00")
	crai := gzipped("0\t1\t10\t26\t0\t10\n")
	f.Fuzz(func(t *testing.T, b []byte) {
		src := bytes.NewReader(b)
		for _, ix := range [][]byte{bai, crai} {
			idx, err := ReadIndex(bytes.NewReader(ix), int64(len(ix)), "x.idx")
			if err != nil {
				t.Fatal(err)
			}
			file, err := Open(src, int64(len(b)), "x", idx)
			if err != nil {
				continue
			}
			for _, n := range file.Names() {
				file.Plan([]Region{{Name: n, End: Unbounded}})
			}
			file.Plan([]Region{{Name: Unmapped}})
		}
	})
}

func TestWriteBadPiece(t *testing.T) {
	var out bytes.Buffer
	src := bytes.NewReader([]byte("0123456789"))
	n, err := Write(&out, src, []Piece{{Data: []byte("ab")}, {Start: 2, End: 5}, {Start: 5, End: 3}})
	if n != 5 || out.String() != "ab234" || errkind.Of(err) != errkind.Usage {
		t.Errorf("wrote %q, %v", out.String(), err)
	}
	if _, err := Write(&out, src, []Piece{{Start: 8, End: 12}}); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a piece past the end: %v", err)
	}
}
