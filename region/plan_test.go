package region

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
)

// openFixture opens a fixture and its index.
func openFixture(t testing.TB, dir, data, index string) *File {
	t.Helper()
	ix, err := os.ReadFile(filepath.Join(dir, index))
	if err != nil {
		t.Fatal(err)
	}
	return openWithIndex(t, dir, data, ix, index)
}

// openWithIndex opens the fixture data in dir with the index ix, of the
// name given.
func openWithIndex(t testing.TB, dir, data string, ix []byte, name string) *File {
	t.Helper()
	src, err := os.Open(filepath.Join(dir, data))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	st, _ := src.Stat()
	idx, err := ReadIndex(bytes.NewReader(ix), int64(len(ix)), name)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Open(src, st.Size(), data, idx)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// writeRegions writes the plan of regions of f to out in dir.
func writeRegions(t *testing.T, f *File, dir, out string, regions []string) *Plan {
	t.Helper()
	rs, err := ParseAll(regions)
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.Plan(rs)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	n, err := Write(&buf, f.src, p.Pieces)
	if err != nil || n != p.Size() {
		t.Fatalf("Write: %d bytes of %d, %v", n, p.Size(), err)
	}
	if err := os.WriteFile(filepath.Join(dir, out), buf.Bytes(), 0o666); err != nil {
		t.Fatal(err)
	}
	return p
}

// regionArgs formats regions for samtools and bcftools.
func regionArgs(t *testing.T, regions []string) []string {
	var out []string
	for _, s := range regions {
		r, err := Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r.String())
	}
	return out
}

var alignmentCases = []struct {
	name    string
	regions []string
}{
	{"one block", []string{"chr1:1000-1100"}},
	{"many blocks", []string{"chr1:10,000-150,000"}},
	{"first record", []string{"chr2:1-1"}},
	{"last record", []string{"chr2:149901-150000"}},
	{"whole reference", []string{"chr2"}},
	{"colon in name", []string{"{chr:3}:100-5000"}},
	{"empty", []string{"chrE"}},
	{"none", nil},
	{"unmapped", []string{"*"}},
	{"several", []string{"chr2:100-1000", "chr1:5000-6000", "chr1:5500-7000", "*"}},
}

func TestAlignments(t *testing.T) {
	dir := fixtures(t)
	for _, fx := range []struct{ data, index string }{
		{"reads.bam", "reads.bam.bai"},
		{"csi.bam", "csi.bam.csi"},
		{"reads.cram", "reads.cram.crai"},
	} {
		f := openFixture(t, dir, fx.data, fx.index)
		ref := []string{"-T", filepath.Join(dir, "ref.fa")}
		wantHeader := run(t, dir, "samtools", append([]string{"view", "--no-PG", "-H", fx.data}, ref...)...)
		for i, tc := range alignmentCases {
			t.Run(fx.index+"/"+tc.name, func(t *testing.T) {
				out := "out" + string(rune('a'+i)) + filepath.Ext(fx.data)
				p := writeRegions(t, f, dir, out, tc.regions)
				run(t, dir, "samtools", "quickcheck", out)
				run(t, dir, "samtools", "index", out)
				if got := run(t, dir, "samtools", append([]string{"view", "--no-PG", "-H", out}, ref...)...); got != wantHeader {
					t.Errorf("header differs:\n%s\nwant\n%s", got, wantHeader)
				}
				args := append(append([]string{"view", "-c"}, ref...), "FILE")
				args = append(args, regionArgs(t, tc.regions)...)
				if len(tc.regions) == 0 {
					args = append(args, "chr1") // nothing: check the file is empty
				}
				args[len(ref)+2] = fx.data
				want := run(t, dir, "samtools", args...)
				if len(tc.regions) == 0 {
					want = "0\n"
				}
				args[len(ref)+2] = out
				if got := run(t, dir, "samtools", args...); got != want {
					t.Errorf("%v: %s records, want %s (plan copies %d, new %d)", tc.regions, strings.TrimSpace(got), strings.TrimSpace(want), p.Copied, p.New)
				}
			})
		}
	}
}

var variantCases = []struct {
	name    string
	regions []string
}{
	{"one block", []string{"chr1:1000-1100"}},
	{"many blocks", []string{"chr1:10,000-150,000"}},
	{"first record", []string{"chr2:1-1"}},
	{"last record", []string{"chr3:29000-200000"}},
	{"whole reference", []string{"chr2"}},
	{"empty", []string{"chrE"}},
	{"several", []string{"chr2:100-1000", "chr1:5000-6000", "chr1:5500-7000", "chr3"}},
}

func TestVariants(t *testing.T) {
	dir := fixtures(t)
	for _, fx := range []struct{ data, index, ext string }{
		{"calls.vcf.gz", "calls.vcf.gz.tbi", ".vcf.gz"},
		{"csi.vcf.gz", "csi.vcf.gz.csi", ".vcf.gz"},
		{"bcftools.vcf.gz", "bcftools.vcf.gz.tbi", ".vcf.gz"},
		{"calls.bcf", "calls.bcf.csi", ".bcf"},
	} {
		f := openFixture(t, dir, fx.data, fx.index)
		wantHeader := run(t, dir, "bcftools", "view", "--no-version", "-h", fx.data)
		for i, tc := range variantCases {
			t.Run(fx.index+"/"+tc.name, func(t *testing.T) {
				out := "var" + string(rune('a'+i)) + fx.ext
				p := writeRegions(t, f, dir, out, tc.regions)
				run(t, dir, "bcftools", "index", "-f", out)
				if got := run(t, dir, "bcftools", "view", "--no-version", "-h", out); got != wantHeader {
					t.Errorf("header differs")
				}
				want := run(t, dir, "bcftools", "view", "-H", "-r", strings.Join(regionArgs(t, tc.regions), ","), fx.data)
				got := run(t, dir, "bcftools", "view", "-H", "-r", strings.Join(regionArgs(t, tc.regions), ","), out)
				if got != want {
					t.Errorf("%v: %d records, want %d (plan copies %d, new %d)", tc.regions, strings.Count(got, "\n"), strings.Count(want, "\n"), p.Copied, p.New)
				}
				if all := run(t, dir, "bcftools", "view", "-H", out); strings.Count(all, "\n") < strings.Count(want, "\n") {
					t.Errorf("output holds fewer records than the regions")
				}
			})
		}
	}
}

// TestEdgeBlocks checks that a VCF region of bgzip's output, whose records
// run across blocks, is cut inside blocks and compressed again.
func TestEdgeBlocks(t *testing.T) {
	dir := fixtures(t)
	f := openFixture(t, dir, "calls.vcf.gz", "calls.vcf.gz.tbi")
	p := writeRegions(t, f, dir, "edge.vcf.gz", []string{"chr1:50000-60000"})
	if p.New == 0 {
		t.Errorf("no new blocks for a region inside bgzip's blocks")
	}
	if p.Size() >= f.size/2 {
		t.Errorf("plan of %d bytes for a file of %d", p.Size(), f.size)
	}
}

func TestUnknownReference(t *testing.T) {
	dir := fixtures(t)
	f := openFixture(t, dir, "reads.bam", "reads.bam.bai")
	_, err := f.Plan([]Region{{Name: "chrX", End: Unbounded}})
	if !errors.Is(err, ErrUnknownReference) || errkind.Of(err) != errkind.Usage {
		t.Fatalf("got %v", err)
	}
	if !strings.Contains(err.Error(), "chr1, chr2, chr:3, chrE") {
		t.Errorf("the names are not listed: %v", err)
	}
	v := openFixture(t, dir, "calls.bcf", "calls.bcf.csi")
	if _, err := v.Plan([]Region{{Name: Unmapped}}); errkind.Of(err) != errkind.Usage {
		t.Errorf("unmapped reads of a BCF: %v", err)
	}
}

func TestWrongIndex(t *testing.T) {
	dir := fixtures(t)
	// The BAM's index names offsets past the end of the VCF-sized file:
	// a BAI of another, larger BAM.
	small := filepath.Join(t.TempDir(), "small.bam")
	run(t, dir, "samtools", "view", "-b", "-o", small, "reads.bam", "chr2:1-100")
	src, _ := os.Open(small)
	defer src.Close()
	st, _ := src.Stat()
	ix, _ := os.ReadFile(filepath.Join(dir, "reads.bam.bai"))
	idx, err := ReadIndex(bytes.NewReader(ix), int64(len(ix)), "reads.bam.bai")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(src, st.Size(), "small.bam", idx); !errors.Is(err, ErrData) || errkind.Of(err) != errkind.Data {
		t.Errorf("index of another file: %v", err)
	}
	tbi, _ := os.ReadFile(filepath.Join(dir, "calls.vcf.gz.tbi"))
	tidx, err := ReadIndex(bytes.NewReader(tbi), int64(len(tbi)), "calls.vcf.gz.tbi")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(src, st.Size(), "small.bam", tidx); errkind.Of(err) != errkind.Usage {
		t.Errorf("TBI for a BAM: %v", err)
	}
}

func TestDetect(t *testing.T) {
	dir := fixtures(t)
	for name, want := range map[string]Format{
		"reads.bam": BAM, "reads.cram": CRAM, "calls.vcf.gz": VCF, "bcftools.vcf.gz": VCF, "calls.bcf": BCF,
	} {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		if got, err := Detect(bytes.NewReader(b), int64(len(b))); got != want || err != nil {
			t.Errorf("%s: %v, %v", name, got, err)
		}
	}
	for _, b := range [][]byte{nil, []byte("hello"), eofBlock, compressBlocks([]byte("@HD\tVN:1.6\n"))} {
		if _, err := Detect(bytes.NewReader(b), int64(len(b))); !errors.Is(err, ErrFormat) {
			t.Errorf("%q: %v", b, err)
		}
	}
}

func TestFindIndex(t *testing.T) {
	dir := t.TempDir()
	open := func(name string) (r *os.File, size int64, err error) {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			return nil, 0, err
		}
		st, _ := f.Stat()
		return f, st.Size(), nil
	}
	o := Opener(func(name string) (io.ReaderAt, int64, error) {
		f, n, err := open(name)
		if err != nil {
			return nil, 0, err
		}
		t.Cleanup(func() { f.Close() })
		return f, n, nil
	})
	_, _, _, err := FindIndex("x.bam.c4gh", "", o)
	if !errors.Is(err, ErrNoIndex) || errkind.Of(err) != errkind.Usage {
		t.Fatalf("got %v", err)
	}
	for _, c := range Candidates("x.bam.c4gh") {
		if !strings.Contains(err.Error(), c) {
			t.Errorf("%s not named in %v", c, err)
		}
	}
	os.WriteFile(filepath.Join(dir, "x.bai.c4gh"), []byte("x"), 0o666)
	os.WriteFile(filepath.Join(dir, "x.bam.csi"), []byte("x"), 0o666)
	if name, _, _, err := FindIndex("x.bam.c4gh", "", o); name != "x.bai.c4gh" || err != nil {
		t.Errorf("found %q, %v", name, err)
	}
	if name, _, _, err := FindIndex("x.bam.c4gh", "x.bam.csi", o); name != "x.bam.csi" || err != nil {
		t.Errorf("explicit: found %q, %v", name, err)
	}
}

// TestBEDPlan checks that regions from a BED file plan as the same regions
// given on the command line (BED counts from 0, the command line from 1).
func TestBEDPlan(t *testing.T) {
	dir := fixtures(t)
	f := openFixture(t, dir, "reads.bam", "reads.bam.bai")
	bed, err := ReadBED(strings.NewReader("track x\nchr2\t99\t1000\nchr1\t4999\t6000\n"), "x.bed")
	if err != nil {
		t.Fatal(err)
	}
	cli, _ := ParseAll([]string{"chr1:5000-6000", "chr2:100-1000"})
	a, err := f.Plan(bed)
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.Plan(cli)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Pieces) != len(b.Pieces) || a.Size() != b.Size() {
		t.Fatalf("BED plan %d pieces, %d bytes; command line %d, %d", len(a.Pieces), a.Size(), len(b.Pieces), b.Size())
	}
	for i := range a.Pieces {
		if a.Pieces[i].Start != b.Pieces[i].Start || a.Pieces[i].End != b.Pieces[i].End || !bytes.Equal(a.Pieces[i].Data, b.Pieces[i].Data) {
			t.Errorf("piece %d differs", i)
		}
	}
}

// TestChunkNotAtBlock: an index whose chunk starts (or ends) at a file
// offset where no BGZF block starts, with a zero offset in the block, is
// refused as not fitting the data: copied, it would give half a block.
func TestChunkNotAtBlock(t *testing.T) {
	dir := fixtures(t)
	src, err := os.Open(filepath.Join(dir, "reads.bam"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	st, _ := src.Stat()
	good, _ := os.ReadFile(filepath.Join(dir, "reads.bam.bai"))
	gidx, err := ReadIndex(bytes.NewReader(good), int64(len(good)), "good.bai")
	if err != nil {
		t.Fatal(err)
	}
	f, err := Open(src, st.Size(), "reads.bam", gidx)
	if err != nil {
		t.Fatal(err)
	}
	// A BAI for as many references, the first with one chunk
	// [1000<<16, 50000<<16) in the bin of 0-16 kbp.
	var b bytes.Buffer
	le := func(v any) { binary.Write(&b, binary.LittleEndian, v) }
	b.WriteString("BAI\x01")
	le(int32(len(f.Names())))
	for i := range f.Names() {
		if i > 0 {
			le(int32(0))
			le(int32(0))
			continue
		}
		le(int32(1))
		le(uint32(4681))
		le(int32(1))
		le(uint64(1000 << 16))
		le(uint64(50000 << 16))
		le(int32(1))
		le(uint64(1000 << 16))
	}
	bad, err := ReadIndex(bytes.NewReader(b.Bytes()), int64(b.Len()), "bad.bai")
	if err != nil {
		t.Fatal(err)
	}
	bf, err := Open(src, st.Size(), "reads.bam", bad)
	if err != nil {
		t.Fatal(err)
	}
	regions, _ := ParseAll([]string{f.Names()[0] + ":1-100"})
	if _, err := bf.Plan(regions); !errors.Is(err, ErrData) {
		t.Errorf("a chunk that starts inside a block: %v", err)
	}
}

// TestCSIDepthZero plans regions of a BAM whose CSI index has depth 0
// (samtools index -c of references under 16 kb), where each reference
// has every bin there is and the pseudo-bin of its counts: the output
// holds the regions' records, as samtools finds them (biogo/hts alone
// refuses such an index).
func TestCSIDepthZero(t *testing.T) {
	dir := t.TempDir()
	var sam strings.Builder
	sam.WriteString("@HD\tVN:1.6\tSO:coordinate\n@SQ\tSN:pA\tLN:8000\n@SQ\tSN:pB\tLN:5000\n")
	for _, ref := range []string{"pA", "pB"} {
		for pos := 10; pos < 4900; pos += 97 {
			fmt.Fprintf(&sam, "r%s%d\t0\t%s\t%d\t30\t10M\t*\t0\t0\tACGTACGTAC\tIIIIIIIIII\n", ref, pos, ref, pos)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "small.sam"), []byte(sam.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, dir, "samtools", "view", "-b", "-o", "small.bam", "small.sam")
	run(t, dir, "samtools", "index", "-c", "small.bam")
	f := openFixture(t, dir, "small.bam", "small.bam.csi")
	for _, regions := range [][]string{{"pA:400-600"}, {"pB"}, {"pA:1-10", "pB:4000-4100"}} {
		writeRegions(t, f, dir, "out.bam", regions)
		run(t, dir, "samtools", "index", "out.bam")
		got := run(t, dir, "samtools", append([]string{"view", "out.bam"}, regionArgs(t, regions)...)...)
		want := run(t, dir, "samtools", append([]string{"view", "small.bam"}, regionArgs(t, regions)...)...)
		if got != want {
			t.Errorf("%v: %d lines, samtools %d", regions, strings.Count(got, "\n"), strings.Count(want, "\n"))
		}
	}
}

// TestIndexOfAnotherFile: a BAI or CSI with another count of references
// than the BAM's header, or a CRAI naming a reference the CRAM lacks, is
// of another file (exit 4), not an index whose regions come out empty.
func TestIndexOfAnotherFile(t *testing.T) {
	dir := fixtures(t)
	own := t.TempDir()
	sam := "@HD\tVN:1.6\tSO:coordinate\n@SQ\tSN:chr1\tLN:200000\n" +
		"r1\t0\tchr1\t100\t30\t10M\t*\t0\t0\tACGTACGTAC\tIIIIIIIIII\n"
	if err := os.WriteFile(filepath.Join(own, "one.sam"), []byte(sam), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, own, "samtools", "view", "-b", "-o", "one.bam", "one.sam")
	run(t, own, "samtools", "index", "one.bam")
	run(t, own, "samtools", "index", "-c", "one.bam")
	src, err := os.Open(filepath.Join(dir, "reads.bam"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	st, _ := src.Stat()
	for _, index := range []string{"one.bam.bai", "one.bam.csi"} {
		b, err := os.ReadFile(filepath.Join(own, index))
		if err != nil {
			t.Fatal(err)
		}
		idx, err := ReadIndex(bytes.NewReader(b), int64(len(b)), index)
		if err != nil {
			t.Fatal(err)
		}
		f, err := OpenData(src, st.Size(), "reads.bam")
		if err != nil {
			t.Fatal(err)
		}
		if err := f.UseIndex(idx); !errors.Is(err, ErrData) || !strings.Contains(err.Error(), "it has 1 references, the file 4") {
			t.Errorf("%s for reads.bam: %v", index, err)
		}
	}

	// A CRAI whose last line names a fifth reference.
	crai := readGzip(t, filepath.Join(dir, "reads.cram.crai"))
	crai = append(crai, "4\t1\t100\t0\t10\t100\n"...)
	idx, err := ReadIndex(bytes.NewReader(gzipBytes(t, crai)), int64(len(gzipBytes(t, crai))), "x.crai")
	if err != nil {
		t.Fatal(err)
	}
	cram, err := os.Open(filepath.Join(dir, "reads.cram"))
	if err != nil {
		t.Fatal(err)
	}
	defer cram.Close()
	cst, _ := cram.Stat()
	f, err := OpenData(cram, cst.Size(), "reads.cram")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.UseIndex(idx); !errors.Is(err, ErrData) || !strings.Contains(err.Error(), "it names reference 5 of 4") {
		t.Errorf("a CRAI naming a fifth reference: %v", err)
	}
}

// readGzip returns the decompressed contents of the gzip file at p.
func readGzip(t *testing.T, p string) []byte {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// gzipBytes returns b gzipped.
func gzipBytes(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestCRAIInsideHeader: a CRAI whose container lies inside the CRAM's
// header (the index of the same reads written with other settings) is
// an index of another file, not a region without records.
func TestCRAIInsideHeader(t *testing.T) {
	f := openWithIndex(t, fixtures(t), "reads.cram", gzipped("0\t1\t1000000\t26\t10\t300\n"), "other.crai")
	r, _ := Parse("chr1:1-1000")
	if _, err := f.Plan([]Region{r}); !errors.Is(err, ErrData) || !strings.Contains(err.Error(), "inside the header") {
		t.Errorf("a container inside the header: %v", err)
	}
}

// TestManyChunks: a CSI or TBI of a few kilobytes that repeats one chunk
// hundreds of thousands of times plans in a moment. biogo/hts merged the
// chunks of a region by deleting from the middle of a slice, a time that
// grew with their square (a CSI of 9 KB that repeated one chunk 200,000
// times: 22 s for one region, 400,000: about 90 s). The bound below is
// far from either; a plan of such an index takes milliseconds.
func TestManyChunks(t *testing.T) {
	dir := fixtures(t)
	real := openFixture(t, dir, "csi.bam", "csi.bam.csi")
	one := real.idx.csi.chunks(0, 0, 1<<20)
	if len(one) == 0 {
		t.Fatal("no chunk in the fixture's index")
	}
	const n = 400000
	le := binary.LittleEndian
	var b []byte
	b = append(b, "CSI\x01"...)
	b = le.AppendUint32(b, 14)
	b = le.AppendUint32(b, 5)
	b = le.AppendUint32(b, 0) // l_aux
	b = le.AppendUint32(b, uint32(len(real.idx.csi.refs)))
	for ref := range real.idx.csi.refs {
		if ref > 0 {
			b = le.AppendUint32(b, 0)
			continue
		}
		b = le.AppendUint32(b, 1)    // n_bin
		b = le.AppendUint32(b, 4681) // the first leaf bin
		b = le.AppendUint64(b, 0)    // loffset
		b = le.AppendUint32(b, n)
		c := one[0]
		for range n {
			b = le.AppendUint64(b, uint64(c.Begin.File)<<16|uint64(c.Begin.Block))
			b = le.AppendUint64(b, uint64(c.End.File)<<16|uint64(c.End.Block))
		}
	}
	f := openWithIndex(t, dir, "csi.bam", compressBlocks(b), "many.csi")
	rs := make([]Region, 0, 100)
	for i := range 100 {
		rs = append(rs, Region{Name: f.Names()[0], Start: int64(i) * 100, End: int64(i)*100 + 50})
	}
	done := make(chan error, 1)
	go func() {
		_, err := f.Plan(rs)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("a plan over %d copies of one chunk took more than 30 s", n)
	}
}
