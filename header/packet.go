package header

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/keys"
)

// Open decrypts a method-0 packet with the reader's key (a secret key, or
// a key agent's client) and returns the plaintext payload. The packet key
// is the crypto_kx key of the reader's secret key and the writer public key
// stored in the packet.
//
// Open returns an error wrapping [ErrPacketAuth] when the packet does not
// authenticate under that key (it is for another reader, or was altered) and
// also when its method is not [MethodX25519ChaCha20Poly1305]: no key can open
// such a packet, and a reader should skip it like any packet that is not for
// it. Another error is the opener's own failure (an agent that cannot be
// reached, for one).
func (p *Packet) Open(reader keys.Opener) ([]byte, error) {
	if p.Method != MethodX25519ChaCha20Poly1305 {
		return nil, fmt.Errorf("%w: unsupported packet encryption method %d", ErrPacketAuth, p.Method)
	}
	if keys.IsNil(reader) {
		return nil, fmt.Errorf("%w: no reader key", ErrPacketAuth)
	}
	pt, err := reader.OpenPacket(p.WriterPublicKey, &p.Nonce, p.Ciphertext)
	return pt, authError(err)
}

// packetAuth is an opener's keys.ErrPacketAuth, which is ErrPacketAuth too.
type packetAuth struct{ err error }

func (e packetAuth) Error() string   { return e.err.Error() }
func (e packetAuth) Unwrap() []error { return []error{ErrPacketAuth, e.err} }

// authError makes an opener's keys.ErrPacketAuth also ErrPacketAuth.
func authError(err error) error {
	if err != nil && errors.Is(err, keys.ErrPacketAuth) && !errors.Is(err, ErrPacketAuth) {
		return packetAuth{err}
	}
	return err
}

// OpenAsWriter decrypts a method-0 packet that writer sealed for
// recipient, as [SealPacket] did, and returns its payload: so a writer can
// tell which recipients already hold packets of its own. It fails with
// [ErrPacketAuth] for a packet that another key wrote, or that writer
// wrote for another recipient. writer may be a secret key or a key that an
// agent holds.
func (p *Packet) OpenAsWriter(writer keys.Writer, recipient keys.PublicKey) ([]byte, error) {
	if p.Method != MethodX25519ChaCha20Poly1305 || isNilWriter(writer) || p.WriterPublicKey != writer.Public() {
		return nil, fmt.Errorf("%w: not written by this key", ErrPacketAuth)
	}
	pt, err := writer.OpenPacketAsWriter(recipient, &p.Nonce, p.Ciphertext)
	return pt, authError(err)
}

// isNilWriter reports whether w is nil or a nil *keys.SecretKey.
func isNilWriter(w keys.Writer) bool {
	if w == nil {
		return true
	}
	sk, ok := w.(*keys.SecretKey)
	return ok && sk == nil
}

// open decrypts a method-0 packet with its shared key.
func (p *Packet) open(k *[keys.KeySize]byte) ([]byte, error) {
	pt, err := keys.OpenPacketWith(k, &p.Nonce, p.Ciphertext)
	return pt, authError(err)
}

// maxPayload is the largest payload that fits in a packet of
// MaxPacketLength bytes.
const maxPayload = MaxPacketLength - minMethod0Length

// SealPacket encrypts payload for recipient with method 0: a random nonce
// read from rand (crypto/rand when rand is nil; an agent's key draws its
// own) and the crypto_kx key of the writer's secret key and the
// recipient's public key. The packet records the writer's public key so
// that the recipient can derive the same key. writer may be a secret key
// or a key that an agent holds.
func SealPacket(writer keys.Writer, recipient keys.PublicKey, payload []byte, rand io.Reader) (Packet, error) {
	if isNilWriter(writer) {
		return Packet{}, errors.New("failed to seal header packet: no writer key")
	}
	if len(payload) > maxPayload {
		return Packet{}, fmt.Errorf("failed to seal header packet: payload of %d bytes exceeds the %d-byte limit",
			len(payload), maxPayload)
	}
	p := Packet{Method: MethodX25519ChaCha20Poly1305, WriterPublicKey: writer.Public()}
	var err error
	p.Nonce, p.Ciphertext, err = writer.SealPacketFor(recipient, payload, randReader(rand))
	if err != nil {
		return Packet{}, fmt.Errorf("failed to seal header packet for %s: %w", recipient, err)
	}
	return p, nil
}

func randReader(r io.Reader) io.Reader {
	if r == nil {
		return rand.Reader
	}
	return r
}

// DataKeyPayload returns the payload of a data-key packet
// ([PacketTypeDataKey]) for data method [DataMethodChaCha20Poly1305]. The
// result holds the key: the caller should clear it after sealing.
func DataKeyPayload(key *[32]byte) []byte {
	b := make([]byte, 0, 4+4+len(key))
	b = binary.LittleEndian.AppendUint32(b, PacketTypeDataKey)
	b = binary.LittleEndian.AppendUint32(b, DataMethodChaCha20Poly1305)
	return append(b, key[:]...)
}

// EditListPayload returns the payload of an edit-list packet
// ([PacketTypeEditList]): the number of lengths and the lengths. A list of
// more than [edit.MaxEntries] lengths, which no reader of this module
// accepts, is an error wrapping [edit.ErrTooLong].
func EditListPayload(list []uint64) ([]byte, error) {
	if len(list) > edit.MaxEntries {
		return nil, fmt.Errorf("%w: %d lengths, at most %d", edit.ErrTooLong, len(list), edit.MaxEntries)
	}
	b := make([]byte, 0, 4+4+8*len(list))
	b = binary.LittleEndian.AppendUint32(b, PacketTypeEditList)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(list)))
	for _, v := range list {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	return b, nil
}

// payload is a parsed packet payload.
type payload struct {
	typ        uint32
	dataMethod uint32   // type 0
	dataKey    [32]byte // type 0
	editList   []uint64 // type 1, never nil
}

// parsePayload parses a decrypted packet payload. Bytes after the payload
// (padding) are ignored, and so is the body of an unknown packet type. A
// payload too short for its type wraps ErrInvalidPacket.
func parsePayload(b []byte) (payload, error) {
	if len(b) < 4 {
		return payload{}, fmt.Errorf("%w: payload of %d bytes has no packet type", ErrInvalidPacket, len(b))
	}
	pl := payload{typ: binary.LittleEndian.Uint32(b)}
	rest := b[4:]
	switch pl.typ {
	case PacketTypeDataKey:
		if len(rest) < 4+32 {
			return payload{}, fmt.Errorf("%w: data key payload of %d bytes (need %d)", ErrInvalidPacket, len(b), 4+4+32)
		}
		pl.dataMethod = binary.LittleEndian.Uint32(rest)
		copy(pl.dataKey[:], rest[4:4+32])
	case PacketTypeEditList:
		if len(rest) < 4 {
			return payload{}, fmt.Errorf("%w: edit list payload of %d bytes has no length count", ErrInvalidPacket, len(b))
		}
		count := binary.LittleEndian.Uint32(rest)
		rest = rest[4:]
		if uint64(count) > uint64(len(rest))/8 {
			return payload{}, fmt.Errorf("%w: edit list claims %d lengths but its payload holds %d",
				ErrInvalidPacket, count, len(rest)/8)
		}
		if count > edit.MaxEntries {
			return payload{}, fmt.Errorf("%w: %w: %d lengths, at most %d", ErrInvalidPacket, edit.ErrTooLong, count, edit.MaxEntries)
		}
		pl.editList = make([]uint64, count)
		for i := range pl.editList {
			pl.editList[i] = binary.LittleEndian.Uint64(rest[8*i:])
		}
	}
	return pl, nil
}
