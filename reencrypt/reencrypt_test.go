package reencrypt_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/keys"
	"github.com/c4gh-go/crypt4gh/reencrypt"
)

const (
	seg    = body.SegmentSize
	encSeg = body.EncryptedSegmentSize
	open   = edit.Unbounded
)

// --- fixtures ---------------------------------------------------------------

func newKey(t *testing.T) *keys.SecretKey {
	t.Helper()
	sk, err := keys.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &sk
}

func plaintext(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), 'r', 'e'})
	r.Read(b)
	return b
}

// part is a run of plaintext encrypted under one data key.
type part struct {
	key  [32]byte
	size int // a multiple of SegmentSize except for the last part
}

// build writes a Crypt4GH file of plain for the recipients, the body cut
// into parts each under its own data key, with editList when not nil. Every
// data key goes into a packet of its own for every recipient, followed by
// the edit-list packet.
func build(t *testing.T, plain []byte, parts []part, editList []uint64, writer *keys.SecretKey, recipients ...keys.PublicKey) []byte {
	t.Helper()
	var bodyBuf bytes.Buffer
	off := 0
	for i, p := range parts {
		if i < len(parts)-1 && p.size%seg != 0 {
			t.Fatalf("part %d of %d bytes does not end on a segment boundary", i, p.size)
		}
		w, err := body.NewWriter(&bodyBuf, &p.key)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(plain[off : off+p.size]); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		off += p.size
	}
	if off != len(plain) {
		t.Fatalf("parts cover %d of %d bytes", off, len(plain))
	}
	h := &header.Header{}
	for _, r := range recipients {
		for _, p := range parts {
			pkt, err := header.SealPacket(writer, r, header.DataKeyPayload(&p.key), nil)
			if err != nil {
				t.Fatal(err)
			}
			h.Packets = append(h.Packets, pkt)
		}
		if editList != nil {
			el, err := header.EditListPayload(editList)
			if err != nil {
				t.Fatal(err)
			}
			pkt, err := header.SealPacket(writer, r, el, nil)
			if err != nil {
				t.Fatal(err)
			}
			h.Packets = append(h.Packets, pkt)
		}
	}
	return append(h.Marshal(), bodyBuf.Bytes()...)
}

func dataKey(seed byte) [32]byte {
	var k [32]byte
	for i := range k {
		k[i] = seed + byte(i)
	}
	return k
}

// encrypt is build with one data key.
func encrypt(t *testing.T, plain []byte, editList []uint64, writer *keys.SecretKey, recipients ...keys.PublicKey) []byte {
	return build(t, plain, []part{{dataKey(1), len(plain)}}, editList, writer, recipients...)
}

// decrypt returns what file stands for to sk, through package c4gh.
func decrypt(t *testing.T, file []byte, sk *keys.SecretKey) []byte {
	t.Helper()
	out, err := tryDecrypt(file, sk)
	if err != nil {
		t.Fatalf("decrypt: %v", err)
	}
	return out
}

func tryDecrypt(file []byte, sk *keys.SecretKey) ([]byte, error) {
	f, err := c4gh.NewReader(bytes.NewReader(file), sk, &c4gh.DecryptOptions{Jobs: 1})
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out bytes.Buffer
	if _, err := io.Copy(&out, f); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// --- the naive model --------------------------------------------------------

// model is a file as the naive model sees it: the plaintext of its body,
// and the offsets in that plaintext of the bytes the file stands for.
type model struct {
	bodyPlain []byte
	stream    []int // stream[i] is the body offset of byte i of the file's output
}

// modelOf decrypts the whole body of file (ignoring its edit list) and
// applies the edit list byte by byte.
func modelOf(t *testing.T, file []byte, sk *keys.SecretKey) model {
	t.Helper()
	r := bytes.NewReader(file)
	h, err := header.Parse(r)
	if err != nil {
		t.Fatal(err)
	}
	c, err := h.Decrypt(sk, nil)
	if err != nil {
		t.Fatal(err)
	}
	var plain bytes.Buffer
	if _, err := body.Decrypt(&plain, r, c.DataKeys, 1); err != nil {
		t.Fatal(err)
	}
	m := model{bodyPlain: plain.Bytes()}
	n := plain.Len()
	if !c.HasEditList {
		for i := range n {
			m.stream = append(m.stream, i)
		}
		return m
	}
	// skip, keep, skip, keep, …; after a final skip everything is kept,
	// after a final keep nothing.
	pos := 0
	for i, l := range c.EditList {
		for k := uint64(0); k < l && pos < n; k++ {
			if i%2 == 1 {
				m.stream = append(m.stream, pos)
			}
			pos++
		}
	}
	if len(c.EditList)%2 == 1 || len(c.EditList) == 0 {
		for ; pos < n; pos++ {
			m.stream = append(m.stream, pos)
		}
	}
	return m
}

func (m model) output() []byte {
	out := make([]byte, len(m.stream))
	for i, p := range m.stream {
		out[i] = m.bodyPlain[p]
	}
	return out
}

// splice returns the bytes that ranges select from the model's output (each
// byte once, in increasing order) and the indices of the body segments that
// hold them.
func (m model) splice(ranges []edit.Range) (want []byte, segments []int64) {
	mark := make([]bool, len(m.stream))
	for _, r := range ranges {
		for i := r.Start; i < r.End && i < int64(len(mark)); i++ {
			mark[i] = true
		}
	}
	for i, ok := range mark {
		if !ok {
			continue
		}
		p := m.stream[i]
		want = append(want, m.bodyPlain[p])
		if s := int64(p / seg); len(segments) == 0 || segments[len(segments)-1] != s {
			segments = append(segments, s)
		}
	}
	return want, segments
}

// bodySegments returns the encrypted segments of a file's body.
func bodySegments(t *testing.T, file []byte) [][]byte {
	t.Helper()
	r := bytes.NewReader(file)
	if _, err := header.Parse(r); err != nil {
		t.Fatal(err)
	}
	b := file[len(file)-r.Len():]
	var segs [][]byte
	for len(b) > 0 {
		n := min(len(b), encSeg)
		segs = append(segs, b[:n])
		b = b[n:]
	}
	return segs
}

// checkSegments asserts that the body of out is exactly the segments of in
// at the given indices, byte for byte.
func checkSegments(t *testing.T, in, out []byte, indices []int64) {
	t.Helper()
	inSegs, outSegs := bodySegments(t, in), bodySegments(t, out)
	if len(outSegs) != len(indices) {
		t.Fatalf("output has %d segments, want %d (input segments %v)", len(outSegs), len(indices), indices)
	}
	for k, i := range indices {
		if !bytes.Equal(outSegs[k], inSegs[i]) {
			t.Errorf("output segment %d (%d bytes) differs from input segment %d (%d bytes)", k, len(outSegs[k]), i, len(inSegs[i]))
		}
	}
}

// contents opens the header of file with sk.
func contents(t *testing.T, file []byte, sk *keys.SecretKey) (*header.Header, *header.Contents) {
	t.Helper()
	h, err := header.Parse(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	c, err := h.Decrypt(sk, nil)
	if err != nil {
		t.Fatal(err)
	}
	return h, c
}

// spliceBytes runs Splice over an in-memory file.
func spliceBytes(file []byte, opts reencrypt.SpliceOptions) ([]byte, error) {
	var out bytes.Buffer
	err := reencrypt.Splice(&out, bytes.NewReader(file), opts)
	return out.Bytes(), err
}

// checkSplice splices ranges of file with sk and checks the result against
// the naive model: the output decrypts to the selected bytes, and its body
// is the input segments that hold them, unchanged. It returns the output.
func checkSplice(t *testing.T, file []byte, sk *keys.SecretKey, ranges ...edit.Range) []byte {
	t.Helper()
	out, err := spliceBytes(file, reencrypt.SpliceOptions{Reader: sk, Ranges: ranges})
	if err != nil {
		t.Fatalf("Splice %v: %v", ranges, err)
	}
	want, segs := modelOf(t, file, sk).splice(ranges)
	if got := decrypt(t, out, sk); !bytes.Equal(got, want) {
		t.Fatalf("Splice %v: output decrypts to %d bytes, want %d (first difference at %d)", ranges, len(got), len(want), firstDiff(got, want))
	}
	checkSegments(t, file, out, segs)

	// The same from a stream: the same plaintext and segments, and only
	// the body from the first segment kept on is spooled.
	var streamed bytes.Buffer
	var spool memSpool
	err = reencrypt.SpliceStream(&streamed, struct{ io.Reader }{bytes.NewReader(file)},
		func() (reencrypt.Spool, error) { return &spool, nil }, reencrypt.SpliceOptions{Reader: sk, Ranges: ranges})
	if err != nil {
		t.Fatalf("SpliceStream %v: %v", ranges, err)
	}
	if got := decrypt(t, streamed.Bytes(), sk); !bytes.Equal(got, want) {
		t.Fatalf("SpliceStream %v: output decrypts to %d bytes, want %d", ranges, len(got), len(want))
	}
	checkSegments(t, file, streamed.Bytes(), segs)
	h, _ := contents(t, file, sk)
	if want := int64(len(file)) - h.Size() - body.EncryptedOffset(segs[0]); int64(spool.Len()) != want {
		t.Errorf("SpliceStream %v spooled %d bytes, want %d (the body from segment %d)", ranges, spool.Len(), want, segs[0])
	}
	return out
}

// memSpool is a reencrypt.Spool in memory.
type memSpool struct{ bytes.Buffer }

func (s *memSpool) ReadAt(p []byte, off int64) (int, error) {
	return bytes.NewReader(s.Bytes()).ReadAt(p, off)
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// --- interop vectors --------------------------------------------------------

const interop = "../testdata/interop"

var interopKeys struct {
	sync.Mutex
	m map[string]*keys.SecretKey
}

// interopKey loads a secret key of the interop set with the passphrase that
// manifest.json gives for it (bcrypt keys are slow: each is loaded once).
func interopKey(t *testing.T, path string) *keys.SecretKey {
	t.Helper()
	interopKeys.Lock()
	defer interopKeys.Unlock()
	if sk := interopKeys.m[path]; sk != nil {
		return sk
	}
	var m struct {
		Keys []struct {
			Path       string  `json:"path"`
			Passphrase *string `json:"passphrase"`
		} `json:"keys"`
	}
	data, err := os.ReadFile(filepath.Join(interop, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range m.Keys {
		if k.Path != path {
			continue
		}
		data, err := os.ReadFile(filepath.Join(interop, path))
		if err != nil {
			t.Fatal(err)
		}
		sk, err := keys.ParseSecretKey(data, func() ([]byte, error) {
			if k.Passphrase == nil {
				return nil, errors.New("no passphrase in the manifest")
			}
			return []byte(*k.Passphrase), nil
		})
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if interopKeys.m == nil {
			interopKeys.m = map[string]*keys.SecretKey{}
		}
		interopKeys.m[path] = &sk
		return &sk
	}
	t.Fatalf("%s is not in the manifest", path)
	return nil
}

func interopPublic(t *testing.T, path string) keys.PublicKey {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(interop, path))
	if err != nil {
		t.Fatal(err)
	}
	pk, err := keys.ParsePublicKey(data)
	if err != nil {
		t.Fatal(err)
	}
	return pk
}

func readInterop(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(interop, path))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// --- Splice -----------------------------------------------------------------

func TestSpliceRanges(t *testing.T) {
	me := newKey(t)
	plain := plaintext(4*seg+1000, 1) // 4 full segments and a short one
	file := encrypt(t, plain, nil, me, me.Public())
	n := int64(len(plain))

	for _, tc := range []struct {
		name     string
		ranges   []edit.Range
		segments []int64
		editList bool // whether the output needs an edit list
	}{
		{"inside one segment", []edit.Range{rg(1000, 2000)}, []int64{0}, true},
		{"inside a later segment", []edit.Range{rg(2*seg+5, 2*seg+6)}, []int64{2}, true},
		{"exactly one segment", []edit.Range{rg(seg, 2*seg)}, []int64{1}, false},
		{"segment boundaries, several segments", []edit.Range{rg(seg, 3*seg)}, []int64{1, 2}, false},
		{"spanning several segments", []edit.Range{rg(60000, 200000)}, []int64{0, 1, 2, 3}, true},
		{"one byte each side of a boundary", []edit.Range{rg(seg-1, seg+1)}, []int64{0, 1}, true},
		{"to EOF, open-ended", []edit.Range{rg(70000, open)}, []int64{1, 2, 3, 4}, true},
		{"to EOF, explicit end", []edit.Range{rg(70000, n)}, []int64{1, 2, 3, 4}, true},
		{"end past EOF is clipped", []edit.Range{rg(70000, n+1e9)}, []int64{1, 2, 3, 4}, true},
		{"last segment from its start", []edit.Range{rg(4*seg, open)}, []int64{4}, false},
		{"last byte", []edit.Range{rg(n-1, n)}, []int64{4}, true},
		{"whole file, open-ended", []edit.Range{rg(0, open)}, []int64{0, 1, 2, 3, 4}, false},
		{"whole file, explicit", []edit.Range{rg(0, n)}, []int64{0, 1, 2, 3, 4}, false},
		{"two ranges in one segment", []edit.Range{rg(10, 20), rg(30, 40)}, []int64{0}, true},
		{"out of order", []edit.Range{rg(3*seg+7, 3*seg+9), rg(5, 9)}, []int64{0, 3}, true},
		{"overlapping and adjacent, merged", []edit.Range{rg(200000, 210000), rg(1000, 2000), rg(1500, 3000), rg(3000, 4000)}, []int64{0, 3}, true},
		{"overlapping an open-ended range", []edit.Range{rg(4*seg+10, 4*seg+20), rg(3*seg, open)}, []int64{3, 4}, false},
		{"ranges skipping segments", []edit.Range{rg(0, 10), rg(2*seg, 2*seg+10), rg(4*seg, open)}, []int64{0, 2, 4}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := checkSplice(t, file, me, tc.ranges...)
			// checkSplice compared with the model; pin the segments too.
			if _, segs := modelOf(t, file, me).splice(tc.ranges); !slices.Equal(segs, tc.segments) {
				t.Errorf("model keeps segments %v, test expects %v", segs, tc.segments)
			}
			h, c := contents(t, out, me)
			if c.HasEditList != tc.editList {
				t.Errorf("output has an edit list: %v (%v), want %v", c.HasEditList, c.EditList, tc.editList)
			}
			if want := 1 + btoi(tc.editList); len(h.Packets) != want {
				t.Errorf("output header has %d packets, want %d", len(h.Packets), want)
			}
		})
	}
}

// rg is the range [start, end).
func rg(start, end int64) edit.Range { return edit.Range{Start: start, End: end} }

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A whole file that needs no edit list comes out with the same body.
func TestSpliceWholeFileSameBody(t *testing.T) {
	me := newKey(t)
	file := encrypt(t, plaintext(2*seg+3, 2), nil, me, me.Public())
	out := checkSplice(t, file, me, edit.Range{Start: 0, End: open})
	if !bytes.Equal(bytes.Join(bodySegments(t, out), nil), bytes.Join(bodySegments(t, file), nil)) {
		t.Fatal("body changed")
	}
}

// The example of the specification: an edit list of six lengths over
// ~500 KB, then ranges of what it stands for.
func TestSpliceSpecEditList(t *testing.T) {
	me := newKey(t)
	list := []uint64{0, 7853, 71721, 307929, 51299, 38}
	plain := plaintext(500000, 3)
	file := encrypt(t, plain, list, me, me.Public())

	// The file stands for [0, 7853) + [79574, 387503) + [438802, 438840).
	m := modelOf(t, file, me)
	want := slices.Concat(plain[0:7853], plain[79574:387503], plain[438802:438840])
	if got := decrypt(t, file, me); !bytes.Equal(got, want) || !bytes.Equal(m.output(), want) {
		t.Fatal("the spec example does not decrypt as the specification says")
	}
	size := int64(len(want)) // 315820

	for _, ranges := range [][]edit.Range{
		{rg(0, open)},
		{rg(0, size)},
		{rg(0, 100)},
		{rg(7800, 7900)},                // across the first skip
		{rg(7853, 7854)},                // first byte after the skip
		{rg(7852, 7853)},                // last byte before it
		{rg(100000, 200000)},            // inside the long keep
		{rg(size-100, open)},            // across the second skip to EOF
		{rg(size-38, size)},             // exactly the last keep
		{rg(size-1, size+1000)},         // end clipped
		{rg(315000, 315800)},            // just before the last keep
		{rg(5, 6), rg(size-2, open)},    // two segments far apart
		{rg(300000, 310000), rg(0, 10)}, // out of order
		{rg(7000, 9000), rg(8000, 80000), rg(80000, 80001), rg(315819, open)},
	} {
		t.Run(fmt.Sprint(ranges), func(t *testing.T) {
			out := checkSplice(t, file, me, ranges...)
			// Splice again what the splice stands for: all of it, and a
			// part of it.
			checkSplice(t, out, me, edit.Range{Start: 0, End: open})
			outSize := int64(len(decrypt(t, out, me)))
			checkSplice(t, out, me, edit.Range{Start: outSize / 3, End: outSize/2 + 1})
		})
	}
}

// Rearranging a rearranged file composes the ranges.
func TestSpliceTwice(t *testing.T) {
	me := newKey(t)
	plain := plaintext(6*seg+500, 4)
	file := encrypt(t, plain, nil, me, me.Public())
	first := checkSplice(t, file, me, edit.Range{Start: 70000, End: 330000})
	second := checkSplice(t, first, me, edit.Range{Start: 100000, End: 200000})
	if got := decrypt(t, second, me); !bytes.Equal(got, plain[170000:270000]) {
		t.Fatal("rearrange of rearrange is not plain[170000:270000]")
	}
	// and again, several ranges of it
	third := checkSplice(t, second, me, edit.Range{Start: 99990, End: open}, edit.Range{Start: 0, End: 10})
	if got := decrypt(t, third, me); !bytes.Equal(got, slices.Concat(plain[170000:170010], plain[269990:270000])) {
		t.Fatal("third splice is wrong")
	}
}

// The interop file rearranged by the reference tool (bob's key) has an
// edit list [4464, 69999] over segments 1 and 2 of plain/a_196731.bin.
func TestSpliceInteropRearranged(t *testing.T) {
	bob := interopKey(t, "keys/bob.sec.pem")
	file := readInterop(t, "enc/rearranged.c4gh")
	plain := readInterop(t, "plain/a_196731.bin")
	if got := decrypt(t, file, bob); !bytes.Equal(got, plain[70000:139999]) {
		t.Fatal("rearranged.c4gh does not decrypt to plain[70000:139999]")
	}
	out := checkSplice(t, file, bob, edit.Range{Start: 100, End: 5000})
	if got := decrypt(t, out, bob); !bytes.Equal(got, plain[70100:75000]) {
		t.Fatal("splice 100-5000 of rearranged.c4gh is not plain[70100:75000]")
	}
	// a range that crosses from the first kept segment into the second
	out = checkSplice(t, file, bob, edit.Range{Start: 60000, End: open}, edit.Range{Start: 0, End: 1})
	if got := decrypt(t, out, bob); !bytes.Equal(got, slices.Concat(plain[70000:70001], plain[130000:139999])) {
		t.Fatal("splice 0-1,60000 of rearranged.c4gh is wrong")
	}
}

func TestSpliceInteropMulti3(t *testing.T) {
	dave := interopKey(t, "keys/dave.sec.pem")
	alice := interopKey(t, "keys/alice.sec.pem")
	file := readInterop(t, "enc/multi3.c4gh")
	plain := readInterop(t, "plain/a_196731.bin")
	out, err := spliceBytes(file, reencrypt.SpliceOptions{
		Reader:     alice,
		Recipients: []keys.PublicKey{dave.Public()},
		Ranges:     []edit.Range{rg(131072, open), rg(1000, 2000)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := decrypt(t, out, dave); !bytes.Equal(got, slices.Concat(plain[1000:2000], plain[131072:])) {
		t.Fatal("wrong output")
	}
	if _, err := tryDecrypt(out, alice); !errors.Is(err, header.ErrNoDecryptablePacket) {
		t.Fatalf("alice, not a recipient, opens the splice: %v", err)
	}
	checkSegments(t, file, out, []int64{0, 2, 3})
}

// A file whose segments are under two data keys: the splice carries both
// keys and every segment opens under one of them.
func TestSpliceSeveralDataKeys(t *testing.T) {
	me, other := newKey(t), newKey(t)
	plain := plaintext(5*seg+700, 5)
	parts := []part{{dataKey(10), 2 * seg}, {dataKey(20), 3*seg + 700}}
	file := build(t, plain, parts, nil, me, me.Public(), other.Public())
	if got := decrypt(t, file, me); !bytes.Equal(got, plain) {
		t.Fatal("the two-key file does not decrypt")
	}
	_, c := contents(t, file, me)
	if len(c.DataKeys) != 2 {
		t.Fatalf("fixture has %d data keys", len(c.DataKeys))
	}
	for _, ranges := range [][]edit.Range{
		{rg(0, 1000)},                   // key A only
		{rg(4*seg, open)},               // key B only
		{rg(seg+10, 2*seg+10)},          // across the key change
		{rg(3, 4), rg(5*seg+699, open)}, // first and last byte-ish
		{rg(0, open)},
	} {
		t.Run(fmt.Sprint(ranges), func(t *testing.T) {
			out := checkSplice(t, file, me, ranges...)
			_, c := contents(t, out, me)
			if len(c.DataKeys) != 2 || c.DataKeys[0] != parts[0].key || c.DataKeys[1] != parts[1].key {
				t.Fatalf("output holds %d data keys, want both, in order", len(c.DataKeys))
			}
			if _, err := tryDecrypt(out, other); !errors.Is(err, header.ErrNoDecryptablePacket) {
				t.Fatalf("the other recipient of the input opens the splice: %v", err)
			}
		})
	}
}

// An edit list that points past the end of the data stands for what is
// there; ranges are taken over that.
func TestSpliceEditListPastData(t *testing.T) {
	me := newKey(t)
	plain := plaintext(150000, 6)
	for _, tc := range []struct {
		list []uint64
		want []byte // what the file stands for
	}{
		{[]uint64{0, 100, 199900, 100000}, plain[:100]}, // second keep past the data
		{[]uint64{0, 100, 500000}, plain[:100]},         // ends on a skip past the data
		{[]uint64{70000, 1000000}, plain[70000:]},       // keep runs past the data
		{[]uint64{10, 20, 30}, slices.Concat(plain[10:30], plain[60:])},
	} {
		t.Run(fmt.Sprint(tc.list), func(t *testing.T) {
			file := encrypt(t, plain, tc.list, me, me.Public())
			// Decrypting the whole file gives what is there (strict, it
			// fails: the data the list describes is not all there).
			if got, err := tryDecrypt(file, me); err != nil || !bytes.Equal(got, tc.want) {
				t.Fatalf("decrypt of the fixture: %d bytes, %v; want %d", len(got), err, len(tc.want))
			}
			r, err := c4gh.NewReader(bytes.NewReader(file), me, &c4gh.DecryptOptions{Strict: true})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(io.Discard, r); tc.list[len(tc.list)-1] != 30 && !errors.Is(err, c4gh.ErrMissingData) {
				t.Fatalf("strict decrypt of the fixture: %v, want ErrMissingData", err)
			}
			ra, err := c4gh.NewReaderAt(bytes.NewReader(file), int64(len(file)), me, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]byte, ra.Size())
			if _, err := ra.ReadAt(got, 0); err != nil || !bytes.Equal(got, tc.want) {
				t.Fatalf("fixture does not read as expected: %v", err)
			}
			n := int64(len(tc.want))
			checkSplice(t, file, me, edit.Range{Start: 0, End: open})
			checkSplice(t, file, me, edit.Range{Start: n / 2, End: n + 1000})
			checkSplice(t, file, me, edit.Range{Start: n - 1, End: open}, edit.Range{Start: 0, End: 1})
			_, err = spliceBytes(file, reencrypt.SpliceOptions{Reader: me, Ranges: []edit.Range{rg(n, open)}})
			if !errors.Is(err, edit.ErrBeyondEnd) {
				t.Fatalf("range starting at the end: %v, want ErrBeyondEnd", err)
			}
		})
	}
}

// Splice between two *os.File (the path that lets the kernel copy).
func TestSpliceFiles(t *testing.T) {
	me := newKey(t)
	plain := plaintext(3*seg+10, 7)
	file := encrypt(t, plain, nil, me, me.Public())
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "in"), file, 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(filepath.Join(dir, "in"))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	err = reencrypt.Splice(out, in, reencrypt.SpliceOptions{Reader: me, Ranges: []edit.Range{rg(100, 200), rg(seg, open)}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(decrypt(t, got, me), slices.Concat(plain[100:200], plain[seg:])) {
		t.Fatal("wrong output")
	}
	checkSegments(t, file, got, []int64{0, 1, 2, 3})
}

func TestSpliceErrors(t *testing.T) {
	me, stranger := newKey(t), newKey(t)
	plain := plaintext(2*seg+10, 8)
	file := encrypt(t, plain, nil, me, me.Public())
	edited := encrypt(t, plain, []uint64{100, 50}, me, me.Public()) // stands for 50 bytes
	n := int64(len(plain))

	for _, tc := range []struct {
		name   string
		file   []byte
		key    *keys.SecretKey
		ranges []edit.Range
		want   error
	}{
		{"start at the end", file, me, []edit.Range{rg(n, n+10)}, edit.ErrBeyondEnd},
		{"start past the end", file, me, []edit.Range{rg(n+5, open)}, edit.ErrBeyondEnd},
		{"one of several past the end", file, me, []edit.Range{rg(0, 10), rg(n+5, n+6)}, edit.ErrBeyondEnd},
		{"past the edited end", edited, me, []edit.Range{rg(50, 60)}, edit.ErrBeyondEnd},
		{"empty range", file, me, []edit.Range{rg(5, 5)}, edit.ErrInvalidRange},
		{"end before start", file, me, []edit.Range{rg(10, 5)}, edit.ErrInvalidRange},
		{"negative start", file, me, []edit.Range{rg(-1, 5)}, edit.ErrInvalidRange},
		{"no range", file, me, nil, edit.ErrEmpty},
		{"key opens no packet", file, stranger, []edit.Range{rg(0, 10)}, header.ErrNoDecryptablePacket},
		{"not crypt4gh", []byte("plain text, not crypt4gh"), me, []edit.Range{rg(0, 10)}, header.ErrNotCrypt4GH},
		{"body cut inside a nonce", file[:len(file)-int(body.EncryptedSize(n))+2*encSeg+5], me, []edit.Range{rg(0, 10)}, body.ErrTruncated},
		{"header only", file[:len(file)-int(body.EncryptedSize(n))], me, []edit.Range{rg(0, 10)}, edit.ErrBeyondEnd},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := spliceBytes(tc.file, reencrypt.SpliceOptions{Reader: tc.key, Ranges: tc.ranges})
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if len(out) != 0 {
				t.Fatalf("%d bytes written before the error", len(out))
			}
		})
	}

	// ranges as the command line gives them
	for _, s := range []string{"5-5", "10-5", "abc", "-5", "5-", "1-2-3", ""} {
		if _, err := edit.ParseRange(s); !errors.Is(err, edit.ErrInvalidRange) {
			t.Errorf("ParseRange(%q): %v, want ErrInvalidRange", s, err)
		}
	}
}

// --- Header -----------------------------------------------------------------

func TestHeader(t *testing.T) {
	writer, alice, bob, carol, dave := newKey(t), newKey(t), newKey(t), newKey(t), newKey(t)
	plain := plaintext(2*seg+77, 9)
	list := []uint64{1000, 70000, 5}
	file := encrypt(t, plain, list, writer, alice.Public(), bob.Public(), carol.Public())
	want := decrypt(t, file, alice)
	r := bytes.NewReader(file)
	h, err := header.Parse(r)
	if err != nil {
		t.Fatal(err)
	}
	bodyBytes := file[len(file)-r.Len():]
	_, ca := contents(t, file, alice)
	aliceOwn := ca.Opened // alice's data-key and edit-list packets

	for _, trim := range []bool{false, true} {
		t.Run(fmt.Sprintf("trim=%v", trim), func(t *testing.T) {
			nh, err := reencrypt.Header(h, alice, []keys.PublicKey{dave.Public(), dave.Public()}, trim, nil)
			if err != nil {
				t.Fatal(err)
			}
			out := append(nh.Marshal(), bodyBytes...)
			if got := decrypt(t, out, dave); !bytes.Equal(got, want) {
				t.Fatal("dave does not get what the file stands for")
			}
			_, cd := contents(t, out, dave)
			if len(cd.Opened) != 2 || !cd.HasEditList || !slices.Equal(cd.EditList, list) {
				t.Fatalf("dave opens %d packets, edit list %v; want 2 and %v", len(cd.Opened), cd.EditList, list)
			}
			for _, i := range cd.Opened {
				if nh.Packets[i].WriterPublicKey != alice.Public() {
					t.Errorf("new packet %d names writer %s, want alice", i, nh.Packets[i].WriterPublicKey)
				}
			}
			if _, err := tryDecrypt(out, alice); !errors.Is(err, header.ErrNoDecryptablePacket) {
				t.Fatalf("alice's own packets were not replaced: %v", err)
			}
			var kept []header.Packet
			for i, p := range h.Packets {
				if !slices.Contains(aliceOwn, i) {
					kept = append(kept, p)
				}
			}
			if trim {
				if len(nh.Packets) != 2 {
					t.Fatalf("trimmed header has %d packets, want 2", len(nh.Packets))
				}
				for _, k := range []*keys.SecretKey{bob, carol} {
					if _, err := tryDecrypt(out, k); !errors.Is(err, header.ErrNoDecryptablePacket) {
						t.Fatalf("another reader still opens the trimmed file: %v", err)
					}
				}
				return
			}
			// the others' packets come after the new ones, unchanged
			if len(nh.Packets) != 2+len(kept) {
				t.Fatalf("header has %d packets, want %d", len(nh.Packets), 2+len(kept))
			}
			if !bytes.Equal((&header.Header{Packets: nh.Packets[2:]}).Marshal(), (&header.Header{Packets: kept}).Marshal()) {
				t.Fatal("the packets for other readers changed")
			}
			for _, k := range []*keys.SecretKey{bob, carol} {
				if got := decrypt(t, out, k); !bytes.Equal(got, want) {
					t.Fatal("another reader lost the file")
				}
			}
		})
	}

	t.Run("reader among the recipients keeps access", func(t *testing.T) {
		nh, err := reencrypt.Header(h, alice, []keys.PublicKey{alice.Public(), dave.Public()}, true, nil)
		if err != nil {
			t.Fatal(err)
		}
		out := append(nh.Marshal(), bodyBytes...)
		for _, k := range []*keys.SecretKey{alice, dave} {
			if got := decrypt(t, out, k); !bytes.Equal(got, want) {
				t.Fatal("a recipient cannot decrypt")
			}
		}
		if len(nh.Packets) != 4 {
			t.Fatalf("%d packets, want 4", len(nh.Packets))
		}
	})

	t.Run("header only input", func(t *testing.T) {
		// what encrypt --header writes: the header alone, the body elsewhere
		hdrOnly := h.Marshal()
		hh, err := header.Parse(bytes.NewReader(hdrOnly))
		if err != nil {
			t.Fatal(err)
		}
		nh, err := reencrypt.Header(hh, bob, []keys.PublicKey{dave.Public()}, true, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := decrypt(t, append(nh.Marshal(), bodyBytes...), dave); !bytes.Equal(got, want) {
			t.Fatal("new header + old body does not decrypt")
		}
	})

	t.Run("errors", func(t *testing.T) {
		if _, err := reencrypt.Header(h, newKey(t), []keys.PublicKey{dave.Public()}, false, nil); !errors.Is(err, header.ErrNoDecryptablePacket) {
			t.Fatalf("stranger: %v", err)
		}
		if _, err := reencrypt.Header(h, alice, nil, false, nil); err == nil {
			t.Fatal("no recipients: no error")
		}
		many := make([]keys.PublicKey, header.MaxPackets/2+1)
		for i := range many {
			many[i][0], many[i][1], many[i][2] = byte(i), byte(i>>8), 9
		}
		if _, err := reencrypt.Header(h, alice, many, true, nil); !errors.Is(err, header.ErrTooManyPackets) {
			t.Fatalf("too many recipients: %v", err)
		}
	})
}

// A header holding two data keys: both are given to the new recipient.
func TestHeaderSeveralDataKeys(t *testing.T) {
	me, dave := newKey(t), newKey(t)
	plain := plaintext(3*seg+9, 10)
	file := build(t, plain, []part{{dataKey(1), seg}, {dataKey(2), 2*seg + 9}}, nil, me, me.Public())
	r := bytes.NewReader(file)
	h, err := header.Parse(r)
	if err != nil {
		t.Fatal(err)
	}
	nh, err := reencrypt.Header(h, me, []keys.PublicKey{dave.Public()}, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := decrypt(t, append(nh.Marshal(), file[len(file)-r.Len():]...), dave); !bytes.Equal(got, plain) {
		t.Fatal("wrong plaintext")
	}
}

// The interop files: reencrypt multi3 (alice) for dave, with and without
// trim, and reencrypt the reference tool's own reencrypt output again.
func TestHeaderInterop(t *testing.T) {
	alice := interopKey(t, "keys/alice.sec.pem")
	dave := interopKey(t, "keys/dave.sec.pem")
	carol := interopKey(t, "keys/carol.sec.pem")
	hank := interopKey(t, "keys/hank.sec.pem")
	erin := interopPublic(t, "keys/erin.pub")
	plainSum := "f0ffe0a58d21f13a669e766ba20b1e562ee9d42a2dd8ce23c9a78af72e10eb56"

	for _, tc := range []struct {
		file    string
		reader  *keys.SecretKey
		trim    bool
		packets int             // in the new header: 2 new ones, and the 2 others' unless trimmed
		keeps   *keys.SecretKey // a reader of the input who keeps access (nil: none)
	}{
		{"enc/multi3.c4gh", alice, false, 4, carol},
		{"enc/multi3.c4gh", alice, true, 2, nil},
		{"enc/reencrypt_notrim.c4gh", dave, false, 4, carol},
		{"enc/reencrypt_notrim.c4gh", dave, true, 2, nil},
	} {
		t.Run(fmt.Sprintf("%s trim=%v", tc.file, tc.trim), func(t *testing.T) {
			file := readInterop(t, tc.file)
			r := bytes.NewReader(file)
			h, err := header.Parse(r)
			if err != nil {
				t.Fatal(err)
			}
			nh, err := reencrypt.Header(h, tc.reader, []keys.PublicKey{hank.Public(), erin}, tc.trim, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(nh.Packets) != tc.packets {
				t.Fatalf("%d packets, want %d", len(nh.Packets), tc.packets)
			}
			out := append(nh.Marshal(), file[len(file)-r.Len():]...)
			if sum := sha256.Sum256(decrypt(t, out, hank)); hex.EncodeToString(sum[:]) != plainSum {
				t.Fatal("hank does not get the plaintext")
			}
			if _, err := tryDecrypt(out, tc.reader); !errors.Is(err, header.ErrNoDecryptablePacket) {
				t.Fatalf("the re-encrypting reader kept access: %v", err)
			}
			if tc.keeps != nil {
				if sum := sha256.Sum256(decrypt(t, out, tc.keeps)); hex.EncodeToString(sum[:]) != plainSum {
					t.Fatal("a kept reader lost the plaintext")
				}
			} else if _, err := tryDecrypt(out, carol); !errors.Is(err, header.ErrNoDecryptablePacket) {
				t.Fatalf("trim left carol's packet: %v", err)
			}
		})
	}
}

// TestCopyBodyChecksLastSegment: a body copied by CopyBody (a stream) or
// checked by CheckLastSegment (a file) whose last segment was cut at a
// length that looks right fails with ErrAuth naming that segment, and
// CopyBody has not written it; a whole body is copied as it is.
func TestCopyBodyChecksLastSegment(t *testing.T) {
	me := newKey(t)
	for _, n := range []int{0, 1, seg, seg + 1, 3*seg + 700} {
		file := encrypt(t, plaintext(n, 9), nil, me, me.Public())
		h, _ := contents(t, file, me)
		bodyBytes := file[h.Size():]
		var out bytes.Buffer
		if m, err := reencrypt.CopyBody(&out, bytes.NewReader(bodyBytes), h, me); err != nil || m != int64(len(bodyBytes)) || !bytes.Equal(out.Bytes(), bodyBytes) {
			t.Fatalf("%d bytes: CopyBody = %d, %v; want the body as it is", n, m, err)
		}
		if err := reencrypt.CheckLastSegment(bytes.NewReader(file), h.Size(), int64(len(bodyBytes)), h, me); err != nil {
			t.Fatalf("%d bytes: CheckLastSegment: %v", n, err)
		}
		if n == 0 {
			continue
		}
		for _, cut := range []int{1, 100} {
			if rest := len(bodyBytes) % body.EncryptedSegmentSize; rest != 0 && cut >= rest-body.Overhead {
				continue // a last segment this short is another error
			}
			short := bodyBytes[:len(bodyBytes)-cut]
			last := body.StoredSegments(int64(len(short))) - 1
			out.Reset()
			_, err := reencrypt.CopyBody(&out, bytes.NewReader(short), h, me)
			var se *body.SegmentError
			if !errors.As(err, &se) || se.Index != last || !errors.Is(err, body.ErrAuth) {
				t.Fatalf("%d bytes cut by %d: CopyBody: %v, want segment %d failed authentication", n, cut, err, last)
			}
			if int64(out.Len()) != body.EncryptedOffset(last) {
				t.Errorf("%d bytes cut by %d: CopyBody wrote %d bytes, want the %d before the last segment", n, cut, out.Len(), body.EncryptedOffset(last))
			}
			cutFile := file[:len(file)-cut]
			err = reencrypt.CheckLastSegment(bytes.NewReader(cutFile), h.Size(), int64(len(short)), h, me)
			if !errors.As(err, &se) || se.Index != last || !errors.Is(err, body.ErrAuth) {
				t.Fatalf("%d bytes cut by %d: CheckLastSegment: %v, want segment %d failed authentication", n, cut, err, last)
			}
		}
	}
	// Too short to be a segment at all.
	file := encrypt(t, plaintext(seg+50, 9), nil, me, me.Public())
	h, _ := contents(t, file, me)
	short := file[h.Size() : h.Size()+body.EncryptedSegmentSize+5]
	if _, err := reencrypt.CopyBody(io.Discard, bytes.NewReader(short), h, me); !errors.Is(err, body.ErrTruncated) {
		t.Fatalf("a last segment of 5 bytes: %v, want ErrTruncated", err)
	}
}

// TestRekeyTwiceForOneReader: alice gives a file with an edit list to bob,
// keeping her own access, then gives it to bob again: bob holds one set of
// packets (before, the first set stayed beside the new one, and two edit
// lists made the file unreadable for him).
func TestRekeyTwiceForOneReader(t *testing.T) {
	writer, alice, bob := newKey(t), newKey(t), newKey(t)
	plain := plaintext(2*seg+77, 10)
	file := encrypt(t, plain, []uint64{1000, 70000, 5}, writer, alice.Public())
	want := decrypt(t, file, alice)
	for round := 1; round <= 2; round++ {
		h, _ := contents(t, file, alice)
		nh, err := reencrypt.Header(h, alice, []keys.PublicKey{alice.Public(), bob.Public()}, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		file = append(nh.Marshal(), file[h.Size():]...)
		for name, k := range map[string]*keys.SecretKey{"alice": alice, "bob": bob} {
			if got, err := tryDecrypt(file, k); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("round %d: %s: %v", round, name, err)
			}
		}
		if h2, _ := contents(t, file, bob); len(h2.Packets) != 4 {
			t.Errorf("round %d: %d packets, want 2 for each reader", round, len(h2.Packets))
		}
	}
}

// TestRekeyAdd: with Add every packet is kept and packets are added for
// the recipients who hold none of the reader's; asked again, there is
// nothing to add.
func TestRekeyAdd(t *testing.T) {
	writer, alice, bob, carol := newKey(t), newKey(t), newKey(t), newKey(t)
	plain := plaintext(seg+5, 11)
	file := encrypt(t, plain, []uint64{10, 20}, writer, alice.Public(), carol.Public())
	h, _ := contents(t, file, alice)
	nh, err := reencrypt.Rekey(h, alice, reencrypt.RekeyOptions{Recipients: []keys.PublicKey{bob.Public(), alice.Public()}, Add: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(nh.Packets) != len(h.Packets)+2 || !bytes.HasPrefix(nh.Marshal()[16:], h.Marshal()[16:]) {
		t.Fatalf("%d packets, want the %d of the file first and 2 for bob", len(nh.Packets), len(h.Packets))
	}
	out := append(nh.Marshal(), file[h.Size():]...)
	for name, k := range map[string]*keys.SecretKey{"alice": alice, "bob": bob, "carol": carol} {
		if got, err := tryDecrypt(out, k); err != nil || !bytes.Equal(got, plain[10:30]) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := reencrypt.Rekey(nh, alice, reencrypt.RekeyOptions{Recipients: []keys.PublicKey{bob.Public()}, Add: true}); !errors.Is(err, reencrypt.ErrNothingToAdd) {
		t.Errorf("bob again: %v, want ErrNothingToAdd", err)
	}
}
