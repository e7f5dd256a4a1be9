// Command preads measures random reads of a file as a program that seeks
// in an indexed BAM or VCF file makes them: single-threaded preads of
// -len bytes (4 KiB by default), each in a 64 KiB segment of the file
// that no earlier read of the run touched, at a random offset inside it.
// On a fresh mount every read then reaches the file system and decrypts
// a segment; scripts/bench.sh compares the rate with the same reads of
// the plaintext file.
//
// Usage:
//
//	go run ./scripts/preads [-n READS] [-len BYTES] [-seed N] FILE
//
// It makes -n reads (at most one for each segment of the file) and prints
// the rate in reads per second on stdout, a bare integer.
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"time"
)

const segmentSize = 65536

func main() {
	n := flag.Int("n", 2000, "reads, each in a segment of its own")
	length := flag.Int("len", 4096, "bytes per read")
	seed := flag.Uint64("seed", 1, "seed of the offsets")
	flag.Parse()
	if flag.NArg() != 1 || *n < 1 || *length < 1 || *length > segmentSize {
		fmt.Fprintln(os.Stderr, "usage: preads [-n READS] [-len BYTES <= 65536] [-seed N] FILE")
		os.Exit(2)
	}
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "preads:", err)
		os.Exit(1)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		fmt.Fprintln(os.Stderr, "preads:", err)
		os.Exit(1)
	}
	segments := int(fi.Size() / segmentSize) // whole ones only
	if segments < *n {
		fmt.Fprintf(os.Stderr, "preads: %s has %d whole segments, fewer than -n %d\n", flag.Arg(0), segments, *n)
		os.Exit(2)
	}
	// The offsets are drawn before the clock starts.
	r := rand.New(rand.NewPCG(*seed, 0x70726561))
	order := r.Perm(segments)[:*n]
	offs := make([]int64, *n)
	for i, s := range order {
		offs[i] = int64(s)*segmentSize + r.Int64N(segmentSize-int64(*length)+1)
	}
	buf := make([]byte, *length)
	t0 := time.Now()
	for _, off := range offs {
		if m, err := f.ReadAt(buf, off); m != len(buf) {
			fmt.Fprintf(os.Stderr, "preads: read at %d: %d bytes, %v\n", off, m, err)
			os.Exit(1)
		}
	}
	fmt.Printf("%.0f\n", float64(*n)/time.Since(t0).Seconds())
}
