package agent

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/c4gh-go/crypt4gh/keys"
)

// A Key is one of the keys that an agent holds, as a [keys.Holder]: it
// opens packets through the agent, and seals packets with that key as
// their writer, so that re-encryption and splicing write the header that
// the key itself would, while the key stays in the agent. Only this
// module's agent seals as a key (htslib-crypt4gh's seals only for its own
// keys, with a new writer key each time).
type Key struct {
	c    *Client
	pub  keys.PublicKey
	name string
}

var _ keys.Holder = (*Key)(nil)

// Key returns the agent's key that c's requests use: the one c.Name names,
// or the first one that the agent holds whose lifetime is not over. Its
// requests go over c's connection.
func (c *Client) Key() (*Key, error) {
	pub, err := c.PublicKey()
	if err != nil {
		return nil, err
	}
	return &Key{c: c, pub: pub, name: pub.String()}, nil
}

// Public returns the key's public key.
func (k *Key) Public() keys.PublicKey { return k.pub }

// OpenPacket asks the agent to open a packet with this key only.
func (k *Key) OpenPacket(writer keys.PublicKey, nonce *[keys.NonceSize]byte, ct []byte) ([]byte, error) {
	return k.c.open(msgOpen, k.name, nil, packetBytes(writer, nonce, ct))
}

// OpenPacketAsWriter asks the agent to open a packet that this key wrote
// for recipient.
func (k *Key) OpenPacketAsWriter(recipient keys.PublicKey, nonce *[keys.NonceSize]byte, ct []byte) ([]byte, error) {
	return k.c.open(msgOpenAsWriter, k.name, recipient[:], packetBytes(k.pub, nonce, ct))
}

// SealPacketFor asks the agent to seal payload for recipient with this key
// as the writer. The agent draws the nonce: rand is not read.
func (k *Key) SealPacketFor(recipient keys.PublicKey, payload []byte, _ io.Reader) (nonce [keys.NonceSize]byte, ct []byte, err error) {
	req := keyRequest(msgSealAs, k.name, append(recipient[:], payload...))
	pt, err := k.c.roundTrip(req)
	clear(req)
	if err != nil {
		return nonce, nil, err
	}
	defer clear(pt)
	if binary.LittleEndian.Uint16(pt) != msgSealAs {
		return nonce, nil, fmt.Errorf("%w: unexpected reply to a seal request", errProtocol)
	}
	writer, nonce, ct, err := parsePacketBytes(pt[2:])
	if err != nil {
		return nonce, nil, err
	}
	if writer != k.pub {
		return nonce, nil, fmt.Errorf("%w: the agent sealed with another key", errProtocol)
	}
	return nonce, append([]byte(nil), ct...), nil
}

// Derive asks the agent for the secret that keys.SecretKey.Derive gives
// for this key and label. The agent derives only for labels that begin
// "crypt4gh ", this module's.
func (k *Key) Derive(label string) ([]byte, error) {
	pt, err := k.c.roundTrip(keyRequest(msgDerive, k.name, []byte(label)))
	if err != nil {
		return nil, err
	}
	defer clear(pt)
	if binary.LittleEndian.Uint16(pt) != msgDerive || len(pt) != 2+32 {
		return nil, fmt.Errorf("%w: unexpected reply to a derive request", errProtocol)
	}
	return append([]byte(nil), pt[2:]...), nil
}

// Zero closes the connection of the client that k uses.
func (k *Key) Zero() { k.c.Close() }
