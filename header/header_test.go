package header

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/internal/errkind"
	"github.com/c4gh-go/crypt4gh/keys"
)

// testRand returns a deterministic random stream for keys and nonces.
func testRand(seed byte) *rand.ChaCha8 {
	var s [32]byte
	s[0] = seed
	return rand.NewChaCha8(s)
}

func genKey(t testing.TB, r *rand.ChaCha8) keys.SecretKey {
	t.Helper()
	sk, err := keys.Generate(r)
	if err != nil {
		t.Fatal(err)
	}
	return sk
}

func genKeys(t testing.TB, seed byte, n int) []keys.SecretKey {
	r := testRand(seed)
	out := make([]keys.SecretKey, n)
	for i := range out {
		out[i] = genKey(t, r)
	}
	return out
}

// reparse marshals h and parses it back, checking that the bytes survive.
func reparse(t testing.TB, h *Header) *Header {
	t.Helper()
	b := h.Marshal()
	if int64(len(b)) != h.Size() {
		t.Fatalf("len(Marshal()) = %d, Size() = %d", len(b), h.Size())
	}
	var w bytes.Buffer
	if n, err := h.WriteTo(&w); err != nil || n != int64(len(b)) || !bytes.Equal(w.Bytes(), b) {
		t.Fatalf("WriteTo: %d, %v", n, err)
	}
	h2, err := Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("Parse(Marshal()): %v", err)
	}
	if !bytes.Equal(h2.Marshal(), b) {
		t.Fatal("Marshal(Parse(Marshal(h))) differs")
	}
	return h2
}

func TestRoundTrip(t *testing.T) {
	ks := genKeys(t, 1, 5)
	writer, readers, stranger := &ks[0], ks[1:4], &ks[4]
	dataKey := [32]byte{1, 2, 3, 4, 5}
	for _, n := range []int{1, 3} {
		for _, editList := range [][]uint64{nil, {}, {0, 7853, 71721, 307929, 51299, 38}} {
			var pks []keys.PublicKey
			for i := range n {
				pks = append(pks, readers[i].Public())
			}
			h, err := New(writer, pks, &dataKey, editList, testRand(2))
			if err != nil {
				t.Fatal(err)
			}
			per := 1
			if editList != nil {
				per = 2
			}
			if len(h.Packets) != n*per {
				t.Fatalf("%d recipients, edit list %v: %d packets", n, editList, len(h.Packets))
			}
			h = reparse(t, h)
			wpk := writer.Public()
			for i := range n {
				c, err := h.Decrypt(&readers[i], nil)
				if err != nil {
					t.Fatalf("recipient %d of %d: %v", i, n, err)
				}
				if len(c.DataKeys) != 1 || c.DataKeys[0] != dataKey {
					t.Errorf("data keys %x", c.DataKeys)
				}
				if c.HasEditList != (editList != nil) || !slices.Equal(c.EditList, editList) ||
					(editList != nil && c.EditList == nil) {
					t.Errorf("edit list %v (%v), want %v", c.EditList, c.HasEditList, editList)
				}
				wantOpened := []int{i * per}
				if per == 2 {
					wantOpened = append(wantOpened, i*per+1)
				}
				if !slices.Equal(c.Opened, wantOpened) || len(c.Payloads) != len(c.Opened) {
					t.Errorf("opened %v, want %v", c.Opened, wantOpened)
				}
				if !bytes.Equal(c.Payloads[0], DataKeyPayload(&dataKey)) {
					t.Errorf("payload %x", c.Payloads[0])
				}
				if _, err := h.Decrypt(&readers[i], &wpk); err != nil {
					t.Errorf("with the right sender: %v", err)
				}
				other := stranger.Public()
				if _, err := h.Decrypt(&readers[i], &other); !errors.Is(err, ErrNoDecryptablePacket) {
					t.Errorf("with the wrong sender: got %v, want ErrNoDecryptablePacket", err)
				}
				payloads := c.Payloads
				c.Zero()
				if c.DataKeys != nil || c.Payloads != nil || c.HasEditList ||
					!bytes.Equal(payloads[0], make([]byte, len(payloads[0]))) {
					t.Errorf("Zero left %+v, payload %x", c, payloads[0])
				}
			}
			if _, err := h.Decrypt(stranger, nil); !errors.Is(err, ErrNoDecryptablePacket) {
				t.Errorf("stranger: got %v, want ErrNoDecryptablePacket", err)
			}
		}
	}
}

func TestNewDeduplicatesRecipients(t *testing.T) {
	ks := genKeys(t, 3, 3)
	a, b := ks[1].Public(), ks[2].Public()
	dataKey := [32]byte{9}
	h, err := New(&ks[0], []keys.PublicKey{a, b, a, a, b}, &dataKey, []uint64{1, 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Packets) != 4 {
		t.Fatalf("%d packets, want 4 (two recipients, two packets each)", len(h.Packets))
	}
	c, err := h.Decrypt(&ks[1], nil)
	if err != nil || !slices.Equal(c.Opened, []int{0, 1}) {
		t.Fatalf("a: %v, opened %v", err, c)
	}
	c, err = h.Decrypt(&ks[2], nil)
	if err != nil || !slices.Equal(c.Opened, []int{2, 3}) {
		t.Fatalf("b: %v, opened %v", err, c)
	}
}

func TestNewEphemeralWriterAndErrors(t *testing.T) {
	ks := genKeys(t, 4, 1)
	pk := ks[0].Public()
	dataKey := [32]byte{7}
	h, err := New(nil, []keys.PublicKey{pk}, &dataKey, nil, testRand(5))
	if err != nil {
		t.Fatal(err)
	}
	if h.Packets[0].WriterPublicKey == (keys.PublicKey{}) || h.Packets[0].WriterPublicKey == pk {
		t.Errorf("ephemeral writer key %s", h.Packets[0].WriterPublicKey)
	}
	if c, err := h.Decrypt(&ks[0], nil); err != nil || c.DataKeys[0] != dataKey {
		t.Fatalf("ephemeral writer: %v", err)
	}
	if _, err := New(&ks[0], nil, &dataKey, nil, nil); err == nil {
		t.Error("New without recipients succeeded")
	}
	if _, err := New(&ks[0], []keys.PublicKey{pk}, nil, nil, nil); err == nil {
		t.Error("New without a data key succeeded")
	}
	if _, err := New(&ks[0], []keys.PublicKey{pk}, &dataKey, make([]uint64, edit.MaxEntries+1), nil); err == nil {
		t.Error("New with an oversized edit list succeeded")
	}
	if _, err := New(&ks[0], []keys.PublicKey{{}}, &dataKey, nil, nil); !errors.Is(err, keys.ErrLowOrderPoint) {
		t.Errorf("low-order recipient: got %v", err)
	}
}

// sealed builds a header of packets sealed for reader by writer, one per
// payload.
func sealed(t testing.TB, writer *keys.SecretKey, reader keys.PublicKey, payloads ...[]byte) *Header {
	t.Helper()
	h := &Header{}
	r := testRand(9)
	for _, pl := range payloads {
		p, err := SealPacket(writer, reader, pl, r)
		if err != nil {
			t.Fatal(err)
		}
		h.Packets = append(h.Packets, p)
	}
	return h
}

func rawPayload(words ...any) []byte {
	var b []byte
	for _, w := range words {
		switch w := w.(type) {
		case uint32:
			b = binary.LittleEndian.AppendUint32(b, w)
		case uint64:
			b = binary.LittleEndian.AppendUint64(b, w)
		case []byte:
			b = append(b, w...)
		default:
			panic("rawPayload: bad type")
		}
	}
	return b
}

func TestDecryptPayloads(t *testing.T) {
	ks := genKeys(t, 6, 3)
	writer, reader, other := &ks[0], &ks[1], &ks[2]
	rpk := reader.Public()
	k1, k2 := [32]byte{1}, [32]byte{2}
	pad := bytes.Repeat([]byte{0xEE}, 100)
	forOther, err := SealPacket(writer, other.Public(), DataKeyPayload(&k2), nil)
	if err != nil {
		t.Fatal(err)
	}
	unknownMethod := Packet{Method: 7, Opaque: []byte("opaque bytes of another method")}

	tests := []struct {
		name     string
		h        *Header
		err      error
		keys     [][32]byte
		editList []uint64
		opened   []int
	}{
		{name: "padding tolerated",
			h:    sealed(t, writer, rpk, append(DataKeyPayload(&k1), pad...), append(mustEditList([]uint64{5, 6}), pad...)),
			keys: [][32]byte{k1}, editList: []uint64{5, 6}, opened: []int{0, 1}},
		{name: "keys in header order, duplicates removed",
			h:    sealed(t, writer, rpk, DataKeyPayload(&k2), DataKeyPayload(&k1), DataKeyPayload(&k2)),
			keys: [][32]byte{k2, k1}, opened: []int{0, 1, 2}},
		{name: "unknown packet type skipped",
			h:    sealed(t, writer, rpk, rawPayload(uint32(7), uint64(1)), DataKeyPayload(&k1), rawPayload(uint32(2))),
			keys: [][32]byte{k1}, opened: []int{0, 1, 2}},
		{name: "packets for others and unknown methods skipped",
			h: &Header{Packets: []Packet{forOther, unknownMethod,
				sealed(t, writer, rpk, DataKeyPayload(&k1)).Packets[0], unknownMethod}},
			keys: [][32]byte{k1}, opened: []int{2}},
		{name: "empty edit list",
			h:    sealed(t, writer, rpk, mustEditList([]uint64{}), DataKeyPayload(&k1)),
			keys: [][32]byte{k1}, editList: []uint64{}, opened: []int{0, 1}},
		{name: "two edit lists",
			h:   sealed(t, writer, rpk, DataKeyPayload(&k1), mustEditList([]uint64{1}), mustEditList([]uint64{1})),
			err: ErrMultipleEditLists},
		{name: "edit list only",
			h:   sealed(t, writer, rpk, mustEditList([]uint64{1})),
			err: ErrNoDataKey},
		{name: "mixed data methods",
			h:   sealed(t, writer, rpk, DataKeyPayload(&k1), rawPayload(PacketTypeDataKey, uint32(1), k2[:])),
			err: ErrMixedDataMethods},
		{name: "unsupported data method",
			h:   sealed(t, writer, rpk, rawPayload(PacketTypeDataKey, uint32(1), k2[:])),
			err: ErrNoDataKey},
		{name: "data key payload too short",
			h:   sealed(t, writer, rpk, rawPayload(PacketTypeDataKey, uint32(0), k1[:31])),
			err: ErrInvalidPacket},
		{name: "payload without packet type",
			h:   sealed(t, writer, rpk, []byte{0, 0, 0}),
			err: ErrInvalidPacket},
		{name: "edit list without count",
			h:   sealed(t, writer, rpk, DataKeyPayload(&k1), rawPayload(PacketTypeEditList)),
			err: ErrInvalidPacket},
		{name: "edit list claims 2^32-1 lengths",
			h:   sealed(t, writer, rpk, DataKeyPayload(&k1), rawPayload(PacketTypeEditList, uint32(0xFFFFFFFF), uint64(1), uint64(2))),
			err: ErrInvalidPacket},
		{name: "edit list one length short",
			h:   sealed(t, writer, rpk, DataKeyPayload(&k1), rawPayload(PacketTypeEditList, uint32(3), uint64(1), uint64(2), []byte{1, 2, 3, 4, 5, 6, 7})),
			err: ErrInvalidPacket},
		{name: "no packets", h: &Header{}, err: ErrNoDecryptablePacket},
		{name: "only packets for others", h: &Header{Packets: []Packet{forOther, unknownMethod}}, err: ErrNoDecryptablePacket},
		{name: "low-order writer key skipped",
			h:   &Header{Packets: []Packet{{WriterPublicKey: keys.PublicKey{}, Ciphertext: make([]byte, 56)}}},
			err: ErrNoDecryptablePacket},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := reparse(t, tt.h)
			c, err := h.Decrypt(reader, nil)
			if tt.err != nil {
				if !errors.Is(err, tt.err) || c != nil {
					t.Fatalf("got %v, %v; want %v", c, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(c.DataKeys, tt.keys) {
				t.Errorf("keys %x, want %x", c.DataKeys, tt.keys)
			}
			if c.HasEditList != (tt.editList != nil) || !slices.Equal(c.EditList, tt.editList) {
				t.Errorf("edit list %v (%v), want %v", c.EditList, c.HasEditList, tt.editList)
			}
			if !slices.Equal(c.Opened, tt.opened) {
				t.Errorf("opened %v, want %v", c.Opened, tt.opened)
			}
		})
	}
}

func TestOpen(t *testing.T) {
	ks := genKeys(t, 7, 3)
	p, err := SealPacket(&ks[0], ks[1].Public(), []byte("payload"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.WriterPublicKey != ks[0].Public() || len(p.Ciphertext) != len("payload")+16 {
		t.Fatalf("packet %+v", p)
	}
	if pt, err := p.Open(&ks[1]); err != nil || string(pt) != "payload" {
		t.Fatalf("Open: %q, %v", pt, err)
	}
	if _, err := p.Open(&ks[2]); !errors.Is(err, ErrPacketAuth) {
		t.Errorf("wrong key: %v", err)
	}
	q := p
	q.Ciphertext = p.Ciphertext[:15]
	if _, err := q.Open(&ks[1]); !errors.Is(err, ErrPacketAuth) {
		t.Errorf("short ciphertext: %v", err)
	}
	if _, err := p.Open(nil); !errors.Is(err, ErrPacketAuth) {
		t.Errorf("nil key: %v", err)
	}
	q = Packet{Method: 1, Opaque: []byte{1, 2, 3}}
	if _, err := q.Open(&ks[1]); !errors.Is(err, ErrPacketAuth) {
		t.Errorf("unknown method: %v", err)
	}
	if _, err := SealPacket(&ks[0], ks[1].Public(), make([]byte, maxPayload+1), nil); err == nil {
		t.Error("SealPacket of an oversized payload succeeded")
	}
	if _, err := SealPacket(nil, ks[1].Public(), nil, nil); err == nil {
		t.Error("SealPacket without a writer key succeeded")
	}
}

// TestBitFlips flips every bit of a one-packet header: each flip must be
// refused by Parse or by Decrypt.
func TestBitFlips(t *testing.T) {
	ks := genKeys(t, 8, 2)
	dataKey := [32]byte{42}
	h, err := New(&ks[0], []keys.PublicKey{ks[1].Public()}, &dataKey, nil, testRand(1))
	if err != nil {
		t.Fatal(err)
	}
	orig := h.Marshal()
	known := []error{ErrNotCrypt4GH, ErrUnsupportedVersion, ErrTruncated, ErrTooManyPackets,
		ErrInvalidPacket, ErrNoDecryptablePacket}
	fields := []struct {
		name       string
		start, end int
	}{
		{"magic", 0, 8}, {"version", 8, 12}, {"count", 12, 16}, {"length", 16, 20}, {"method", 20, 24},
		{"writer key", 24, 56}, {"nonce", 56, 68}, {"ciphertext", 68, len(orig) - 16}, {"mac", len(orig) - 16, len(orig)},
	}
	for _, f := range fields {
		for i := f.start; i < f.end; i++ {
			for bit := range 8 {
				b := bytes.Clone(orig)
				b[i] ^= 1 << bit
				h, err := Parse(bytes.NewReader(b))
				if err == nil {
					_, err = h.Decrypt(&ks[1], nil)
				}
				if err == nil {
					t.Fatalf("%s: flipping bit %d of byte %d went unnoticed", f.name, bit, i)
				}
				if !slices.ContainsFunc(known, func(s error) bool { return errors.Is(err, s) }) {
					t.Fatalf("%s: byte %d bit %d: unexpected error %v", f.name, i, bit, err)
				}
			}
		}
	}
}

// TestBitFlipsNeverChangeContents flips every bit of a header with a
// data-key and an edit-list packet. A flip may hide a packet from the reader
// (the format skips what does not authenticate) but must never change what
// a packet says.
func TestBitFlipsNeverChangeContents(t *testing.T) {
	ks := genKeys(t, 10, 2)
	dataKey := [32]byte{43}
	editList := []uint64{10, 20}
	h, err := New(&ks[0], []keys.PublicKey{ks[1].Public()}, &dataKey, editList, testRand(1))
	if err != nil {
		t.Fatal(err)
	}
	orig := h.Marshal()
	for i := range orig {
		for bit := range 8 {
			b := bytes.Clone(orig)
			b[i] ^= 1 << bit
			h, err := Parse(bytes.NewReader(b))
			if err != nil {
				continue
			}
			c, err := h.Decrypt(&ks[1], nil)
			if err != nil {
				continue
			}
			if len(c.DataKeys) != 1 || c.DataKeys[0] != dataKey || (c.HasEditList && !slices.Equal(c.EditList, editList)) {
				t.Fatalf("byte %d bit %d: contents changed to %x %v", i, bit, c.DataKeys, c.EditList)
			}
			if c.HasEditList {
				t.Fatalf("byte %d bit %d: flip left both packets readable", i, bit)
			}
		}
	}
}

// TestDecryptWriterKeyLimit: a header whose packets come from more than
// MaxWriterKeys writers is refused before any key exchange, and one at
// the limit is still tried (here: opens nothing).
func TestDecryptWriterKeyLimit(t *testing.T) {
	ks := genKeys(t, 12, 1)
	reader := &ks[0]
	build := func(n int) *Header {
		h := &Header{}
		for i := range n {
			p := Packet{Ciphertext: make([]byte, 56)}
			p.WriterPublicKey[0], p.WriterPublicKey[1], p.WriterPublicKey[2] = byte(i), byte(i>>8), 1
			h.Packets = append(h.Packets, p)
		}
		return h
	}
	start := time.Now()
	_, err := build(MaxWriterKeys+1).Decrypt(reader, nil)
	if !errors.Is(err, ErrTooManyPackets) {
		t.Fatalf("%d writers: %v, want ErrTooManyPackets", MaxWriterKeys+1, err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("refusal took %v", d)
	}
	if _, err := build(MaxWriterKeys).Decrypt(reader, nil); !errors.Is(err, ErrNoDecryptablePacket) {
		t.Fatalf("%d writers: %v, want ErrNoDecryptablePacket", MaxWriterKeys, err)
	}
	// With a required sender, only that writer's packets count.
	h := build(MaxWriterKeys + 1)
	sender := h.Packets[0].WriterPublicKey
	if _, err := h.Decrypt(reader, &sender); !errors.Is(err, ErrNoDecryptablePacket) {
		t.Fatalf("with a sender: %v, want ErrNoDecryptablePacket", err)
	}
}

// The error for a header with no packet for the reader says why the
// packets it skipped were skipped, in words that fit the counts.
func TestNoneOpensMessage(t *testing.T) {
	var sender keys.PublicKey
	for _, tc := range []struct {
		total, other, unknown int
		want                  string
	}{
		{1, 0, 0, "the only packet does not open"},
		{1, 1, 0, "the only packet does not open (it is from a writer other than "},
		{2, 0, 0, "none of the 2 packets opens"},
		{2, 2, 0, "none of the 2 packets opens (all are from a writer other than "},
		{3, 1, 2, "none of the 3 packets opens (1 is from a writer other than AAAA"},
		{3, 1, 2, "; 2 are of an unknown method)"},
	} {
		if got := noneOpens(tc.total, tc.other, tc.unknown, &sender); !strings.Contains(got, tc.want) {
			t.Errorf("noneOpens(%d, %d, %d) = %q, want it to contain %q", tc.total, tc.other, tc.unknown, got, tc.want)
		}
	}
}

// mustEditList is EditListPayload for lists that the tests know to be
// short enough.
func mustEditList(list []uint64) []byte {
	b, err := EditListPayload(list)
	if err != nil {
		panic(err)
	}
	return b
}

// TestSealTooManyRecipients: a header that would hold more than
// MaxPackets packets is refused as the caller's mistake (a usage error),
// not as damaged data, and still matches ErrTooManyPackets.
func TestSealTooManyRecipients(t *testing.T) {
	recipients := make([]keys.PublicKey, MaxPackets/2+1)
	for i := range recipients {
		binary.LittleEndian.PutUint32(recipients[i][:], uint32(i+1))
	}
	_, err := Seal(nil, recipients, [][]byte{make([]byte, 36), make([]byte, 36)}, testRand(1))
	if !errors.Is(err, ErrTooManyPackets) || errkind.Of(err) != errkind.Usage {
		t.Fatalf("got %v (kind %v), want ErrTooManyPackets of kind usage", err, errkind.Of(err))
	}
}

// TestHeaderLimits: a reader given more than MaxDataKeys data keys is
// refused (each segment would be tried with each key), MaxDataKeys are
// taken; packets that together pass MaxHeaderSize are refused as they
// are read, before the rest is.
func TestHeaderLimits(t *testing.T) {
	ks := genKeys(t, 2, 1)
	reader := &ks[0]
	payloads := func(n int) [][]byte {
		var ps [][]byte
		for i := range n {
			var k [32]byte
			binary.LittleEndian.PutUint32(k[:], uint32(i+1))
			ps = append(ps, DataKeyPayload(&k))
		}
		return ps
	}
	h, err := Seal(nil, []keys.PublicKey{ks[0].Public()}, payloads(MaxDataKeys), testRand(2))
	if err != nil {
		t.Fatal(err)
	}
	if c, err := h.Decrypt(reader, nil); err != nil || len(c.DataKeys) != MaxDataKeys {
		t.Fatalf("%d data keys: %v", MaxDataKeys, err)
	}
	h, err = Seal(nil, []keys.PublicKey{ks[0].Public()}, payloads(MaxDataKeys+1), testRand(2))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Decrypt(reader, nil); !errors.Is(err, ErrTooManyPackets) || !strings.Contains(err.Error(), "data keys") {
		t.Fatalf("%d data keys: %v, want ErrTooManyPackets", MaxDataKeys+1, err)
	}

	// Packets of MaxPacketLength, more than MaxHeaderSize of them, as a
	// reader streams them: refused at the first past the limit.
	n := MaxHeaderSize/MaxPacketLength + 2
	var b bytes.Buffer
	b.WriteString(Magic)
	binary.Write(&b, binary.LittleEndian, [2]uint32{Version, uint32(n)})
	packet := make([]byte, MaxPacketLength)
	binary.LittleEndian.PutUint32(packet, MaxPacketLength)
	binary.LittleEndian.PutUint32(packet[4:], 7) // an unknown method: kept opaque
	for range n {
		b.Write(packet)
	}
	if _, err := Parse(&b); !errors.Is(err, ErrInvalidPacket) || !strings.Contains(err.Error(), "header limit") {
		t.Fatalf("%d packets of %d bytes: %v, want ErrInvalidPacket", n, MaxPacketLength, err)
	}
	if b.Len() < MaxPacketLength {
		t.Errorf("the rest of the header was read: %d bytes left", b.Len())
	}
}
