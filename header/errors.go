package header

import (
	"bytes"
	"fmt"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
)

var (
	// ErrEmptyInput is returned by [Parse] when the input holds no bytes at all.
	ErrEmptyInput = errkind.New(errkind.Data, "empty input")

	// ErrNotCrypt4GH is returned by [Parse] when the input does not start
	// with the magic "crypt4gh".
	ErrNotCrypt4GH = errkind.New(errkind.Data, "not a crypt4gh file")

	// ErrUnsupportedVersion is returned by [Parse] when the version field is
	// not [Version].
	ErrUnsupportedVersion = errkind.New(errkind.Data, "unsupported crypt4gh version")

	// ErrTruncated is returned by [Parse] when the input ends inside the
	// header: in the magic, the version, the packet count, or a packet
	// (including a packet count larger than the packets present).
	ErrTruncated = errkind.New(errkind.Data, "header truncated")

	// ErrTooManyPackets is returned by [Parse] when the packet count exceeds
	// [MaxPackets], and by [Header.Decrypt] when the packets come from more
	// than [MaxWriterKeys] different writer keys or give the reader more
	// than [MaxDataKeys] data keys.
	ErrTooManyPackets = errkind.New(errkind.Data, "too many header packets")

	// ErrInvalidPacket is returned when a header packet is malformed: a
	// length below the fixed part of the packet or above [MaxPacketLength]
	// (or, with the packets before it, above [MaxHeaderSize]),
	// or (by [Header.Decrypt]) an authenticated payload that is too short for
	// its packet type.
	ErrInvalidPacket = errkind.New(errkind.Data, "invalid header packet")

	// ErrPacketAuth is returned by [Packet.Open] when the packet cannot be
	// opened with the given key: it does not authenticate (it belongs to
	// another reader or was altered) or its encryption method is unknown.
	// The error also wraps [keys.ErrPacketAuth], which every [keys.Opener]
	// returns for such a packet.
	ErrPacketAuth = errkind.New(errkind.Key, "header packet cannot be opened with this key")

	// ErrNoDecryptablePacket is returned by [Header.Decrypt] when no packet
	// opens with the reader's key (from the required sender, if any).
	ErrNoDecryptablePacket = errkind.New(errkind.Key, "no header packet can be decrypted with this key")

	// ErrNoPackets is returned by [Header.Decrypt] for a header without
	// packets: no key can decrypt the file. The error also wraps
	// ErrNoDecryptablePacket.
	ErrNoPackets = errkind.New(errkind.Data, "the header has no packets, so no key can decrypt the file")

	// ErrWrongSender is returned by [Header.Decrypt], given a sender, when
	// no packet from that sender opens but packets from another writer
	// do: the file is for the reader, not from the sender. The error also
	// wraps ErrNoDecryptablePacket.
	ErrWrongSender = errkind.New(errkind.Key, "no header packet from the expected sender")

	// ErrNoDataKey is returned by [Header.Decrypt] when packets opened but
	// none holds a usable data key.
	ErrNoDataKey = errkind.New(errkind.Key, "no data key for this reader")

	// ErrMultipleEditLists is returned by [Header.Decrypt] when more than one
	// edit-list packet opens with the reader's key.
	ErrMultipleEditLists = errkind.New(errkind.Data, "more than one edit list for this reader")

	// ErrMixedDataMethods is returned by [Header.Decrypt] when the data keys
	// of one reader are for different data encryption methods.
	ErrMixedDataMethods = errkind.New(errkind.Data, "data keys use different data encryption methods")
)

// MagicError is the error of [Parse] for an input that does not start
// with the magic "crypt4gh": it wraps [ErrNotCrypt4GH] and holds the
// bytes the input starts with, for a caller that says what the input
// looks like instead.
type MagicError struct {
	Start []byte // the first bytes of the input, at most len(Magic)
}

// Error shows the first bytes when they are text (a key file, a VCF, a
// line that ends within them), and only their count when they are not:
// they may be a quarter of a bare secret key, or of data that was meant
// to be encrypted.
func (e *MagicError) Error() string {
	for _, c := range e.Start {
		if (c < 0x20 || c > 0x7e) && c != '\t' && c != '\n' && c != '\r' {
			return fmt.Sprintf("%v (its first %d bytes are not text)", ErrNotCrypt4GH, len(e.Start))
		}
	}
	return fmt.Sprintf("%v (bad magic %q)", ErrNotCrypt4GH, e.Start)
}

func (e *MagicError) Unwrap() error { return ErrNotCrypt4GH }

// KeyFile reports whether the input looks like a key file: PEM armor or
// an OpenSSH public key line, after a byte-order mark or spaces.
func (e *MagicError) KeyFile() bool {
	b := bytes.TrimLeft(bytes.TrimPrefix(e.Start, []byte("\uFEFF")), " \t\r\n")
	return bytes.HasPrefix(b, []byte("-----")) || bytes.HasPrefix(b, []byte("ssh-"))
}
