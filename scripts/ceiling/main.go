// Command ceiling measures the fastest that a Crypt4GH body can be sealed
// on this machine: a bare ChaCha20-Poly1305 seal loop over 64 KiB segments
// on every core, with no I/O, no scheduling of work between goroutines and
// a segment buffer that stays in the cache. scripts/bench.sh compares the
// crypt4gh command with it.
//
// Usage:
//
//	go run ./scripts/ceiling [-size BYTES] [-jobs N] [-runs N]
//
// It seals -size bytes in total (1 GiB by default), split between -jobs
// goroutines (GOMAXPROCS by default), -runs times, and prints the best
// rate in MB/s (10^6 bytes per second) on stdout, a bare integer.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/chacha20poly1305"
)

const (
	segmentSize = 65536
	nonceSize   = chacha20poly1305.NonceSize
	overhead    = nonceSize + chacha20poly1305.Overhead
)

func main() {
	size := flag.Int64("size", 1<<30, "bytes to seal per run")
	jobs := flag.Int("jobs", runtime.GOMAXPROCS(0), "goroutines that seal")
	runs := flag.Int("runs", 3, "runs; the best is printed")
	flag.Parse()
	if *size < segmentSize || *jobs < 1 || *runs < 1 {
		fmt.Fprintln(os.Stderr, "ceiling: -size must be at least 65536, -jobs and -runs at least 1")
		os.Exit(2)
	}
	var key [chacha20poly1305.KeySize]byte
	aead, err := chacha20poly1305.New(key[:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "ceiling:", err)
		os.Exit(1)
	}
	segments := *size / segmentSize
	best := time.Duration(1<<63 - 1)
	for range *runs {
		var left atomic.Int64
		left.Store(segments)
		var wg sync.WaitGroup
		start := time.Now()
		for range *jobs {
			wg.Go(func() {
				buf := make([]byte, segmentSize+overhead)
				for left.Add(-1) >= 0 {
					aead.Seal(buf[nonceSize:nonceSize], buf[:nonceSize], buf[nonceSize:nonceSize+segmentSize], nil)
				}
			})
		}
		wg.Wait()
		best = min(best, time.Since(start))
	}
	fmt.Println(int64(float64(segments*segmentSize) / best.Seconds() / 1e6))
}
