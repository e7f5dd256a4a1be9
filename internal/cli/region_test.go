package cli

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/biogo/hts/bgzf"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/internal/clitest"
)

// The region tests make BAM, CRAM, VCF.gz and BCF files with samtools,
// bcftools and bgzip, encrypt them with the command, and check what
// decrypt --region and splice --region give with the same tools: a file
// they read, whose records in the regions are those of the original.

// regionRefs are the references of the test files.
var regionRefs = []struct {
	name string
	len  int
}{{"chr1", 300000}, {"chr2", 200000}}

// tool runs the program name with args in dir and returns its stdout.
func tool(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	clitest.Tool(t, name)
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// writeSAM writes a SAM file of n reads of 100 bases at random places
// of the references, and the FASTA of the references.
func writeSAM(t *testing.T, dir string, n int) {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	bases := func(k int) string {
		b := make([]byte, k)
		for i := range b {
			b[i] = "ACGT"[r.IntN(4)]
		}
		return string(b)
	}
	var fa, sam strings.Builder
	sam.WriteString("@HD\tVN:1.6\tSO:unsorted\n")
	for _, ref := range regionRefs {
		fmt.Fprintf(&fa, ">%s\n", ref.name)
		seq := bases(ref.len)
		for i := 0; i < len(seq); i += 60 {
			fa.WriteString(seq[i:min(i+60, len(seq))] + "\n")
		}
		fmt.Fprintf(&sam, "@SQ\tSN:%s\tLN:%d\n", ref.name, ref.len)
	}
	for i := range n {
		ref := regionRefs[r.IntN(len(regionRefs))]
		fmt.Fprintf(&sam, "r%d\t0\t%s\t%d\t60\t100M\t*\t0\t0\t%s\t%s\n", i, ref.name, 1+r.IntN(ref.len-100), bases(100), strings.Repeat("I", 100))
	}
	for i := range 50 { // unplaced, unmapped
		fmt.Fprintf(&sam, "u%d\t4\t*\t0\t0\t*\t*\t0\t0\t%s\t%s\n", i, bases(100), strings.Repeat("I", 100))
	}
	for name, s := range map[string]string{"ref.fa": fa.String(), "reads.sam": sam.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// writeVCF writes a VCF of n variants at random places of the
// references, sorted.
func writeVCF(t *testing.T, dir string, n int) {
	t.Helper()
	r := rand.New(rand.NewPCG(3, 4))
	var b strings.Builder
	b.WriteString("##fileformat=VCFv4.2\n")
	for _, ref := range regionRefs {
		fmt.Fprintf(&b, "##contig=<ID=%s,length=%d>\n", ref.name, ref.len)
	}
	b.WriteString("##INFO=<ID=DP,Number=1,Type=Integer,Description=\"Depth\">\n")
	b.WriteString("#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n")
	for _, ref := range regionRefs {
		pos := make([]int, n/len(regionRefs))
		for i := range pos {
			pos[i] = 1 + r.IntN(ref.len-1)
		}
		slices.Sort(pos)
		for i, p := range pos {
			fmt.Fprintf(&b, "%s\t%d\tv%d_%s\tA\tG\t50\tPASS\tDP=%d\n", ref.name, p, i, strings.Repeat("x", r.IntN(40)), r.IntN(100))
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "calls.vcf"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// regionCase is a data file of the tests, with its index and how to
// count the records of a region.
type regionCase struct {
	name   string // the data file
	index  string // its index, beside it
	count  func(t *testing.T, dir, file, region string) int
	head   func(t *testing.T, dir, file string) string
	index2 func(t *testing.T, dir, file string)
	// original, for the shared fixtures (regionFixtures), keeps what the
	// tools say of the original file: the header and the count of each
	// region, asked for again by every output compared with it.
	original *sync.Map
}

// wantHead is the header of the original file (c.head of c.name).
func (c regionCase) wantHead(t *testing.T, dir string) string {
	t.Helper()
	if c.original == nil {
		return c.head(t, dir, c.name)
	}
	if h, ok := c.original.Load("\x00head"); ok {
		return h.(string)
	}
	h := c.head(t, dir, c.name)
	c.original.Store("\x00head", h)
	return h
}

// wantCount is the count of the region's records in the original file,
// whose plain index must be beside it (plainIndex).
func (c regionCase) wantCount(t *testing.T, dir, region string) int {
	t.Helper()
	if c.original == nil {
		return c.count(t, dir, c.name, region)
	}
	if n, ok := c.original.Load(region); ok {
		return n.(int)
	}
	n := c.count(t, dir, c.name, region)
	c.original.Store(region, n)
	return n
}

func samCount(t *testing.T, dir, file, region string) int {
	n, err := strconv.Atoi(strings.TrimSpace(tool(t, dir, "samtools", "view", "-c", "-T", "ref.fa", file, region)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// samHeader is the header of a BAM or CRAM without the UR tags of its
// references: samtools writes there the path of the reference it was
// given (-T), which is another folder's for a test's copies of the
// fixtures than for the fixtures.
func samHeader(t *testing.T, dir, file string) string {
	return refPath.ReplaceAllString(tool(t, dir, "samtools", "view", "-H", "--no-PG", file), "")
}

var refPath = regexp.MustCompile(`\tUR:[^\t\n]*`)

func samIndex(t *testing.T, dir, file string) { tool(t, dir, "samtools", "index", file) }

func bcfCount(t *testing.T, dir, file, region string) int {
	return strings.Count(tool(t, dir, "bcftools", "view", "-H", file, region), "\n")
}

func bcfHeader(t *testing.T, dir, file string) string {
	return tool(t, dir, "bcftools", "view", "-h", "--no-version", file)
}

func bcfIndex(t *testing.T, dir, file string) { tool(t, dir, "bcftools", "index", "-f", file) }

// regionFixtures puts the data files of the tests in dir, encrypted for
// me.pub (there too), with their indexes beside them: plain for some,
// encrypted for others. They are made once (makeRegionFixtures) and
// copied: a test may change its copies.
func regionFixtures(t *testing.T, dir string) []regionCase {
	t.Helper()
	sharedRegions.once.Do(func() {
		d, err := os.MkdirTemp("", "c4gh-region-fixtures-")
		if err != nil {
			t.Fatal(err)
		}
		sharedRegions.dir = d
		sharedRegions.cases = makeRegionFixtures(t, d)
	})
	if sharedRegions.cases == nil {
		t.Fatal("the region fixtures could not be made: see the test that made them")
	}
	ents, err := os.ReadDir(sharedRegions.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(sharedRegions.dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, fi.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	return sharedRegions.cases
}

// sharedRegions holds the files of regionFixtures, made once for the
// tests that use them (samtools and bcftools take seconds to make them),
// in a folder that TestMain removes.
var sharedRegions struct {
	once  sync.Once
	dir   string
	cases []regionCase
}

func makeRegionFixtures(t *testing.T, dir string) []regionCase {
	t.Helper()
	writeSAM(t, dir, 30000)
	writeVCF(t, dir, 20000)
	tool(t, dir, "samtools", "sort", "-o", "reads.bam", "reads.sam")
	tool(t, dir, "samtools", "index", "reads.bam")
	tool(t, dir, "samtools", "sort", "-o", "csi.bam", "reads.sam")
	tool(t, dir, "samtools", "index", "-c", "csi.bam")
	tool(t, dir, "samtools", "faidx", "ref.fa")
	tool(t, dir, "samtools", "view", "-C", "-T", "ref.fa", "-o", "reads.cram", "reads.bam")
	tool(t, dir, "samtools", "index", "reads.cram")
	tool(t, dir, "bgzip", "-k", "calls.vcf")
	tool(t, dir, "tabix", "-p", "vcf", "calls.vcf.gz")
	tool(t, dir, "bcftools", "view", "-Ob", "-o", "calls.bcf", "calls.vcf")
	tool(t, dir, "bcftools", "index", "calls.bcf")
	if code, _, stderr := runAt(t, dir, "keygen", "--sk", "me.sec", "--pk", "me.pub", "--nocrypt"); code != 0 {
		t.Fatal(stderr)
	}
	cases := []regionCase{
		{"reads.bam", "reads.bam.bai", samCount, samHeader, samIndex, new(sync.Map)},
		{"csi.bam", "csi.bam.csi", samCount, samHeader, samIndex, new(sync.Map)},
		{"reads.cram", "reads.cram.crai", samCount, samHeader, samIndex, new(sync.Map)},
		{"calls.vcf.gz", "calls.vcf.gz.tbi", bcfCount, bcfHeader, bcfIndex, new(sync.Map)},
		{"calls.bcf", "calls.bcf.csi", bcfCount, bcfHeader, bcfIndex, new(sync.Map)},
	}
	for i, c := range cases {
		mustRun(t, dir, "encrypt", "--recipient_pk", "me.pub", "-i", c.name, "-o", c.name+".c4gh")
		if i%2 == 1 { // every other index encrypted too
			mustRun(t, dir, "encrypt", "--recipient_pk", "me.pub", "-i", c.index, "-o", c.index+".c4gh")
			os.Rename(filepath.Join(dir, c.index), filepath.Join(dir, c.index+".plain"))
		}
	}
	return cases
}

// mustRun runs the command in dir (runAt) and fails the test unless it
// succeeds.
func mustRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	code, stdout, stderr := runAt(t, dir, args...)
	if code != 0 {
		t.Fatalf("crypt4gh %s: exit %d\n%s", strings.Join(args, " "), code, stderr)
	}
	return stdout
}

// plainIndex puts the plain index of c back beside the plain data, for
// the counts on the original.
func plainIndex(t *testing.T, dir string, c regionCase) {
	if _, err := os.Stat(filepath.Join(dir, c.index+".plain")); err == nil {
		if err := os.Link(filepath.Join(dir, c.index+".plain"), filepath.Join(dir, c.index)); err != nil && !os.IsExist(err) {
			t.Fatal(err)
		}
	}
}

// TestRegions decrypts regions of every format, and splices them for a
// recipient, who decrypts the same bytes; samtools and bcftools read each
// output, which holds every record of the regions and the file's header.
func TestRegions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cases := regionFixtures(t, dir)
	mustRun(t, dir, "keygen", "--sk", "them.sec", "--pk", "them.pub", "--nocrypt")
	regionSets := [][]string{
		{"chr1:150000-150200"}, // inside a block or two
		{"chr2:20000-90000"},   // many blocks and segments
		{"chr1:1-50"},          // the first records of a reference
		{"chr2:199000-200000"}, // its last ones
		{"chr2"},               // a whole reference
		{"chr1:100000-100010", "chr2:5000-9000", "chr1:200000-210000"}, // several, out of order
		{"chr1:299990-300000"}, // likely empty
	}
	if testing.Short() {
		// Inside a block, many blocks, the end of a reference, several.
		regionSets = [][]string{regionSets[0], regionSets[1], regionSets[3], regionSets[5]}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for i, regions := range regionSets {
				var flags []string
				for _, r := range regions {
					flags = append(flags, "--region", r)
				}
				out := fmt.Sprintf("out%d-%s", i, c.name)
				mustRun(t, dir, append([]string{"decrypt", "--sk", "me.sec", "-i", c.name + ".c4gh", "-o", out}, flags...)...)
				spliced := fmt.Sprintf("spliced%d-%s", i, c.name)
				mustRun(t, dir, append([]string{"splice", "--sk", "me.sec", "--recipient_pk", "them.pub", "-i", c.name + ".c4gh", "-o", spliced + ".c4gh"}, flags...)...)
				mustRun(t, dir, "decrypt", "--sk", "them.sec", "-i", spliced+".c4gh", "-o", spliced)
				plainIndex(t, dir, c)
				// What the recipient decrypts of the splice is what
				// decrypt --region writes: the tools read the one.
				if a, b := mustRead(t, filepath.Join(dir, out)), mustRead(t, filepath.Join(dir, spliced)); !bytes.Equal(a, b) {
					t.Errorf("%v: the recipient's splice decrypts to %d bytes other than the %d of decrypt --region", regions, len(b), len(a))
				}
				if strings.HasSuffix(c.name, "bam") || strings.HasSuffix(c.name, "cram") {
					tool(t, dir, "samtools", "quickcheck", out)
				}
				c.index2(t, dir, out)
				if h, want := c.head(t, dir, out), c.wantHead(t, dir); h != want {
					t.Errorf("%s %v: the header differs:\n%s\nwant\n%s", out, regions, h, want)
				}
				for _, r := range regions {
					if n, want := c.count(t, dir, out, r), c.wantCount(t, dir, r); n != want {
						t.Errorf("%s: %d records in %s, want %d", out, n, r, want)
					}
				}
				// The spliced file holds the segments the plan reads, and
				// new segments for the edge blocks: not the whole file.
				plan := mustRun(t, dir, append(append([]string{"inspect", "--sk", "me.sec"}, flags...), c.name+".c4gh")...)
				m := regexp.MustCompile(`read: (\d+) bytes`).FindStringSubmatch(plan)
				if m == nil {
					t.Fatalf("inspect --region printed:\n%s", plan)
				}
				stored, _ := strconv.ParseInt(m[1], 10, 64)
				fi, err := os.Stat(filepath.Join(dir, spliced+".c4gh"))
				if err != nil {
					t.Fatal(err)
				}
				newRuns := int64(strings.Count(plan, "  new "))
				if limit := stored + newRuns*65564 + 4096; fi.Size() > limit {
					t.Errorf("%v: the spliced file is %d bytes, more than the %d bytes of the segments read and the new ones", regions, fi.Size(), limit)
				}
			}
		})
	}
}

// TestRegionUnplaced: * gives the unmapped reads that have no place.
func TestRegionUnplaced(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeSAM(t, dir, 2000)
	tool(t, dir, "samtools", "sort", "-o", "reads.bam", "reads.sam")
	tool(t, dir, "samtools", "index", "reads.bam")
	mustRun(t, dir, "keygen", "--sk", "me.sec", "--pk", "me.pub", "--nocrypt")
	mustRun(t, dir, "encrypt", "--recipient_pk", "me.pub", "-i", "reads.bam", "-o", "reads.bam.c4gh")
	os.Rename(filepath.Join(dir, "reads.bam.bai"), filepath.Join(dir, "reads.bam.c4gh.bai"))
	mustRun(t, dir, "decrypt", "--sk", "me.sec", "--region", "*", "--index", "reads.bam.c4gh.bai", "-i", "reads.bam.c4gh", "-o", "u.bam")
	tool(t, dir, "samtools", "quickcheck", "u.bam")
	if got := strings.Count(tool(t, dir, "samtools", "view", "-f", "4", "u.bam"), "\n"); got != 50 {
		t.Errorf("%d unmapped reads, want 50", got)
	}
}

// TestRegionShortLinearIndex: an index whose linear index stops short of
// the records (or is missing) loses none of the records its bins hold, as
// htslib reads it: where the linear index has no entry for a region's
// start, the bins' chunks are bounded by its last entry, or by nothing.
// Before, such a region got no records at all, with exit 0.
func TestRegionShortLinearIndex(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cases := regionFixtures(t, dir)
	regions := []string{"chr1:150000-150200", "chr2:20000-90000", "chr1:250000-300000", "chr2"}
	if testing.Short() {
		// Past half the linear index of chr1, and inside it.
		regions = []string{"chr1:150000-150200", "chr2:20000-90000"}
	}
	for _, c := range cases {
		if c.name != "reads.bam" && c.name != "calls.vcf.gz" {
			continue
		}
		plainIndex(t, dir, c)
		want := map[string]int{}
		for _, r := range regions {
			want[r] = c.wantCount(t, dir, r)
		}
		orig := mustRead(t, filepath.Join(dir, c.index))
		for _, keep := range []struct {
			name string
			n    func(nintv int) int
		}{
			{"no linear index", func(int) int { return 0 }},
			{"a linear index of half the tiles", func(n int) int { return n / 2 }},
		} {
			short := "short-" + c.index
			if err := os.WriteFile(filepath.Join(dir, short), shortLinear(t, orig, strings.HasSuffix(c.index, ".tbi"), keep.n), 0o644); err != nil {
				t.Fatal(err)
			}
			for i, r := range regions {
				out := fmt.Sprintf("short%d-%d-%s", i, len(keep.name), c.name)
				mustRun(t, dir, "decrypt", "--sk", "me.sec", "--region", r, "--index", short, "-i", c.name+".c4gh", "-o", out)
				c.index2(t, dir, out)
				if n := c.count(t, dir, out, r); n != want[r] {
					t.Errorf("%s, %s: %d records in %s, want %d", c.name, keep.name, n, r, want[r])
				}
			}
		}
	}
}

// shortLinear returns the BAI (or, with tbi, the TBI) ix with the linear
// index of each reference cut to keep(n) of its n entries.
func shortLinear(t *testing.T, ix []byte, tbi bool, keep func(n int) int) []byte {
	t.Helper()
	b := ix
	if tbi {
		zr, err := gzip.NewReader(bytes.NewReader(ix))
		if err != nil {
			t.Fatal(err)
		}
		if b, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	u32 := func(at int) int { return int(binary.LittleEndian.Uint32(b[at:])) }
	at := 8 // magic, n_ref
	if tbi {
		at += 24
		at += 4 + u32(at) // l_nm, names
	}
	out := slices.Clone(b[:at])
	for range u32(4) {
		start := at
		at += 4
		for range u32(start) { // bins
			at += 8 + 16*u32(at+4)
		}
		n := u32(at)
		k := keep(n)
		out = append(out, b[start:at]...)
		out = binary.LittleEndian.AppendUint32(out, uint32(k))
		out = append(out, b[at+4:at+4+8*k]...)
		at += 4 + 8*n
	}
	out = append(out, b[at:]...)
	if !tbi {
		return out
	}
	var z bytes.Buffer
	w := bgzf.NewWriter(&z, 1)
	if _, err := w.Write(out); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return z.Bytes()
}

// TestRegionSpliceSize: the body that inspect --region says splice
// --region writes is the body it writes, also where an edge block's
// segment is read but not copied (the estimate before counted every
// segment read: 44 % too much for a region of a BAM a user tried).
func TestRegionSpliceSize(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustRun(t, dir, "keygen", "--sk", "me.sec", "--pk", "me.pub", "--nocrypt")
	regionObjectFixtureOf(t, dir, 40000)
	readOnly := 0 // regions with a segment read and not copied
	for _, region := range []string{"chr1:100000-110000", "chr1:150000-150100", "chr2:1-50000", "chr1:20000-200000", "chr2:199000-200000"} {
		var plan regionPlanJSON
		if err := json.Unmarshal([]byte(mustRun(t, dir, "inspect", "--sk", "me.sec", "--region", region, "--json", "big.bam.c4gh")), &plan); err != nil {
			t.Fatal(err)
		}
		mustRun(t, dir, "splice", "--sk", "me.sec", "--region", region, "-i", "big.bam.c4gh", "-o", "part.bam.c4gh", "-f")
		var spliced inspectJSON
		if err := json.Unmarshal([]byte(mustRun(t, dir, "inspect", "--json", "--sk", "me.sec", "part.bam.c4gh")), &spliced); err != nil {
			t.Fatal(err)
		}
		if spliced.BodySize != plan.SpliceBodySize {
			t.Errorf("%s: splice --region wrote a body of %d bytes; inspect --region says %d", region, spliced.BodySize, plan.SpliceBodySize)
		}
		// The new bytes of the plan take whole segments of their own;
		// what is left of the body is segments copied, fewer than those
		// read where an edge block's segment was read only.
		var newBody, run int64
		for i, p := range plan.Pieces {
			if p.Kind == "new" {
				run += p.Length
			}
			if run > 0 && (p.Kind != "new" || i == len(plan.Pieces)-1) {
				newBody += body.EncryptedSize((run + body.SegmentSize - 1) / body.SegmentSize * body.SegmentSize)
				run = 0
			}
		}
		if spliced.BodySize < plan.SegmentsSize+newBody {
			readOnly++
		}
	}
	if readOnly == 0 {
		t.Error("no region had a segment read and not copied: the test does not test what it is for")
	}
}

// TestRegionInspect: inspect --region tells what a request costs, and
// writes nothing.
func TestRegionInspect(t *testing.T) {
	commands, err := filepath.Abs(filepath.Join("..", "..", "docs", "commands.md"))
	if err != nil {
		t.Fatal(err)
	}
	t.Parallel() // after the only relative path: runAt moves the process
	dir := t.TempDir()
	writeVCF(t, dir, 4000)
	tool(t, dir, "bgzip", "calls.vcf")
	tool(t, dir, "tabix", "-p", "vcf", "calls.vcf.gz")
	mustRun(t, dir, "keygen", "--sk", "me.sec", "--pk", "me.pub", "--nocrypt")
	mustRun(t, dir, "encrypt", "--recipient_pk", "me.pub", "-i", "calls.vcf.gz", "-o", "calls.vcf.gz.c4gh")
	got := mustRun(t, dir, "inspect", "--sk", "me.sec", "--region", "chr1:1000-2000", "calls.vcf.gz.c4gh")
	m := regexp.MustCompile(`segments +(\d+) segments? read: (\d+) bytes`).FindStringSubmatch(got)
	if m == nil || !strings.Contains(got, "output ") {
		t.Fatalf("inspect --region printed:\n%s", got)
	}
	if n, _ := strconv.Atoi(m[1]); n < 1 {
		t.Errorf("%s segments read", m[1])
	}

	// --json: the same plan, which decrypt --region and splice --region
	// then write.
	out := mustRun(t, dir, "inspect", "--sk", "me.sec", "--region", "chr1:1000-2000", "--json", "calls.vcf.gz.c4gh")
	var plan regionPlanJSON
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields() // every field is one the test knows, and so documented below
	if err := dec.Decode(&plan); err != nil {
		t.Fatalf("inspect --region --json: %v\n%s", err, out)
	}
	if plan.File != "calls.vcf.gz.c4gh" || strconv.Itoa(plan.SegmentCount) != m[1] || strconv.FormatInt(plan.SegmentsSize, 10) != m[2] ||
		plan.SegmentCount != len(plan.Segments) || !slices.IsSorted(plan.Segments) {
		t.Errorf("inspect --region --json says %+v; the text says %s segments, %s bytes", plan, m[1], m[2])
	}
	var copied, made, last int64
	for _, p := range plan.Pieces {
		switch {
		case p.Kind == "copy" && p.Start != nil && p.End != nil && *p.Start >= last && *p.End-*p.Start == p.Length && p.Length > 0:
			copied += p.Length
			last = *p.End
		case p.Kind == "new" && p.Start == nil && p.End == nil && p.Length > 0:
			made += p.Length
		default:
			t.Errorf("piece %+v", p)
		}
	}
	if made == 0 || copied != plan.CopiedSize || made != plan.NewSize || plan.OutputSize != copied+made {
		t.Errorf("pieces of %d bytes copied and %d new; the plan says %+v", copied, made, plan)
	}
	mustRun(t, dir, "decrypt", "--sk", "me.sec", "--region", "chr1:1000-2000", "-i", "calls.vcf.gz.c4gh", "-o", "part.vcf.gz")
	if st, err := os.Stat(filepath.Join(dir, "part.vcf.gz")); err != nil || st.Size() != plan.OutputSize {
		t.Errorf("decrypt --region wrote %v bytes (%v); the plan says %d", st.Size(), err, plan.OutputSize)
	}
	mustRun(t, dir, "splice", "--sk", "me.sec", "--region", "chr1:1000-2000", "-i", "calls.vcf.gz.c4gh", "-o", "part.vcf.gz.c4gh")
	var spliced inspectJSON
	if err := json.Unmarshal([]byte(mustRun(t, dir, "inspect", "--json", "--sk", "me.sec", "part.vcf.gz.c4gh")), &spliced); err != nil {
		t.Fatal(err)
	}
	if spliced.BodySize != plan.SpliceBodySize {
		t.Errorf("splice --region wrote a body of %d bytes; the plan says %d", spliced.BodySize, plan.SpliceBodySize)
	}
	// Each field is documented in the command's description and in
	// docs/commands.md.
	help := mustRun(t, dir, "inspect", "--help")
	doc, err := os.ReadFile(commands)
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[regionPlanJSON](), reflect.TypeFor[regionPieceJSON]()} {
		for f := range typ.Fields() {
			name := strings.Split(f.Tag.Get("json"), ",")[0]
			inHelp := regexp.MustCompile(`(?m)^ +(\w+, )?` + name + `[ ,]`).MatchString(help)
			if !inHelp || !strings.Contains(string(doc), "`"+name+"`") && !strings.Contains(string(doc), "[]."+name+"`") {
				t.Errorf("field %s of inspect --region --json is not documented", name)
			}
		}
	}
}

// regionPlanJSON mirrors the output of inspect --region --json as a
// script would read it.
type regionPlanJSON struct {
	File           string            `json:"file"`
	Pieces         []regionPieceJSON `json:"pieces"`
	OutputSize     int64             `json:"output_size"`
	CopiedSize     int64             `json:"copied_size"`
	NewSize        int64             `json:"new_size"`
	Segments       []int64           `json:"segments"`
	SegmentCount   int               `json:"segment_count"`
	SegmentsSize   int64             `json:"segments_size"`
	BodySize       int64             `json:"body_size"`
	SpliceBodySize int64             `json:"splice_body_size"`
}

type regionPieceJSON struct {
	Kind   string `json:"kind"`
	Start  *int64 `json:"start"`
	End    *int64 `json:"end"`
	Length int64  `json:"length"`
}

// TestRegionErrors: each bad request gets its error and exit code, and
// no output.
func TestRegionErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeSAM(t, dir, 2000)
	writeVCF(t, dir, 2000)
	tool(t, dir, "samtools", "sort", "-o", "reads.bam", "reads.sam")
	tool(t, dir, "samtools", "index", "reads.bam")
	tool(t, dir, "bgzip", "calls.vcf")
	tool(t, dir, "tabix", "-p", "vcf", "calls.vcf.gz")
	mustRun(t, dir, "keygen", "--sk", "me.sec", "--pk", "me.pub", "--nocrypt")
	for _, f := range []string{"reads.bam", "calls.vcf.gz", "reads.sam"} {
		mustRun(t, dir, "encrypt", "--recipient_pk", "me.pub", "-i", f, "-o", f+".c4gh")
	}
	os.WriteFile(filepath.Join(dir, "reads.sam.c4gh.bai"), []byte("BAI\x01"), 0o644)
	cases := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--region", "chrX", "-i", "reads.bam.c4gh"}, 2, `unknown reference "chrX"`},
		{[]string{"--region", "chr1:20-10", "-i", "reads.bam.c4gh"}, 2, "region"},
		{[]string{"--region", "chr1", "--index", "none.bai", "-i", "reads.bam.c4gh"}, 2, "none.bai"},
		{[]string{"--region", "chr1", "-i", "calls.vcf.gz.c4gh", "--index", "reads.bam.bai"}, 2, "index"},
		{[]string{"--region", "chr1", "--index", "calls.vcf.gz.tbi", "-i", "reads.bam.c4gh"}, 2, "index"},
		{[]string{"--region", "chr1", "-i", "reads.sam.c4gh"}, 2, "not BAM, CRAM, VCF.gz or BCF"},
		{[]string{"--region", "chr1", "--range", "0-10", "-i", "reads.bam.c4gh"}, 2, "--range and --region"},
		{[]string{"--index", "reads.bam.bai", "-i", "reads.bam.c4gh"}, 2, "--index is for --region"},
		{[]string{"--regions-file", "none.bed", "-i", "reads.bam.c4gh"}, 2, "none.bed"},
	}
	for _, tc := range cases {
		args := append([]string{"decrypt", "--sk", "me.sec", "-o", "out"}, tc.args...)
		code, _, stderr := runAt(t, dir, args...)
		if code != tc.code || !strings.Contains(stderr, tc.msg) {
			t.Errorf("%s: exit %d, %q; want exit %d and %q", strings.Join(tc.args, " "), code, stderr, tc.code, tc.msg)
		}
		if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
			t.Errorf("%s: an output was left", strings.Join(tc.args, " "))
			os.Remove(filepath.Join(dir, "out"))
		}
	}
	// An encrypted index with a byte changed: its segment fails to
	// authenticate, said as such (exit 4).
	mustRun(t, dir, "encrypt", "--recipient_pk", "me.pub", "-i", "reads.bam.bai", "-o", "tampered.bai.c4gh")
	tb, err := os.ReadFile(filepath.Join(dir, "tampered.bai.c4gh"))
	if err != nil {
		t.Fatal(err)
	}
	tb[len(tb)/2] ^= 1
	os.WriteFile(filepath.Join(dir, "tampered.bai.c4gh"), tb, 0o644)
	if code, _, stderr := runAt(t, dir, "decrypt", "--sk", "me.sec", "--region", "chr1", "--index", "tampered.bai.c4gh", "-i", "reads.bam.c4gh", "-o", "out"); code != 4 ||
		!strings.Contains(stderr, "failed authentication") || strings.Contains(stderr, "too short") {
		t.Errorf("a tampered index: exit %d, %q; want 4", code, stderr)
	}

	// -o naming the index that is read, even with --force: refused, the
	// index kept.
	bai, err := os.ReadFile(filepath.Join(dir, "reads.bam.bai"))
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"decrypt", "--sk", "me.sec", "--region", "chr1", "-i", "reads.bam.c4gh", "-o", "reads.bam.bai", "--force"},
		{"decrypt", "--sk", "me.sec", "--region", "chr1", "--index", "reads.bam.bai", "-i", "reads.bam.c4gh", "-o", "./reads.bam.bai", "--force"},
		{"splice", "--sk", "me.sec", "--recipient_pk", "me.pub", "--region", "chr1", "-i", "reads.bam.c4gh", "-o", "reads.bam.bai", "--force"},
	} {
		code, _, stderr := runAt(t, dir, args...)
		if code != 2 || !strings.Contains(stderr, "is the index read") {
			t.Errorf("%s: exit %d, %q; want 2", strings.Join(args, " "), code, stderr)
		}
		if got, _ := os.ReadFile(filepath.Join(dir, "reads.bam.bai")); !bytes.Equal(got, bai) {
			t.Fatalf("%s replaced the index", strings.Join(args, " "))
		}
	}
	// A BAI of another file: offsets past the end of this one.
	big := t.TempDir()
	writeSAM(t, big, 60000)
	tool(t, big, "samtools", "sort", "-o", "big.bam", "reads.sam")
	tool(t, big, "samtools", "index", "big.bam")
	// The index is reported before a region's unknown name, as with an
	// index read whole.
	for _, r := range []string{"chr2", "chrX"} {
		code, _, stderr := runAt(t, dir, "decrypt", "--sk", "me.sec", "--region", r, "--index", filepath.Join(big, "big.bam.bai"), "-i", "reads.bam.c4gh", "-o", "out")
		if code != 4 || !strings.Contains(stderr, "does not belong") {
			t.Errorf("an index of another file, --region %s: exit %d, %q; want 4", r, code, stderr)
		}
	}
	// From a pipe: regions need random access.
	f, _ := os.Open(filepath.Join(dir, "reads.bam.c4gh"))
	defer f.Close()
	if code, _, errOut := runAtWith(t, dir, struct{ *os.File }{f}, "decrypt", "--sk", "me.sec", "--region", "chr1"); code != 2 || !strings.Contains(errOut, "not a pipe") {
		t.Errorf("from stdin: exit %d, %q", code, errOut)
	}
}

// TestRegionDamagedBlock: a BGZF block of the plaintext whose CRC does not
// match (damaged before it was encrypted, so Crypt4GH authenticates it)
// fails decrypt and splice --region with exit 4 and no output when the
// command decompresses it: the file's first block (its header), and the
// region's last edge block, of which only the start is used.
func TestRegionDamagedBlock(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// Reads every 25 bases, so that a region's edges cut blocks.
	r := rand.New(rand.NewPCG(5, 6))
	var sam strings.Builder
	sam.WriteString("@HD\tVN:1.6\tSO:coordinate\n@SQ\tSN:chr1\tLN:1000000\n")
	seq := make([]byte, 100)
	for i := range 40000 {
		for j := range seq {
			seq[j] = "ACGT"[r.IntN(4)]
		}
		fmt.Fprintf(&sam, "r%d\t0\tchr1\t%d\t60\t100M\t*\t0\t0\t%s\t%s\n", i, 1+25*i, seq, strings.Repeat("I", 100))
	}
	if err := os.WriteFile(filepath.Join(dir, "reads.sam"), []byte(sam.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	tool(t, dir, "samtools", "view", "-b", "-o", "reads.bam", "reads.sam")
	tool(t, dir, "samtools", "index", "reads.bam")
	if err := os.Rename(filepath.Join(dir, "reads.bam.bai"), filepath.Join(dir, "bad.bam.bai")); err != nil {
		t.Fatal(err) // the index of the undamaged file serves the damaged ones
	}
	mustRun(t, dir, "keygen", "--sk", "me.sec", "--pk", "me.pub", "--nocrypt")
	const region = "chr1:400000-500000"
	orig, err := os.ReadFile(filepath.Join(dir, "reads.bam"))
	if err != nil {
		t.Fatal(err)
	}
	// The last edge block starts where the last copy of the plan (before
	// the end-of-file marker's) ends.
	if err := os.WriteFile(filepath.Join(dir, "bad.bam"), orig, 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, dir, "encrypt", "--recipient_pk", "me.pub", "-i", "bad.bam", "-o", "bad.bam.c4gh")
	var plan struct {
		Pieces []struct {
			Kind string
			End  int
		}
	}
	if err := json.Unmarshal([]byte(mustRun(t, dir, "inspect", "--sk", "me.sec", "--region", region, "--json", "bad.bam.c4gh")), &plan); err != nil {
		t.Fatal(err)
	}
	last := -1
	for i, p := range plan.Pieces[:len(plan.Pieces)-1] {
		if p.Kind == "copy" && i+1 < len(plan.Pieces)-1 && plan.Pieces[i+1].Kind == "new" {
			last = p.End
		}
	}
	if last <= 0 {
		t.Fatalf("no last edge block in the plan %+v", plan)
	}
	for _, at := range []int{0, last} {
		bad := bytes.Clone(orig)
		size := int(orig[at+16]) | int(orig[at+17])<<8 + 1
		bad[at+size-8] ^= 0x55 // the CRC32
		if err := os.WriteFile(filepath.Join(dir, "bad.bam"), bad, 0o644); err != nil {
			t.Fatal(err)
		}
		mustRun(t, dir, "encrypt", "--force", "--recipient_pk", "me.pub", "-i", "bad.bam", "-o", "bad.bam.c4gh")
		for _, args := range [][]string{
			{"decrypt", "--sk", "me.sec"},
			{"splice", "--sk", "me.sec", "--recipient_pk", "me.pub"},
		} {
			args = append(args, "--region", region, "-i", "bad.bam.c4gh", "-o", "out")
			if code, _, stderr := runAt(t, dir, args...); code != 4 || !strings.Contains(stderr, "CRC") {
				t.Errorf("%s, CRC of the block at %d damaged: exit %d, %q; want 4", args[0], at, code, stderr)
			}
			if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
				t.Errorf("%s: an output was left", args[0])
				os.Remove(filepath.Join(dir, "out"))
			}
		}
	}
}
