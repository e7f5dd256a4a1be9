// Command samgen writes a sorted SAM file of synthetic reads to stdout,
// for scripts/bench-region.sh: -reads reads of 100 random bases with
// constant qualities, spread evenly over two references of 1e8 bases
// (chr1, then chr2).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
)

const refLen = 100_000_000

func main() {
	reads := flag.Int("reads", 1_000_000, "how many reads")
	flag.Parse()
	w := bufio.NewWriterSize(os.Stdout, 1<<20)
	defer w.Flush()
	fmt.Fprintf(w, "@HD\tVN:1.6\tSO:coordinate\n@SQ\tSN:chr1\tLN:%d\n@SQ\tSN:chr2\tLN:%d\n", refLen, refLen)
	r := rand.New(rand.NewPCG(1, 2))
	half := max(*reads/2, 1)
	seq := make([]byte, 100)
	qual := make([]byte, 100)
	for i := range qual {
		qual[i] = 'I'
	}
	for i := range *reads {
		ref, k := "chr1", i
		if i >= half {
			ref, k = "chr2", i-half
		}
		pos := 1 + int64(k)*(refLen-100)/int64(half)
		for j := range seq {
			seq[j] = "ACGT"[r.IntN(4)]
		}
		fmt.Fprintf(w, "r%d\t0\t%s\t%d\t60\t100M\t*\t0\t0\t%s\t%s\n", i, ref, pos, seq, qual)
	}
}
