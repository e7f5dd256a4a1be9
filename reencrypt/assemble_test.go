package reencrypt_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	theirs "github.com/neicnordic/crypt4gh/streaming"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/internal/errkind"
	"github.com/c4gh-go/crypt4gh/keys"
	"github.com/c4gh-go/crypt4gh/reencrypt"
)

// ourEncrypt encrypts plain for the recipients with package c4gh.
func ourEncrypt(t testing.TB, plain []byte, recipients ...keys.PublicKey) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := c4gh.NewWriter(&b, c4gh.EncryptOptions{Recipients: recipients})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(plain); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func assembleBytes(file []byte, pieces []reencrypt.Piece, opts reencrypt.AssembleOptions) ([]byte, error) {
	var out bytes.Buffer
	err := reencrypt.Assemble(&out, bytes.NewReader(file), pieces, opts)
	return out.Bytes(), err
}

// concat is what the pieces stand for, given what the source stands for.
func concat(stands []byte, pieces []reencrypt.Piece) []byte {
	var out []byte
	for _, p := range pieces {
		if p.Data != nil {
			out = append(out, p.Data...)
			continue
		}
		end := p.End
		if end == edit.Unbounded {
			end = int64(len(stands))
		}
		out = append(out, stands[p.Start:end]...)
	}
	return out
}

// oracleDecrypt decrypts file with neicnordic/crypt4gh.
func oracleDecrypt(file []byte, sk *keys.SecretKey) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("oracle panicked: %v", r)
		}
	}()
	r, err := theirs.NewCrypt4GHReader(bytes.NewReader(file), *sk, nil)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// checkAssembled decrypts out with c4gh and with the oracle, for each
// reader, and compares with want.
func checkAssembled(t *testing.T, out, want []byte, readers ...*keys.SecretKey) {
	t.Helper()
	for _, sk := range readers {
		got, err := tryDecrypt(out, sk)
		if err != nil {
			t.Fatalf("c4gh: %v", err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("c4gh: got %d bytes, want %d; first difference at %d", len(got), len(want), firstDiff(got, want))
		}
		got, err = oracleDecrypt(out, sk)
		if err != nil {
			t.Fatalf("oracle: %v", err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("oracle: got %d bytes, want %d; first difference at %d", len(got), len(want), firstDiff(got, want))
		}
	}
}

// bodyLen returns the length of the body of file.
func bodyLen(t *testing.T, file []byte) int64 {
	t.Helper()
	h, err := header.Parse(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	return int64(len(file)) - h.Size()
}

// sizeBound is the most that the body of an assembly of pieces may take:
// every segment that a range touches (in the body plaintext, kept maps
// what the source stands for to it), plus the new bytes sealed, plus one
// segment of padding or of re-sealed last segment per piece.
func sizeBound(kept []edit.Interval, size int64, pieces []reencrypt.Piece) int64 {
	var n int64
	for _, p := range pieces {
		n += encSeg
		if p.Data != nil {
			n += body.EncryptedSize(int64(len(p.Data)))
			continue
		}
		seen := map[int64]bool{}
		for _, iv := range edit.Map(kept, p.Start, min(p.End, size)) {
			for k := body.SegmentOf(iv.Start); k <= body.SegmentOf(iv.End-1); k++ {
				seen[k] = true
			}
		}
		n += int64(len(seen)) * encSeg
	}
	return n
}

// randomPieces returns up to max pieces of a source that stands for size
// bytes: ranges (often on segment boundaries, sometimes empty, out of
// order, overlapping, adjacent) and new bytes (often small, sometimes more
// than a segment).
func randomPieces(rng *rand.Rand, size int64, max int) []reencrypt.Piece {
	point := func() int64 {
		if size == 0 {
			return 0
		}
		switch rng.IntN(4) {
		case 0:
			return min(body.Floor(rng.Int64N(size+1)), size)
		case 1:
			return min(body.Floor(rng.Int64N(size+1))+seg+int64(rng.IntN(3))-1, size)
		}
		return rng.Int64N(size + 1)
	}
	var ps []reencrypt.Piece
	var prevEnd int64
	for range rng.IntN(max + 1) {
		switch rng.IntN(6) {
		case 0:
			n := rng.IntN(300)
			if rng.IntN(5) == 0 {
				n = rng.IntN(2*seg + 10)
			}
			d := make([]byte, n)
			for i := range d {
				d[i] = byte(rng.Uint32())
			}
			ps = append(ps, reencrypt.Piece{Data: d})
		case 1: // goes on where the last range ended
			e := min(prevEnd+rng.Int64N(seg), size)
			ps = append(ps, reencrypt.Piece{Start: prevEnd, End: e})
			prevEnd = e
		case 2: // to the end
			s := point()
			ps = append(ps, reencrypt.Piece{Start: s, End: edit.Unbounded})
			prevEnd = size
		default:
			a, b := point(), point()
			if a > b {
				a, b = b, a
			}
			ps = append(ps, reencrypt.Piece{Start: a, End: b})
			prevEnd = b
		}
	}
	return ps
}

func TestAssembleRandom(t *testing.T) {
	alice, bob := newKey(t), newKey(t)
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := []int{0, 1, 100, seg - 1, seg, seg + 1, 2*seg + 500, 3 * seg, 4*seg + 17}
	rounds := 12
	if testing.Short() {
		rounds = 4
	}
	for _, size := range sizes {
		plain := plaintext(size, uint64(size))
		file := ourEncrypt(t, plain, alice.Public())
		for i := range rounds {
			pieces := randomPieces(rng, int64(size), 8)
			t.Run(fmt.Sprintf("%d/%d", size, i), func(t *testing.T) {
				out, err := assembleBytes(file, pieces, reencrypt.AssembleOptions{Reader: alice, Recipients: []keys.PublicKey{bob.Public()}})
				if err != nil {
					t.Fatalf("pieces %v: %v", pieces, err)
				}
				checkAssembled(t, out, concat(plain, pieces), bob)
				if _, err := tryDecrypt(out, alice); !errors.Is(err, header.ErrNoDecryptablePacket) {
					t.Fatalf("the reader, not a recipient, opens the new file: %v", err)
				}
				if n, bound := bodyLen(t, out), sizeBound(nil, int64(size), pieces); n > bound {
					t.Fatalf("body of %d bytes, more than the bound %d", n, bound)
				}
				if told, err := reencrypt.AssembledSize(pieces, nil, int64(size)); err != nil || bodyLen(t, out) != told {
					t.Fatalf("body of %d bytes; AssembledSize says %d (%v)", bodyLen(t, out), told, err)
				}
			})
		}
	}
}

// A source with an edit list and several data keys: the pieces are of what
// it stands for.
func TestAssembleEditedSource(t *testing.T) {
	writer, alice, bob := newKey(t), newKey(t), newKey(t)
	rng := rand.New(rand.NewPCG(3, 4))
	plain := plaintext(5*seg+321, 9)
	parts := []part{{dataKey(1), 2 * seg}, {dataKey(50), seg}, {dataKey(100), 2*seg + 321}}
	lists := [][]uint64{
		{100, 2000, seg, 3 * seg, 17},
		{0, 7853, 71721, 107929, 51299, 38},
		{seg, 10, 2 * seg},
		{5, 5*seg + 1000}, // a keep past the end of the data
	}
	for li, el := range lists {
		file := build(t, plain, parts, el, writer, alice.Public())
		stands := modelOf(t, file, alice).output()
		_, c := contents(t, file, alice)
		kept := edit.StandsFor(c.EditList, int64(len(plain))).Kept
		for i := range 6 {
			pieces := randomPieces(rng, int64(len(stands)), 8)
			t.Run(fmt.Sprintf("%d/%d", li, i), func(t *testing.T) {
				out, err := assembleBytes(file, pieces, reencrypt.AssembleOptions{Reader: alice, Recipients: []keys.PublicKey{bob.Public(), alice.Public()}})
				if err != nil {
					t.Fatalf("pieces %v: %v", pieces, err)
				}
				checkAssembled(t, out, concat(stands, pieces), bob, alice)
				if n, bound := bodyLen(t, out), sizeBound(kept, int64(len(stands)), pieces); n > bound {
					t.Fatalf("body of %d bytes, more than the bound %d", n, bound)
				}
				if told, err := reencrypt.AssembledSize(pieces, c.EditList, int64(len(plain))); err != nil || bodyLen(t, out) != told {
					t.Fatalf("body of %d bytes; AssembledSize says %d (%v)", bodyLen(t, out), told, err)
				}
			})
		}
	}
}

// The shape of the new file: which segments, which edit list.
func TestAssembleLayout(t *testing.T) {
	alice := newKey(t)
	plain := plaintext(3*seg+100, 5)
	file := ourEncrypt(t, plain, alice.Public())
	segs := bodySegments(t, file)
	newSeg := func(n int) []byte { return make([]byte, n) } // a placeholder: new segments are compared by length
	cases := []struct {
		name   string
		pieces []reencrypt.Piece
		segs   [][]byte // the body: source segments, or placeholders of the new ones' length
		list   []uint64 // nil: no edit list
	}{
		{"nothing", nil, nil, nil},
		{"whole", []reencrypt.Piece{{Start: 0, End: edit.Unbounded}}, segs, nil},
		{"two ranges of one segment", []reencrypt.Piece{{Start: 10, End: 20}, {Start: 30, End: 40}},
			segs[:1], []uint64{10, 10, 10, 10}},
		{"adjacent ranges", []reencrypt.Piece{{Start: 0, End: seg + 5}, {Start: seg + 5, End: 2 * seg}},
			segs[:2], nil},
		{"the same range twice", []reencrypt.Piece{{Start: 10, End: 20}, {Start: 10, End: 20}},
			[][]byte{segs[0], segs[0]}, []uint64{10, 10, seg - 10, 10}},
		{"new bytes only", []reencrypt.Piece{{Data: []byte("hello")}, {Data: []byte(", world")}},
			[][]byte{newSeg(12 + body.Overhead)}, nil},
		{"new bytes between", []reencrypt.Piece{{Start: seg - 10, End: seg}, {Data: []byte("abc")}, {Start: 2 * seg, End: 2*seg + 4}},
			[][]byte{segs[0], newSeg(encSeg), segs[2]}, []uint64{seg - 10, 13, seg - 3, 4}},
		{"new bytes at the end", []reencrypt.Piece{{Start: 0, End: 5}, {Data: []byte("abc")}},
			[][]byte{segs[0], newSeg(3 + body.Overhead)}, []uint64{0, 5, seg - 5, 3}},
		{"the short last segment at the end", []reencrypt.Piece{{Start: 0, End: 1}, {Start: 3*seg + 1, End: 3*seg + 2}},
			[][]byte{segs[0], segs[3]}, []uint64{0, 1, seg, 1}},
		{"the short last segment before more", []reencrypt.Piece{{Start: 3*seg + 1, End: 3*seg + 2}, {Start: 0, End: 1}},
			[][]byte{newSeg(encSeg), segs[0]}, []uint64{0, 1, seg - 1, 1}},
		{"the end, then the whole last segment", []reencrypt.Piece{{Start: 3*seg - 1, End: 3*seg + 50}, {Start: 3*seg + 50, End: edit.Unbounded}},
			[][]byte{segs[2], segs[3]}, []uint64{seg - 1, 101}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := assembleBytes(file, tc.pieces, reencrypt.AssembleOptions{Reader: alice})
			if err != nil {
				t.Fatal(err)
			}
			checkAssembled(t, out, concat(plain, tc.pieces), alice)
			got := bodySegments(t, out)
			if len(got) != len(tc.segs) {
				t.Fatalf("%d segments, want %d", len(got), len(tc.segs))
			}
			for i := range got {
				isNew := len(tc.segs[i]) > 0 && tc.segs[i][0] == 0 && bytes.Count(tc.segs[i], []byte{0}) == len(tc.segs[i])
				if isNew && len(got[i]) != len(tc.segs[i]) || !isNew && !bytes.Equal(got[i], tc.segs[i]) {
					t.Fatalf("segment %d: %d bytes, not the one expected (%d bytes)", i, len(got[i]), len(tc.segs[i]))
				}
			}
			_, c := contents(t, out, alice)
			if !c.HasEditList && tc.list != nil || c.HasEditList && !slicesEqual(c.EditList, tc.list) {
				t.Fatalf("edit list %v (present: %v), want %v", c.EditList, c.HasEditList, tc.list)
			}
			if len(c.DataKeys) != 1 {
				t.Fatalf("%d data keys, want the source's one", len(c.DataKeys))
			}
		})
	}
}

func slicesEqual(a, b []uint64) bool {
	if len(a) != len(b) || (a == nil) != (b == nil) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// One range is what Splice writes: the same segments.
func TestAssembleLikeSplice(t *testing.T) {
	alice := newKey(t)
	plain := plaintext(4*seg+9, 6)
	file := ourEncrypt(t, plain, alice.Public())
	for _, r := range []edit.Range{rg(0, 1), rg(seg-1, seg+1), rg(100, 3*seg+5), rg(2*seg, open)} {
		out, err := assembleBytes(file, []reencrypt.Piece{{Start: r.Start, End: r.End}}, reencrypt.AssembleOptions{Reader: alice})
		if err != nil {
			t.Fatal(err)
		}
		spliced, err := spliceBytes(file, reencrypt.SpliceOptions{Reader: alice, Ranges: []edit.Range{r}})
		if err != nil {
			t.Fatal(err)
		}
		if a, s := bodySegments(t, out), bodySegments(t, spliced); len(a) != len(s) {
			t.Fatalf("range %v: %d segments, Splice keeps %d", r, len(a), len(s))
		}
		if !bytes.Equal(decrypt(t, out, alice), decrypt(t, spliced, alice)) {
			t.Fatalf("range %v: not what Splice gives", r)
		}
	}
}

func TestAssembleErrors(t *testing.T) {
	alice, eve := newKey(t), newKey(t)
	plain := plaintext(3*seg+100, 7)
	file := ourEncrypt(t, plain, alice.Public())
	size := int64(len(plain))
	opts := reencrypt.AssembleOptions{Reader: alice}
	tamper := func(k int64) []byte {
		f := bytes.Clone(file)
		f[len(f)-int(bodyLen(t, file))+int(body.EncryptedOffset(k))+body.NonceSize+3] ^= 1
		return f
	}
	cases := []struct {
		name   string
		file   []byte
		pieces []reencrypt.Piece
		opts   reencrypt.AssembleOptions
		want   error
		kind   errkind.Kind
		at     int64 // the segment named, for a tampered one
	}{
		{"wrong key", file, []reencrypt.Piece{{Start: 0, End: 1}}, reencrypt.AssembleOptions{Reader: eve}, header.ErrNoDecryptablePacket, errkind.Key, 0},
		{"no key", file, nil, reencrypt.AssembleOptions{}, nil, errkind.Usage, 0},
		{"past the end", file, []reencrypt.Piece{{Start: 0, End: size + 1}}, opts, edit.ErrInvalidRange, errkind.Usage, 0},
		{"starts past the end", file, []reencrypt.Piece{{Data: []byte("x")}, {Start: size + 1, End: size + 2}}, opts, edit.ErrBeyondEnd, errkind.Usage, 0},
		{"negative", file, []reencrypt.Piece{{Start: -1, End: 2}}, opts, edit.ErrInvalidRange, errkind.Usage, 0},
		{"reversed", file, []reencrypt.Piece{{Start: 5, End: 2}}, opts, edit.ErrInvalidRange, errkind.Usage, 0},
		{"tampered segment copied", tamper(1), []reencrypt.Piece{{Start: 0, End: 2 * seg}}, opts, body.ErrAuth, errkind.Data, 1},
		{"tampered last segment re-sealed", tamper(3), []reencrypt.Piece{{Start: 3 * seg, End: 3*seg + 1}, {Data: []byte("x")}}, opts, body.ErrAuth, errkind.Data, 3},
		{"not crypt4gh", []byte("hello, world, this is no crypt4gh file"), nil, opts, header.ErrNotCrypt4GH, errkind.Data, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := assembleBytes(tc.file, tc.pieces, tc.opts)
			if err == nil || tc.want != nil && !errors.Is(err, tc.want) || errkind.Of(err) != tc.kind {
				t.Fatalf("got %v (kind %v), want %v (kind %v)", err, errkind.Of(err), tc.want, tc.kind)
			}
			if errors.Is(err, body.ErrAuth) {
				var se *body.SegmentError
				if !errors.As(err, &se) {
					t.Fatalf("%v is no SegmentError", err)
				}
				if se.Index != tc.at {
					t.Fatalf("segment %d named, not the tampered one", se.Index)
				}
				return
			}
			if len(out) > 0 {
				t.Fatalf("%d bytes written before the error", len(out))
			}
		})
	}
	// A tampered segment that no piece needs is not read.
	if _, err := assembleBytes(tamper(2), []reencrypt.Piece{{Start: 0, End: seg}, {Start: 3 * seg, End: size}}, opts); err != nil {
		t.Fatal(err)
	}
}

// FuzzAssemble assembles pieces decoded from the input out of a small
// source, with or without an edit list, and decrypts the result: it must
// be the concatenation of the pieces, or an error of the usage kind for a
// piece that the source cannot give.
func FuzzAssemble(f *testing.F) {
	a, err := keys.Generate(nil)
	if err != nil {
		f.Fatal(err)
	}
	b, err := keys.Generate(nil)
	if err != nil {
		f.Fatal(err)
	}
	alice, bob := &a, &b
	sizes := []int{0, 1, 100, seg - 1, seg, seg + 1, 2*seg + 77, 3 * seg}
	f.Add(uint8(6), []byte{}, []byte{1, 0, 0, 0, 255, 255, 0})
	f.Add(uint8(7), []byte{3, 10, 0, 0, 200, 0, 0}, []byte{1, 5, 0, 0, 9, 0, 1, 0, 9, 0, 0, 3, 0, 0, 2, 0, 0, 1, 0, 0, 0, 4, 255, 255, 2})
	f.Add(uint8(2), []byte{}, []byte{})
	f.Fuzz(func(t *testing.T, sizeIndex uint8, list, piecesIn []byte) {
		if len(piecesIn) > 7*16 || len(list) > 16 {
			return
		}
		plain := plaintext(sizes[int(sizeIndex)%len(sizes)], uint64(sizeIndex))
		var el []uint64
		if len(list) > 0 {
			el = make([]uint64, int(list[0])%5)
			for i := range el {
				if 1+i < len(list) {
					el[i] = uint64(list[1+i]) * 1021
				}
			}
		}
		file := encrypt(t, plain, el, alice, alice.Public())
		stands := modelOf(t, file, alice).output()
		size := int64(len(stands))
		var pieces []reencrypt.Piece
		valid := true
		for b := piecesIn; len(b) >= 7; b = b[7:] {
			x := int64(b[1]) | int64(b[2])<<8 | int64(b[3])<<16
			y := int64(b[4]) | int64(b[5])<<8 | int64(b[6])<<16
			switch b[0] % 4 {
			case 0:
				pieces = append(pieces, reencrypt.Piece{Data: plaintext(int(x%(2*seg+3)), uint64(y))})
			case 1: // a range that may go past the end
				pieces = append(pieces, reencrypt.Piece{Start: x, End: x + y})
				valid = valid && x+y <= size
			default:
				s := x % (size + 1)
				pieces = append(pieces, reencrypt.Piece{Start: s, End: s + y%(size-s+1)})
			}
		}
		out, err := assembleBytes(file, pieces, reencrypt.AssembleOptions{Reader: alice, Recipients: []keys.PublicKey{bob.Public()}})
		if !valid {
			if err == nil || errkind.Of(err) != errkind.Usage {
				t.Fatalf("pieces %v of %d bytes: got %v, want a usage error", pieces, size, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("pieces %v of %d bytes: %v", pieces, size, err)
		}
		want := concat(stands, pieces)
		if got := decrypt(t, out, bob); !bytes.Equal(got, want) {
			t.Fatalf("pieces %v of %d bytes: got %d bytes, want %d; first difference at %d", pieces, size, len(got), len(want), firstDiff(got, want))
		}
	})
}
