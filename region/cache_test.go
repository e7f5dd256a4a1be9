package region

import (
	"bytes"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
)

// TestCache reads a source through a cache at random places and lengths,
// from several goroutines, and checks each read against the source: the
// same bytes, io.EOF exactly where the source ends.
func TestCache(t *testing.T) {
	data := make([]byte, 5*chunkSize+1234)
	for i := range data {
		data[i] = byte(i * 7 >> 3)
	}
	src := bytes.NewReader(data)
	c := newCache(src)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range 200 {
				off := rng.Int64N(int64(len(data)) + 10)
				n := rng.IntN(3 * chunkSize)
				if rng.IntN(4) == 0 {
					off &^= chunkSize - 1 // whole chunks too
				}
				got, want := make([]byte, n), make([]byte, n)
				gn, gerr := c.ReadAt(got, off)
				wn, werr := src.ReadAt(want, off)
				if gn != wn || !bytes.Equal(got[:gn], want[:wn]) || (gerr == io.EOF) != (werr == io.EOF) || (gerr == nil) != (werr == nil) {
					t.Errorf("ReadAt(%d bytes, %d) = %d, %v; want %d, %v", n, off, gn, gerr, wn, werr)
					return
				}
			}
		})
	}
	wg.Wait()
}
