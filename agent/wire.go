package agent

import (
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"golang.org/x/crypto/blake2b"
	"golang.org/x/crypto/chacha20poly1305"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
	"github.com/c4gh-go/crypt4gh/internal/x25519"
	"github.com/c4gh-go/crypt4gh/keys"
)

// The protocol of htslib-crypt4gh's agent (version 1). Every message is
// framed by its length (4 bytes, little endian). On connect the agent
// sends {type connect, version}; the client answers {type connect,
// version, its X25519 public key}; both derive libsodium crypto_kx session
// keys from it and the agent's public key (CRYPT4GH_PK). Every later
// message is a nonce (12 bytes) and the ChaCha20-Poly1305 seal of
// {type (2 bytes), body} under the sender's transmit key; each side
// increments its nonce (little endian) for every message it sends.
const (
	protoVersion = 1

	msgConnect  = 1 // hello, both ways
	msgOpen     = 2 // {name length, name\0, packet}: open a header packet
	msgSeal     = 3 // {name length, name\0, version, method, payload}: seal for a public key
	msgOpenFail = 4 // reply to msgOpen: no key opens it

	// Messages of this tool, beyond the plug-in's protocol. The plug-in
	// never sends them, and treats a reply of these types as a failure.
	msgError  = 0x100 // reply: {kind (2 bytes), text}
	msgList   = 0x101 // request: {}; reply: {count, then {public key, expired, name length, name}…}
	msgLock   = 0x102 // request: {passphrase}; reply msgOK
	msgUnlock = 0x103 // request: {passphrase}; reply msgOK
	msgStop   = 0x104 // request: {}; reply msgOK, then the agent stops
	msgOK     = 0x105
	// Requests that name a key as msgOpen does, for the commands that
	// write packets as the reader (reencrypt, splice, serve).
	msgSealAs       = 0x106 // {name…, recipient, payload}: seal with the key as writer; reply: {msgSealAs, packet}
	msgOpenAsWriter = 0x107 // {name…, recipient, packet}: open a packet the key wrote; reply as to msgOpen
	msgDerive       = 0x108 // {name…, label}: HKDF-SHA256 of the key for label; reply: {msgDerive, 32 bytes}
)

// featureExtensions, in the agent's hello after the version, says that
// the agent is this module's: it answers the messages from 0x100 and
// replies to requests that come before it answered the previous ones.
// htslib-crypt4gh's agent sends a hello of 4 bytes, and its plug-in
// reads only those of a longer one.
const featureExtensions = 1

// deriveNamespace is what a label of msgDerive must begin with: the agent
// derives secrets for this module's purposes only.
const deriveNamespace = "crypt4gh "

const (
	// maxFrame is the largest message either side accepts: a header
	// packet with a long edit list fits, a hostile length does not make
	// anyone allocate much.
	maxFrame = 64 << 10
	// maxName is the longest key name a request may give.
	maxName = 1024
	// helloSize is the body of the client's hello.
	helloSize = 4 + keys.KeySize
	overhead  = chacha20poly1305.NonceSize + chacha20poly1305.Overhead
)

// errProtocol is a message that does not follow the protocol.
var errProtocol = errkind.New(errkind.Other, "agent protocol error")

// readFrame reads one length-prefixed message into buf (grown up to
// maxFrame) and returns it.
func readFrame(r io.Reader, buf []byte) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	size := binary.LittleEndian.Uint32(n[:])
	if size > maxFrame {
		return nil, fmt.Errorf("%w: message of %d bytes (limit %d)", errProtocol, size, maxFrame)
	}
	if cap(buf) < int(size) {
		buf = make([]byte, size)
	}
	buf = buf[:size]
	if _, err := io.ReadFull(r, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}

// writeFrame writes msg with its length in one write.
func writeFrame(w io.Writer, msg []byte) error {
	b := make([]byte, 4, 4+len(msg))
	binary.LittleEndian.PutUint32(b, uint32(len(msg)))
	_, err := w.Write(append(b, msg...))
	clear(b)
	return err
}

// hello is the client's first message, without its public key.
func hello() []byte {
	b := make([]byte, 4)
	binary.LittleEndian.PutUint16(b, msgConnect)
	binary.LittleEndian.PutUint16(b[2:], protoVersion)
	return b
}

// agentHello is the agent's first message: the hello and its features.
func agentHello() []byte {
	return binary.LittleEndian.AppendUint32(hello(), featureExtensions)
}

// helloFeatures reads the features that follow the version of an agent's
// hello: none from htslib-crypt4gh's agent.
func helloFeatures(rest []byte) uint32 {
	if len(rest) < 4 {
		return 0
	}
	return binary.LittleEndian.Uint32(rest)
}

// clientHello is the client's answer, with its public key.
func clientHello(pk keys.PublicKey) []byte {
	return append(hello(), pk[:]...)
}

// parseHello checks a hello of either side and returns what follows the
// version (the client's public key, or nothing).
func parseHello(b []byte) ([]byte, error) {
	if len(b) < 4 || binary.LittleEndian.Uint16(b) != msgConnect {
		return nil, fmt.Errorf("%w: the first message is not a hello", errProtocol)
	}
	if v := binary.LittleEndian.Uint16(b[2:]); v != protoVersion {
		return nil, fmt.Errorf("%w: protocol version %d (this tool speaks %d)", errProtocol, v, protoVersion)
	}
	return b[4:], nil
}

// session is one side's keys of a connection.
type session struct {
	rx, tx  [32]byte
	txNonce [chacha20poly1305.NonceSize]byte
	rxNonce [chacha20poly1305.NonceSize]byte
	rxSeen  bool
}

// newSession derives crypto_kx session keys: BLAKE2b-512 of the shared
// secret, the client's and the server's public keys; the client receives
// with the first half and transmits with the second, the server the other
// way round.
func newSession(own *keys.SecretKey, peer, client, server keys.PublicKey, isClient bool) (*session, error) {
	sum, err := kx(own, peer, client, server)
	if err != nil {
		return nil, err
	}
	s := &session{}
	if isClient {
		copy(s.rx[:], sum[:32])
		copy(s.tx[:], sum[32:])
	} else {
		copy(s.tx[:], sum[:32])
		copy(s.rx[:], sum[32:])
	}
	clear(sum[:])
	return s, nil
}

// kx is libsodium's crypto_kx: BLAKE2b-512 of the X25519 shared secret of
// own and peer, the client's and the server's public keys. A header
// packet's key is its first half, with the reader as the client and the
// writer as the server. One scalar multiplication: the caller knows the
// public keys.
func kx(own *keys.SecretKey, peer, client, server keys.PublicKey) ([64]byte, error) {
	var sum [64]byte
	var dh [32]byte
	if err := x25519.X25519(&dh, (*[32]byte)(own), (*[32]byte)(&peer)); err != nil {
		return sum, keys.ErrLowOrderPoint
	}
	h, _ := blake2b.New512(nil)
	h.Write(dh[:])
	h.Write(client[:])
	h.Write(server[:])
	h.Sum(sum[:0])
	clear(dh[:])
	return sum, nil
}

// zero erases the session keys.
func (s *session) zero() { *s = session{} }

// seal encrypts a message for the peer.
func (s *session) seal(pt []byte) []byte {
	aead, _ := chacha20poly1305.New(s.tx[:])
	out := make([]byte, 0, len(pt)+overhead)
	out = append(out, s.txNonce[:]...)
	out = aead.Seal(out, s.txNonce[:], pt, nil)
	increment(s.txNonce[:])
	return out
}

// open decrypts a message of the peer. After the first message, each
// nonce must be the one before it plus one, so that a message cannot be
// replayed or dropped.
func (s *session) open(msg []byte) ([]byte, error) {
	if len(msg) < overhead {
		return nil, fmt.Errorf("%w: message of %d bytes is too short", errProtocol, len(msg))
	}
	nonce := msg[:chacha20poly1305.NonceSize]
	if s.rxSeen && subtle.ConstantTimeCompare(nonce, s.rxNonce[:]) != 1 {
		return nil, fmt.Errorf("%w: message out of sequence", errProtocol)
	}
	aead, _ := chacha20poly1305.New(s.rx[:])
	pt, err := aead.Open(nil, nonce, msg[chacha20poly1305.NonceSize:], nil)
	if err != nil {
		return nil, fmt.Errorf("%w: message does not authenticate", errProtocol)
	}
	copy(s.rxNonce[:], nonce)
	increment(s.rxNonce[:])
	s.rxSeen = true
	if len(pt) < 2 {
		clear(pt)
		return nil, fmt.Errorf("%w: message without a type", errProtocol)
	}
	return pt, nil
}

// increment adds one to a little-endian number, as sodium_increment does.
func increment(b []byte) {
	for i := range b {
		b[i]++
		if b[i] != 0 {
			return
		}
	}
}

// request is a parsed msgOpen, msgSeal or one of the requests of this
// module that name a key.
type request struct {
	typ       uint16
	name      string         // the key asked for; empty for any
	recipient keys.PublicKey // msgSealAs, msgOpenAsWriter
	rest      []byte         // msgOpen: the packet; msgSeal: the payload; msgDerive: the label
}

// parseKeyRequest parses the body of msgOpen or msgSeal: a name length
// (2 bytes, counting its final NUL), the name, then the packet or, for
// msgSeal, the header version, its encryption method and the payload.
func parseKeyRequest(pt []byte) (request, error) {
	r := request{typ: binary.LittleEndian.Uint16(pt)}
	b := pt[2:]
	if len(b) < 2 {
		return r, fmt.Errorf("%w: request without a key name", errProtocol)
	}
	n := int(binary.LittleEndian.Uint16(b))
	b = b[2:]
	if n < 1 || n > len(b) || n > maxName || b[n-1] != 0 {
		return r, fmt.Errorf("%w: malformed key name", errProtocol)
	}
	r.name, b = string(b[:n-1]), b[n:]
	if r.typ == msgSeal {
		if len(b) < 8 {
			return r, fmt.Errorf("%w: seal request without a header version", errProtocol)
		}
		if v, m := binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:]); v != 1 || m != 0 {
			return r, fmt.Errorf("%w: seal request for header version %d, method %d", errProtocol, v, m)
		}
		b = b[8:]
	}
	if r.typ == msgSealAs || r.typ == msgOpenAsWriter {
		if len(b) < keys.KeySize {
			return r, fmt.Errorf("%w: request without a recipient", errProtocol)
		}
		copy(r.recipient[:], b)
		b = b[keys.KeySize:]
	}
	r.rest = b
	return r, nil
}

// keyRequest builds the body of msgOpen or msgSeal.
func keyRequest(typ uint16, name string, rest []byte) []byte {
	b := make([]byte, 0, 4+len(name)+1+8+len(rest))
	b = binary.LittleEndian.AppendUint16(b, typ)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(name)+1))
	b = append(append(b, name...), 0)
	if typ == msgSeal {
		b = binary.LittleEndian.AppendUint32(b, 1)
		b = binary.LittleEndian.AppendUint32(b, 0)
	}
	return append(b, rest...)
}

// packetBytes is a method-0 packet without its length: method, writer
// public key, nonce, ciphertext.
func packetBytes(writer keys.PublicKey, nonce *[keys.NonceSize]byte, ct []byte) []byte {
	b := make([]byte, 0, 4+keys.KeySize+keys.NonceSize+len(ct))
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = append(b, writer[:]...)
	b = append(b, nonce[:]...)
	return append(b, ct...)
}

// parsePacketBytes splits a method-0 packet without its length.
func parsePacketBytes(b []byte) (writer keys.PublicKey, nonce [keys.NonceSize]byte, ct []byte, err error) {
	if len(b) < 4+keys.KeySize+keys.NonceSize+chacha20poly1305.Overhead {
		return writer, nonce, nil, fmt.Errorf("%w: header packet of %d bytes is too short", errProtocol, len(b))
	}
	if m := binary.LittleEndian.Uint32(b); m != 0 {
		return writer, nonce, nil, fmt.Errorf("%w: header packet of method %d", errProtocol, m)
	}
	copy(writer[:], b[4:])
	copy(nonce[:], b[4+keys.KeySize:])
	return writer, nonce, b[4+keys.KeySize+keys.NonceSize:], nil
}

// errorReply is msgError: the kind of the error and its text.
func errorReply(err error) []byte {
	b := binary.LittleEndian.AppendUint16(nil, msgError)
	b = binary.LittleEndian.AppendUint16(b, uint16(errkind.Of(err)))
	return append(b, err.Error()...)
}

// parseErrorReply turns a msgError body back into an error of its kind.
func parseErrorReply(pt []byte) error {
	if len(pt) < 4 {
		return fmt.Errorf("%w: short error reply", errProtocol)
	}
	k := errkind.Kind(binary.LittleEndian.Uint16(pt[2:]))
	if k > errkind.Data {
		k = errkind.Other
	}
	return errkind.Errorf(k, "the agent refused: %s", printable(pt[4:]))
}

// printable keeps the printable ASCII of text from the peer, at most 200
// characters.
func printable(b []byte) string {
	out := make([]byte, 0, min(len(b), 200))
	for _, c := range b {
		if len(out) == cap(out) {
			break
		}
		if c >= 0x20 && c < 0x7f {
			out = append(out, c)
		} else {
			out = append(out, '?')
		}
	}
	return string(out)
}

// KeyInfo describes a key that the agent holds.
type KeyInfo struct {
	// PublicKey is the key's public key.
	PublicKey keys.PublicKey
	// Name is the name that requests may give (CRYPT4GH_SECRET of the
	// plug-in): the key file's path as given to the agent.
	Name string
	// Expired reports whether the key's lifetime is over: it is erased
	// and opens nothing.
	Expired bool
}

// listReply is the body of a msgList reply.
func listReply(infos []KeyInfo) []byte {
	b := binary.LittleEndian.AppendUint16(nil, msgList)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(infos)))
	for _, k := range infos {
		b = append(b, k.PublicKey[:]...)
		e := byte(0)
		if k.Expired {
			e = 1
		}
		name := k.Name
		if len(name) > maxName {
			name = name[:maxName]
		}
		b = append(b, e)
		b = binary.LittleEndian.AppendUint16(b, uint16(len(name)))
		b = append(b, name...)
	}
	return b
}

// parseListReply reads a msgList reply.
func parseListReply(pt []byte) ([]KeyInfo, error) {
	if len(pt) < 4 {
		return nil, fmt.Errorf("%w: short list reply", errProtocol)
	}
	n := int(binary.LittleEndian.Uint16(pt[2:]))
	b := pt[4:]
	if n > len(b)/(keys.KeySize+3) {
		return nil, fmt.Errorf("%w: list of %d keys in %d bytes", errProtocol, n, len(b))
	}
	infos := make([]KeyInfo, 0, n)
	for range n {
		if len(b) < keys.KeySize+3 {
			return nil, fmt.Errorf("%w: truncated list reply", errProtocol)
		}
		var k KeyInfo
		copy(k.PublicKey[:], b)
		k.Expired = b[keys.KeySize] != 0
		l := int(binary.LittleEndian.Uint16(b[keys.KeySize+1:]))
		b = b[keys.KeySize+3:]
		if l > len(b) {
			return nil, fmt.Errorf("%w: truncated list reply", errProtocol)
		}
		k.Name, b = printable(b[:l]), b[l:]
		infos = append(infos, k)
	}
	return infos, nil
}

var errClosed = errors.New("agent connection closed")
