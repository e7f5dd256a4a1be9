package region

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	mrand "math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/c4gh"
)

// failingReaderAt fails every read that reaches from.
type failingReaderAt struct {
	r    io.ReaderAt
	from int64
}

var errBroken = errors.New("broken")

func (f *failingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > f.from {
		return 0, errBroken
	}
	return f.r.ReadAt(p, off)
}

// TestParallelReads checks readAt and copyParallel against the bytes,
// for ranges that start and end anywhere (readAt reads those shorter than
// parallelMin at once), and what they do on a source that fails or is
// short.
func TestParallelReads(t *testing.T) {
	data := make([]byte, 2*parallelMin+12345)
	rand.Read(data)
	src := bytes.NewReader(data)
	rng := mrand.New(mrand.NewPCG(7, 8))
	for range 50 {
		start := rng.Int64N(int64(len(data)))
		end := start + rng.Int64N(int64(len(data))-start+1)
		p := make([]byte, end-start)
		if n, err := readAt(src, p, start); n != len(p) || err != nil || !bytes.Equal(p, data[start:end]) {
			t.Fatalf("readAt [%d, %d): %d, %v", start, end, n, err)
		}
		var out bytes.Buffer
		if n, err := copyParallel(&out, src, start, end); n != end-start || err != nil || !bytes.Equal(out.Bytes(), data[start:end]) {
			t.Fatalf("copyParallel [%d, %d): %d, %v", start, end, n, err)
		}
	}
	// A failure in the third part: the two before it are written.
	bad := &failingReaderAt{r: src, from: 2*partSize + 10}
	var out bytes.Buffer
	if n, err := copyParallel(&out, bad, 0, 5*partSize); err != errBroken || n != 2*partSize || !bytes.Equal(out.Bytes(), data[:n]) {
		t.Errorf("copyParallel of a failing source: %d, %v", n, err)
	}
	if n, err := readAt(bad, make([]byte, parallelMin), 0); err != errBroken || n != 2*partSize {
		t.Errorf("readAt of a failing source: %d, %v", n, err)
	}
	// Past the end of the source.
	out.Reset()
	if n, err := copyParallel(&out, src, int64(len(data))-partSize, int64(len(data))+partSize); err != io.ErrUnexpectedEOF || n != partSize {
		t.Errorf("copyParallel past the end: %d, %v", n, err)
	}
}

// encrypted returns n random bytes and a c4gh.ReaderAt of them
// encrypted, whose encrypted bytes read are counted.
func encrypted(t testing.TB, n int) ([]byte, *c4gh.ReaderAt, *countingReaderAt) {
	data := make([]byte, n)
	rand.Read(data)
	ra, _, c := encrypt(t, data)
	return data, ra, c
}

// TestWriteDecryptsOnce: Write of a long range of an encrypted file reads
// each segment it touches once.
func TestWriteDecryptsOnce(t *testing.T) {
	data, ra, c := encrypted(t, 4<<20)
	start, end := int64(100_000), int64(3_000_000)
	c.n.Store(0)
	var out bytes.Buffer
	if _, err := Write(&out, ra, []Piece{{Start: start, End: end}}); err != nil || !bytes.Equal(out.Bytes(), data[start:end]) {
		t.Fatalf("Write: %v", err)
	}
	segments := body.SegmentOf(end-1) - body.SegmentOf(start) + 1
	if want, n := segments*body.EncryptedSegmentSize, c.n.Load(); n != want {
		t.Errorf("read %d encrypted bytes for %d segments (%d bytes)", n, segments, want)
	}
}

// BenchmarkWrite writes 1.4 MiB of an encrypted file, as decrypt
// --region does for a region of about 1 MiB: with Write (on one
// goroutine: less than parallelMin), and one segment after the other
// (c4gh.ReaderAt.CopyRange) for comparison.
func BenchmarkWrite(b *testing.B) {
	_, ra, _ := encrypted(b, 4<<20)
	start, end := int64(100_000), int64(100_000+1_450_000)
	b.Run("Write", func(b *testing.B) {
		b.SetBytes(end - start)
		for b.Loop() {
			if _, err := Write(io.Discard, ra, []Piece{{Start: start, End: end}}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("CopyRange", func(b *testing.B) {
		b.SetBytes(end - start)
		for b.Loop() {
			if _, err := ra.CopyRange(io.Discard, start, end); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// concurrentReaderAt notes how many reads it served at once, at most.
type concurrentReaderAt struct {
	r          io.ReaderAt
	serial     bool
	now, most  atomic.Int32
	sleepEvery time.Duration
}

func (c *concurrentReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n := c.now.Add(1)
	defer c.now.Add(-1)
	for m := c.most.Load(); n > m && !c.most.CompareAndSwap(m, n); m = c.most.Load() {
	}
	time.Sleep(c.sleepEvery) // reads overlap if they come at once
	return c.r.ReadAt(p, off)
}

func (c *concurrentReaderAt) Serial() bool { return c.serial }

// TestSerial: Write and ReadIndex read a Serial source one read at a
// time, and another in parallel parts where there are cores for them and
// there is enough to read (parallelMin).
func TestSerial(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("one core: nothing is read in parallel")
	}
	data := make([]byte, parallelMin)
	bai := largeBAI(40, 100_000_000)
	if len(bai) < parallelMin {
		t.Fatalf("a BAI of %d bytes: too small to be read in parallel", len(bai))
	}
	for _, serial := range []bool{true, false} {
		c := &concurrentReaderAt{r: bytes.NewReader(data), serial: serial, sleepEvery: 2 * time.Millisecond}
		if _, err := Write(io.Discard, c, []Piece{{Start: 0, End: int64(len(data))}}); err != nil {
			t.Fatal(err)
		}
		ci := &concurrentReaderAt{r: bytes.NewReader(bai), serial: serial, sleepEvery: 2 * time.Millisecond}
		if _, err := ReadIndex(ci, int64(len(bai)), "x.bai"); err != nil {
			t.Fatal(err)
		}
		for what, most := range map[string]int32{"Write": c.most.Load(), "ReadIndex": ci.most.Load()} {
			if serial && most != 1 || !serial && most < 2 {
				t.Errorf("%s, Serial() %v: %d reads at once", what, serial, most)
			}
		}
	}
}
