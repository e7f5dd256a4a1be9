//go:build sodium

package header_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/internal/sodium"
	"github.com/c4gh-go/crypt4gh/keys"
)

// These tests cross-check header packets with libsodium, the library the
// reference crypt4gh tools use: packets sealed here open with libsodium's
// crypto_kx and AEAD, and packets sealed with libsodium (and laid out by
// hand from FORMAT.md) open here. Run them with
//
//	CGO_ENABLED=1 go test -tags sodium ./header/

const sodiumIterations = 200

// sodiumKeyPair is an X25519 key pair made by libsodium.
type sodiumKeyPair struct{ sk, pk [32]byte }

func newSodiumKeyPair(t *testing.T) sodiumKeyPair {
	t.Helper()
	sk, err := sodium.Random32()
	if err != nil {
		t.Fatal(err)
	}
	pk, err := sodium.ScalarMultBase(sk)
	if err != nil {
		t.Fatal(err)
	}
	return sodiumKeyPair{sk, pk}
}

func (kp sodiumKeyPair) secret() *keys.SecretKey { sk := keys.SecretKey(kp.sk); return &sk }
func (kp sodiumKeyPair) public() keys.PublicKey  { return keys.PublicKey(kp.pk) }

func sodiumRandom(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if err := sodium.RandomBytes(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// sodiumRandomLen returns a length in [0, n).
func sodiumRandomLen(t *testing.T, n int) int {
	t.Helper()
	return int(binary.LittleEndian.Uint32(sodiumRandom(t, 4)) % uint32(n))
}

// sodiumRandomPayload returns, in turn, a data-key payload, an edit-list payload,
// and random bytes of random length (0 included).
func sodiumRandomPayload(t *testing.T, i int) []byte {
	t.Helper()
	switch i % 3 {
	case 0:
		key := [32]byte(sodiumRandom(t, 32))
		return header.DataKeyPayload(&key)
	case 1:
		list := make([]uint64, sodiumRandomLen(t, 8))
		for j := range list {
			list[j] = binary.LittleEndian.Uint64(sodiumRandom(t, 8))
		}
		b, err := header.EditListPayload(list)
		if err != nil {
			t.Fatal(err)
		}
		return b
	default:
		return sodiumRandom(t, sodiumRandomLen(t, 300))
	}
}

// sodiumOpen opens a method-0 packet the way the reference tools do: the
// reader is the crypto_kx client and takes rx.
func sodiumOpen(reader sodiumKeyPair, writerPK [32]byte, nonce [12]byte, ciphertext []byte) ([]byte, error) {
	rx, _, err := sodium.KXClientSessionKeys(reader.pk, reader.sk, writerPK)
	if err != nil {
		return nil, err
	}
	return sodium.AEADDecrypt(rx, nonce, ciphertext, nil)
}

// sodiumSeal seals a payload for reader with libsodium (the writer is the
// crypto_kx server and takes tx) and lays the packet out by hand.
func sodiumSeal(t *testing.T, writer sodiumKeyPair, readerPK [32]byte, payload []byte) []byte {
	t.Helper()
	_, tx, err := sodium.KXServerSessionKeys(writer.pk, writer.sk, readerPK)
	if err != nil {
		t.Fatal(err)
	}
	nonce := [12]byte(sodiumRandom(t, 12))
	ct, err := sodium.AEADEncrypt(tx, nonce, payload, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := binary.LittleEndian.AppendUint32(nil, uint32(4+4+32+12+len(ct)))
	p = binary.LittleEndian.AppendUint32(p, 0) // X25519_chacha20_ietf_poly1305
	p = append(p, writer.pk[:]...)
	p = append(p, nonce[:]...)
	return append(p, ct...)
}

func sodiumFileHeader(packets ...[]byte) []byte {
	b := []byte("crypt4gh")
	b = binary.LittleEndian.AppendUint32(b, 1)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(packets)))
	for _, p := range packets {
		b = append(b, p...)
	}
	return b
}

// TestSodiumOpensSealPacket seals packets with SealPacket and opens them
// with libsodium.
func TestSodiumOpensSealPacket(t *testing.T) {
	for i := range sodiumIterations {
		writer, reader := newSodiumKeyPair(t), newSodiumKeyPair(t)
		payload := sodiumRandomPayload(t, i)
		p, err := header.SealPacket(writer.secret(), reader.public(), payload, nil)
		if err != nil {
			t.Fatal(err)
		}
		if p.Method != header.MethodX25519ChaCha20Poly1305 {
			t.Fatalf("SealPacket: method %d", p.Method)
		}
		if p.WriterPublicKey != writer.public() {
			t.Fatalf("SealPacket: writer public key %x, crypto_scalarmult_base gives %x", p.WriterPublicKey, writer.pk)
		}
		got, err := sodiumOpen(reader, p.WriterPublicKey, p.Nonce, p.Ciphertext)
		if err != nil {
			t.Fatalf("iteration %d: libsodium cannot open the packet: %v", i, err)
		}
		if !bytes.Equal(got, payload) {
			t.Fatalf("iteration %d: libsodium opened %x, sealed %x", i, got, payload)
		}
		// Another reader's libsodium must not open it.
		if _, err := sodiumOpen(newSodiumKeyPair(t), p.WriterPublicKey, p.Nonce, p.Ciphertext); !errors.Is(err, sodium.ErrAuth) {
			t.Fatalf("iteration %d: another reader: err = %v, want sodium.ErrAuth", i, err)
		}
	}
}

// TestSodiumSealedPacketOpens builds files whose packets are sealed with
// libsodium and laid out by hand, and reads them with Parse, Packet.Open
// and Header.Decrypt.
func TestSodiumSealedPacketOpens(t *testing.T) {
	for i := range sodiumIterations {
		writer, reader, other := newSodiumKeyPair(t), newSodiumKeyPair(t), newSodiumKeyPair(t)
		dataKey := [32]byte(sodiumRandom(t, 32))
		list := make([]uint64, 1+sodiumRandomLen(t, 6))
		for j := range list {
			list[j] = uint64(sodiumRandomLen(t, 1<<20))
		}
		// Padding after the payload is allowed and ignored.
		keyPayload := append(header.DataKeyPayload(&dataKey), sodiumRandom(t, sodiumRandomLen(t, 3)*16)...)
		listPayload, err := header.EditListPayload(list)
		if err != nil {
			t.Fatal(err)
		}
		otherKey := [32]byte(sodiumRandom(t, 32))
		payloads := [][]byte{header.DataKeyPayload(&otherKey), keyPayload, listPayload}
		packets := [][]byte{
			sodiumSeal(t, writer, other.pk, payloads[0]), // for someone else: skipped
			sodiumSeal(t, writer, reader.pk, payloads[1]),
			sodiumSeal(t, writer, reader.pk, payloads[2]),
		}
		hdr := sodiumFileHeader(packets...)
		body := sodiumRandom(t, 1+sodiumRandomLen(t, 100))
		r := bytes.NewReader(append(bytes.Clone(hdr), body...))

		h, err := header.Parse(r)
		if err != nil {
			t.Fatalf("iteration %d: Parse: %v", i, err)
		}
		if rest, _ := io.ReadAll(r); !bytes.Equal(rest, body) {
			t.Fatalf("iteration %d: Parse left %d bytes, want the %d body bytes", i, len(rest), len(body))
		}
		if !bytes.Equal(h.Marshal(), hdr) || h.Size() != int64(len(hdr)) {
			t.Fatalf("iteration %d: Marshal(Parse(b)) != b", i)
		}
		if len(h.Packets) != len(packets) {
			t.Fatalf("iteration %d: %d packets, want %d", i, len(h.Packets), len(packets))
		}
		for j := range h.Packets {
			p := &h.Packets[j]
			if p.WriterPublicKey != writer.public() {
				t.Fatalf("iteration %d: packet %d writer key %x, want %x", i, j, p.WriterPublicKey, writer.pk)
			}
			got, err := p.Open(reader.secret())
			if j == 0 {
				if !errors.Is(err, header.ErrPacketAuth) {
					t.Fatalf("iteration %d: other reader's packet: err = %v, want ErrPacketAuth", i, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("iteration %d: packet %d: Open: %v", i, j, err)
			}
			if !bytes.Equal(got, payloads[j]) {
				t.Fatalf("iteration %d: packet %d: Open = %x, libsodium sealed %x", i, j, got, payloads[j])
			}
		}

		c, err := h.Decrypt(reader.secret(), nil)
		if err != nil {
			t.Fatalf("iteration %d: Decrypt: %v", i, err)
		}
		if len(c.DataKeys) != 1 || c.DataKeys[0] != dataKey {
			t.Fatalf("iteration %d: data keys %x, want [%x]", i, c.DataKeys, dataKey)
		}
		if !c.HasEditList || !slices.Equal(c.EditList, list) {
			t.Fatalf("iteration %d: edit list %v (%v), want %v", i, c.EditList, c.HasEditList, list)
		}
		if !slices.Equal(c.Opened, []int{1, 2}) {
			t.Fatalf("iteration %d: opened %v, want [1 2]", i, c.Opened)
		}
		c.Zero()

		// The other reader sees its own data key and no edit list.
		c, err = h.Decrypt(other.secret(), nil)
		if err != nil {
			t.Fatalf("iteration %d: Decrypt by the other reader: %v", i, err)
		}
		if len(c.DataKeys) != 1 || c.DataKeys[0] != otherKey || c.HasEditList {
			t.Fatalf("iteration %d: other reader: data keys %x, edit list %v", i, c.DataKeys, c.HasEditList)
		}

		// Requiring the writer's key keeps the packets; another sender's drops them.
		wpk := writer.public()
		if _, err := h.Decrypt(reader.secret(), &wpk); err != nil {
			t.Fatalf("iteration %d: Decrypt with the right sender: %v", i, err)
		}
		stranger := newSodiumKeyPair(t).public()
		if _, err := h.Decrypt(reader.secret(), &stranger); !errors.Is(err, header.ErrNoDecryptablePacket) {
			t.Fatalf("iteration %d: Decrypt with another sender: err = %v, want ErrNoDecryptablePacket", i, err)
		}
	}
}

// TestSodiumOpensNew marshals headers made by New, parses them by hand from
// FORMAT.md and opens every packet with libsodium.
func TestSodiumOpensNew(t *testing.T) {
	for i := range sodiumIterations {
		writer := newSodiumKeyPair(t)
		readers := []sodiumKeyPair{newSodiumKeyPair(t), newSodiumKeyPair(t)}
		dataKey := [32]byte(sodiumRandom(t, 32))
		var list []uint64
		if i%2 == 1 {
			list = []uint64{uint64(sodiumRandomLen(t, 1000)), uint64(sodiumRandomLen(t, 1000))}
		}
		h, err := header.New(writer.secret(), []keys.PublicKey{readers[0].public(), readers[1].public()}, &dataKey, list, nil)
		if err != nil {
			t.Fatal(err)
		}
		b := h.Marshal()
		if h.Size() != int64(len(b)) {
			t.Fatalf("Size() = %d, len(Marshal()) = %d", h.Size(), len(b))
		}
		packets := sodiumParseHeader(t, b)
		perReader := 1
		if list != nil {
			perReader = 2
		}
		if len(packets) != len(readers)*perReader {
			t.Fatalf("iteration %d: %d packets, want %d", i, len(packets), len(readers)*perReader)
		}
		for _, rd := range readers {
			var gotKey, gotList int
			for _, p := range packets {
				if p.writerPK != writer.pk {
					t.Fatalf("iteration %d: packet writer key %x, want %x", i, p.writerPK, writer.pk)
				}
				payload, err := sodiumOpen(rd, p.writerPK, p.nonce, p.ciphertext)
				if errors.Is(err, sodium.ErrAuth) {
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				if len(payload) < 4 {
					t.Fatalf("iteration %d: payload of %d bytes", i, len(payload))
				}
				switch binary.LittleEndian.Uint32(payload) {
				case header.PacketTypeDataKey:
					gotKey++
					if len(payload) < 40 || binary.LittleEndian.Uint32(payload[4:]) != header.DataMethodChaCha20Poly1305 ||
						!bytes.Equal(payload[8:40], dataKey[:]) {
						t.Fatalf("iteration %d: data-key payload %x, want key %x", i, payload, dataKey)
					}
				case header.PacketTypeEditList:
					gotList++
					// Padding after the lengths would be allowed.
					if len(payload) < 8+8*len(list) || binary.LittleEndian.Uint32(payload[4:]) != uint32(len(list)) {
						t.Fatalf("iteration %d: edit-list payload %x for %v", i, payload, list)
					}
					for k, v := range list {
						if binary.LittleEndian.Uint64(payload[8+8*k:]) != v {
							t.Fatalf("iteration %d: edit-list payload %x for %v", i, payload, list)
						}
					}
				default:
					t.Fatalf("iteration %d: payload of type %d", i, binary.LittleEndian.Uint32(payload))
				}
			}
			if gotKey != 1 || gotList != perReader-1 {
				t.Fatalf("iteration %d: reader opened %d data-key and %d edit-list packets, want 1 and %d", i, gotKey, gotList, perReader-1)
			}
		}
	}
}

type sodiumRawPacket struct {
	writerPK   [32]byte
	nonce      [12]byte
	ciphertext []byte
}

// sodiumParseHeader reads a whole header following FORMAT.md, independently
// of Parse; every packet must be of method 0.
func sodiumParseHeader(t *testing.T, b []byte) []sodiumRawPacket {
	t.Helper()
	if len(b) < 16 || string(b[:8]) != "crypt4gh" || binary.LittleEndian.Uint32(b[8:]) != 1 {
		t.Fatalf("header starts with %x", b[:min(len(b), 16)])
	}
	n := binary.LittleEndian.Uint32(b[12:])
	b = b[16:]
	var packets []sodiumRawPacket
	for range n {
		if len(b) < 4 {
			t.Fatalf("header truncated")
		}
		l := binary.LittleEndian.Uint32(b)
		if l < 4+4+32+12+16 || uint64(l) > uint64(len(b)) {
			t.Fatalf("packet length %d with %d bytes left", l, len(b))
		}
		p := b[:l]
		b = b[l:]
		if m := binary.LittleEndian.Uint32(p[4:]); m != 0 {
			t.Fatalf("packet method %d", m)
		}
		packets = append(packets, sodiumRawPacket{
			writerPK:   [32]byte(p[8:40]),
			nonce:      [12]byte(p[40:52]),
			ciphertext: p[52:],
		})
	}
	if len(b) != 0 {
		t.Fatalf("%d bytes after the last packet", len(b))
	}
	return packets
}
