package header

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/c4gh-go/crypt4gh/keys"
)

// Magic is the string every Crypt4GH file starts with.
const Magic = "crypt4gh"

// Version is the only file format version this package reads and writes.
const Version uint32 = 1

// MethodX25519ChaCha20Poly1305 is the header packet encryption method 0:
// X25519 key exchange (libsodium crypto_kx) and ChaCha20-Poly1305-IETF.
const MethodX25519ChaCha20Poly1305 uint32 = 0

// Packet types: the first field of a decrypted packet payload.
const (
	// PacketTypeDataKey marks a payload that holds a data encryption
	// method and a data key (data_encryption_parameters).
	PacketTypeDataKey uint32 = 0
	// PacketTypeEditList marks a payload that holds an edit list
	// (data_edit_list).
	PacketTypeEditList uint32 = 1
)

// DataMethodChaCha20Poly1305 is data encryption method 0: the body segments
// are sealed with ChaCha20-Poly1305-IETF. It is the only one defined.
const DataMethodChaCha20Poly1305 uint32 = 0

// Limits that [Parse] enforces. The specification sets none; these are far
// above anything a real header needs (a few packets of about 100 bytes each).
const (
	// MaxPackets is the largest packet count Parse accepts.
	MaxPackets = 1 << 16
	// MaxPacketLength is the largest packet length (the length field
	// included) Parse accepts.
	MaxPacketLength = 1 << 24
	// MaxHeaderSize bounds the packets of a header together: Parse holds
	// them in memory, and MaxPackets packets of MaxPacketLength would be a
	// terabyte. A header of as many recipients as MaxPackets, each with
	// an edit list of 8 kB, stays far below it.
	MaxHeaderSize = 1 << 26
	// MaxDataKeys is the most distinct data keys that [Header.Decrypt]
	// takes for a reader. A segment is tried with each key until one
	// opens it (the key of the segment before it first), and each try
	// authenticates the whole segment: a file whose every segment is under
	// another of 65,536 keys took minutes to verify. Real files have one
	// data key, and one more for each splice that added segments.
	MaxDataKeys = 1 << 6
	// MaxWriterKeys is the largest number of different writer public keys
	// among the packets that [Header.Decrypt] tries. Each one costs an
	// X25519 exchange (about 0.1 to 0.5 ms), so MaxPackets packets from as
	// many writers would cost seconds to tens of seconds of CPU for a
	// header of 4 MiB; real headers have one writer per encryption or
	// re-encryption.
	MaxWriterKeys = 1 << 10
)

const (
	preambleSize = len(Magic) + 4 + 4 // magic, version, packet count
	nonceSize    = 12
	tagSize      = 16
	// packetFixedSize is what every packet has: its length and method.
	packetFixedSize = 4 + 4
	// method0Overhead is the fixed part of a method-0 packet: length,
	// method, writer public key, nonce (the ciphertext follows).
	method0Overhead = packetFixedSize + keys.KeySize + nonceSize
	// minMethod0Length is the smallest method-0 packet: an empty payload
	// still carries a 16-byte tag.
	minMethod0Length = method0Overhead + tagSize

	// readChunk bounds each allocation while reading a packet, so that a
	// claimed length is only paid for as the bytes arrive.
	readChunk = 64 << 10
	// packetsPrealloc caps the capacity reserved from the packet count.
	packetsPrealloc = 16
)

// Packet is one header packet, still encrypted.
//
// For method [MethodX25519ChaCha20Poly1305] (Method == 0) the fields
// WriterPublicKey, Nonce and Ciphertext hold the packet and Opaque is unused.
// For any other method only Opaque is used: the bytes after the method field,
// kept as they are so that the packet survives [Header.Marshal].
type Packet struct {
	// Method is the packet encryption method.
	Method uint32
	// WriterPublicKey is the X25519 public key of the writer (method 0 only).
	WriterPublicKey keys.PublicKey
	// Nonce is the ChaCha20-Poly1305 nonce (method 0 only).
	Nonce [nonceSize]byte
	// Ciphertext is the encrypted payload followed by its 16-byte tag
	// (method 0 only).
	Ciphertext []byte
	// Opaque holds the bytes after the method field for other methods.
	Opaque []byte
}

// Header is a parsed Crypt4GH header: the packets in file order. The magic,
// version and packet count are implied.
type Header struct {
	Packets []Packet
}

// Size returns the length of the packet on the wire, its length field
// included.
func (p *Packet) Size() int64 {
	if p.Method == MethodX25519ChaCha20Poly1305 {
		return int64(method0Overhead) + int64(len(p.Ciphertext))
	}
	return int64(packetFixedSize) + int64(len(p.Opaque))
}

// Size returns the length in bytes of the marshaled header, which is where
// the body starts in the file.
func (h *Header) Size() int64 {
	n := int64(preambleSize)
	for i := range h.Packets {
		n += h.Packets[i].Size()
	}
	return n
}

// Marshal returns the header in its wire format.
//
// Packets built by hand must keep to the format: a method-0 packet needs a
// Ciphertext of at least 16 bytes and no packet may exceed
// [MaxPacketLength], or [Parse] will refuse the result. Packets from [Parse],
// [SealPacket] and [New] always do.
func (h *Header) Marshal() []byte {
	b := make([]byte, 0, h.Size())
	b = append(b, Magic...)
	b = binary.LittleEndian.AppendUint32(b, Version)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(h.Packets)))
	for i := range h.Packets {
		p := &h.Packets[i]
		b = binary.LittleEndian.AppendUint32(b, uint32(p.Size()))
		b = binary.LittleEndian.AppendUint32(b, p.Method)
		if p.Method == MethodX25519ChaCha20Poly1305 {
			b = append(b, p.WriterPublicKey[:]...)
			b = append(b, p.Nonce[:]...)
			b = append(b, p.Ciphertext...)
		} else {
			b = append(b, p.Opaque...)
		}
	}
	return b
}

// WriteTo writes the marshaled header to w. It implements [io.WriterTo];
// errors of w are returned as they are.
func (h *Header) WriteTo(w io.Writer) (int64, error) {
	b := h.Marshal()
	n, err := w.Write(b)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	return int64(n), err
}

var _ io.WriterTo = (*Header)(nil)

// Parse reads a Crypt4GH header from r. It reads exactly the header bytes,
// so on success r is positioned at the first body segment; r needs no
// buffering. Parse does no cryptography; see [Header.Decrypt].
//
// The input is checked as it is read: no bytes ([ErrEmptyInput]), a wrong
// magic ([ErrNotCrypt4GH]), a version other than 1 ([ErrUnsupportedVersion]),
// a packet count above [MaxPackets] ([ErrTooManyPackets]), a packet length
// below the fixed part of its packet or above [MaxPacketLength]
// ([ErrInvalidPacket]), and an input that ends inside the header
// ([ErrTruncated]). A packet that claims more than MaxPacketLength bytes is
// refused before anything more is read.
func Parse(r io.Reader) (*Header, error) {
	var pre [preambleSize]byte
	n, err := io.ReadFull(r, pre[:len(Magic)])
	switch {
	case n == 0 && err == io.EOF:
		return nil, fmt.Errorf("%w: expected a crypt4gh header", ErrEmptyInput)
	case isEOF(err):
		if string(pre[:n]) != Magic[:n] {
			return nil, &MagicError{Start: bytes.Clone(pre[:n])}
		}
		return nil, fmt.Errorf("%w: input ends after %d of the %d magic bytes", ErrTruncated, n, len(Magic))
	case err != nil:
		return nil, fmt.Errorf("failed to read header: %w", err)
	}
	if string(pre[:len(Magic)]) != Magic {
		return nil, &MagicError{Start: bytes.Clone(pre[:len(Magic)])}
	}

	if _, err := io.ReadFull(r, pre[len(Magic):]); err != nil {
		if isEOF(err) {
			return nil, fmt.Errorf("%w: input ends inside the version and packet count", ErrTruncated)
		}
		return nil, fmt.Errorf("failed to read header: %w", err)
	}
	if v := binary.LittleEndian.Uint32(pre[8:12]); v != Version {
		return nil, fmt.Errorf("%w %d (only version %d is supported)", ErrUnsupportedVersion, v, Version)
	}
	count := binary.LittleEndian.Uint32(pre[12:16])
	if count > MaxPackets {
		return nil, fmt.Errorf("%w: %d (limit %d)", ErrTooManyPackets, count, MaxPackets)
	}

	h := &Header{Packets: make([]Packet, 0, min(count, packetsPrealloc))}
	size := int64(preambleSize)
	for i := range count {
		p, err := readPacket(r, i+1, count)
		if err != nil {
			return nil, err
		}
		if size += p.Size(); size > MaxHeaderSize {
			return nil, fmt.Errorf("%w: packets 1 to %d of %d hold %d bytes (header limit %d)", ErrInvalidPacket, i+1, count, size, MaxHeaderSize)
		}
		h.Packets = append(h.Packets, p)
	}
	return h, nil
}

// readPacket reads packet number idx (1-based) of total.
func readPacket(r io.Reader, idx, total uint32) (Packet, error) {
	var fixed [packetFixedSize]byte
	n, err := io.ReadFull(r, fixed[:4])
	if err != nil {
		switch {
		case n == 0 && err == io.EOF && idx == 1:
			return Packet{}, fmt.Errorf("%w: packet 1 of %d is missing (the input ends after the packet count)",
				ErrTruncated, total)
		case n == 0 && err == io.EOF:
			return Packet{}, fmt.Errorf("%w: packet %d of %d is missing (the input ends after packet %d)",
				ErrTruncated, idx, total, idx-1)
		case isEOF(err):
			return Packet{}, fmt.Errorf("%w: packet %d of %d ends inside its length field", ErrTruncated, idx, total)
		}
		return Packet{}, fmt.Errorf("failed to read header packet %d of %d: %w", idx, total, err)
	}
	length := binary.LittleEndian.Uint32(fixed[:4])
	if length < packetFixedSize {
		return Packet{}, fmt.Errorf("%w: packet %d of %d has length %d (minimum %d)",
			ErrInvalidPacket, idx, total, length, packetFixedSize)
	}
	if length > MaxPacketLength {
		// Refused at once, without reading on: a packet count larger than
		// the packets present makes body bytes look like a huge length.
		return Packet{}, fmt.Errorf("%w: packet %d of %d has length %d (limit %d); the packet count may be wrong or the header damaged",
			ErrInvalidPacket, idx, total, length, MaxPacketLength)
	}

	n, err = io.ReadFull(r, fixed[4:])
	if err != nil {
		return Packet{}, packetReadError(err, idx, total, 4+n, length)
	}
	p := Packet{Method: binary.LittleEndian.Uint32(fixed[4:])}
	if p.Method == MethodX25519ChaCha20Poly1305 && length < minMethod0Length {
		return Packet{}, fmt.Errorf("%w: packet %d of %d has length %d, below the %d bytes of a method %d packet",
			ErrInvalidPacket, idx, total, length, minMethod0Length, p.Method)
	}

	rest, err := readN(r, int(length)-packetFixedSize)
	if err != nil {
		return Packet{}, packetReadError(err, idx, total, packetFixedSize+len(rest), length)
	}
	if p.Method != MethodX25519ChaCha20Poly1305 {
		p.Opaque = rest
		return p, nil
	}
	copy(p.WriterPublicKey[:], rest[:keys.KeySize])
	copy(p.Nonce[:], rest[keys.KeySize:keys.KeySize+nonceSize])
	p.Ciphertext = rest[keys.KeySize+nonceSize:]
	return p, nil
}

func packetReadError(err error, idx, total uint32, got int, length uint32) error {
	if isEOF(err) {
		return fmt.Errorf("%w: packet %d of %d ends after %d of its %d bytes", ErrTruncated, idx, total, got, length)
	}
	return fmt.Errorf("failed to read header packet %d of %d: %w", idx, total, err)
}

// readN reads exactly n bytes from r, growing the buffer by at most
// readChunk bytes at a time so that memory follows the bytes actually read.
// On error it returns the bytes read so far.
func readN(r io.Reader, n int) ([]byte, error) {
	buf := make([]byte, 0, min(n, readChunk))
	for len(buf) < n {
		want := min(n-len(buf), readChunk)
		buf = slices.Grow(buf, want)
		m, err := io.ReadFull(r, buf[len(buf):len(buf)+want])
		buf = buf[:len(buf)+m]
		if err != nil {
			return buf, err
		}
	}
	return buf, nil
}

func isEOF(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}
