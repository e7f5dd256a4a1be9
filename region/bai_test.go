package region

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/biogo/hts/bam"
	"github.com/biogo/hts/bgzf"
	"github.com/biogo/hts/sam"

	"github.com/c4gh-go/crypt4gh/internal/clitest"
)

// biogoChunks returns the chunks that biogo/hts's BAI reader gives for
// [beg, end) of reference ref, merged as a plan merges them; ok is false
// when it cannot read the index (it may panic on a malformed one).
func biogoChunks(t testing.TB, b []byte, nref int, qs []baiQuery) (out [][]span, ok bool) {
	defer func() {
		if p := recover(); p != nil {
			ok = false
		}
	}()
	idx, err := bam.ReadIndex(bytes.NewReader(b))
	if err != nil {
		return nil, false
	}
	if idx == nil { // an index without references
		return make([][]span, len(qs)), true
	}
	refs := make([]*sam.Reference, nref)
	for i := range refs {
		r, err := sam.NewReference(fmt.Sprint("r", i), "", "", 1, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		refs[i] = r
	}
	if _, err := sam.NewHeader(nil, refs); err != nil {
		t.Fatal(err)
	}
	for _, q := range qs {
		cs, _ := idx.Chunks(refs[q.ref], int(q.beg), int(q.end)) // errors: no chunks
		out = append(out, merged(cs))
	}
	return out, true
}

type baiQuery struct {
	ref      int
	beg, end int64
}

// leanChunks returns what parseBAI and baiIndex.chunks give for the
// queries, merged.
func leanChunks(t testing.TB, b []byte, qs []baiQuery) ([][]span, error) {
	x, _, err := parseBAI(b)
	if err != nil {
		return nil, err
	}
	var out [][]span
	for _, q := range qs {
		cs, err := x.chunks(q.ref, q.beg, q.end)
		if err != nil && err != errNoChunks {
			t.Fatalf("chunks %v: %v", q, err)
		}
		out = append(out, merged(cs))
	}
	return out, nil
}

func merged(cs []bgzf.Chunk) []span {
	var spans []span
	for _, c := range cs {
		spans = append(spans, span{voffset{c.Begin.File, int64(c.Begin.Block)}, voffset{c.End.File, int64(c.End.Block)}})
	}
	return mergeSpans(spans)
}

// covers reports whether every span of want lies inside one of got.
func covers(got, want []span) bool {
	for _, w := range want {
		if !slices.ContainsFunc(got, func(g span) bool { return !w.begin.less(g.begin) && !g.end.less(w.end) }) {
			return false
		}
	}
	return true
}

// randomQueries returns n regions on the references of an index of nref
// references, of all sizes, within the 2^29 positions of BAI.
func randomQueries(rng *rand.Rand, nref, n int) []baiQuery {
	var qs []baiQuery
	for range n {
		beg := rng.Int64N(1 << 29)
		if rng.IntN(2) == 0 {
			beg = rng.Int64N(1 << 20)
		}
		end := min(beg+1+rng.Int64N([]int64{100, 1 << 14, 1 << 20, 1 << 29}[rng.IntN(4)]), 1<<29)
		qs = append(qs, baiQuery{ref: rng.IntN(nref + 1), beg: beg, end: end})
	}
	return qs
}

// randomBAI writes a BAI index of nref references with random bins,
// chunks and linear indexes; unique bins, a pseudo-bin and a sorted
// linear index when tidy, else anything the format allows.
func randomBAI(rng *rand.Rand, nref int, tidy bool) []byte {
	var b bytes.Buffer
	u32 := func(v uint32) { binary.Write(&b, binary.LittleEndian, v) }
	u64 := func(v uint64) { binary.Write(&b, binary.LittleEndian, v) }
	// Offsets from a small pool, give or take one, so that chunk ends
	// meet the linear index's offsets.
	pool := make([]uint64, 40)
	for i := range pool {
		pool[i] = rng.Uint64N(1<<30)<<16 | rng.Uint64N(1<<16)
	}
	voff := func() uint64 { return pool[rng.IntN(len(pool))] + rng.Uint64N(3) - 1 }
	b.WriteString("BAI\x01")
	u32(uint32(nref))
	for range nref {
		nbin := rng.IntN(40)
		bins := map[uint32]bool{}
		var list []uint32
		for len(list) < nbin {
			bin := uint32(rng.IntN(37449))
			if rng.IntN(3) == 0 {
				bin = uint32(4681 + rng.IntN(200)) // small bins near the start
			}
			if tidy && bins[bin] {
				continue
			}
			bins[bin] = true
			list = append(list, bin)
		}
		pseudo := tidy || rng.IntN(2) == 0
		u32(uint32(len(list) + map[bool]int{true: 1}[pseudo]))
		for _, bin := range list {
			u32(bin)
			n := 1 + rng.IntN(4)
			u32(uint32(n))
			for range n {
				beg, end := voff(), voff()
				u64(min(beg, end))
				u64(max(beg, end))
			}
		}
		if pseudo {
			u32(baiPseudoBin)
			u32(2)
			beg, end := voff(), voff()
			u64(min(beg, end))
			u64(max(beg, end))
			u64(rng.Uint64N(1000))
			u64(rng.Uint64N(1000))
		}
		nintv := rng.IntN(100)
		u32(uint32(nintv))
		offs := make([]uint64, nintv)
		for i := range offs {
			offs[i] = voff()
			if rng.IntN(5) == 0 {
				offs[i] = 0
			}
		}
		if tidy {
			slices.Sort(offs)
		}
		for _, o := range offs {
			u64(o)
		}
	}
	if rng.IntN(2) == 0 {
		u64(rng.Uint64N(100))
	}
	return b.Bytes()
}

// TestBAIAgainstBiogo compares the lean BAI reader with biogo/hts's on the
// fixtures' BAI and on random indexes: the same chunks, once merged, for
// every region; on untidy indexes (a bin given twice, of which biogo/hts
// reads one) at least biogo's.
func TestBAIAgainstBiogo(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 5))
	type fixture struct {
		name string
		b    []byte
		nref int
		tidy bool
	}
	var fxs []fixture
	if !testing.Short() {
		dir := fixtures(t)
		b, err := os.ReadFile(filepath.Join(dir, "reads.bam.bai"))
		if err != nil {
			t.Fatal(err)
		}
		fxs = append(fxs, fixture{"reads.bam.bai", b, len(refs), true})
	}
	for i := range 200 {
		nref := rng.IntN(4)
		tidy := i%2 == 0
		fxs = append(fxs, fixture{fmt.Sprintf("random %d", i), randomBAI(rng, nref, tidy), nref, tidy})
	}
	for _, fx := range fxs {
		qs := randomQueries(rng, fx.nref, 100)
		if fx.name == "reads.bam.bai" {
			for ref, r := range refs {
				qs = append(qs, baiQuery{ref, 0, int64(r.length)}, baiQuery{ref, 999, 1100}, baiQuery{ref, 0, 1}, baiQuery{ref, int64(r.length) - 100, int64(r.length)})
			}
		}
		want, ok := biogoChunks(t, fx.b, fx.nref+1, qs)
		if !ok {
			t.Fatalf("%s: biogo/hts cannot read it", fx.name)
		}
		got, err := leanChunks(t, fx.b, qs)
		if err != nil {
			t.Fatalf("%s: %v", fx.name, err)
		}
		x, _, _ := parseBAI(fx.b)
		for i, q := range qs {
			// Past the linear index biogo/hts gives no chunks, where
			// htslib and @gmod/bam give those of the bins
			// (TestPastLinearIndex).
			past := q.ref < len(x.refs) && q.beg>>14 >= int64(x.refs[q.ref].nintv)
			if fx.tidy && !past && !slices.Equal(got[i], want[i]) || !covers(got[i], want[i]) {
				t.Errorf("%s, reference %d [%d, %d): %v, biogo/hts %v", fx.name, q.ref, q.beg, q.end, got[i], want[i])
			}
		}
	}
}

// FuzzBAI feeds BAI lookalikes to parseBAI and asks for chunks: no panic,
// and where biogo/hts reads the index too, no chunk of its missing.
func FuzzBAI(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 8 {
		f.Add(randomBAI(rng, 1+rng.IntN(2), rng.IntN(2) == 0), uint32(rng.Uint64()), uint32(rng.Uint64()))
	}
	f.Add([]byte("BAI\x01\x01\x00\x00\x00\x01\x00\x00\x00\x49\x92\x00\x00\x01\x00\x00\x00"+string(make([]byte, 16))+"\x01\x00\x00\x00"+string(make([]byte, 8))), uint32(0), uint32(100))
	f.Add([]byte("0000\x00\x00\x00\x00"), uint32(3070784902), uint32(344402123)) // no magic: parseBAI does not look
	f.Fuzz(func(t *testing.T, b []byte, beg, length uint32) {
		x, _, err := parseBAI(b)
		if err != nil {
			return
		}
		q := []baiQuery{{0, int64(beg % (1 << 29)), 0}}
		q[0].end = min(q[0].beg+1+int64(length%(1<<29)), 1<<29)
		for ref := range min(len(x.refs), 4) {
			q = append(q, baiQuery{ref, q[0].beg, q[0].end})
		}
		got, _ := leanChunks(t, b, q)
		checkWindowed(t, "fuzz", b, q)
		// biogo/hts compares offsets as signed numbers: above 2^63
		// the two differ, and no file is that large.
		if hasHugeOffset(b) {
			return
		}
		want, ok := biogoChunks(t, b, len(x.refs)+1, q)
		if !ok {
			return
		}
		for i := range q {
			if !covers(got[i], want[i]) {
				t.Fatalf("%v: %v, biogo/hts %v", q[i], got[i], want[i])
			}
		}
	})
}

// hasHugeOffset reports whether any aligned 8 bytes of b, read as a
// little-endian number, reach 2^63: a crude test that errs towards yes.
func hasHugeOffset(b []byte) bool {
	for i := 0; i+8 <= len(b); i++ {
		if b[i+7]&0x80 != 0 {
			return true
		}
	}
	return false
}

// BenchmarkBAI reads a BAI index of a large BAM (two references, a
// chunk a 16 kbp bin over 10^8 bases each, as samtools writes for a
// 1 GiB BAM) and finds the chunks of a 200 kbp region, by the lean
// reader, by the walk a command makes for its regions (readBAIFor) and by
// biogo/hts.
func BenchmarkBAI(b *testing.B) {
	idx := largeBAI(2, 100_000_000)
	b.Run("lean", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(idx)))
		for b.Loop() {
			x, _, err := parseBAI(idx)
			if err != nil {
				b.Fatal(err)
			}
			if cs, _ := x.chunks(0, 50_000_000, 50_200_000); len(cs) == 0 {
				b.Fatal("no chunks")
			}
		}
	})
	b.Run("for", func(b *testing.B) { // a command's walk, for one region
		b.ReportAllocs()
		b.SetBytes(int64(len(idx)))
		ts := []target{{ref: 0, start: 50_000_000, end: 50_200_000}}
		for b.Loop() {
			x, err := readBAIFor(bytes.NewReader(idx), int64(len(idx)), ts)
			if err != nil {
				b.Fatal(err)
			}
			if cs, _, _ := x.bai.answer(0, 50_000_000, 50_200_000); len(cs) == 0 {
				b.Fatal("no chunks")
			}
		}
	})
	b.Run("biogo", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(idx)))
		ref, _ := sam.NewReference("r0", "", "", 1, nil, nil)
		other, _ := sam.NewReference("r1", "", "", 1, nil, nil)
		sam.NewHeader(nil, []*sam.Reference{ref, other})
		for b.Loop() {
			x, err := bam.ReadIndex(bytes.NewReader(idx))
			if err != nil {
				b.Fatal(err)
			}
			if cs, _ := x.Chunks(ref, 50_000_000, 50_200_000); len(cs) == 0 {
				b.Fatal("no chunks")
			}
		}
	})
}

// largeBAI writes the BAI index of a sorted BAM of nref references of n
// bases, its reads spread evenly: one chunk in each 16 kbp bin, one in
// each larger bin, and a linear index, as samtools would write.
func largeBAI(nref int, n int64) []byte {
	var b bytes.Buffer
	u32 := func(v uint32) { binary.Write(&b, binary.LittleEndian, v) }
	u64 := func(v uint64) { binary.Write(&b, binary.LittleEndian, v) }
	b.WriteString("BAI\x01")
	u32(uint32(nref))
	// About 500 MiB of BAM a reference: 5 bytes of BAM a base.
	perBase := uint64(5)
	var pos uint64
	for range nref {
		tiles := (n + 1<<14 - 1) >> 14
		var bins []uint32
		for l := 1; l < 6; l++ {
			for k := int64(0); k <= (n-1)>>baiShift[l]; k++ {
				bins = append(bins, baiFirst[l]+uint32(k))
			}
		}
		u32(uint32(len(bins) + 1))
		for _, bin := range bins {
			l := 5
			for bin < baiFirst[l] {
				l--
			}
			k := uint64(bin - baiFirst[l])
			beg := pos + k<<baiShift[l]*perBase
			u32(bin)
			u32(1)
			u64(beg << 16)
			u64((beg + 1<<baiShift[l]*perBase/64) << 16)
		}
		u32(baiPseudoBin)
		u32(2)
		u64(pos << 16)
		u64((pos + uint64(n)*perBase) << 16)
		u64(uint64(n / 100))
		u64(0)
		u32(uint32(tiles))
		for k := range tiles {
			u64((pos + uint64(k)<<14*perBase) << 16)
		}
		pos += uint64(n) * perBase
	}
	return b.Bytes()
}

// TestAfterKeepsRecords plans regions of a BAM whose larger bins hold
// chunks far past the regions (reads across 16 kbp and 1 Mbp boundaries;
// enough reads that samtools keeps its leaf bins rather than merging
// them into larger ones), which the plan leaves out: the output still
// holds every record of each region, as samtools counts them, and some
// plans are smaller than the index's chunks.
func TestAfterKeepsRecords(t *testing.T) {
	if testing.Short() {
		t.Skip("makes a BAM with samtools")
	}
	clitest.Tool(t, "samtools")
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(21, 22))
	const length, n = 1_200_000, 100
	var sam bytes.Buffer
	fmt.Fprintf(&sam, "@HD\tVN:1.6\tSO:unsorted\n@SQ\tSN:c\tLN:%d\n", length)
	seq := make([]byte, n)
	for i := range 150_000 {
		pos := rng.IntN(length - n)
		switch {
		case i%1000 == 0: // across 1 Mbp: in a bin of 8 Mbp
			pos = 1<<20 - n/2
		case i%10 == 0: // across a 16 kbp tile
			pos = (1+rng.IntN(length>>14-1))<<14 - n/2
		}
		for j := range seq {
			seq[j] = "ACGT"[rng.IntN(4)]
		}
		fmt.Fprintf(&sam, "r%d\t0\tc\t%d\t60\t%dM\t*\t0\t0\t%s\t%s\n", i, pos+1, n, seq, strings.Repeat("I", n))
	}
	os.WriteFile(filepath.Join(dir, "reads.sam"), sam.Bytes(), 0o666)
	run(t, dir, "samtools", "sort", "-o", "reads.bam", "reads.sam")
	run(t, dir, "samtools", "index", "reads.bam")
	f := openFixture(t, dir, "reads.bam", "reads.bam.bai")
	smaller := 0
	for i := range 12 {
		beg := rng.Int64N(1_000_000 - 200_000)
		end := beg + 1 + rng.Int64N(200_000)
		if i == 0 {
			beg, end = 100_000, 110_000
		}
		r := Region{Name: "c", Start: beg, End: end}
		writeRegions(t, f, dir, "out.bam", []string{r.String()})
		run(t, dir, "samtools", "index", "out.bam")
		want := run(t, dir, "samtools", "view", "-c", "reads.bam", r.String())
		if got := run(t, dir, "samtools", "view", "-c", "out.bam", r.String()); got != want {
			t.Errorf("%s: %s records, %s in the BAM", r, strings.TrimSpace(got), strings.TrimSpace(want))
		}
		all, _ := f.idx.bai.chunks(0, beg, end)
		if kept, _ := f.chunks(target{ref: 0, start: beg, end: end}); len(kept) < len(all) {
			smaller++
		}
	}
	if smaller == 0 {
		t.Errorf("no plan left out a chunk past its region")
	}
}

// fullAnswer is what File.chunks gives for q from a BAI read whole:
// baiIndex.chunks less the chunks at or after baiIndex.after.
func fullAnswer(x *baiIndex, q baiQuery) ([]bgzf.Chunk, error) {
	cs, err := x.chunks(q.ref, q.beg, q.end)
	bound := x.after(q.ref, q.end)
	return slices.DeleteFunc(cs, func(c bgzf.Chunk) bool { return uint64(c.Begin.File)<<16|uint64(c.Begin.Block) >= bound }), err
}

// checkWindowed checks that readBAIFor, reading b in windows and keeping
// the answers for qs only, fails where parseBAI fails and otherwise
// learns the same offsets and gives the same chunks.
func checkWindowed(t *testing.T, name string, b []byte, qs []baiQuery) {
	t.Helper()
	full, st, err := parseBAI(b)
	// The targets of a plan: sorted and merged.
	var ts []target
	for _, q := range qs {
		ts = append(ts, target{ref: q.ref, start: q.beg, end: q.end})
	}
	ts = mergeTargets(ts)
	qs = nil
	for _, t := range ts {
		qs = append(qs, baiQuery{t.ref, t.start, t.end})
	}
	x, werr := readBAIFor(bytes.NewReader(b), int64(len(b)), ts)
	if (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() {
		t.Fatalf("%s: parseBAI: %v; readBAIFor: %v", name, err, werr)
	}
	if err != nil {
		return
	}
	if x.stats != st {
		t.Errorf("%s: readBAIFor learnt %+v, parseBAI %+v", name, x.stats, st)
	}
	for _, q := range qs {
		want, wantErr := fullAnswer(full, q)
		got, ok, gotErr := x.bai.answer(q.ref, q.beg, q.end)
		// The same once merged: either may leave out a chunk that
		// lies inside one before it in its bin.
		if !ok || gotErr != wantErr || !slices.Equal(merged(got), merged(want)) {
			t.Errorf("%s, reference %d [%d, %d): windowed %v (%v, %v), whole %v (%v)", name, q.ref, q.beg, q.end, got, ok, gotErr, want, wantErr)
		}
	}
}

// TestBAIWindowed compares the BAI read in windows for some regions
// (readBAIFor) with the BAI read whole, on random indexes, a large one
// (600 kB: many windows, bins across their edges) and the fixtures'.
func TestBAIWindowed(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 7))
	for i := range 200 {
		nref := rng.IntN(4)
		checkWindowed(t, fmt.Sprint("random ", i), randomBAI(rng, nref, i%2 == 0), randomQueries(rng, nref, 20))
	}
	large := largeBAI(2, 100_000_000)
	qs := append(randomQueries(rng, 2, 50), baiQuery{0, 50_000_000, 50_200_000}, baiQuery{1, 0, 1 << 29}, baiQuery{1, 99_000_000, 100_000_000})
	checkWindowed(t, "large", large, qs)
	for _, cut := range []int{len(large) - 1, len(large) / 2, 1 << 16, 1<<16 + 3} {
		checkWindowed(t, fmt.Sprint("large cut at ", cut), large[:cut], qs)
	}
}

// TestPastLinearIndex: a region that starts past a reference's linear
// index gets the chunks of the bins that overlap it, bounded below by the
// linear index's last entry (as @gmod/bam bounds them), or by nothing
// where the reference has no linear index (as htslib reads such an
// index), from a BAI read whole and from one read in windows. biogo/hts,
// and this package before, gave no chunks at all.
func TestPastLinearIndex(t *testing.T) {
	const tile = 1 << 14
	// One reference: bin 0 holds a chunk of records that span the whole
	// reference, the leaf bin of tile 5 one of records in that tile.
	bai := func(linear ...uint64) []byte {
		b := []byte("BAI\x01")
		b = binary.LittleEndian.AppendUint32(b, 1)
		b = binary.LittleEndian.AppendUint32(b, 2) // bins
		for _, bin := range []struct {
			n          uint32
			begin, end uint64
		}{{0, 50 << 16, 300 << 16}, {baiFirst[5] + 5, 400 << 16, 500 << 16}} {
			b = binary.LittleEndian.AppendUint32(b, bin.n)
			b = binary.LittleEndian.AppendUint32(b, 1)
			b = binary.LittleEndian.AppendUint64(b, bin.begin)
			b = binary.LittleEndian.AppendUint64(b, bin.end)
		}
		b = binary.LittleEndian.AppendUint32(b, uint32(len(linear)))
		for _, u := range linear {
			b = binary.LittleEndian.AppendUint64(b, u)
		}
		return b
	}
	both := []span{{voffset{50, 0}, voffset{300, 0}}, {voffset{400, 0}, voffset{500, 0}}}
	leaf := []span{{voffset{400, 0}, voffset{500, 0}}}
	for _, c := range []struct {
		name   string
		linear []uint64
		want   []span
	}{
		{"no linear index", nil, both},
		{"a linear index of two tiles, the last entry past bin 0's chunk", []uint64{50 << 16, 350 << 16}, leaf},
		{"a linear index of two tiles, the last entry inside bin 0's chunk", []uint64{50 << 16, 60 << 16}, both},
	} {
		b := bai(c.linear...)
		q := baiQuery{0, 5*tile + 100, 5*tile + 200}
		got, err := leanChunks(t, b, []baiQuery{q})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(mergeSpans(got[0]), mergeSpans(c.want)) {
			t.Errorf("%s: chunks %v, want %v", c.name, got[0], c.want)
		}
		checkWindowed(t, c.name, b, []baiQuery{q})
	}
}
