package region

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// bamRecords returns n bytes of BAM records like those of
// scripts/samgen: reads of 100 random bases with constant qualities.
func bamRecords(n int) []byte {
	rng := rand.New(rand.NewPCG(3, 4))
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		var rec bytes.Buffer
		name := []byte("read" + string(rune('a'+i%26)) + "000000\x00")
		fixed := make([]byte, 32)
		binary.LittleEndian.PutUint32(fixed[4:], uint32(1000+i*7)) // pos
		fixed[8] = byte(len(name))
		binary.LittleEndian.PutUint16(fixed[12:], 1) // one CIGAR op
		binary.LittleEndian.PutUint32(fixed[16:], 100)
		rec.Write(fixed)
		rec.Write(name)
		binary.Write(&rec, binary.LittleEndian, uint32(100<<4))
		for range 50 {
			rec.WriteByte(byte(1<<rng.IntN(4))<<4 | byte(1<<rng.IntN(4)))
		}
		rec.Write(bytes.Repeat([]byte{30}, 100))
		binary.Write(&b, binary.LittleEndian, uint32(rec.Len()))
		b.Write(rec.Bytes())
	}
	return b.Bytes()[:n]
}

// BenchmarkCompressBlocks compresses a BGZF block's worth of BAM records
// as an edge block is compressed again (compressBlocks, the package's own
// encoder), and with a flate.Writer at BestSpeed and at the default
// level, kept between blocks, for comparison; bytes/block is the
// compressed size. The time of a block here is that of a process whose
// memory is its own already: in a new one, a flate.Writer's first block
// took about 90 page faults, the package's encoder about 50 with the
// buffers around it.
func BenchmarkCompressBlocks(b *testing.B) {
	data := bamRecords(blockPayload)
	b.Run("compressBlocks", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		var out []byte
		for b.Loop() {
			out = compressBlocks(data)
		}
		b.ReportMetric(float64(len(out)), "bytes/block")
	})
	for _, level := range []struct {
		name  string
		level int
	}{{"flate-best-speed", flate.BestSpeed}, {"flate-default", flate.DefaultCompression}} {
		b.Run(level.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			fw, _ := flate.NewWriter(nil, level.level)
			var out bytes.Buffer
			for b.Loop() {
				out.Reset()
				fw.Reset(&out)
				fw.Write(data)
				fw.Close()
			}
			b.ReportMetric(float64(out.Len()+26), "bytes/block")
		})
	}
}

// BenchmarkReadBlock reads and decompresses one BGZF block of BAM
// records, as a plan does for each edge block.
func BenchmarkReadBlock(b *testing.B) {
	data := bamRecords(blockPayload)
	file := compressBlocks(data)
	src := bytes.NewReader(file)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := readBlock(src, int64(len(file)), 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPlan plans a region of the fixtures' BAM that starts and ends
// inside blocks: its two edge blocks decompressed, cut and compressed
// again (on one core: there are fewer than parallelEdges).
func BenchmarkPlan(b *testing.B) {
	f := openFixture(b, fixtures(b), "reads.bam", "reads.bam.bai")
	r, err := Parse("chr1:50000-120000")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		p, err := f.Plan([]Region{r})
		if err != nil {
			b.Fatal(err)
		}
		if p.New == 0 {
			b.Fatal("no edge blocks")
		}
	}
}
