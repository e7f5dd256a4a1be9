package region

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/c4gh-go/crypt4gh/internal/clitest"
)

// refs are the references of the fixtures: a name with a colon among them,
// and one without any record.
var refs = []struct {
	name   string
	length int
	reads  int
}{
	{"chr1", 200000, 3000},
	{"chr2", 150000, 2000},
	{"chr:3", 50000, 800},
	{"chrE", 10000, 0},
}

// run runs a tool in dir and returns its standard output.
func run(t testing.TB, dir string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(clitest.Tool(t, name), args...)
	cmd.Dir = dir
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return out.String()
}

var (
	fixtureOnce sync.Once
	fixtureDir  string
	fixtureErr  error
)

// fixtures builds, once per test process, a FASTA, a BAM with BAI and CSI,
// a CRAM with CRAI, VCF.gz files by bgzip (TBI and CSI) and by bcftools,
// and a BCF with CSI, in a temporary folder removed by TestMain.
func fixtures(t testing.TB) string {
	t.Helper()
	for _, tool := range []string{"samtools", "bcftools", "tabix", "bgzip"} {
		clitest.Tool(t, tool)
	}
	fixtureOnce.Do(func() {
		fixtureDir, fixtureErr = os.MkdirTemp("", "region-fixtures-")
		if fixtureErr == nil {
			fixtureErr = buildFixtures(fixtureDir)
		}
	})
	if fixtureErr != nil {
		t.Fatal(fixtureErr)
	}
	return fixtureDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if fixtureDir != "" {
		os.RemoveAll(fixtureDir)
	}
	os.Exit(code)
}

// buildFixtures writes the fixtures into dir.
func buildFixtures(dir string) error {
	rng := rand.New(rand.NewPCG(19, 20))
	seqs := writeFASTA(dir, rng)
	if err := os.WriteFile(filepath.Join(dir, "reads.sam"), samText(rng, seqs), 0o666); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "calls.vcf"), vcfText(rng), 0o666); err != nil {
		return err
	}
	steps := [][]string{
		{"samtools", "faidx", "ref.fa"},
		{"samtools", "sort", "-o", "reads.bam", "reads.sam"},
		{"samtools", "index", "reads.bam"},
		{"cp", "reads.bam", "csi.bam"},
		{"samtools", "index", "-c", "csi.bam"},
		{"samtools", "view", "-C", "-T", "ref.fa", "-o", "reads.cram", "reads.bam"},
		{"samtools", "index", "reads.cram"},
		{"bgzip", "-k", "calls.vcf"},
		{"tabix", "-p", "vcf", "calls.vcf.gz"},
		{"cp", "calls.vcf.gz", "csi.vcf.gz"},
		{"tabix", "-C", "-p", "vcf", "csi.vcf.gz"},
		{"bcftools", "view", "-Oz", "-o", "bcftools.vcf.gz", "calls.vcf"},
		{"bcftools", "index", "-t", "bcftools.vcf.gz"},
		{"bcftools", "view", "-Ob", "-o", "calls.bcf", "calls.vcf"},
		{"bcftools", "index", "calls.bcf"},
	}
	for _, s := range steps {
		cmd := exec.Command(s[0], s[1:]...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v\n%s", strings.Join(s, " "), err, out)
		}
	}
	return nil
}

// writeFASTA writes ref.fa and returns the sequences.
func writeFASTA(dir string, rng *rand.Rand) map[string][]byte {
	seqs := map[string][]byte{}
	var fa bytes.Buffer
	for _, r := range refs {
		s := make([]byte, r.length)
		for i := range s {
			s[i] = "ACGT"[rng.IntN(4)]
		}
		seqs[r.name] = s
		fmt.Fprintf(&fa, ">%s\n", r.name)
		for i := 0; i < len(s); i += 60 {
			fa.Write(s[i:min(i+60, len(s))])
			fa.WriteByte('\n')
		}
	}
	os.WriteFile(filepath.Join(dir, "ref.fa"), fa.Bytes(), 0o666)
	return seqs
}

// samText returns a SAM file of reads taken from the references, the
// first and last positions of each reference among them, and unmapped
// reads.
func samText(rng *rand.Rand, seqs map[string][]byte) []byte {
	var b bytes.Buffer
	b.WriteString("@HD\tVN:1.6\tSO:unsorted\n")
	for _, r := range refs {
		fmt.Fprintf(&b, "@SQ\tSN:%s\tLN:%d\n", r.name, r.length)
	}
	const n = 100
	for _, r := range refs {
		for i := range r.reads {
			pos := rng.IntN(r.length - n)
			switch i {
			case 0:
				pos = 0
			case 1:
				pos = r.length - n
			}
			fmt.Fprintf(&b, "r%s_%d\t0\t%s\t%d\t60\t%dM\t*\t0\t0\t%s\t%s\n",
				strings.ReplaceAll(r.name, ":", ""), i, r.name, pos+1, n, seqs[r.name][pos:pos+n], strings.Repeat("I", n))
		}
	}
	for i := range 300 {
		fmt.Fprintf(&b, "u%d\t4\t*\t0\t0\t*\t*\t0\t0\t%s\t%s\n", i, seqs["chr1"][i:i+n], strings.Repeat("I", n))
	}
	return b.Bytes()
}

// vcfText returns a VCF of enough records, with long enough lines, that
// bgzip cuts records across blocks.
func vcfText(rng *rand.Rand) []byte {
	var b bytes.Buffer
	b.WriteString("##fileformat=VCFv4.2\n")
	b.WriteString("##INFO=<ID=NOTE,Number=1,Type=String,Description=\"filler\">\n")
	for _, name := range []string{"chr1", "chr2", "chr3", "chrE"} {
		fmt.Fprintf(&b, "##contig=<ID=%s,length=200000>\n", name)
	}
	b.WriteString("#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n")
	for _, c := range []struct {
		name string
		n    int
	}{{"chr1", 6000}, {"chr2", 4000}, {"chr3", 1000}} {
		pos := 1
		for range c.n {
			note := make([]byte, 20+rng.IntN(60))
			for i := range note {
				note[i] = "abcdefghij"[rng.IntN(10)]
			}
			fmt.Fprintf(&b, "%s\t%d\t.\tA\tG\t50\tPASS\tNOTE=%s\n", c.name, pos, note)
			pos += 1 + rng.IntN(60)
		}
	}
	return b.Bytes()
}
