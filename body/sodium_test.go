//go:build sodium

package body_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"testing"

	"golang.org/x/crypto/chacha20poly1305"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/internal/sodium"
	"github.com/c4gh-go/crypt4gh/keys"
)

// These tests cross-check the segment stream with libsodium, the library
// the reference crypt4gh tools use: segments written here are re-sealed
// with libsodium under the same nonce and must match byte for byte, whole
// files written here are read by a small libsodium reader, and files
// written by a small libsodium writer are read here. Run them with
//
//	CGO_ENABLED=1 go test -tags sodium ./body/

const (
	sodiumIterations = 200
	sodiumSegment    = 65536
	sodiumNonce      = 12
	sodiumOverhead   = 12 + 16
)

// sodiumFileSizes are the plaintext sizes of the whole-file tests, each
// written sodiumFileRounds times with fresh keys.
var sodiumFileSizes = []int{0, 1, 65536, 65537, 200000}

const sodiumFileRounds = 5

func sodiumRandom(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if err := sodium.RandomBytes(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func sodiumRandom32(t *testing.T) [32]byte {
	t.Helper()
	return [32]byte(sodiumRandom(t, 32))
}

// sodiumTestSize returns the plaintext size for iteration i: the segment
// boundaries first, then random sizes up to three segments.
func sodiumTestSize(t *testing.T, i int) int {
	t.Helper()
	fixed := []int{0, 1, 15, 16, 17, 65535, 65536, 65537, 2*65536 - 1, 2 * 65536, 2*65536 + 500}
	if i < len(fixed) {
		return fixed[i]
	}
	return int(binary.LittleEndian.Uint32(sodiumRandom(t, 4)) % (3*sodiumSegment + 1))
}

// sodiumCheckSegments walks an encrypted body, and for each segment takes the
// nonce our code chose, re-seals the matching plaintext with libsodium and
// with x/crypto under that nonce and compares the bytes; it also opens each
// segment with libsodium.
func sodiumCheckSegments(t *testing.T, what string, enc, plain []byte, key [32]byte) {
	t.Helper()
	aead, err := chacha20poly1305.New(key[:])
	if err != nil {
		t.Fatal(err)
	}
	nseg := (len(plain) + sodiumSegment - 1) / sodiumSegment
	if want := len(plain) + nseg*sodiumOverhead; len(enc) != want {
		t.Fatalf("%s: %d plaintext bytes gave %d encrypted bytes, want %d", what, len(plain), len(enc), want)
	}
	for i := range nseg {
		chunk := plain[i*sodiumSegment : min(len(plain), (i+1)*sodiumSegment)]
		off := i * (sodiumSegment + sodiumOverhead)
		seg := enc[off : off+len(chunk)+sodiumOverhead]
		nonce := [sodiumNonce]byte(seg[:sodiumNonce])
		want, err := sodium.AEADEncrypt(key, nonce, chunk, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(seg[sodiumNonce:], want) {
			t.Fatalf("%s: %d bytes: segment %d differs from libsodium's seal under the same nonce", what, len(plain), i)
		}
		if !bytes.Equal(aead.Seal(nil, nonce[:], chunk, nil), want) {
			t.Fatalf("%s: %d bytes: segment %d: x/crypto and libsodium seal differently", what, len(plain), i)
		}
		got, err := sodium.AEADDecrypt(key, nonce, seg[sodiumNonce:], nil)
		if err != nil {
			t.Fatalf("%s: %d bytes: libsodium cannot open segment %d: %v", what, len(plain), i, err)
		}
		if !bytes.Equal(got, chunk) {
			t.Fatalf("%s: %d bytes: libsodium opened segment %d to other bytes", what, len(plain), i)
		}
	}
}

// TestSodiumWriterSegments compares every segment written by Writer (in
// one Write and in odd-sized Writes) and by the parallel Encrypt with
// libsodium's ChaCha20-Poly1305-IETF.
func TestSodiumWriterSegments(t *testing.T) {
	for i := range sodiumIterations {
		key := sodiumRandom32(t)
		plain := sodiumRandom(t, sodiumTestSize(t, i))

		var buf bytes.Buffer
		w, err := body.NewWriter(&buf, &key)
		if err != nil {
			t.Fatal(err)
		}
		step := len(plain)
		if i%2 == 1 {
			step = 1 + int(binary.LittleEndian.Uint16(sodiumRandom(t, 2)))
		}
		for rest := plain; len(rest) > 0; {
			n := min(step, len(rest))
			if _, err := w.Write(rest[:n]); err != nil {
				t.Fatal(err)
			}
			rest = rest[n:]
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		sodiumCheckSegments(t, fmt.Sprintf("Writer (writes of %d)", step), buf.Bytes(), plain, key)

		if i%8 == 0 {
			buf.Reset()
			n, err := body.Encrypt(&buf, bytes.NewReader(plain), &key, 2)
			if err != nil {
				t.Fatal(err)
			}
			if n != int64(len(plain)) {
				t.Fatalf("Encrypt read %d bytes, want %d", n, len(plain))
			}
			sodiumCheckSegments(t, "Encrypt", buf.Bytes(), plain, key)
		}
	}
}

// TestSodiumReaderSegments seals bodies segment by segment with libsodium
// and reads them with Reader.
func TestSodiumReaderSegments(t *testing.T) {
	for i := range sodiumIterations {
		key := sodiumRandom32(t)
		plain := sodiumRandom(t, sodiumTestSize(t, i))
		enc := sodiumSealBody(t, key, plain)
		got, err := io.ReadAll(sodiumBodyReader(t, enc, key))
		if err != nil {
			t.Fatalf("%d bytes: Reader: %v", len(plain), err)
		}
		if !bytes.Equal(got, plain) {
			t.Fatalf("%d bytes: Reader returned other bytes", len(plain))
		}
		if len(enc) > 0 {
			// One flipped bit in a libsodium segment must fail here too.
			bad := bytes.Clone(enc)
			bad[int(binary.LittleEndian.Uint32(sodiumRandom(t, 4))%uint32(len(bad)))] ^= 0x10
			if _, err := io.ReadAll(sodiumBodyReader(t, bad, key)); !errors.Is(err, body.ErrAuth) {
				t.Fatalf("%d bytes: flipped bit: err = %v, want ErrAuth", len(plain), err)
			}
		}
	}
}

func sodiumBodyReader(t *testing.T, enc []byte, key [32]byte) io.Reader {
	t.Helper()
	r, err := body.NewReader(bytes.NewReader(enc), [][32]byte{key})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// sodiumSealBody encrypts plain as a crypt4gh body with libsodium, random
// nonces from randombytes_buf.
func sodiumSealBody(t *testing.T, key [32]byte, plain []byte) []byte {
	t.Helper()
	var out []byte
	for rest := plain; len(rest) > 0; {
		chunk := rest[:min(len(rest), sodiumSegment)]
		rest = rest[len(chunk):]
		nonce := [sodiumNonce]byte(sodiumRandom(t, sodiumNonce))
		ct, err := sodium.AEADEncrypt(key, nonce, chunk, nil)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, nonce[:]...)
		out = append(out, ct...)
	}
	return out
}

// sodiumKeyPair is an X25519 key pair made by libsodium.
type sodiumKeyPair struct{ sk, pk [32]byte }

func newSodiumKeyPair(t *testing.T) sodiumKeyPair {
	t.Helper()
	sk := sodiumRandom32(t)
	pk, err := sodium.ScalarMultBase(sk)
	if err != nil {
		t.Fatal(err)
	}
	return sodiumKeyPair{sk, pk}
}

// sodiumEncryptFile is a minimal crypt4gh writer on libsodium alone,
// written from FORMAT.md: one data-key packet for the reader, then the
// segments.
func sodiumEncryptFile(t *testing.T, writer sodiumKeyPair, readerPK [32]byte, dataKey [32]byte, plain []byte) []byte {
	t.Helper()
	_, tx, err := sodium.KXServerSessionKeys(writer.pk, writer.sk, readerPK)
	if err != nil {
		t.Fatal(err)
	}
	payload := binary.LittleEndian.AppendUint32(nil, 0) // data_encryption_parameters
	payload = binary.LittleEndian.AppendUint32(payload, 0)
	payload = append(payload, dataKey[:]...)
	nonce := [sodiumNonce]byte(sodiumRandom(t, sodiumNonce))
	ct, err := sodium.AEADEncrypt(tx, nonce, payload, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := []byte("crypt4gh")
	b = binary.LittleEndian.AppendUint32(b, 1)
	b = binary.LittleEndian.AppendUint32(b, 1)
	b = binary.LittleEndian.AppendUint32(b, uint32(4+4+32+12+len(ct)))
	b = binary.LittleEndian.AppendUint32(b, 0) // X25519_chacha20_ietf_poly1305
	b = append(b, writer.pk[:]...)
	b = append(b, nonce[:]...)
	b = append(b, ct...)
	return append(b, sodiumSealBody(t, dataKey, plain)...)
}

// sodiumDecryptFile is a minimal crypt4gh reader on libsodium alone,
// written from FORMAT.md: it takes the data keys of the packets that open
// with the reader's key and opens each segment with one of them. It
// ignores edit lists.
func sodiumDecryptFile(reader sodiumKeyPair, file []byte) ([]byte, error) {
	if len(file) < 16 || string(file[:8]) != "crypt4gh" || binary.LittleEndian.Uint32(file[8:]) != 1 {
		return nil, errors.New("not a crypt4gh v1 file")
	}
	n := binary.LittleEndian.Uint32(file[12:])
	b := file[16:]
	var dataKeys [][32]byte
	for range n {
		if len(b) < 4 {
			return nil, errors.New("header truncated")
		}
		l := binary.LittleEndian.Uint32(b)
		if l < 8 || uint64(l) > uint64(len(b)) {
			return nil, fmt.Errorf("packet length %d with %d bytes left", l, len(b))
		}
		p := b[:l]
		b = b[l:]
		if binary.LittleEndian.Uint32(p[4:]) != 0 || len(p) < 4+4+32+12+16 {
			continue
		}
		rx, _, err := sodium.KXClientSessionKeys(reader.pk, reader.sk, [32]byte(p[8:40]))
		if err != nil {
			return nil, err
		}
		payload, err := sodium.AEADDecrypt(rx, [sodiumNonce]byte(p[40:52]), p[52:], nil)
		if errors.Is(err, sodium.ErrAuth) {
			continue // another reader's packet
		}
		if err != nil {
			return nil, err
		}
		if len(payload) >= 40 && binary.LittleEndian.Uint32(payload) == 0 && binary.LittleEndian.Uint32(payload[4:]) == 0 {
			dataKeys = append(dataKeys, [32]byte(payload[8:40]))
		}
	}
	if len(dataKeys) == 0 {
		return nil, errors.New("no data key")
	}
	var plain []byte
	for i := 0; len(b) > 0; i++ {
		seg := b[:min(len(b), sodiumSegment+sodiumOverhead)]
		b = b[len(seg):]
		if len(seg) < sodiumOverhead {
			return nil, fmt.Errorf("segment %d truncated", i)
		}
		var opened bool
		for _, k := range dataKeys {
			m, err := sodium.AEADDecrypt(k, [sodiumNonce]byte(seg[:sodiumNonce]), seg[sodiumNonce:], nil)
			if err == nil {
				plain = append(plain, m...)
				opened = true
				break
			}
		}
		if !opened {
			return nil, fmt.Errorf("segment %d does not authenticate", i)
		}
	}
	return plain, nil
}

// TestSodiumReadsOurFiles writes whole files with header.New and
// body.Writer for two recipients and reads them with the libsodium reader.
func TestSodiumReadsOurFiles(t *testing.T) {
	for i := range len(sodiumFileSizes) * sodiumFileRounds {
		size := sodiumFileSizes[i%len(sodiumFileSizes)]
		writer, reader, other := newSodiumKeyPair(t), newSodiumKeyPair(t), newSodiumKeyPair(t)
		plain := sodiumRandom(t, size)
		dataKey := sodiumRandom32(t)
		wsk := keys.SecretKey(writer.sk)
		h, err := header.New(&wsk, []keys.PublicKey{keys.PublicKey(other.pk), keys.PublicKey(reader.pk)}, &dataKey, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		var file bytes.Buffer
		if _, err := h.WriteTo(&file); err != nil {
			t.Fatal(err)
		}
		w, err := body.NewWriter(&file, &dataKey)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(plain); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		for _, rd := range []sodiumKeyPair{reader, other} {
			got, err := sodiumDecryptFile(rd, file.Bytes())
			if err != nil {
				t.Fatalf("%d bytes: libsodium reader: %v", size, err)
			}
			if !bytes.Equal(got, plain) {
				t.Fatalf("%d bytes: libsodium reader returned %d other bytes", size, len(got))
			}
		}
		if _, err := sodiumDecryptFile(newSodiumKeyPair(t), file.Bytes()); err == nil {
			t.Fatalf("%d bytes: libsodium reader opened the file with a stranger's key", size)
		}
	}
}

// TestSodiumFilesReadHere writes whole files with the libsodium writer and
// reads them with header.Parse, Header.Decrypt and each body reader.
func TestSodiumFilesReadHere(t *testing.T) {
	for i := range len(sodiumFileSizes) * sodiumFileRounds {
		size := sodiumFileSizes[i%len(sodiumFileSizes)]
		writer, reader := newSodiumKeyPair(t), newSodiumKeyPair(t)
		plain := sodiumRandom(t, size)
		dataKey := sodiumRandom32(t)
		file := sodiumEncryptFile(t, writer, reader.pk, dataKey, plain)

		r := bytes.NewReader(file)
		h, err := header.Parse(r)
		if err != nil {
			t.Fatalf("%d bytes: Parse: %v", size, err)
		}
		rsk := keys.SecretKey(reader.sk)
		c, err := h.Decrypt(&rsk, nil)
		if err != nil {
			t.Fatalf("%d bytes: Decrypt: %v", size, err)
		}
		if len(c.DataKeys) != 1 || c.DataKeys[0] != dataKey {
			t.Fatalf("%d bytes: data keys %x, want [%x]", size, c.DataKeys, dataKey)
		}
		bodyStart := h.Size()
		if bodyStart != int64(len(file)-r.Len()) {
			t.Fatalf("%d bytes: Parse stopped at %d, header is %d bytes", size, len(file)-r.Len(), bodyStart)
		}
		enc := file[bodyStart:]

		br, err := body.NewReader(r, c.DataKeys)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(br)
		if err != nil {
			t.Fatalf("%d bytes: Reader: %v", size, err)
		}
		if !bytes.Equal(got, plain) {
			t.Fatalf("%d bytes: Reader returned %d other bytes", size, len(got))
		}

		var out bytes.Buffer
		n, err := body.Decrypt(&out, bytes.NewReader(enc), c.DataKeys, 2)
		if err != nil {
			t.Fatalf("%d bytes: Decrypt: %v", size, err)
		}
		if n != int64(size) || !bytes.Equal(out.Bytes(), plain) {
			t.Fatalf("%d bytes: Decrypt wrote %d other bytes", size, n)
		}

		ra, err := body.NewReaderAt(bytes.NewReader(enc), int64(len(enc)), c.DataKeys)
		if err != nil {
			t.Fatalf("%d bytes: NewReaderAt: %v", size, err)
		}
		if ra.Size() != int64(size) {
			t.Fatalf("%d bytes: ReaderAt.Size() = %d", size, ra.Size())
		}
		got = make([]byte, size)
		if n, err := ra.ReadAt(got, 0); n != size || (err != nil && err != io.EOF) {
			t.Fatalf("%d bytes: ReadAt(0) = %d, %v", size, n, err)
		}
		if !bytes.Equal(got, plain) {
			t.Fatalf("%d bytes: ReadAt returned other bytes", size)
		}
		for range 20 {
			if size == 0 {
				break
			}
			off := int(binary.LittleEndian.Uint32(sodiumRandom(t, 4))) % size
			n := 1 + int(binary.LittleEndian.Uint32(sodiumRandom(t, 4)))%(size-off)
			part := make([]byte, n)
			if m, err := ra.ReadAt(part, int64(off)); m != n || (err != nil && err != io.EOF) {
				t.Fatalf("%d bytes: ReadAt(%d bytes at %d) = %d, %v", size, n, off, m, err)
			}
			if !bytes.Equal(part, plain[off:off+n]) {
				t.Fatalf("%d bytes: ReadAt(%d bytes at %d) returned other bytes", size, n, off)
			}
		}
		c.Zero()
	}
}
