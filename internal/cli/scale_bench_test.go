package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkBatchDecryptSmall decrypts 2,000 files of 1 KB in one batch
// (in process), a list as input: the per-file cost of batch mode.
func BenchmarkBatchDecryptSmall(b *testing.B) {
	dir := b.TempDir()
	b.Chdir(dir)
	var out, errb bytes.Buffer
	if Run([]string{"crypt4gh", "keygen", "--sk", "me.sec", "--pk", "me.pub", "--nocrypt"}, nil, &out, &errb) != 0 {
		b.Fatal(errb.String())
	}
	os.Mkdir("in", 0o755)
	var list bytes.Buffer
	for i := range 2000 {
		p := filepath.Join("in", fmt.Sprintf("f%04d", i))
		os.WriteFile(p, randomData(1000, uint64(i)), 0o644)
		fmt.Fprintf(&list, "%s\n", p)
	}
	os.WriteFile("plain.list", list.Bytes(), 0o644)
	if Run([]string{"crypt4gh", "encrypt", "-q", "--recipient_pk", "me.pub", "--files-from", "plain.list"}, nil, &out, &errb) != 0 {
		b.Fatal(errb.String())
	}
	os.WriteFile("list", bytes.ReplaceAll(list.Bytes(), []byte("\n"), []byte(".c4gh\n")), 0o644)
	b.ResetTimer()
	for range b.N {
		os.RemoveAll("out")
		if code := Run([]string{"crypt4gh", "decrypt", "-q", "--sk", "me.sec", "-o", "out/", "--files-from", "list"}, nil, &out, &errb); code != 0 {
			b.Fatal(errb.String())
		}
	}
	b.ReportMetric(float64(2000*b.N)/b.Elapsed().Seconds(), "files/s")
}

// BenchmarkBatchDecryptMiB decrypts 200 files of 1 MiB in one batch (in
// process), against BenchmarkBatchDecryptOne: one file of 200 MiB.
func BenchmarkBatchDecryptMiB(b *testing.B) { benchDecrypt(b, 200, 1<<20) }

// BenchmarkBatchDecryptOne decrypts one file of 200 MiB.
func BenchmarkBatchDecryptOne(b *testing.B) { benchDecrypt(b, 1, 200<<20) }

func benchDecrypt(b *testing.B, n, size int) {
	dir := b.TempDir()
	b.Chdir(dir)
	var out, errb bytes.Buffer
	if Run([]string{"crypt4gh", "keygen", "--sk", "me.sec", "--pk", "me.pub", "--nocrypt"}, nil, &out, &errb) != 0 {
		b.Fatal(errb.String())
	}
	os.Mkdir("in", 0o755)
	args := []string{"crypt4gh", "decrypt", "-q", "--sk", "me.sec", "-o", "out/"}
	for i := range n {
		p := filepath.Join("in", fmt.Sprintf("f%04d", i))
		os.WriteFile(p, randomData(size, uint64(i)), 0o644)
		if Run([]string{"crypt4gh", "encrypt", "-q", "--recipient_pk", "me.pub", "-i", p, "-o", p + ".c4gh"}, nil, &out, &errb) != 0 {
			b.Fatal(errb.String())
		}
		os.Remove(p)
		args = append(args, p+".c4gh")
	}
	b.SetBytes(int64(n * size))
	b.ResetTimer()
	for range b.N {
		os.RemoveAll("out")
		os.Mkdir("out", 0o700)
		a := args
		if n == 1 {
			a = []string{"crypt4gh", "decrypt", "-q", "--sk", "me.sec", "-i", args[len(args)-1], "-o", "out/one"}
		}
		if code := Run(a, nil, &out, &errb); code != 0 {
			b.Fatal(errb.String())
		}
	}
}
