package mount_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/c4gh-go/crypt4gh/mount"
)

// run runs a command in dir and returns its standard output.
func run(t *testing.T, dir string, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, &stderr)
	}
	return out
}

const chromLen = 2_000_000

// makeSAM writes a coordinate-sorted SAM file of n reads of 100 bases on
// each of chr1 and chr2.
func makeSAM(t *testing.T, p string, n int) {
	r := rand.New(rand.NewPCG(21, 22))
	var b bytes.Buffer
	b.WriteString("@HD\tVN:1.6\tSO:coordinate\n")
	for _, c := range []string{"chr1", "chr2"} {
		fmt.Fprintf(&b, "@SQ\tSN:%s\tLN:%d\n", c, chromLen)
	}
	seq := make([]byte, 100)
	for _, c := range []string{"chr1", "chr2"} {
		pos := 1
		for i := range n {
			pos += r.IntN(2 * chromLen / n)
			for j := range seq {
				seq[j] = "ACGT"[r.IntN(4)]
			}
			fmt.Fprintf(&b, "%s_%06d\t0\t%s\t%d\t60\t100M\t*\t0\t0\t%s\t%s\n", c, i, c, pos, seq, strings.Repeat("I", 100))
		}
	}
	writeFile(t, p, b.Bytes())
}

// makeVCF writes a sorted VCF file of n variants on each of chr1 and chr2.
func makeVCF(t *testing.T, p string, n int) {
	r := rand.New(rand.NewPCG(23, 24))
	var b bytes.Buffer
	b.WriteString("##fileformat=VCFv4.2\n")
	for _, c := range []string{"chr1", "chr2"} {
		fmt.Fprintf(&b, "##contig=<ID=%s,length=%d>\n", c, chromLen)
	}
	b.WriteString("##INFO=<ID=DP,Number=1,Type=Integer,Description=\"Depth\">\n")
	b.WriteString("##INFO=<ID=AF,Number=A,Type=Float,Description=\"Allele frequency\">\n")
	b.WriteString("#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n")
	for _, c := range []string{"chr1", "chr2"} {
		pos := 1
		for i := range n {
			pos += 1 + r.IntN(2*chromLen/n)
			ref, alt := "ACGT"[r.IntN(4)], "ACGT"[r.IntN(4)]
			if alt == ref {
				alt = 'N'
			}
			fmt.Fprintf(&b, "%s\t%d\tv%s_%d\t%c\t%c\t%d\tPASS\tDP=%d;AF=0.%04d\n", c, pos, c, i, ref, alt, r.IntN(100), r.IntN(500), r.IntN(10000))
		}
	}
	writeFile(t, p, b.Bytes())
}

// TestClients runs samtools, bcftools and tabix on mounted encrypted BAM
// and VCF files, with the index beside them plain and encrypted, and
// compares their output with what they print for the plaintext files.
func TestClients(t *testing.T) {
	requireFUSE(t)
	requireTools(t, "samtools", "bcftools", "tabix", "bgzip")
	alice := newKey(t)
	plain := t.TempDir()
	makeSAM(t, filepath.Join(plain, "x.sam"), 3000)
	run(t, plain, "samtools", "sort", "-o", "x.bam", "x.sam")
	run(t, plain, "samtools", "index", "x.bam")
	makeVCF(t, filepath.Join(plain, "y.vcf"), 10000)
	run(t, plain, "bgzip", "-k", "y.vcf")
	run(t, plain, "tabix", "-p", "vcf", "y.vcf.gz")

	src := t.TempDir()
	for _, name := range []string{"x.bam", "x.bam.bai", "y.vcf.gz", "y.vcf.gz.tbi"} {
		b, err := os.ReadFile(filepath.Join(plain, name))
		if err != nil {
			t.Fatal(err)
		}
		if (name == "x.bam" || name == "y.vcf.gz") && len(b) < 3*seg {
			t.Fatalf("%s is only %d bytes: too small to span segments", name, len(b))
		}
		enc := encrypt(t, b, nil, alice)
		writeFile(t, filepath.Join(src, "encrypted-index", name+".c4gh"), enc)
		if strings.HasSuffix(name, "i") {
			writeFile(t, filepath.Join(src, "plain-index", name), b) // .bai, .tbi
		} else {
			writeFile(t, filepath.Join(src, "plain-index", name+".c4gh"), enc)
		}
	}
	mp, log := mountDir(t, src, mount.Options{Key: alice})

	regions := []string{"chr1:1-1000", "chr1:500000-520000", "chr1:1999000-2000000", "chr2:1-2000000", "chr2:1234567-1300000"}
	for _, dir := range []string{"plain-index", "encrypted-index"} {
		m := filepath.Join(mp, dir)
		for _, reg := range regions {
			want := run(t, plain, "samtools", "view", "x.bam", reg)
			if got := run(t, m, "samtools", "view", "x.bam", reg); !bytes.Equal(got, want) {
				t.Errorf("%s: samtools view x.bam %s: %d bytes, want %d", dir, reg, len(got), len(want))
			}
			want = run(t, plain, "bcftools", "view", "-H", "-r", reg, "y.vcf.gz")
			if got := run(t, m, "bcftools", "view", "-H", "-r", reg, "y.vcf.gz"); !bytes.Equal(got, want) {
				t.Errorf("%s: bcftools view -r %s y.vcf.gz: %d bytes, want %d", dir, reg, len(got), len(want))
			}
			want = run(t, plain, "tabix", "y.vcf.gz", reg)
			if got := run(t, m, "tabix", "y.vcf.gz", reg); !bytes.Equal(got, want) {
				t.Errorf("%s: tabix y.vcf.gz %s: %d bytes, want %d", dir, reg, len(got), len(want))
			}
		}
		want := run(t, plain, "samtools", "view", "-c", "x.bam")
		if got := run(t, m, "samtools", "view", "-c", "x.bam"); !bytes.Equal(got, want) || string(want) != "6000\n" {
			t.Errorf("%s: samtools view -c: %q, want %q (6000)", dir, got, want)
		}
	}
	if log.String() != "" {
		t.Errorf("log:\n%s", log)
	}
}
